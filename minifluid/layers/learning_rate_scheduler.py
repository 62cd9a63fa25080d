"""Learning-rate schedules of fluid 1.x (``fluid.layers.exponential_decay`` ...): each returns a
``[1]`` float32 Variable to pass as an optimizer's ``learning_rate``.

As in fluid, the schedule is ops in the main program: ``autoincreased_step_counter`` puts an
``increment`` op at the head of the program, on a persistable int64 counter the startup program
sets to ``begin - 1``, so every ``exe.run`` of the program counts one step (the first run sees
``begin``); the rate is computed from the counter by ordinary ops. The schedule's ops carry
``op_role = LRSched``: data-parallel runs do them once per step (with the optimizer), and
``clone(for_test=True)`` drops them, so evaluating does not advance the counter. ``piecewise_decay`` adds up
steps instead of fluid's ``Switch`` blocks: ``values[0] + sum((values[i+1] - values[i]) *
[step >= boundaries[i]])``, the same numbers for the counter's whole-number steps.
"""
import functools

from ..framework.program import default_main_program
from ..initializer import Constant
from ..ops.registry import OpRole
from .helper import LayerHelper
from .nn import _unary_layer
from .tensor import cast

_floor, _exp, _sign = (_unary_layer(t) for t in ("floor", "exp", "sign"))

__all__ = ["autoincreased_step_counter", "exponential_decay", "inverse_time_decay", "natural_exp_decay",
           "piecewise_decay"]

_LR_COUNTER = "@LR_DECAY_COUNTER@"


def _schedule(fn):
    """Give the ops ``fn`` appends to the main program's global block ``op_role = LRSched``."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        block = default_main_program().global_block()
        before = set(map(id, block.ops))
        out = fn(*args, **kwargs)
        for op in block.ops:
            if id(op) not in before:
                op._set_attr("op_role", OpRole.LRSched)
        return out
    return wrapper


def autoincreased_step_counter(counter_name=None, begin=1, step=1):
    """A persistable int64 ``[1]`` counter that grows by ``step`` each time the main program runs."""
    helper = LayerHelper("global_step_counter")
    name = counter_name or "@STEP_COUNTER@"
    block = helper.main_program.global_block()
    if block.has_var(name):
        return block.var(name)
    counter = helper.create_global_variable(name=name, shape=[1], dtype="int64", persistable=True,
                                            stop_gradient=True)
    helper.set_variable_initializer(counter, Constant(value=float(begin - 1), force_cpu=True))
    block._prepend_op(type="increment", inputs={"X": [counter]}, outputs={"Out": [counter]},
                      attrs={"step": float(step)})
    return counter


def _decay_step():
    """The schedules' step as float32: 0 at the first run."""
    return cast(autoincreased_step_counter(counter_name=_LR_COUNTER, begin=0), "float32")


def _progress(decay_steps, staircase):
    progress = _decay_step() / float(decay_steps)
    return _floor(progress) if staircase else progress


@_schedule
def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate * decay_rate ** (step / decay_steps)`` (the exponent floored when ``staircase``)."""
    return float(decay_rate) ** _progress(decay_steps, staircase) * float(learning_rate)


@_schedule
def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate * exp(-decay_rate * step / decay_steps)``."""
    return _exp(_progress(decay_steps, staircase) * -float(decay_rate)) * float(learning_rate)


@_schedule
def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate / (1 + decay_rate * step / decay_steps)``."""
    return float(learning_rate) / (_progress(decay_steps, staircase) * float(decay_rate) + 1.0)


@_schedule
def piecewise_decay(boundaries, values):
    """``values[i]`` while ``boundaries[i-1] <= step < boundaries[i]`` (``len(values) == len(boundaries) + 1``)."""
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"piecewise_decay needs len(values) == len(boundaries) + 1, got {len(values)} values "
                         f"for {len(boundaries)} boundaries")
    if list(boundaries) != sorted(boundaries):
        raise ValueError(f"piecewise_decay needs increasing boundaries, got {list(boundaries)}")
    step = _decay_step()
    lr = step * 0.0 + float(values[0])
    for boundary, before, after in zip(boundaries, values, values[1:]):
        # 1 from the step ``boundary`` on, else 0: steps are whole numbers, so compare with boundary - 0.5
        reached = (_sign(step - (float(boundary) - 0.5)) + 1.0) * 0.5
        lr = lr + reached * (float(after) - float(before))
    return lr
