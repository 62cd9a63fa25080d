"""Parameter averaging around an optimizer (static graph, as in fluid 1.8): ModelAverage,
ExponentialMovingAverage and LookaheadOptimizer.

ModelAverage and ExponentialMovingAverage add their accumulating ops to the main program when built
(EMA: when ``update()`` is called) and keep two small programs: ``apply_program`` copies every averaged
parameter into a backup variable and writes the average into the parameter, ``restore_program`` copies the
backups back. ``with avg.apply(exe):`` runs the first, then the second on leaving (``need_restore=True``).
The backups are persistable here, so they survive between ``Executor.run`` calls whatever the scope.
Parameters whose ``ParamAttr(do_model_average=False)`` are left out.
"""
import contextlib

from ..framework import dygraph_mode, unique_name
from ..framework.program import Program, default_main_program, default_startup_program, program_guard
from ..layers.control_flow import Switch
from ..layers.helper import LayerHelper
from ..layers.learning_rate_scheduler import autoincreased_step_counter
from ..layers.tensor import create_global_var
from ..ops.registry import OpRole
from .base import Optimizer

__all__ = ["ExponentialMovingAverage", "LookaheadOptimizer", "ModelAverage"]


def _averaged_parameters():
    return [p for p in default_main_program().global_block().all_parameters() if p.do_model_average is not False]


def _mirror(block, var):
    """``var`` (a persistable variable of another program) declared in ``block`` under the same name."""
    return block.create_var(name=var.name, shape=var.shape, dtype=var.dtype, persistable=True)


def _op(block, type, inputs, outputs, **attrs):
    return block.append_op(type=type, inputs=inputs, outputs=outputs, attrs=attrs)


def _temp(block, dtype, shape=None):
    return block.create_var(name=unique_name.generate("average_tmp"), shape=shape, dtype=dtype)


class _Averaging:
    """apply / restore programs shared by ModelAverage and ExponentialMovingAverage."""

    def _backup_var(self, param):
        return create_global_var(shape=param.shape, value=0.0, dtype=param.dtype, persistable=True,
                                 name=unique_name.generate(param.name + ".backup"))

    def _build_restore(self, pairs):
        self.restore_program = Program()
        block = self.restore_program.global_block()
        for param, backup in pairs:
            _op(block, "assign", {"X": [_mirror(block, backup)]}, {"Out": [_mirror(block, param)]})

    @contextlib.contextmanager
    def apply(self, executor, need_restore=True):
        """Write the averages into the parameters; with ``need_restore`` put the trained values back on exit."""
        executor.run(self.apply_program)
        try:
            yield
        finally:
            if need_restore:
                self.restore(executor)

    def restore(self, executor):
        """Put back the parameter values that ``apply`` replaced."""
        executor.run(self.restore_program)


class ModelAverage(Optimizer, _Averaging):
    """The average of each parameter over a sliding window of recent steps (the ``average_accumulates``
    op of ops/optimizer_more.py keeps the running sums): build it after ``minimize``; the window holds at
    least ``min_average_window`` steps and at most max(min_average_window, min(max_average_window,
    steps * average_window_rate)) before the older half is dropped."""

    def __init__(self, average_window_rate, min_average_window=10000, max_average_window=10000,
                 regularization=None, name=None):
        if dygraph_mode.in_dygraph_mode():
            raise Exception("In dygraph, don't support ModelAverage.")
        super().__init__(0.0, regularization=regularization, name=name)
        if min_average_window > max_average_window:
            raise ValueError(f"ModelAverage: min_average_window ({min_average_window}) shouldn't be larger than "
                             f"max_average_window ({max_average_window})")
        self.average_window = float(average_window_rate)
        self.min_average_window, self.max_average_window = int(min_average_window), int(max_average_window)
        self.helper = LayerHelper("average_accumulate")
        self.params_grads = []
        block = default_main_program().global_block()
        for param in _averaged_parameters():
            self.params_grads.append((param, self._backup_var(param)))
            self._append_average_accumulate_op(block, param)
        self._build_apply()
        self._build_restore(self.params_grads)

    def _append_average_accumulate_op(self, block, param):
        sums = [self._add_accumulator(n, param) for n in ("sum_1", "sum_2", "sum_3")]
        counts = [self._add_accumulator(n, param, dtype="int64", shape=[1])
                  for n in ("num_accumulates", "old_num_accumulates", "num_updates")]
        ins = {"param": [param], **{f"in_sum_{i + 1}": [s] for i, s in enumerate(sums)},
               "in_num_accumulates": [counts[0]], "in_old_num_accumulates": [counts[1]],
               "in_num_updates": [counts[2]]}
        outs = {f"out_{name[3:]}": v for name, v in ins.items() if name != "param"}
        _op(block, "average_accumulates", ins, outs, average_window=self.average_window,
            min_average_window=self.min_average_window, max_average_window=self.max_average_window,
            op_role=OpRole.Optimize)

    def _build_apply(self):
        """param = (sum_1 + sum_2 + sum_3) / (num_accumulates + old_num_accumulates)."""
        self.apply_program = Program()
        block = self.apply_program.global_block()
        for param, backup in self.params_grads:
            p = _mirror(block, param)
            _op(block, "assign", {"X": [p]}, {"Out": [_mirror(block, backup)]})
            acc = {n: _mirror(block, self._get_accumulator(n, param))
                   for n in ("sum_1", "sum_2", "sum_3", "num_accumulates", "old_num_accumulates")}
            count, count_f = _temp(block, "int64", [1]), _temp(block, param.dtype, [1])
            total = _temp(block, param.dtype)
            _op(block, "sum", {"X": [acc["num_accumulates"], acc["old_num_accumulates"]]}, {"Out": [count]})
            _op(block, "cast", {"X": [count]}, {"Out": [count_f]}, in_dtype="int64", out_dtype=param.dtype)
            _op(block, "sum", {"X": [acc["sum_1"], acc["sum_2"], acc["sum_3"]]}, {"Out": [total]})
            _op(block, "elementwise_div", {"X": [total], "Y": [count_f]}, {"Out": [p]}, axis=-1)


class ExponentialMovingAverage(_Averaging):
    """``ema = decay * ema + (1 - decay) * param`` after each step (call ``update()`` once, after
    ``minimize``); ``apply`` writes the bias-corrected ``ema / (1 - decay^t)`` into the parameters. With
    ``thres_steps`` (a step Variable) the decay is min(decay, (1 + t) / (10 + t)).

    Unlike fluid 1.8, whose apply program overwrote the EMA variables with their bias-corrected values (so an
    apply changed the averages that later steps continued from), the EMA variables are only read here."""

    def __init__(self, decay=0.999, thres_steps=None, name=None):
        if dygraph_mode.in_dygraph_mode():
            raise Exception("In dygraph, don't support ExponentialMovingAverage.")
        self._decay, self._thres_steps, self._name = float(decay), thres_steps, name or ""
        self._step_counter_name = "@EMA_STEP_COUNTER@"
        self._decay_var = self._get_ema_decay()
        self._params_tmps, self._ema_vars = [], {}
        for param in _averaged_parameters():
            self._params_tmps.append((param, self._backup_var(param)))
            self._ema_vars[param.name] = create_global_var(
                shape=param.shape, value=0.0, dtype=param.dtype, persistable=True,
                name=unique_name.generate(self._name + param.name + "_ema"))
        self._build_apply()
        self._build_restore(self._params_tmps)

    def _get_ema_decay(self):
        decay = create_global_var(shape=[1], value=self._decay, dtype="float32", persistable=True,
                                  name=unique_name.generate("scheduled_ema_decay_rate"))
        if self._thres_steps is not None:  # decay = min(decay, (t + 1) / (t + 10)), each step
            block = default_main_program().global_block()
            t, ratio = _temp(block, "float32", [1]), _temp(block, "float32", [1])
            low, high, cap = (_temp(block, "float32", [1]) for _ in range(3))
            _op(block, "cast", {"X": [self._thres_steps]}, {"Out": [t]}, in_dtype=self._thres_steps.dtype,
                out_dtype="float32", op_role=OpRole.LRSched)
            _op(block, "scale", {"X": [t]}, {"Out": [low]}, scale=1.0, bias=1.0, op_role=OpRole.LRSched)
            _op(block, "scale", {"X": [t]}, {"Out": [high]}, scale=1.0, bias=10.0, op_role=OpRole.LRSched)
            _op(block, "elementwise_div", {"X": [low], "Y": [high]}, {"Out": [ratio]}, axis=-1, op_role=OpRole.LRSched)
            _op(block, "fill_constant", {}, {"Out": [cap]}, shape=[1], dtype="float32", value=self._decay,
                op_role=OpRole.LRSched)
            _op(block, "elementwise_min", {"X": [ratio], "Y": [cap]}, {"Out": [decay]}, axis=-1,
                op_role=OpRole.LRSched)
        return decay

    def update(self):
        """Append the EMA update of every averaged parameter to the main program (once, after minimize)."""
        autoincreased_step_counter(counter_name=self._step_counter_name)
        block = default_main_program().global_block()
        for param, _ in self._params_tmps:
            ema = self._ema_vars[param.name]
            keep, mix = _temp(block, param.dtype, param.shape), _temp(block, param.dtype, param.shape)
            one_minus = _temp(block, "float32", [1])
            _op(block, "elementwise_mul", {"X": [ema], "Y": [self._decay_var]}, {"Out": [keep]}, axis=-1,
                op_role=OpRole.Optimize)
            _op(block, "scale", {"X": [self._decay_var]}, {"Out": [one_minus]}, scale=-1.0, bias=1.0,
                op_role=OpRole.Optimize)
            _op(block, "elementwise_mul", {"X": [param], "Y": [one_minus]}, {"Out": [mix]}, axis=-1,
                op_role=OpRole.Optimize)
            _op(block, "elementwise_add", {"X": [keep], "Y": [mix]}, {"Out": [ema]}, axis=-1, op_role=OpRole.Optimize)

    def _build_apply(self):
        """param = ema / (1 - decay^t), or ema itself before the first update (t = 0)."""
        self.apply_program = Program()
        block = self.apply_program.global_block()
        step = block.create_var(name=self._step_counter_name, shape=[1], dtype="int64", persistable=True)
        decay = _mirror(block, self._decay_var)
        t, first, first_f, pow_t, denom = (_temp(block, d, [1]) for d in ("float32", "bool", "float32", "float32",
                                                                            "float32"))
        zero = _temp(block, "int64", [1])
        _op(block, "cast", {"X": [step]}, {"Out": [t]}, in_dtype="int64", out_dtype="float32")
        _op(block, "elementwise_pow", {"X": [decay], "Y": [t]}, {"Out": [pow_t]}, axis=-1)
        _op(block, "fill_constant", {}, {"Out": [zero]}, shape=[1], dtype="int64", value=0.0)
        _op(block, "equal", {"X": [step], "Y": [zero]}, {"Out": [first]}, axis=-1)
        _op(block, "cast", {"X": [first]}, {"Out": [first_f]}, in_dtype="bool", out_dtype="float32")
        _op(block, "scale", {"X": [pow_t]}, {"Out": [denom]}, scale=-1.0, bias=1.0)  # 1 - decay^t (+1 at t = 0)
        _op(block, "elementwise_add", {"X": [denom], "Y": [first_f]}, {"Out": [denom]}, axis=-1)
        for param, backup in self._params_tmps:
            p = _mirror(block, param)
            _op(block, "assign", {"X": [p]}, {"Out": [_mirror(block, backup)]})
            ema = _mirror(block, self._ema_vars[param.name])
            _op(block, "elementwise_div", {"X": [ema], "Y": [denom]}, {"Out": [p]}, axis=-1)


class LookaheadOptimizer:
    """Lookahead (Zhang et al. 2019): the inner optimizer updates the "fast" parameters every step; every
    ``k`` steps the "slow" copies move ``alpha`` of the way to them and the fast ones restart from there."""

    def __init__(self, inner_optimizer, alpha=0.5, k=5):
        if dygraph_mode.in_dygraph_mode():
            raise Exception("In dygraph, don't support LookaheadOptimizer.")
        if inner_optimizer is None:
            raise ValueError("LookaheadOptimizer: inner optimizer can not be None")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"LookaheadOptimizer: alpha should be larger or equal to 0.0, and less or equal "
                             f"than 1.0, got {alpha}")
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError(f"LookaheadOptimizer: k should be a positive integer, got {k!r}")
        self.inner_optimizer, self.alpha, self.k, self.type = inner_optimizer, float(alpha), k, "lookahead"

    def minimize(self, loss, startup_program=None):
        out = self.inner_optimizer.minimize(loss, startup_program=startup_program)
        startup = startup_program or default_startup_program()
        main_block, startup_block = loss.block.program.global_block(), startup.global_block()
        with program_guard(loss.block.program, startup):
            slow = {}
            for param in main_block.all_parameters():
                slow[param.name] = main_block.create_var(name=param.name + "@SLOW", shape=param.shape,
                                                         dtype=param.dtype, persistable=True)
                copy = startup_block.create_var(name=param.name + "@SLOW", shape=param.shape, dtype=param.dtype,
                                                persistable=True)
                _op(startup_block, "assign", {"X": [startup_block.var(param.name)]}, {"Out": [copy]})
            step = create_global_var([1], 0, "int32", persistable=True, name=unique_name.generate("lookahead_step"))
            k, zero = _temp(main_block, "int32", [1]), _temp(main_block, "int32", [1])
            mod, sync = _temp(main_block, "int32", [1]), _temp(main_block, "bool", [1])
            _op(main_block, "increment", {"X": [step]}, {"Out": [step]}, step=1.0)
            _op(main_block, "fill_constant", {}, {"Out": [k]}, shape=[1], dtype="int32", value=float(self.k))
            _op(main_block, "fill_constant", {}, {"Out": [zero]}, shape=[1], dtype="int32", value=0.0)
            _op(main_block, "elementwise_mod", {"X": [step], "Y": [k]}, {"Out": [mod]}, axis=-1)
            _op(main_block, "equal", {"X": [mod], "Y": [zero]}, {"Out": [sync]}, axis=-1)
            with Switch() as switch:
                with switch.case(sync):
                    block = default_main_program().current_block()
                    for name, slow_var in slow.items():
                        fast = main_block.var(name)
                        mixed, part = _temp(block, fast.dtype, fast.shape), _temp(block, fast.dtype, fast.shape)
                        _op(block, "scale", {"X": [fast]}, {"Out": [part]}, scale=self.alpha)
                        _op(block, "scale", {"X": [slow_var]}, {"Out": [mixed]}, scale=1.0 - self.alpha)
                        _op(block, "elementwise_add", {"X": [mixed], "Y": [part]}, {"Out": [mixed]}, axis=-1)
                        _op(block, "assign", {"X": [mixed]}, {"Out": [slow_var]})
                        _op(block, "assign", {"X": [mixed]}, {"Out": [fast]})
        return out

