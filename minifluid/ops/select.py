"""Selection ops of fluid 1.8: index_select, index_sample (gradients add up at repeated indices), strided_slice,
multiplex, unique, unique_with_counts and shard_index (no gradient), dot (row-wise inner products)."""
import numpy as np

from ..dtypes import to_numpy_dtype
from .registry import array_module, register_grad, register_op


def _select_axis(attrs, ndim):
    dim = attrs["dim"]
    if not -ndim <= dim < ndim:
        raise ValueError(f"index_select: 'dim' ({dim}) must be in [-{ndim}, {ndim}) for an input of rank {ndim}")
    return dim % ndim


def _index_select_infer(attrs, x, index):
    if len(index.shape) != 1 and not (len(index.shape) == 2 and index.shape[1] == 1):
        raise ValueError(f"index_select: Index must be 1-D (or [N, 1]), got shape {list(index.shape)}")
    dim = _select_axis(attrs, len(x.shape))
    return (tuple(index.shape[0] if i == dim else d for i, d in enumerate(x.shape)), x.dtype)


# --- index_select: the slices of X at Index along dim --------------------------------------------------------
@register_op("index_select", inputs=("X", "Index"), outputs=("Out",), attrs={"dim": 0},
             no_grad_inputs=("Index",), infer_shape=_index_select_infer)
def _index_select_forward(attrs, x, index):
    return array_module(x).take(x, index.reshape(-1), axis=_select_axis(attrs, x.ndim))


@register_grad("index_select")
def _index_select_backward(attrs, ins, outs, douts, need):
    (x, index), dout = ins, douts[0]
    xp, dim = array_module(x), _select_axis(attrs, x.ndim)
    dx = xp.zeros_like(x)
    xp.add.at(xp.moveaxis(dx, dim, 0), index.reshape(-1), xp.moveaxis(dout, dim, 0))  # repeated indices add up
    return dx, None


# --- index_sample: out[i, j] = x[i, index[i, j]] ---------------------------------------------------------------
def _index_sample_infer(attrs, x, index):
    if len(x.shape) != 2 or len(index.shape) != 2:
        raise ValueError(f"index_sample: X and Index must be 2-D, got shapes {list(x.shape)} and {list(index.shape)}")
    if x.shape[0] >= 0 and index.shape[0] >= 0 and x.shape[0] != index.shape[0]:
        raise ValueError(f"index_sample: X and Index must have the same number of rows, got {x.shape[0]}, "
                         f"{index.shape[0]}")
    return (tuple(index.shape), x.dtype)


@register_op("index_sample", inputs=("X", "Index"), outputs=("Out",), no_grad_inputs=("Index",),
             infer_shape=_index_sample_infer)
def _index_sample_forward(attrs, x, index):
    _index_sample_infer(attrs, x, index)
    return array_module(x).take_along_axis(x, index, axis=1)


@register_grad("index_sample")
def _index_sample_backward(attrs, ins, outs, douts, need):
    (x, index), dout = ins, douts[0]
    xp = array_module(x)
    dx = xp.zeros_like(x)
    xp.add.at(dx, (xp.arange(x.shape[0])[:, None], index), dout)
    return dx, None


# --- unique / unique_with_counts: distinct values in order of first appearance ------------------------------------
def _unique(attrs, x):
    xp = array_module(x)
    values, first, inverse, counts = xp.unique(x.reshape(-1), return_index=True, return_inverse=True,
                                               return_counts=True)
    order = xp.argsort(first, kind="stable")  # sorted values -> first-appearance order
    position = xp.empty_like(order)
    position[order] = xp.arange(order.size)
    dtype = to_numpy_dtype(attrs["dtype"])
    return values[order], position[inverse.reshape(-1)].astype(dtype), counts[order].astype(dtype)


_UNIQUE_INFER = (lambda attrs, x: ((-1,), x.dtype), lambda attrs, x: ((int(np.prod(x.shape)) if min(x.shape) >= 0
                                                                       else -1,), attrs["dtype"]))


@register_op("unique", inputs=("X",), outputs=("Out", "Index"), attrs={"dtype": "int32"}, no_gradient=True,
             infer_shape=lambda attrs, x: (_UNIQUE_INFER[0](attrs, x), _UNIQUE_INFER[1](attrs, x)))
def _unique_forward(attrs, x):
    return _unique(attrs, x)[:2]


@register_op("unique_with_counts", inputs=("X",), outputs=("Out", "Index", "Count"), attrs={"dtype": "int32"},
             no_gradient=True, infer_shape=lambda attrs, x: (_UNIQUE_INFER[0](attrs, x), _UNIQUE_INFER[1](attrs, x),
                                                             ((-1,), attrs["dtype"])))
def _unique_with_counts_forward(attrs, x):
    return _unique(attrs, x)


# --- dot: inner products of X's and Y's last dimension (rows of a 2-D pair) ----------------------------------------
def _dot_infer(attrs, x, y):
    if len(x.shape) not in (1, 2) or tuple(x.shape) != tuple(y.shape):
        raise ValueError(f"dot: X and Y must be 1-D or 2-D tensors of one shape, got {list(x.shape)} and "
                         f"{list(y.shape)}")
    return (tuple(x.shape[:-1]) + (1,), x.dtype)


@register_op("dot", inputs=("X", "Y"), outputs=("Out",), infer_shape=_dot_infer)
def _dot_forward(attrs, x, y):
    _dot_infer(attrs, x, y)
    return (x * y).sum(axis=-1, keepdims=True)


@register_grad("dot")
def _dot_backward(attrs, ins, outs, douts, need):
    (x, y), dout = ins, douts[0]
    return (dout * y if need[0] else None), (dout * x if need[1] else None)


# --- strided_slice: x[start:end:stride] along the listed axes (Python's slice rules) -------------------------------
def _strided_slices(attrs, shape, starts=None, ends=None, strides=None):
    axes = list(attrs["axes"])
    starts = list(attrs["starts"]) if starts is None else [int(v) for v in starts.reshape(-1)]
    ends = list(attrs["ends"]) if ends is None else [int(v) for v in ends.reshape(-1)]
    strides = list(attrs["strides"]) if strides is None else [int(v) for v in strides.reshape(-1)]
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError(f"strided_slice: axes, starts, ends and strides must have one length, got {len(axes)}, "
                         f"{len(starts)}, {len(ends)} and {len(strides)}")
    if 0 in strides:
        raise ValueError("strided_slice: a stride of 0 is not allowed")
    index = [slice(None)] * len(shape)
    for axis, start, end, stride in zip(axes, starts, ends, strides):
        if not 0 <= axis < len(shape):
            raise ValueError(f"strided_slice: axis {axis} is out of range for an input of rank {len(shape)}")
        index[axis] = slice(start, end, stride)
    return tuple(index)


def _strided_slice_infer(attrs, x, *tensors):
    index = _strided_slices(attrs, x.shape)
    if any(t is not None for t in tensors):
        return (tuple(-1 if s != slice(None) else d for s, d in zip(index, x.shape)), x.dtype)
    return (tuple(len(range(*s.indices(d))) if d >= 0 else -1 for s, d in zip(index, x.shape)), x.dtype)


@register_op("strided_slice", inputs=("Input", "StartsTensor", "EndsTensor", "StridesTensor"), outputs=("Out",),
             optional=("StartsTensor", "EndsTensor", "StridesTensor"),
             no_grad_inputs=("StartsTensor", "EndsTensor", "StridesTensor"),
             attrs={"axes": [], "starts": [], "ends": [], "strides": [], "infer_flags": []},
             infer_shape=_strided_slice_infer)
def _strided_slice_forward(attrs, x, starts, ends, strides):
    return x[_strided_slices(attrs, x.shape, starts, ends, strides)].copy()


@register_grad("strided_slice")
def _strided_slice_backward(attrs, ins, outs, douts, need):
    x, starts, ends, strides = ins
    dx = array_module(x).zeros_like(x)
    dx[_strided_slices(attrs, x.shape, starts, ends, strides)] = douts[0]
    return dx, None, None, None


# --- multiplex: row i of the output is row i of X[Ids[i]] ----------------------------------------------------------
@register_op("multiplex", inputs=("X", "Ids"), outputs=("Out",), duplicable=("X",), no_grad_inputs=("Ids",),
             infer_shape=lambda attrs, xs, ids: (xs[0].shape, xs[0].dtype))
def _multiplex_forward(attrs, xs, ids):
    rows = ids.reshape(-1)
    if rows.size and (rows.min() < 0 or rows.max() >= len(xs)):
        raise IndexError(f"multiplex: Ids must be in [0, {len(xs)}), got values from {rows.min()} to {rows.max()}")
    xp = array_module(xs[0])
    return xp.stack(xs)[rows, xp.arange(rows.size)]


@register_grad("multiplex")
def _multiplex_backward(attrs, ins, outs, douts, need):
    (xs, ids), dout = ins, douts[0]
    rows = ids.reshape(-1)
    xp = array_module(dout)
    mask = (rows[None, :] == xp.arange(len(xs))[:, None]).reshape((len(xs), -1) + (1,) * (dout.ndim - 1))
    return [dout * m for m in mask], None


# --- shard_index: an index's position inside its shard, or ignore_value outside shard_id ---------------------------
@register_op("shard_index", inputs=("X",), outputs=("Out",), no_gradient=True,
             attrs={"index_num": 0, "nshards": 1, "shard_id": 0, "ignore_value": -1},
             infer_shape=lambda attrs, x: (x.shape, x.dtype))
def _shard_index_forward(attrs, x):
    size = (attrs["index_num"] + attrs["nshards"] - 1) // attrs["nshards"]
    inside = x // size == attrs["shard_id"]
    return array_module(x).where(inside, x - attrs["shard_id"] * size, attrs["ignore_value"]).astype(x.dtype)
