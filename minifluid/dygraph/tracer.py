"""Eager execution: run one op now through the registry, and record it for ``backward()``.

NOTE [ Eager autograd ]
* ``Tracer.trace_op(type, inputs, outputs, attrs)`` takes the op's ``OpSpec`` from the registry,
  calls its kernel on the input tensors' arrays and stores the results in the output tensors, the
  same kernels ``Executor.run`` uses. Inputs and outputs are ``{slot: tensor or [tensors]}``.
* An op is recorded only when some input that is not a ``no_grad_inputs`` slot requires a gradient
  (``stop_gradient`` False), gradients are enabled (not inside ``no_grad``) and the op has a
  registered gradient. The record, a ``Node``, holds the spec, the merged attrs, the input tensors,
  the input and output *arrays* as they were at that moment, a ``need`` flag per input slot and a
  sequence number. (A context op, kernel(ctx, attrs, ...), gets an ``_EagerContext`` per call: its input tensors'
  LoD, the LoD it sets on its outputs and the program's random generator; its node keeps that context for
  the gradient.) A fresh output tensor then points at its node (``_node``, ``_slot``, ``_k``);
  an output of an unrecorded op becomes ``stop_gradient``. Tensors reference nodes, nodes reference
  their input tensors: the tape is the graph hanging off the loss, and it is freed with the loss.
* ``run_backward(loss)`` collects the nodes reachable from the loss, runs them in decreasing sequence
  order (a node's inputs are always older than the node, so this is a reverse topological order)
  and calls each op's **registered** gradient ``grad(attrs, ins, outs, douts, need)``; there is no
  second set of derivatives. Gradients of non-leaf tensors are summed per node output while they
  arrive; gradients of leaves (parameters, user tensors with ``stop_gradient=False``) are added
  to ``tensor._grad`` and keep accumulating across backward calls until ``clear_gradient()``
  (fluid semantics). Gradients are never modified in place (kernels may return aliases).
* Afterwards every visited node drops its tensors and arrays (unless ``retain_graph``), so no tape
  outlives ``backward()``; a second ``backward()`` through the same graph raises.
"""
import functools
import itertools
import warnings
import weakref
from types import SimpleNamespace

import numpy as np

from ..framework import unique_name
from ..framework.operator import named_dtypes
from ..framework.program import default_main_program
from ..framework.unique_name import UniqueNameGenerator
from ..ops.registry import array_module, get_op_spec
from ..places import place_array_module

__all__ = ["Node", "Tracer", "run_backward", "RELEASED_MESSAGE"]

RELEASED_MESSAGE = ("backward() went through a graph that an earlier backward() already released; call "
                    "backward(retain_graph=True) the first time, or detach() tensors carried across steps.")

_sequence = itertools.count()
_EMPTY = {}


class Node:
    """One recorded op (see NOTE [ Eager autograd ])."""

    __slots__ = ("spec", "attrs", "ins", "in_values", "out_values", "need", "seq", "outs")


class Tracer:
    """Runs ops eagerly on ``expected_place``. ``tensor_type`` / ``param_type`` (the eager Tensor and
    Parameter classes) are set by tensor.py, which imports this module."""

    tensor_type = None
    param_type = None

    def __init__(self, place=None):
        self.expected_place = place
        self._has_grad = True
        self._names = UniqueNameGenerator()
        self._recorder = None  # TracedLayer.trace writes the ops it runs into a Program (jit.py)

    @property
    def _train_mode(self):
        """fluid's name for "ops are recorded for backward" (``no_grad`` turns it off for its block)."""
        return self._has_grad

    @_train_mode.setter
    def _train_mode(self, value):
        self._has_grad = bool(value)

    def _generate_unique_name(self, key="dygraph_tmp"):
        """A name unique within this tracer: ``dygraph_tmp_0``, ``dygraph_tmp_1``, ... (fluid's tracer)."""
        return self._names(key)

    def eager_tensor(self, value, stop_gradient=True):
        """``value`` (ndarray, LoDTensor, list, scalar) as an eager tensor on this tracer's place."""
        if isinstance(value, self.tensor_type):
            return value
        array = getattr(value, "_array", value)  # a LoDTensor's data (dygraph has no LoD)
        xp = place_array_module(self.expected_place)
        if type(array) is not xp.ndarray:
            array = xp.asarray(array)
        return self.tensor_type(array, stop_gradient=stop_gradient)

    def from_numpy(self, value, name=None, zero_copy=None):
        """An eager tensor made from data, as fluid's ``to_variable``: named ``generated_var_<n>`` unless
        ``name`` says; on the CPU it shares an ndarray's memory unless ``zero_copy`` is False (None shares),
        on a GPU it is a copy (``zero_copy=True`` there is fluid's AssertionError)."""
        if place_array_module(self.expected_place) is not np:
            assert not zero_copy, "zero_copy mode can only be used with CPUPlace"
        elif zero_copy is False and isinstance(value, np.ndarray):
            value = value.copy()
        t = self.eager_tensor(value)
        t.name = name or unique_name.generate("generated_var")
        return t

    def create_parameter(self, attr, shape, dtype):
        """An eager parameter filled by ``attr.initializer``'s op run now: the op and math the static
        startup program runs, seeded by the main program's ``random_seed`` (fluid's dygraph creates
        parameters in the main program's block: with a seed set, two layers start equal)."""
        probe = SimpleNamespace(name=attr.name, shape=tuple(shape), dtype=dtype)
        op_type, attrs = attr.initializer._op(probe, default_main_program().global_block())
        spec = get_op_spec(op_type)
        merged = dict(spec.attrs)
        merged.update(attrs, shape=list(shape), dtype=dtype)
        value = spec.kernel(merged, *[None] * len(spec.inputs))  # no tensor inputs (shape etc. as attrs)
        xp = place_array_module(self.expected_place)
        if type(value) is not xp.ndarray:
            value = xp.asarray(value)
        kwargs = attr._to_kwargs()
        del kwargs["name"]
        return self.param_type(value, attr.name, **kwargs)

    def trace_op(self, type, inputs=None, outputs=None, attrs=None, **_ignored):
        """Run op ``type`` now (NOTE [ Eager autograd ]); outputs are written into ``outputs``' tensors."""
        spec, in_plan, out_plan = _PLANS.get(type) or _plan(type)
        inputs = inputs or _EMPTY
        if attrs:
            merged = dict(spec.attrs)
            merged.update(attrs)
            named_dtypes(spec, merged)
        else:
            merged = spec.attrs
        tensor_type, args, ins, need = self.tensor_type, [], [], []
        requires = False
        for slot, is_dup, differentiable in in_plan:
            v = inputs.get(slot)
            cls = v.__class__
            if cls is list or cls is tuple:
                v = (v if is_dup else v[0]) if v else None
            if v is None:
                args.append(None)
                ins.append(None)
                need.append(False)
                continue
            if is_dup:
                v = [t if isinstance(t, tensor_type) else self.eager_tensor(t) for t in v]
                args.append([t._value for t in v])
                n = differentiable and any(not t.stop_gradient for t in v)
            else:
                if not isinstance(v, tensor_type):
                    v = self.eager_tensor(v)
                args.append(v._value)
                n = differentiable and not v.stop_gradient
            requires = requires or n
            ins.append(v)
            need.append(n)
        if spec.inplace:  # an update kernel writes into its input: a copy unless the output is that tensor
            _copy_in_place_inputs(spec, ins, args, outputs or _EMPTY)
        if spec.context:  # kernel(ctx, attrs, ...): a context over this call's tensors (their LoD)
            ctx = _EagerContext(spec, ins)
            result = spec.kernel(ctx, merged, *args)
        else:
            ctx = None
            result = spec.kernel(merged, *args)
        outs = (result,) if len(out_plan) == 1 else tuple(result)
        node = None
        if requires and self._has_grad and spec.grad is not None:
            node = Node()
            node.spec = spec if ctx is None else SimpleNamespace(grad=functools.partial(spec.grad, ctx))
            node.attrs, node.ins, node.in_values = merged, ins, args
            node.out_values, node.need, node.seq, node.outs = outs, need, next(_sequence), []
        if outputs:
            for i, slot, is_dup in out_plan:
                ts = outputs.get(slot)
                if ts is None:
                    continue
                if is_dup:
                    for k, t in enumerate(ts):
                        _bind(t, outs[i][k], node, i, k)
                else:
                    cls = ts.__class__
                    _bind(ts[0] if cls is list or cls is tuple else ts, outs[i], node, i, -1)
            if ctx is not None and ctx.out_lods:
                _set_lods(outputs, ctx.out_lods)
        if self._recorder is not None:
            self._recorder(type, in_plan, ins, out_plan, outputs or _EMPTY, merged)


_PLANS = {}
"""op type -> (spec, input plan, output plan): slot facts looked up once per op type, not per call."""


def _copy_in_place_inputs(spec, ins, args, outputs):
    """NOTE [ In-place optimizer updates ] in ops/optimizer.py: an in-place kernel's input whose output is
    another tensor (or none) gets a copy, so the input tensor keeps its value."""
    for out_slot, in_slot in spec.inplace:
        i = spec.inputs.index(in_slot)
        if ins[i] is None:
            continue
        out = outputs.get(out_slot)
        if out.__class__ is list or out.__class__ is tuple:
            out = out[0] if out else None
        if out is not ins[i]:
            args[i] = args[i].copy()


def _plan(type):
    spec = get_op_spec(type)
    plan = _PLANS[type] = (
        spec, tuple((s, s in spec.duplicable, s not in spec.no_grad_inputs) for s in spec.inputs),
        tuple((i, s, s in spec.duplicable) for i, s in enumerate(spec.outputs)))
    return plan


class _EagerContext:
    """What a context op (kernel(ctx, attrs, ...)) gets in dygraph mode, one per call: its input tensors'
    LoD, the LoD it sets on its outputs and the program's random generator, as the Executor's context gives
    them (executor/context.py); scopes and sub-blocks only exist there."""

    __slots__ = ("_spec", "_ins", "out_lods")

    def __init__(self, spec, ins):
        self._spec, self._ins, self.out_lods = spec, ins, {}

    def input_lod(self, slot, index=0):
        """The LoD of input ``slot``'s ``index``-th tensor as recursive sequence lengths ([] for none)."""
        t = self._ins[self._spec.inputs.index(slot)]
        if isinstance(t, list):
            t = t[index]
        return [list(level) for level in getattr(t, "_lod", None) or []]

    def set_output_lod(self, slot, lod, index=0):
        """Give output ``slot``'s ``index``-th tensor this LoD (recursive sequence lengths; [] for none)."""
        self.out_lods[slot, index] = [list(level) for level in lod] if lod else []

    @property
    def random(self):
        program = default_main_program()
        seed = program.random_seed
        if not seed:
            return np.random
        held = program.__dict__.get("_eager_random")
        if held is None or held[0] != seed:
            held = program._eager_random = (seed, np.random.RandomState(seed))
        return held[1]

    def __getattr__(self, name):
        raise NotImplementedError(f"op {self._spec.type!r} asks the static Executor's context for {name!r} (scopes, "
                                  "sub-blocks); it cannot run eagerly in dygraph mode")


def _set_lods(outputs, lods):
    """Give the output tensors the LoD a context kernel set, by (slot, index)."""
    for (slot, index), lod in lods.items():
        ts = outputs.get(slot)
        if ts is None:
            continue
        t = ts[index] if isinstance(ts, (list, tuple)) else ts
        t._lod = lod


def _bind(t, value, node, slot, k):
    """Store an op result in tensor ``t``; a fresh tensor joins the graph (or becomes stop_gradient)."""
    fresh = t._value is None
    t._value = value
    if not fresh:  # an existing tensor overwritten in place (MeanOut, ParamOut ...): keep its flags
        return
    if node is not None and not t.stop_gradient and value is not None and value.dtype.kind == "f":
        t._node, t._slot, t._k = node, slot, k
        node.outs.append(weakref.ref(t))
    else:
        t.stop_gradient = True


# --- backward ------------------------------------------------------------------------------------------
def _add(pending, node, slot, k, g):
    douts = pending.get(node)
    if douts is None:
        douts = pending[node] = [None] * len(node.out_values)
    if k < 0:
        douts[slot] = g if douts[slot] is None else douts[slot] + g
        return
    parts = douts[slot]
    if parts is None:
        parts = douts[slot] = [None] * len(node.out_values[slot])
    parts[k] = g if parts[k] is None else parts[k] + g


def _route(t, g, pending):
    """Send gradient ``g`` to tensor ``t``: into its producer's pending outputs, or a leaf's ``_grad``."""
    if t.stop_gradient:
        return
    node = t._node
    if node is not None:
        _add(pending, node, t._slot, t._k, g)
        return
    value = t._value
    if g.dtype != value.dtype:
        g = g.astype(value.dtype)
    t._grad = g if t._grad is None else t._grad + g


def _reachable(start):
    seen, stack = {start}, [start]
    while stack:
        for t in stack.pop().ins:
            for u in (t if isinstance(t, list) else (t,)):
                if u is None or u.stop_gradient:
                    continue
                node = u._node
                if node is not None and node not in seen:
                    if node.ins is None:
                        raise RuntimeError(RELEASED_MESSAGE)
                    seen.add(node)
                    stack.append(node)
    return sorted(seen, key=lambda n: n.seq, reverse=True)


def _douts(node, douts):
    """Missing parts of a duplicable output's gradient become zeros (as backward.py's fill_zeros_like)."""
    for i, d in enumerate(douts):
        if isinstance(d, list):
            douts[i] = [array_module(v).zeros_like(v) if g is None else g for g, v in zip(d, node.out_values[i])]
    return tuple(douts)


def run_backward(root, grad=None, retain_graph=False):
    """Accumulate d(root)/d(leaf) into every leaf that requires a gradient, and give the non-leaf tensors
    still held their gradient (NOTE [ Eager autograd ]). A ``stop_gradient`` root computes nothing, as in
    fluid (with a warning saying so)."""
    if root._value is None:
        raise RuntimeError(f"backward() on {root.name!r}, which holds no data yet (no op has written it)")
    if root.stop_gradient:
        warnings.warn(f"backward() on {root.name!r}, which has stop_gradient=True, computes no gradient: nothing "
                      "that requires one was used to compute it (set stop_gradient=False on its inputs)",
                      stacklevel=3)
        return
    value = root._value
    seed = array_module(value).ones_like(value) if grad is None else grad
    start = root._node
    if start is None:
        _route(root, seed, {})
        return
    if start.ins is None:
        raise RuntimeError(RELEASED_MESSAGE)
    order = _reachable(start)
    pending = {}
    _add(pending, start, root._slot, root._k, seed)
    propagate(order, pending, _route, retain_graph, keep=True)


def _keep(node, douts):
    """fluid keeps every tensor's gradient: a live output tensor of a node being run gets its (final)
    gradient, zeros where none reached it (fluid's engine fills those). Tensors no longer held are gone
    by now (their consumers released them), so this keeps nothing the caller cannot see."""
    for ref in node.outs:
        t = ref()
        if t is None or t.stop_gradient:
            continue
        g = douts[t._slot]
        if t._k >= 0:
            g = g[t._k]
        t._grad = array_module(t._value).zeros_like(t._value) if g is None else g


def propagate(order, pending, route, retain_graph, keep=False):
    """Run the nodes of ``order`` (newest first) on the output gradients ``pending`` holds, handing each
    input gradient to ``route(tensor, grad, pending)``; each node is released once run (the rest at the
    end) unless ``retain_graph``. ``keep`` gives live non-leaf tensors their gradient (``_keep``)."""
    for node in order:
        douts = pending.pop(node, None)
        if douts is None:
            continue
        douts = _douts(node, douts)
        if keep:
            _keep(node, douts)
        ins, need = node.ins, node.need
        grads = node.spec.grad(node.attrs, node.in_values, node.out_values, douts, need)
        if not retain_graph:
            node.ins = node.in_values = node.out_values = None
        for t, g, needed in zip(ins, grads, need):
            if g is None or not needed:
                continue
            if isinstance(t, list):
                for u, gu in zip(t, g):
                    if gu is not None:
                        route(u, gu, pending)
            else:
                route(t, g, pending)
    if not retain_graph:
        for node in order:
            node.ins = node.in_values = node.out_values = None
