"""Indexing ops: arg_max, arg_min, argsort, slice, shape, one_hot (and v2), gather, scatter, expand.

Each kernel is one or a few numpy calls over the whole tensor (fancy indexing, ``np.add.at`` for
gradients that add up at repeated indices). Infer-shape keeps unknown (-1) dims as -1.
"""
import numpy as np

from ..dtypes import convert_dtype, to_numpy_dtype
from .registry import array_module, register_grad, register_op
from .tensor_attrs import int_list, known_list


# --- arg_max / arg_min ---------------------------------------------------------------------------
def _arg_infer(attrs, x):
    if attrs["flatten"]:
        return ((1,), "int64")
    axis = attrs["axis"] % len(x.shape)
    shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape) if attrs["keepdims"] or i != axis)
    return (shape or (1,), convert_dtype(attrs["dtype"]) if attrs["dtype"] != -1 else "int64")


def _register_arg(name, fn):
    def kernel(attrs, x):
        rank = x.ndim
        if not -rank <= attrs["axis"] < max(rank, 1):
            raise ValueError(f"'axis'({attrs['axis']}) must be in range [-{rank}, {rank}) for {name}, got "
                             f"input of rank {rank}")
        xp = array_module(x)
        out = fn(x.reshape(-1)) if attrs["flatten"] else fn(x, axis=attrs["axis"])
        out = xp.expand_dims(out, attrs["axis"]) if attrs["keepdims"] and not attrs["flatten"] else out
        dtype = np.int64 if attrs["dtype"] == -1 else to_numpy_dtype(attrs["dtype"])
        return xp.asarray(out, dtype=dtype).reshape(out.shape or (1,))
    register_op(name, inputs=("X",), outputs=("Out",), no_gradient=True, infer_shape=_arg_infer,
                attrs={"axis": -1, "keepdims": False, "flatten": False, "dtype": -1})(kernel)


_register_arg("arg_max", np.argmax)
_register_arg("arg_min", np.argmin)


# --- argsort: sorted values and their indices along one axis -----------------------------------------
@register_op("argsort", inputs=("X",), outputs=("Out", "Indices"), attrs={"axis": -1, "descending": False},
             infer_shape=lambda attrs, x: ((x.shape, x.dtype), (x.shape, "int64")))
def _argsort_forward(attrs, x):
    xp = array_module(x)
    axis = attrs["axis"]
    order = xp.argsort(-x if attrs["descending"] else x, axis=axis, kind="stable")
    return xp.take_along_axis(x, order, axis=axis), order.astype(np.int64, copy=False)


@register_grad("argsort")
def _argsort_backward(attrs, ins, outs, douts, need):
    x, order, dout = ins[0], outs[1], douts[0]
    dx = array_module(x).zeros_like(x)
    array_module(x).put_along_axis(dx, order, dout, axis=attrs["axis"])
    return (dx,)


# --- slice: fluid's clipping of negative and out-of-range bounds; bounds may come from tensors -------------
def _slice_bounds(axes, starts, ends, shape):
    """[(axis, start, end)] as fluid's slice_op clips them (unknown dims keep their bounds)."""
    if len(starts) != len(axes):
        raise ValueError("The size of starts must be equal to the size of axes.")
    if len(ends) != len(axes):
        raise ValueError("The size of ends must be equal to the size of axes.")
    bounds = []
    for axis, start, end in zip(axes, starts, ends):
        if axis >= len(shape):
            raise ValueError(f"The index of dimension in axes must be less than the size of input shape "
                             f"({axis} >= {len(shape)}).")
        dim = shape[axis]
        if dim >= 0:
            start = max(start + dim if start < 0 else start, 0)
            end = min(max(end + dim if end < 0 else end, 0), dim)
            if end <= start:
                raise ValueError(f"end should greater than start (axis {axis}: start {start}, end {end} of {dim})")
        bounds.append((axis, start, end))
    return bounds


def decreased(attrs, out):
    """``out`` without slice's / strided_slice's decreased axes (each of size 1, or -1 when not known)."""
    for axis in attrs["decrease_axis"]:
        if out[axis] not in (1, -1):
            raise ValueError(f"decrease dim should be 1 (axis {axis} has {out[axis]})")
    kept = [d for i, d in enumerate(out) if i not in set(attrs["decrease_axis"])]
    return tuple(kept or [1])


def infer_flags(attrs):
    """infer_flags, 1 (known when built) for the axes it does not list."""
    flags = list(attrs["infer_flags"])
    return flags + [1] * (len(attrs["axes"]) - len(flags))


def takes_last(attrs, i, start, end):
    """fluid's rule: a start of -1 with an end of 0 given at run time (``x[v]`` with v = -1) on a decreased
    axis takes the last entry."""
    return (start, end) == (-1, 0) and infer_flags(attrs)[i] == -1 and attrs["axes"][i] in attrs["decrease_axis"]


def _slice_run_bounds(attrs, shape, st, et, sl, el):
    """The bounds at run time: starts / ends from their tensors when given (and ``takes_last``)."""
    axes, starts, ends = attrs["axes"], attrs["starts"], attrs["ends"]
    if st is not None or et is not None or sl or el:
        starts, ends = int_list(starts, st, sl), int_list(ends, et, el)
        if len(starts) == len(ends) == len(axes):
            ends = [10000000 if takes_last(attrs, i, s, e) else e for i, (s, e) in enumerate(zip(starts, ends))]
    return _slice_bounds(axes, starts, ends, shape)


def _slice_index(bounds, ndim):
    index = [slice(None)] * ndim
    for axis, start, end in bounds:
        index[axis] = slice(start, end)
    return tuple(index)


def _slice_infer(attrs, x, st, et, sl, el):
    """fluid's compile-time rule: a bound given by a tensor (infer_flags -1) leaves its dimension -1."""
    axes, shape = attrs["axes"], tuple(x.shape)
    flags = infer_flags(attrs)
    starts, ends = known_list(attrs["starts"], None, sl), known_list(attrs["ends"], None, el)
    if st is not None:
        starts = [0] * len(axes)
    if et is not None:
        ends = [0] * len(axes)
    _slice_bounds(axes, starts, ends, tuple(-1 for _ in shape))  # the sizes and axes only
    out = list(shape)
    known = [i for i in range(len(axes)) if flags[i] != -1]
    for axis, start, end in _slice_bounds([axes[i] for i in known], [starts[i] for i in known],
                                          [ends[i] for i in known], shape):
        out[axis] = end - start if shape[axis] >= 0 else -1
    for i in range(len(axes)):
        if flags[i] == -1:
            out[axes[i]] = -1
    return (decreased(attrs, out), x.dtype)


_SLICE_TENSORS = ("StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList")


@register_op("slice", inputs=("Input",) + _SLICE_TENSORS, outputs=("Out",),
             attrs={"axes": [], "starts": [], "ends": [], "infer_flags": [], "decrease_axis": []},
             optional=_SLICE_TENSORS, duplicable=_SLICE_TENSORS[2:], no_grad_inputs=_SLICE_TENSORS,
             infer_shape=_slice_infer)
def _slice_forward(attrs, x, *tensors):
    bounds = _slice_run_bounds(attrs, x.shape, *tensors)
    out = list(x.shape)
    for axis, start, end in bounds:
        out[axis] = end - start
    return x[_slice_index(bounds, x.ndim)].reshape(decreased(attrs, out))


@register_grad("slice")
def _slice_backward(attrs, ins, outs, douts, need):
    x, dout = ins[0], douts[0]
    dx = array_module(x).zeros_like(x)
    index = _slice_index(_slice_run_bounds(attrs, x.shape, *ins[1:]), x.ndim)
    dx[index] = dout.reshape(dx[index].shape)
    return dx, None, None, [], []  # [] (not None) for the duplicable TensorList slots


@register_op("shape", inputs=("Input",), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, x: ((len(x.shape),), "int32"))
def _shape_forward(attrs, x):
    return np.array(x.shape, dtype=np.int32)


# --- one_hot: ids [..., 1] -> [..., depth] (depth_tensor, when given, holds the depth) --------------------
def _one_hot_infer(attrs, x, depth_t):
    if len(x.shape) < 2:
        raise ValueError(f"Input(input) rank should be at least 2, but received input rank ({len(x.shape)}) "
                         "less than 2")
    if x.shape[-1] > 1 or x.shape[-1] == 0:
        raise ValueError(f"Last dimension of Input(input) should be 1, but received input Last dimension"
                         f"({x.shape[-1]}) != 1")
    return (tuple(x.shape[:-1]) + (-1 if depth_t is not None else attrs["depth"],), convert_dtype(attrs["dtype"]))


def _run_depth(attrs, depth_t):
    """The depth: depth_tensor's single value when the op has one, else the attribute."""
    if depth_t is None:
        return attrs["depth"]
    if depth_t.size != 1:
        raise ValueError(f"Input(depth_tensor) must hold one value, but received shape {list(depth_t.shape)}")
    return int(depth_t.reshape(-1)[0])


_ONE_HOT_ATTRS = {"depth": 1, "dtype": "float32", "allow_out_of_range": False}


@register_op("one_hot", inputs=("X", "depth_tensor"), outputs=("Out",), optional=("depth_tensor",),
             no_gradient=True, infer_shape=_one_hot_infer, attrs=_ONE_HOT_ATTRS)
def _one_hot_forward(attrs, x, depth_t):
    _one_hot_infer(attrs, x, depth_t)
    return _one_hot_rows(attrs, x[..., 0], _run_depth(attrs, depth_t))


@register_op("one_hot_v2", inputs=("X", "depth_tensor"), outputs=("Out",), optional=("depth_tensor",),
             no_gradient=True, attrs=_ONE_HOT_ATTRS,
             infer_shape=lambda attrs, x, depth_t: (tuple(x.shape) + (-1 if depth_t is not None else attrs["depth"],),
                                                    convert_dtype(attrs["dtype"])))
def _one_hot_v2_forward(attrs, x, depth_t):
    """fluid.one_hot (1.8): ids of any shape, the depth axis appended."""
    return _one_hot_rows(attrs, x, _run_depth(attrs, depth_t))


def _one_hot_rows(attrs, ids, depth):
    if not attrs["allow_out_of_range"] and ids.size:
        if ids.min() < 0:
            raise ValueError(f"Illegal index value, Input(input) value should be at least 0, but received input "
                             f"({int(ids.min())}) less than 0")
        if ids.max() >= depth:
            raise ValueError(f"Illegal index value, Input(input) value should be less than Input(depth), but "
                             f"received input ({int(ids.max())}) not less than depth ({depth})")
    return (ids[..., None] == array_module(ids).arange(depth)).astype(to_numpy_dtype(attrs["dtype"]))


# --- gather / scatter along the first axis ------------------------------------------------------------
def _rows(index):
    if index.ndim == 2 and index.shape[1] == 1:
        return index[:, 0]
    if index.ndim != 1:
        raise ValueError(f"The index should be 1D or a [N, 1] tensor, but received shape {list(index.shape)}")
    return index


@register_op("gather", inputs=("X", "Index"), outputs=("Out",), attrs={"overwrite": True}, no_grad_inputs=("Index",),
             infer_shape=lambda attrs, x, i: ((i.shape[0],) + tuple(x.shape[1:]), x.dtype))
def _gather_forward(attrs, x, index):
    return x[_rows(index)]


@register_grad("gather")
def _gather_backward(attrs, ins, outs, douts, need):
    (x, index), dout = ins, douts[0]
    dx = array_module(x).zeros_like(x)
    array_module(x).add.at(dx, _rows(index), dout)  # repeated rows add up
    return dx, None


@register_op("scatter", inputs=("X", "Ids", "Updates"), outputs=("Out",), attrs={"overwrite": True},
             no_grad_inputs=("Ids",), infer_shape=lambda attrs, x, i, u: (x.shape, x.dtype))
def _scatter_forward(attrs, x, ids, updates):
    ids = _rows(ids)
    out = x.copy()
    if attrs["overwrite"]:
        out[ids] = updates  # a repeated id keeps its last update
    else:
        out[ids] = 0
        array_module(x).add.at(out, ids, updates)
    return out


@register_grad("scatter")
def _scatter_backward(attrs, ins, outs, douts, need):
    (x, ids, updates), dout = ins, douts[0]
    ids = _rows(ids)
    dx = None
    if need[0]:
        dx = dout.copy()
        dx[ids] = 0
    return dx, None, (dout[ids] if need[2] else None)


# --- expand: tile each dimension expand_times[i] times (the times may come from tensors) ------------------------
def _expand_shape(times, shape):
    if len(times) != len(shape):
        raise ValueError(f"The number of elements ({len(times)}) of 'expand_times' for Op(expand) must be equal to "
                         f"the number of dimensions ({len(shape)}) of the input.")
    for i, t in enumerate(times):
        if t != -1 and t <= 0:
            raise ValueError(f"The {i}th element of 'expand_times' for Op(expand) must be greater than 0, but the "
                             f"value given is {t}.")
    return tuple(d * t if d >= 0 and t >= 0 else -1 for d, t in zip(shape, times))


def _expand_infer(attrs, x, times_t, times_list):
    """Times given by tensors are -1 (fluid's layer writes -1 where a Variable stands; none for a whole one)."""
    return (_expand_shape(attrs["expand_times"] or [-1] * len(x.shape), x.shape), x.dtype)


def _expand_times(attrs, times_t, times_list):
    return int_list(attrs["expand_times"], times_t, times_list)


@register_op("expand", inputs=("X", "ExpandTimes", "expand_times_tensor"), outputs=("Out",),
             attrs={"expand_times": []}, optional=("ExpandTimes", "expand_times_tensor"),
             duplicable=("expand_times_tensor",), no_grad_inputs=("ExpandTimes", "expand_times_tensor"),
             infer_shape=_expand_infer)
def _expand_forward(attrs, x, times_t, times_list):
    times = _expand_times(attrs, times_t, times_list)
    _expand_shape(times, x.shape)
    return array_module(x).tile(x, times)


@register_grad("expand")
def _expand_backward(attrs, ins, outs, douts, need):
    x, dout = ins[0], douts[0]
    split = []  # [t0, d0, t1, d1, ...]: sum over the tile axes
    for d, t in zip(x.shape, _expand_times(attrs, *ins[1:])):
        split += [t, d]
    return dout.reshape(split).sum(axis=tuple(range(0, 2 * x.ndim, 2))), None, []  # [] for the duplicable slot
