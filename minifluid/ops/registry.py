"""The op registry: one OpSpec per op type keeps kernel, shape inference and gradient together.

An op family module defines each op as one contiguous block::

    @register_op("relu", inputs=("X",), outputs=("Out",), infer_shape=same_as(0))
    def _relu_forward(attrs, x):
        return np.maximum(x, 0)

    @register_grad("relu")
    def _relu_backward(attrs, ins, outs, douts, need):
        (out,), (dout,) = outs, douts
        return (dout * (out > 0),)

Kernel convention: ``kernel(attrs, *inputs)`` gets one array per input slot (a list for a
duplicable slot, None for an absent optional slot) and returns one array, or a tuple in
output-slot order (None for an output nobody asked for).

Grad convention: ``grad(attrs, ins, outs, douts, need)`` gets tuples aligned with the
forward input/output slots (``douts[i]`` is None when output i has no gradient) and the
tuple ``need`` of booleans per input slot; it returns one gradient per input slot (None
where not needed). The backward pass appends ``<type>_grad`` ops whose spec is derived
here, so the Executor and dygraph run gradients through the same table. An op that has
no gradient (fluid has none either: optimizer updates, random fills, comparisons) says so
with ``register_op(..., no_gradient=True)``. An op whose backward is not one mechanical grad op
registers a builder instead: ``@register_grad(type, builder=True)`` on ``fn(op, grads)``, which
returns the ops to append as ``(type, inputs, outputs, attrs)`` tuples; ``grads.output(slot)``
names the gradients of the op's outputs (None where one has none) and ``grads.input(slot)`` the
variables to write the gradients of its inputs into (``@EMPTY@`` where none is needed).

Context kernels: an op registered with ``context=True`` (sub-blocks, LoD, scopes) has the kernel
``kernel(ctx, attrs, *inputs)``; ``ctx`` is an ``ExecutionContext`` (executor/context.py) with
the inputs' LoD, the outputs' LoD to set, a scope lookup that falls back to parent scopes,
``run_block``, the place and the program's random generator. LoD rules: ``share_lod={"Out":
"X"}`` gives output Out the LoD of input X (fluid's ShareLoD); the executor adds that step only
where X can carry LoD (executor/executor.py's NOTE), so ops on plain tensors pay nothing for it.
The derived ``<type>_grad`` op gives each ``X@GRAD`` the LoD of X for every X the forward shares
from (fluid's grad ops ShareLoD so); ``grad_share_lod={...}`` states another rule for it (``{}``
for none). ``produces_lod=True``: the kernel returns LoDTensors whose LoD the executor keeps.

Kernels use ``array_module(x)`` instead of ``numpy`` where a function (not a method) is
needed, so the same code runs on CuPy arrays.
"""
import difflib
import sys
from dataclasses import dataclass, field

import numpy as np

__all__ = ["InvalidArgumentError", "OpSpec", "register_op", "register_grad", "get_op_spec", "op_type_hint", "registered_ops", "array_module",
           "same_as", "GRAD_SUFFIX", "grad_var_name", "COMMON_ATTRS", "OpRole", "EMPTY_VAR_NAME"]

GRAD_SUFFIX = "@GRAD"
EMPTY_VAR_NAME = "@EMPTY@"  # a grad op's slot entry for a gradient nobody computes or wants
COMMON_ATTRS = {"op_role": 0, "op_role_var": [], "op_namescope": "/", "op_callstack": [],
                "op_device": "", "with_quant_attr": False}


class OpRole:
    """fluid's op_role attribute values (used to split forward/backward from optimizer ops)."""
    Forward = 0
    Backward = 1
    Optimize = 2
    LRSched = 16
    Loss = 256


def grad_var_name(name):
    return name + GRAD_SUFFIX


_cupy = None


def array_module(x):
    """numpy, or cupy when ``x`` is a CuPy array (CuPy is imported only if installed)."""
    if type(x) is np.ndarray or _cupy is None:
        return np
    return _cupy.get_array_module(x)


def _enable_cupy(cupy):
    """Let ``array_module`` recognise CuPy arrays (places.py calls this once CuPy has imported)."""
    global _cupy
    _cupy = cupy


@dataclass
class OpSpec:
    """Everything the framework knows about one op type."""
    type: str
    inputs: tuple
    outputs: tuple
    kernel: object
    attrs: dict = field(default_factory=dict)
    infer_shape: object = None
    grad: object = None
    duplicable: frozenset = frozenset()
    optional: frozenset = frozenset()
    no_grad_inputs: frozenset = frozenset()
    produces_lod: bool = False
    no_gradient: bool = False
    source: str = ""
    forward: "OpSpec" = None
    context: bool = False
    share_lod: tuple = ()
    grad_builder: object = None
    grad_source: str = ""
    grad_share_lod: tuple = None
    grad_reads: frozenset = None  # forward slots the grad kernel reads (None: all); register_grad's ``reads``
    grad_when: object = None  # register_grad's ``when``
    grad_out_slots: frozenset = None  # register_grad's ``out_grads`` (None: every output slot)
    inplace: tuple = ()  # register_op's ``inplace``: (output slot, input slot) pairs

    @property
    def has_grad(self):
        """The op has a gradient: a grad kernel or a builder of grad ops."""
        return self.grad is not None or self.grad_builder is not None

    def differentiates(self, op):
        """This instance of the op has a gradient (``has_grad``, and register_grad's ``when`` holds for it)."""
        return self.has_grad and (self.grad_when is None or self.grad_when(op))

    def bind(self, op):
        """A callable ``fn(*input_values)`` for one op instance (attrs and grad needs baked in)."""
        attrs = op.attrs
        kernel = self.kernel
        if self.forward is None:
            return lambda *args: kernel(attrs, *args)
        fwd = self.forward
        n_in, n_out = len(fwd.inputs), len(fwd.outputs)
        need = tuple(bool(op.outputs.get(grad_var_name(s))) for s in fwd.inputs)
        grad = fwd.grad

        if n_in == 1:  # a single output slot: the executor expects the value itself
            return lambda *args: grad(attrs, args[:1], args[1:1 + n_out], args[1 + n_out:], need)[0]
        return lambda *args: grad(attrs, args[:n_in], args[n_in:n_in + n_out], args[n_in + n_out:], need)


_REGISTRY = {}


def _caller_site(depth=2):
    frame = sys._getframe(depth)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class InvalidArgumentError(ValueError, RuntimeError):
    """A kernel refuses its arguments at run time: a ValueError, and the RuntimeError minifluid's core calls
    ``EnforceNotMet`` (what fluid raised there), so either ``except`` catches it."""


def register_op(type, inputs, outputs, attrs=None, infer_shape=None, duplicable=(), optional=(),
                no_grad_inputs=(), produces_lod=False, no_gradient=False, context=False, share_lod=None,
                grad_share_lod=None, inplace=None):
    """Decorator registering ``fn`` as the forward kernel of op ``type``; refuses duplicates.
    ``no_gradient=True`` states that the op has no gradient (``register_grad`` then refuses one);
    ``context`` and ``share_lod``: see the module docstring. ``inplace``: {output slot: input slot} the
    kernel writes its result into the input's array (an optimizer's ParamOut <- Param): the Executor and
    the dygraph tracer hand it a copy when the output is another variable, or the input a fed array."""
    def deco(fn):
        site = _caller_site()
        if type in _REGISTRY:
            raise ValueError(f"op {type!r} registered twice: at {_REGISTRY[type].source} and at {site}")
        shared = tuple((share_lod or {}).items())
        grad_shared = (tuple((grad_var_name(i), i) for i in dict.fromkeys(i for _, i in shared))
                       if grad_share_lod is None else tuple(grad_share_lod.items()))
        unknown = [f"{o} <- {i}" for o, i in shared if o not in outputs or i not in inputs]
        unknown += [f"{o} <- {i}" for o, i in grad_shared
                    if o not in [grad_var_name(s) for s in inputs] or i not in tuple(inputs) + tuple(outputs)]
        if unknown:
            raise ValueError(f"op {type!r}: share_lod names slots it does not have: {unknown}")
        pairs = tuple((inplace or {}).items())
        if any(o not in outputs or i not in inputs for o, i in pairs):
            raise ValueError(f"op {type!r}: inplace names slots it does not have: {pairs}")
        _REGISTRY[type] = OpSpec(type, tuple(inputs), tuple(outputs), fn, dict(attrs or {}), infer_shape,
                                 None, frozenset(duplicable), frozenset(optional),
                                 frozenset(no_grad_inputs), produces_lod, no_gradient, site, context=context,
                                 share_lod=shared, grad_share_lod=grad_shared, inplace=pairs)
        return fn
    return deco


def register_grad(type, builder=False, reads=None, when=None, eager=None, out_grads=None):
    """Decorator registering ``fn`` as the gradient of ``type``: a grad kernel, from which the
    ``<type>_grad`` spec is derived, or with ``builder=True`` a builder of grad ops (module docstring).
    ``reads``: the forward input/output slots the grad kernel uses (default all); append_backward wires
    only those into the grad op and the kernel gets None for the others, so a run does not keep their
    values alive until the backward pass (NOTE [ Freeing intermediates ] in executor/executor.py).
    ``out_grads``: the forward output slots whose gradients the kernel reads (default all): the others are
    statistics or scratch (batch_norm's MeanOut, SavedMean, ...), and a grad op is never wired to their
    gradients (``core.get_grad_op_desc`` makes none, as fluid's grad op makers list only the ones they read).
    ``when``: a predicate on the forward Operator, for an op whose instances have a gradient or not by
    their attrs (py_func without a backward function); append_backward treats the others as gradient-free.
    ``eager``: with ``builder=True``, a grad kernel (grad convention) for dygraph and the op checker, which
    run no grad ops (cast's gradient is a cast op in a Program, this kernel in dygraph).
    Refuses a second gradient and one for an op registered with ``no_gradient=True``."""
    def deco(fn):
        fwd = get_op_spec(type)
        site = _caller_site()
        if fwd.no_gradient:
            raise ValueError(f"op {type!r} (at {fwd.source}) is registered with no_gradient=True; its gradient "
                             f"at {site} contradicts that")
        if fwd.has_grad:
            raise ValueError(f"op {type!r} has its gradient registered twice: at {fwd.grad_source} and at {site}")
        fwd.grad_source = site
        fwd.grad_when = when
        fwd.grad_out_slots = None if out_grads is None else frozenset(out_grads)
        if builder:
            fwd.grad_builder, fwd.grad = fn, eager
            return fn
        fwd.grad = fn
        fwd.grad_reads = None if reads is None else frozenset(reads)
        grad_type = type + "_grad"
        dup = fwd.duplicable
        _REGISTRY[grad_type] = OpSpec(
            grad_type,
            fwd.inputs + fwd.outputs + tuple(grad_var_name(s) for s in fwd.outputs),
            tuple(grad_var_name(s) for s in fwd.inputs),
            _context_grad_kernel(fwd) if fwd.context else None, dict(fwd.attrs),
            duplicable=dup | frozenset(grad_var_name(s) for s in dup),
            optional=frozenset(fwd.inputs + fwd.outputs) | frozenset(grad_var_name(s) for s in fwd.outputs),
            source=site, forward=fwd, context=fwd.context,
            share_lod=fwd.grad_share_lod or ())  # None: a grad op's own gradient
        return fn
    return deco


def _context_grad_kernel(fwd):
    """The kernel of a context op's ``<type>_grad``: ``grad(ctx, attrs, ins, outs, douts, need)``, the
    grad convention with the ExecutionContext first (the forward's inputs' LoD is the grad op's)."""
    n_in, n_out = len(fwd.inputs), len(fwd.outputs)

    def kernel(ctx, attrs, *args):
        need = tuple(bool(ctx.op.outputs.get(grad_var_name(s))) for s in fwd.inputs)
        result = fwd.grad(ctx, attrs, args[:n_in], args[n_in:n_in + n_out], args[n_in + n_out:], need)
        return result[0] if n_in == 1 else result
    return kernel


def get_op_spec(type):
    try:
        return _REGISTRY[type]
    except KeyError:
        raise KeyError(f"Operator {type!r} is not registered in minifluid.{op_type_hint(type)}") from None


def op_type_hint(type):
    """`` Did you mean a, b?`` with the registered op types closest to ``type``, or ''."""
    close = difflib.get_close_matches(type, list(_REGISTRY), n=3)
    return f" Did you mean {', '.join(close)}?" if close else ""


def registered_ops():
    return dict(_REGISTRY)


def same_as(slot_index=0):
    """infer_shape helper: the (only) output has the shape and dtype of input ``slot_index``."""
    def infer(attrs, *ins):
        x = ins[slot_index]
        return (x.shape, x.dtype)
    return infer
