"""Learning-rate schedules of fluid 1.x (``fluid.layers.exponential_decay`` ...): each returns a
``[1]`` float32 Variable to pass as an optimizer's ``learning_rate``.

As in fluid, the schedule is ops in the main program: ``autoincreased_step_counter`` puts an
``increment`` op at the head of the program, on a persistable int64 counter the startup program
sets to ``begin - 1``, so every ``exe.run`` of the program counts one step (the first run sees
``begin``); the rate is computed from the counter by ordinary ops. The schedule's ops carry
``op_role = LRSched``: data-parallel runs do them once per step (with the optimizer), and
``clone(for_test=True)`` drops them, so evaluating does not advance the counter. ``piecewise_decay`` adds up
steps instead of fluid's ``Switch`` blocks: ``values[0] + sum((values[i+1] - values[i]) *
[step >= boundaries[i]])``, the same numbers for the counter's whole-number steps; ``linear_lr_warmup`` and
``polynomial_decay(cycle=True)`` likewise replace fluid's ``Switch`` by the same 0/1 step masks.
All schedules share fluid's one ``@LR_DECAY_COUNTER@``: ``noam_decay`` asks for it to begin at 1 (its
first run sees step 1), the others at 0; whichever schedule makes the counter first sets its start.
In dygraph mode each returns instead fluid.dygraph's decay object of the same arguments (lr_decay.py), to
pass as an eager optimizer's ``learning_rate``, as fluid 1.8 does.
"""
import functools
import inspect
import math
import numbers

from .. import lr_decay
from ..framework import dygraph_mode
from ..framework.program import default_main_program
from ..framework.variable import Variable
from ..initializer import Constant
from ..ops.registry import OpRole
from .helper import LayerHelper
from .math import elementwise_max, elementwise_min
from .nn import _unary_layer
from .tensor import cast

_floor, _ceil, _exp, _cos, _sign = (_unary_layer(t) for t in ("floor", "ceil", "exp", "cos", "sign"))

__all__ = ["autoincreased_step_counter", "cosine_decay", "exponential_decay", "inverse_time_decay",
           "linear_lr_warmup", "natural_exp_decay", "noam_decay", "piecewise_decay", "polynomial_decay"]

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


def _eager(decay, **fixed):
    """In dygraph mode the schedule is ``decay(**its arguments, **fixed)`` instead of ops."""
    def wrap(fn):
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not dygraph_mode.in_dygraph_mode():
                return fn(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return decay(**bound.arguments, **fixed)
        return wrapper
    return wrap


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


def _decay_step(begin=0, dtype="float32"):
    """The schedules' step as ``dtype``: ``begin`` at the first run (unless another schedule made the counter)."""
    return cast(autoincreased_step_counter(counter_name=_LR_COUNTER, begin=begin), dtype)


def _check_rate(value, name, api):
    """``value`` must be a number or a Variable (the learning rate a schedule starts from)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, Variable)):
        raise TypeError(f"The type of '{name}' in {api} must be (float, Variable), but received "
                        f"{type(value).__name__}")
    return value


def _reached(step, boundary):
    """1.0 from the step ``boundary`` on, else 0.0: steps are whole numbers, so compare with boundary - 0.5."""
    return (_sign(step - (float(boundary) - 0.5)) + 1.0) * 0.5


def _progress(decay_steps, staircase):
    progress = _decay_step() / float(decay_steps)
    return _floor(progress) if staircase else progress


@_eager(lr_decay.ExponentialDecay)
@_schedule
def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate * decay_rate ** (step / decay_steps)`` (the exponent floored when ``staircase``)."""
    return float(decay_rate) ** _progress(decay_steps, staircase) * float(learning_rate)


@_eager(lr_decay.NaturalExpDecay)
@_schedule
def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate * exp(-decay_rate * step / decay_steps)``."""
    return _exp(_progress(decay_steps, staircase) * -float(decay_rate)) * float(learning_rate)


@_eager(lr_decay.InverseTimeDecay)
@_schedule
def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """``learning_rate / (1 + decay_rate * step / decay_steps)``."""
    return float(learning_rate) / (_progress(decay_steps, staircase) * float(decay_rate) + 1.0)


@_eager(lr_decay.PiecewiseDecay, begin=0)
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
        lr = lr + _reached(step, boundary) * (float(after) - float(before))
    return lr


@_eager(lr_decay.NoamDecay)
@_schedule
def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """``learning_rate * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)``, the step
    counting from 1 (the Transformer's warm-up then inverse-square-root decay)."""
    _check_rate(learning_rate, "learning_rate", "noam_decay")
    step = _decay_step(begin=1)
    lr = elementwise_min(step ** -0.5, step * float(warmup_steps) ** -1.5) * float(d_model) ** -0.5
    return lr * learning_rate


@_eager(lr_decay.PolynomialDecay)
@_schedule
def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False):
    """``(learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power + end_learning_rate``, the
    step held at ``decay_steps`` from then on; with ``cycle``, ``decay_steps`` grows instead to the first
    multiple of itself at or past the step (``decay_steps * max(ceil(step / decay_steps), 1)``)."""
    _check_rate(learning_rate, "learning_rate", "polynomial_decay")
    step = _decay_step()
    if cycle:
        cycles = elementwise_max(_ceil(step / float(decay_steps)), step * 0.0 + 1.0)
        fraction = step / (cycles * float(decay_steps))
    else:
        fraction = elementwise_min(step, step * 0.0 + float(decay_steps)) / float(decay_steps)
    return (1.0 - fraction) ** float(power) * (learning_rate - float(end_learning_rate)) + float(end_learning_rate)


@_eager(lr_decay.CosineDecay)
@_schedule
def cosine_decay(learning_rate, step_each_epoch, epochs):
    """``learning_rate * 0.5 * (cos(epoch * pi / epochs) + 1)`` with ``epoch = floor(step / step_each_epoch)``."""
    _check_rate(learning_rate, "learning_rate", "cosine_decay")
    epoch = _floor(_decay_step() / float(step_each_epoch))
    return (_cos(epoch * (math.pi / float(epochs))) + 1.0) * 0.5 * learning_rate


@_eager(lr_decay.LinearLrWarmup)
@_schedule
def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """``start_lr + (end_lr - start_lr) * step / warmup_steps`` while ``step < warmup_steps``, then
    ``learning_rate`` (a number or a schedule's Variable, whose dtype the result takes)."""
    _check_rate(learning_rate, "learning_rate", "linear_lr_warmup")
    step = _decay_step(dtype=learning_rate.dtype if isinstance(learning_rate, Variable) else "float32")
    done = _reached(step, warmup_steps)
    warm = step * ((float(end_lr) - float(start_lr)) / float(warmup_steps)) + float(start_lr)
    return (1.0 - done) * warm + done * learning_rate
