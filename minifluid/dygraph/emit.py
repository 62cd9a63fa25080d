"""How a dygraph Layer's ``forward`` runs its ops, in either mode (as fluid 1.8's dygraph layers do).

In dygraph mode (a tracer installed: ``fluid.dygraph.guard()``) ``EagerEmit`` runs each op at once
into fresh eager tensors, with no LayerHelper on the per-step path. Outside it, a layer built in
static mode appends the same ops, with the same attributes, to the current Program through
``StaticEmit`` over the layer's LayerHelper (temporaries named ``<full_name>.tmp_<k>``), so one
model class trains in both modes. ``emitter(layer)`` picks one. Both offer, beside the wiring's
``op`` / ``bias`` / ``act`` (layers/wiring.py)::

    emit.run(type, inputs, out_slots, attrs=None, dtype=None) -> the outputs of ``out_slots``, in order

``inputs`` may hold None for an optional slot left out; ``dtype`` (static mode) is the dtype of the
new outputs when it is not the layer's (None: the layer's; ``"infer"``: the op's shape inference).
"""
from ..framework import dygraph_mode
from ..layers import wiring
from .tensor import Tensor, default_tracer

__all__ = ["EagerEmit", "StaticEmit", "emitter"]


def _present(inputs):
    return {k: v for k, v in inputs.items() if v is not None}


class _EagerEmit:
    """The wiring's emitter in eager mode: each op runs now; outputs are fresh eager tensors."""

    @staticmethod
    def op(type, inputs, attrs=None, out="Out", extra=None, dtype=None):
        result = Tensor(None, stop_gradient=False)
        outputs = {out: result}
        for slot, v in (extra or {}).items():
            outputs[slot] = Tensor(None) if isinstance(v, wiring.New) else v
        default_tracer().trace_op(type, _present(inputs), outputs, attrs)
        return result

    @staticmethod
    def run(type, inputs, out_slots, attrs=None, dtype=None):
        outs = {slot: Tensor(None, stop_gradient=False) for slot in out_slots}
        default_tracer().trace_op(type, _present(inputs), outs, attrs)
        return [outs[slot] for slot in out_slots]

    bias = wiring.StaticEmit.bias
    act = wiring.StaticEmit.act


EagerEmit = _EagerEmit()
"""The emitter the eager layers (and ``paddle.nn.functional.linear``) run the wiring with."""


class StaticEmit(wiring.StaticEmit):
    """The wiring's static emitter, with optional inputs and several outputs (``run``)."""

    def _new(self, dtype):
        return self.helper.create_variable_for_type_inference(
            None if dtype == "infer" else dtype or self.dtype)

    def op(self, type, inputs, attrs=None, out="Out", extra=None, dtype=None):
        if dtype is None:
            return super().op(type, _present(inputs), attrs, out, extra)
        result, = self.run(type, inputs, [out], attrs, dtype)
        return result

    def run(self, type, inputs, out_slots, attrs=None, dtype=None):
        outs = [self._new(dtype) for _ in out_slots]
        self.helper.append_op(type=type, inputs={k: v if isinstance(v, list) else [v]
                                                 for k, v in _present(inputs).items()},
                              outputs={slot: [v] for slot, v in zip(out_slots, outs)}, attrs=attrs or {})
        return outs


def emitter(layer):
    """EagerEmit in dygraph mode; else a StaticEmit appending to the current Program for ``layer``."""
    if dygraph_mode._tracer is not None:
        return EagerEmit
    return StaticEmit(layer._helper, layer._dtype)
