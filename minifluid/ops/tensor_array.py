"""Tensor arrays (fluid's LoDTensorArray variables): write_to_array, read_from_array, lod_array_length,
and their gradients.

NOTE [ Tensor array values ]
An array variable's value is a ``TensorArray``: a list whose entries are ``(array, lod)`` pairs (lod: the
entry's recursive sequence lengths, [] for none; None for an index never written). Writing mutates the
list in place and hands the same object back, so a loop body that writes ``array[i]`` writes into the
array its enclosing block holds. Every run of the block that declares an array variable starts it empty
(executor/executor.py), as fluid creates it afresh in each run's local scope.
The gradient of an array is an array of gradients of the same name plus ``@GRAD``; its ops accumulate
into it in place (read_from_array's gradient adds into entry i, write_to_array's reads entry i), so the
contributions of every loop step meet there without a ``sum`` op (backward.py).
"""
import numpy as np

from .registry import array_module, register_grad, register_op

__all__ = ["TensorArray", "as_index"]


class TensorArray(list):
    """The value of a LOD_TENSOR_ARRAY variable (see the NOTE)."""

    def entry(self, i, name="array"):
        if i >= len(self) or self[i] is None:
            raise IndexError(f"Tensor array {name!r} has no element {i}: it holds {len(self)} element(s) "
                             f"(written indices {[k for k, e in enumerate(self) if e is not None]})")
        return self[i]

    def put(self, i, value, lod):
        if i >= len(self):
            self.extend([None] * (i + 1 - len(self)))
        self[i] = (value, lod)


def as_index(value, what="I"):
    """The int held by a one-element integer tensor (an array index or a step counter)."""
    arr = np.asarray(value.get() if hasattr(value, "get") and not isinstance(value, np.ndarray) else value)
    if arr.size != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{what} must be a one-element integer tensor (int64 [1]), got dtype {arr.dtype} "
                         f"shape {list(arr.shape)}")
    i = int(arr.reshape(-1)[0])
    if i < 0:
        raise IndexError(f"{what} must be non-negative, got {i}")
    return i


def _array_of(ctx, slot="Out"):
    """The array an op writes into (its current value), created empty when it has none yet."""
    name = ctx.op.outputs[slot][0]
    arr = ctx.find_value(name)
    if arr is None:
        return TensorArray(), name
    if not isinstance(arr, list):
        raise TypeError(f"Variable {name!r} is not a tensor array (create it with fluid.layers.create_array); "
                        f"it holds a {type(arr).__name__}")
    return arr, name


@register_op("write_to_array", inputs=("X", "I"), outputs=("Out",), context=True)
def _write_to_array_forward(ctx, attrs, x, i):
    """``Out[I] = X`` (with X's LoD), in place; the array grows as needed."""
    arr, _ = _array_of(ctx)
    arr.put(as_index(i), x, ctx.input_lod("X"))
    return arr


@register_op("read_from_array", inputs=("X", "I"), outputs=("Out",), context=True)
def _read_from_array_forward(ctx, attrs, arr, i):
    """``Out = X[I]`` with the LoD it was written with."""
    value, lod = arr.entry(as_index(i), ctx.op.inputs["X"][0])
    ctx.set_output_lod("Out", lod)
    return value


@register_op("lod_array_length", inputs=("X",), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, x: ((1,), "int64"))
def _lod_array_length_forward(attrs, arr):
    return np.array([len(arr)], dtype="int64")


# --- gradients: in place on the array of gradients (see the NOTE) ------------------------------------
@register_op("read_from_array_grad", inputs=("X", "I", "Out@GRAD"), outputs=("X@GRAD",), context=True,
             no_gradient=True)
def _read_from_array_grad(ctx, attrs, arr, i, dout):
    """``X@GRAD[I] += Out@GRAD``."""
    grads, _ = _array_of(ctx, "X@GRAD")
    k = as_index(i)
    if dout is not None:
        held = grads[k] if k < len(grads) else None
        grads.put(k, dout if held is None else held[0] + dout, arr.entry(k)[1])
    return grads


@register_op("write_to_array_grad", inputs=("X", "I", "Out@GRAD"), outputs=("X@GRAD",), context=True,
             no_gradient=True)
def _write_to_array_grad(ctx, attrs, x, i, grads):
    """``X@GRAD = Out@GRAD[I]`` (zeros where nothing flowed back into that entry)."""
    k = as_index(i)
    held = grads[k] if grads is not None and k < len(grads) else None
    ctx.set_output_lod("X@GRAD", ctx.input_lod("X"))
    return array_module(x).zeros_like(x) if held is None else held[0]


# --- whole tensors to and from arrays (StaticRNN's step inputs and outputs) --------------------------
@register_op("tensor_to_array", inputs=("X",), outputs=("Out",), attrs={"axis": 0}, context=True)
def _tensor_to_array_forward(ctx, attrs, x):
    """``Out[t] = X[t]`` along ``axis`` (the axis removed): one entry per step."""
    arr, _ = _array_of(ctx)
    del arr[:]
    xp = array_module(x)
    for t in range(x.shape[attrs["axis"]]):
        arr.put(t, xp.take(x, t, axis=attrs["axis"]), [])
    return arr


@register_op("tensor_to_array_grad", inputs=("X", "Out@GRAD"), outputs=("X@GRAD",), attrs={"axis": 0},
             no_gradient=True)
def _tensor_to_array_grad(attrs, x, grads):
    """The step gradients stacked back along ``axis`` (zeros for a step no gradient reached)."""
    xp, axis = array_module(x), attrs["axis"]
    if grads is None:
        return xp.zeros_like(x)
    zero = xp.zeros_like(xp.take(x, 0, axis=axis))
    return xp.stack([grads[t][0] if t < len(grads) and grads[t] is not None else zero
                     for t in range(x.shape[axis])], axis=axis)


@register_op("tensor_array_to_tensor", inputs=("X",), outputs=("Out", "OutIndex"),
             attrs={"axis": 1, "use_stack": False})
def _tensor_array_to_tensor_forward(attrs, arr):
    """The entries concatenated (or stacked, ``use_stack``) along ``axis``; OutIndex: each entry's size on
    ``axis`` (stacked too, as fluid's kernel gives it)."""
    values = [arr.entry(t)[0] for t in range(len(arr))]
    if not values:
        raise ValueError("tensor_array_to_tensor: the array is empty")
    xp, axis = array_module(values[0]), attrs["axis"]
    out = xp.stack(values, axis=axis) if attrs["use_stack"] else xp.concatenate(values, axis=axis)
    sizes = [v.shape[axis] if axis < v.ndim else 1 for v in values]
    return out, np.array(sizes, dtype="int32")


@register_op("tensor_array_to_tensor_grad", inputs=("X", "Out@GRAD"), outputs=("X@GRAD",),
             attrs={"axis": 1, "use_stack": False}, context=True, no_gradient=True)
def _tensor_array_to_tensor_grad(ctx, attrs, arr, dout):
    """Out@GRAD cut back into the entries' shapes, added into the array of gradients."""
    grads, _ = _array_of(ctx, "X@GRAD")
    axis, start = attrs["axis"], 0
    xp = array_module(dout)
    for t in range(len(arr)):
        value, lod = arr.entry(t)
        size = 1 if attrs["use_stack"] else value.shape[axis]
        part = xp.take(dout, range(start, start + size), axis=axis).reshape(value.shape)
        start += size
        held = grads[t] if t < len(grads) else None
        grads.put(t, part if held is None else held[0] + part, lod)
    return grads


def _array_grad_builder(grad_type):
    def build(op, grads):
        return [(grad_type, {"X": op.inputs["X"], "I": op.inputs["I"], "Out@GRAD": grads.output("Out")},
                 {"X@GRAD": grads.input("X")}, {})]
    return build


register_grad("read_from_array", builder=True)(_array_grad_builder("read_from_array_grad"))
register_grad("write_to_array", builder=True)(_array_grad_builder("write_to_array_grad"))


@register_grad("tensor_to_array", builder=True)
def _build_tensor_to_array_grad(op, grads):
    return [("tensor_to_array_grad", {"X": op.inputs["X"], "Out@GRAD": grads.output("Out")},
             {"X@GRAD": grads.input("X")}, {"axis": op.attrs["axis"]})]


@register_grad("tensor_array_to_tensor", builder=True)
def _build_tensor_array_to_tensor_grad(op, grads):
    return [("tensor_array_to_tensor_grad", {"X": op.inputs["X"], "Out@GRAD": grads.output("Out")},
             {"X@GRAD": grads.input("X")}, {"axis": op.attrs["axis"], "use_stack": op.attrs["use_stack"]})]
