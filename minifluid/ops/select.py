"""Selection ops of fluid 1.8: index_select, index_sample (gradients add up at repeated indices), unique and
unique_with_counts (no gradient), dot (row-wise inner products)."""
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
