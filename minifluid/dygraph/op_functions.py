"""``core.ops``: one function per op for dygraph code, as fluid 1.8 generates them
(``core.ops.elementwise_add(x, y, 'axis', -1)``); and ``core.VarBase`` / ``core.Layer``, the C++ dygraph
classes legacy code names (VarBase makes an eager Tensor, and every eager Tensor is an instance of it).

A function takes the op's inputs positionally in the op's slot order (a list for a duplicable slot), leaving
out the optional ones as fluid leaves out its dispensable inputs (but for a few ops whose optional inputs it
keeps: ``_KEPT_INPUTS``); then, for the outputs an update op writes in place (``_PASSED_OUTPUTS``: sgd's
ParamOut, ...), the tensors to write; then the count of any duplicable output; then attributes as name, value
pairs. It runs the op now on the tracer (dygraph/tracer.py) and returns its one output, or a tuple of them in
slot order (a list for a duplicable one). Outside dygraph mode it is an error.
"""
from ..framework import dygraph_mode, unique_name
from ..ops.registry import get_op_spec, registered_ops
from ..places import place_array_module

__all__ = ["Layer", "VarBase", "ops"]

_KEPT_INPUTS = {"layer_norm": {"X", "Scale", "Bias"}, "gru_unit": {"Input", "HiddenPrev", "Weight", "Bias"},
                "label_smooth": {"X", "PriorDist"}, "assign": {"X"}}
_PASSED_OUTPUTS = {"sgd": {"ParamOut"}, "adam": {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"},
                   "momentum": {"ParamOut", "VelocityOut"}, "batch_norm": {"MeanOut", "VarianceOut"},
                   "accuracy": {"Correct", "Total"}, "fill_constant": {"Out"}, "matmul": {"Out"}}


def _op_function(op_type):
    spec = get_op_spec(op_type)
    kept = _KEPT_INPUTS.get(op_type, set())
    in_slots = [s for s in spec.inputs if s not in spec.optional or s in kept]
    passed = _PASSED_OUTPUTS.get(op_type, set())

    def run(*args):
        tracer = dygraph_mode.current_tracer()
        if tracer is None:
            raise RuntimeError(f"core.ops.{op_type} runs ops in dygraph mode only (inside fluid.dygraph.guard())")
        if len(args) < len(in_slots):
            raise TypeError(f"core.ops.{op_type} takes its inputs {in_slots} first, got {len(args)} arguments")
        ins = {slot: value for slot, value in zip(in_slots, args) if value is not None}
        rest = list(args[len(in_slots):])
        outs = {}
        for slot in spec.outputs:
            if slot in passed:
                outs[slot] = rest.pop(0)
            elif slot in spec.duplicable:
                outs[slot] = [_new_tensor(tracer) for _ in range(int(rest.pop(0)))]
            else:
                outs[slot] = _new_tensor(tracer)
        if len(rest) % 2:
            raise TypeError(f"core.ops.{op_type}: attributes come as name, value pairs, got {rest!r}")
        tracer.trace_op(op_type, ins, outs, dict(zip(rest[::2], rest[1::2])))
        results = [outs[slot] for slot in spec.outputs]
        return results[0] if len(results) == 1 else tuple(results)
    run.__name__ = run.__qualname__ = op_type
    run.__doc__ = f"Run op {op_type!r} now: inputs {in_slots}, then attributes as name, value pairs."
    return run


def _new_tensor(tracer):
    return tracer.tensor_type(None, name=unique_name.generate("generated_var"), stop_gradient=False)


class _Ops:
    """The namespace of op functions; each is made on first use."""

    def __getattr__(self, op_type):
        if op_type.startswith("__") or op_type not in registered_ops():
            raise AttributeError(f"core.ops has no op {op_type!r}")
        fn = _op_function(op_type)
        setattr(self, op_type, fn)
        return fn

    def __dir__(self):
        return sorted(registered_ops())


ops = _Ops()


class _EagerTensorType(type):
    """``isinstance(x, core.VarBase)`` holds for every eager Tensor (parameters too)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _tensor_type())

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _tensor_type())


class VarBase(metaclass=_EagerTensorType):
    """fluid 1.8's ``core.VarBase(value, place=None, persistable=False, zero_copy=False, name=None,
    stop_gradient=True)``: an eager Tensor holding a copy of ``value`` (the array itself with ``zero_copy``) on
    ``place`` (the current dygraph place, else the CPU)."""

    def __new__(cls, value=None, place=None, persistable=False, zero_copy=False, name=None, stop_gradient=True):
        tracer = dygraph_mode.current_tracer()
        xp = place_array_module(place if place is not None else getattr(tracer, "expected_place", None))
        array = None if value is None else (xp.asarray(value) if zero_copy else xp.array(value))
        return _tensor_type()(array, name=name or unique_name.generate("generated_var"), stop_gradient=stop_gradient,
                              persistable=persistable)


class Layer:
    """fluid 1.8's ``core.Layer``, the bare base of dygraph layers: ``forward`` returns no outputs."""

    def forward(self, inputs):
        return []


def _tensor_type():
    from .tensor import Tensor  # noqa: PLC0415 - tensor.py imports the tracer, which this module's users import
    return Tensor
