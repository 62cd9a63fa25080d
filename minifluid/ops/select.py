"""Selection ops of fluid 1.8: index_select, index_sample (gradients add up at repeated indices), strided_slice,
multiplex, unique, unique_with_counts and shard_index (no gradient), dot (row-wise inner products)."""
import numpy as np

from ..dtypes import to_numpy_dtype
from .index import decreased, infer_flags, takes_last
from .registry import array_module, register_grad, register_op
from .tensor_attrs import int_list, known_list


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


# --- strided_slice: x[start:end:stride] along the listed axes (Python's slice rules); bounds may come from tensors --
_STRIDED_TENSORS = ("StartsTensor", "EndsTensor", "StridesTensor", "StartsTensorList", "EndsTensorList",
                    "StridesTensorList")
_BOUNDS = ("starts", "ends", "strides")


def _strided_bounds(attrs, tensors):
    """starts, ends and strides at run time (from their tensors when given), of one length with axes."""
    values = [int_list(attrs[name], tensors[i], tensors[i + 3]) for i, name in enumerate(_BOUNDS)]
    if not len(attrs["axes"]) == len(values[0]) == len(values[1]) == len(values[2]):
        raise ValueError(f"strided_slice: axes, starts, ends and strides must have one length, got "
                         f"{len(attrs['axes'])}, {len(values[0])}, {len(values[1])} and {len(values[2])}")
    return values


def _strided_slices(attrs, shape, starts, ends, strides):
    if 0 in strides:
        raise ValueError("strided_slice: a stride of 0 is not allowed")
    index = [slice(None)] * len(shape)
    for i, (axis, start, end, stride) in enumerate(zip(attrs["axes"], starts, ends, strides)):
        if not 0 <= axis < len(shape):
            raise ValueError(f"strided_slice: axis {axis} is out of range for an input of rank {len(shape)}")
        index[axis] = slice(start, None if takes_last(attrs, i, start, end) else end, stride)
    return tuple(index)


def _strided_slice_infer(attrs, x, *tensors):
    """A bound that a tensor gives (a whole-list one: all, a per-entry one: infer_flags -1) leaves its
    dimension -1 (fluid makes every dimension -1 for a whole-list tensor; the others are known)."""
    axes = attrs["axes"]
    for i, name in enumerate(_BOUNDS):
        given = len(tensors[i + 3]) if tensors[i + 3] else len(attrs[name])
        if tensors[i] is None and given != len(axes):
            raise ValueError(f"The size of {name} attribute in StridedSlice operator is not equal to the size of "
                             f"axes attribute. The {name} attribute's size is {given}, axes attribute's size is "
                             f"{len(axes)}.")
    if any(t is not None for t in tensors[:3]):
        return (decreased(attrs, [-1 if i in axes else d for i, d in enumerate(x.shape)]), x.dtype)
    values = [known_list(attrs[name], None, tensors[i + 3]) for i, name in enumerate(_BOUNDS)]
    flags, out = infer_flags(attrs), list(x.shape)
    for i, (axis, start, end, stride) in enumerate(zip(axes, *values)):
        if takes_last(attrs, i, start, end):
            out[axis] = 1
        elif flags[i] == -1:
            out[axis] = -1
        elif out[axis] >= 0:
            index = _strided_slices({**attrs, "axes": [axis]}, x.shape, [start], [end], [stride])
            out[axis] = len(range(*index[axis].indices(out[axis])))
    return (decreased(attrs, out), x.dtype)


@register_op("strided_slice", inputs=("Input",) + _STRIDED_TENSORS, outputs=("Out",), optional=_STRIDED_TENSORS,
             duplicable=_STRIDED_TENSORS[3:], no_grad_inputs=_STRIDED_TENSORS,
             attrs={"axes": [], "starts": [], "ends": [], "strides": [], "infer_flags": [], "decrease_axis": []},
             infer_shape=_strided_slice_infer)
def _strided_slice_forward(attrs, x, *tensors):
    out = x[_strided_slices(attrs, x.shape, *_strided_bounds(attrs, tensors))]
    return out.reshape(decreased(attrs, list(out.shape))) if attrs["decrease_axis"] else out.copy()


@register_grad("strided_slice")
def _strided_slice_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    dx = array_module(x).zeros_like(x)
    index = _strided_slices(attrs, x.shape, *_strided_bounds(attrs, ins[1:]))
    dx[index] = douts[0].reshape(dx[index].shape)
    return (dx, None, None, None, [], [], [])  # [] (not None) for the duplicable TensorList slots


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
