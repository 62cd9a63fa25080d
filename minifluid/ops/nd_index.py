"""N-d indexing and order ops of fluid 1.8: gather_nd, scatter_nd_add, where_index, reverse, flip, roll, tril_triu,
expand_as, cumsum.

An N-d index is an integer tensor whose last dimension (K) names a position in the first K dimensions
of the indexed tensor; ``tuple(np.moveaxis(index, -1, 0))`` turns it into one numpy fancy index, so
each kernel is one gather or one ``np.add.at`` (which adds repeated positions up) over the whole batch.
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _positions(x_shape, index, op):
    """``index`` as a tuple of K index arrays into ``x_shape`` (K = index.shape[-1]), range-checked."""
    k = index.shape[-1] if index.ndim else 0
    if index.ndim == 0 or k > len(x_shape):
        raise ValueError(f"{op}: the last dimension of Index ({k}) must be at most the rank of X "
                         f"({len(x_shape)}), got Index of shape {list(index.shape)}")
    bounds = np.asarray(x_shape[:k]).reshape((1,) * (index.ndim - 1) + (k,))
    if index.size and ((index < -bounds) | (index >= bounds)).any():
        raise IndexError(f"{op}: Index holds a position outside X's leading dimensions {list(x_shape[:k])}")
    return tuple(array_module(index).moveaxis(index, -1, 0))


def _nd_shape(x_shape, index_shape, op="gather_nd"):
    """``index.shape[:-1] + x.shape[K:]``, the shape gather_nd gives (and scatter_nd_add's Updates has)."""
    if not index_shape or not 0 <= index_shape[-1] <= len(x_shape):
        raise ValueError(f"{op}: the last dimension of Index ({index_shape[-1] if index_shape else None}) must be "
                         f"at most the rank of X ({len(x_shape)}), got Index of shape {list(index_shape)}")
    return tuple(index_shape[:-1]) + tuple(x_shape[index_shape[-1]:])


# --- gather_nd: out[i...] = x[index[i...]] ------------------------------------------------------------------
@register_op("gather_nd", inputs=("X", "Index"), outputs=("Out",), no_grad_inputs=("Index",),
             infer_shape=lambda attrs, x, i: (_nd_shape(x.shape, i.shape), x.dtype))
def _gather_nd_forward(attrs, x, index):
    pos = _positions(x.shape, index, "gather_nd")
    if not pos:  # K = 0: every index entry takes the whole of x
        return array_module(x).broadcast_to(x, _nd_shape(x.shape, index.shape)).copy()
    return x[pos]


@register_grad("gather_nd")
def _gather_nd_backward(attrs, ins, outs, douts, need):
    (x, index), dout = ins, douts[0]
    xp = array_module(x)
    pos = _positions(x.shape, index, "gather_nd")
    if not pos:
        return dout.reshape((-1,) + x.shape).sum(axis=0).astype(x.dtype, copy=False), None
    dx = xp.zeros_like(x)
    xp.add.at(dx, pos, dout)
    return dx, None


# --- scatter_nd_add: out = x, then out[index[i...]] += updates[i...] ------------------------------------------
def _scatter_nd_add_infer(attrs, x, index, updates):
    expected = _nd_shape(x.shape, index.shape, "scatter_nd_add")
    if len(expected) != len(updates.shape) or any(a != b and a >= 0 and b >= 0
                                                  for a, b in zip(expected, updates.shape)):
        raise ValueError(f"scatter_nd_add: Updates must have shape Index.shape[:-1] + X.shape[Index.shape[-1]:] = "
                         f"{list(expected)}, got {list(updates.shape)}")
    if x.dtype != updates.dtype:
        raise ValueError(f"ref and updates must have same data type, got {x.dtype} and {updates.dtype}")
    return (x.shape, x.dtype)


@register_op("scatter_nd_add", inputs=("X", "Index", "Updates"), outputs=("Out",), no_grad_inputs=("Index",),
             infer_shape=_scatter_nd_add_infer)
def _scatter_nd_add_forward(attrs, x, index, updates):
    _scatter_nd_add_infer(attrs, x, index, updates)
    out = x.copy()
    pos = _positions(x.shape, index, "scatter_nd_add")
    if pos:
        array_module(x).add.at(out, pos, updates)
    else:
        out += updates.reshape((-1,) + x.shape).sum(axis=0)
    return out


@register_grad("scatter_nd_add")
def _scatter_nd_add_backward(attrs, ins, outs, douts, need):
    (x, index, updates), dout = ins, douts[0]
    dupdates = None
    if need[2]:
        dupdates = _gather_nd_forward(attrs, dout, index)
    return (dout if need[0] else None), None, dupdates


# --- where_index: the positions of the true (non-zero) elements, int64 [N, rank] --------------------------------
@register_op("where_index", inputs=("Condition",), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, c: ((-1, len(c.shape)), "int64"))
def _where_index_forward(attrs, condition):
    return array_module(condition).argwhere(condition).astype(np.int64, copy=False)


# --- reverse: flip along the listed axes -------------------------------------------------------------------
def _reverse_axes(attrs, ndim):
    axes = attrs["axis"]
    axes = [axes] if isinstance(axes, int) else list(axes)
    if not axes:
        raise ValueError("reverse: 'axis' must name at least one dimension, got []")
    bad = [a for a in axes if not -ndim <= a < ndim]
    if bad:
        raise ValueError(f"reverse: every 'axis' must be in [-{ndim}, {ndim}) for an input of rank {ndim}, got {bad}")
    return tuple(a % ndim for a in axes)


def _reverse_infer(attrs, x):
    _reverse_axes(attrs, len(x.shape))
    return (x.shape, x.dtype)


@register_op("reverse", inputs=("X",), outputs=("Out",), attrs={"axis": []}, infer_shape=_reverse_infer)
def _reverse_forward(attrs, x):
    return array_module(x).flip(x, _reverse_axes(attrs, x.ndim)).copy()


@register_grad("reverse")
def _reverse_backward(attrs, ins, outs, douts, need):
    return (_reverse_forward(attrs, douts[0]),)


# --- flip (reverse under paddle 2's name and attribute), roll, tril_triu ---------------------------------------
def _flip_infer(attrs, x):
    _reverse_axes({"axis": attrs["dims"]}, len(x.shape))
    return (x.shape, x.dtype)


@register_op("flip", inputs=("X",), outputs=("Out",), attrs={"dims": []}, infer_shape=_flip_infer)
def _flip_forward(attrs, x):
    return _reverse_forward({"axis": attrs["dims"]}, x)


@register_grad("flip")
def _flip_backward(attrs, ins, outs, douts, need):
    return (_flip_forward(attrs, douts[0]),)


def _roll_args(attrs, ndim):
    shifts, dims = list(attrs["shifts"]), list(attrs["dims"])
    if len(shifts) != len(dims):
        raise ValueError(f"roll: 'shifts' ({shifts}) and 'dims' ({dims}) must have the same length")
    return shifts, tuple(_reverse_axes({"axis": dims}, ndim)) if dims else ()


@register_op("roll", inputs=("X",), outputs=("Out",), attrs={"shifts": [], "dims": []},
             infer_shape=lambda attrs, x: (_roll_args(attrs, len(x.shape)) and x.shape, x.dtype))
def _roll_forward(attrs, x):
    shifts, dims = _roll_args(attrs, x.ndim)
    return array_module(x).roll(x, shifts, dims)


@register_grad("roll")
def _roll_backward(attrs, ins, outs, douts, need):
    return (_roll_forward({**attrs, "shifts": [-s for s in attrs["shifts"]]}, douts[0]),)


def _triangle(attrs, x):
    """``x`` with the elements above (lower) or below (upper) diagonal ``diagonal`` of its last two dims zeroed."""
    xp = array_module(x)
    rows, cols = x.shape[-2:]
    keep = xp.tri(rows, cols, attrs["diagonal"], dtype=bool)  # j <= i + diagonal
    if not attrs["lower"]:
        keep = ~xp.tri(rows, cols, attrs["diagonal"] - 1, dtype=bool)  # j >= i + diagonal
    return xp.where(keep, x, xp.zeros((), x.dtype))


def _triangle_infer(attrs, x):
    if len(x.shape) < 2:
        raise ValueError(f"tril_triu: X must be at least 2-D, got shape {list(x.shape)}")
    return (x.shape, x.dtype)


@register_op("tril_triu", inputs=("X",), outputs=("Out",), attrs={"diagonal": 0, "lower": True},
             infer_shape=_triangle_infer)
def _tril_triu_forward(attrs, x):
    _triangle_infer(attrs, x)
    return _triangle(attrs, x)


@register_grad("tril_triu")
def _tril_triu_backward(attrs, ins, outs, douts, need):
    return (_triangle(attrs, douts[0]),)


# --- expand_as: tile X up to target_tensor's shape -------------------------------------------------------------
def _expand_as_times(x_shape, t_shape):
    if len(x_shape) != len(t_shape):
        raise ValueError(f"expand_as: the rank of X ({len(x_shape)}) must equal the rank of target_tensor "
                         f"({len(t_shape)})")
    if any(t % d for d, t in zip(x_shape, t_shape) if d > 0 and t >= 0):
        raise ValueError(f"expand_as: every dimension of target_tensor {list(t_shape)} must be a multiple of "
                         f"X's {list(x_shape)}")
    return [t // d if d > 0 and t >= 0 else -1 for d, t in zip(x_shape, t_shape)]


@register_op("expand_as", inputs=("X", "target_tensor"), outputs=("Out",), no_grad_inputs=("target_tensor",),
             infer_shape=lambda attrs, x, t: (_expand_as_times(x.shape, t.shape) and tuple(t.shape), x.dtype))
def _expand_as_forward(attrs, x, target):
    return array_module(x).tile(x, _expand_as_times(x.shape, target.shape))


@register_grad("expand_as")
def _expand_as_backward(attrs, ins, outs, douts, need):
    (x, target), dout = ins, douts[0]
    split = []  # [t0, d0, t1, d1, ...]: sum over the tile axes
    for d, t in zip(x.shape, _expand_as_times(x.shape, target.shape)):
        split += [t, d]
    return dout.reshape(split).sum(axis=tuple(range(0, 2 * x.ndim, 2))), None


# --- cumsum along one axis (exclusive: each sum leaves its own element out; reverse: from the end) -------------
def _cumsum(attrs, x):
    xp = array_module(x)
    axis = attrs["axis"]
    if attrs["flatten"]:
        if axis not in (0, -1):
            raise ValueError(f"cumsum: with flatten=True 'axis' must be -1 or 0, got {axis}")
        x = x.reshape(-1)
    if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        raise ValueError(f"cumsum: 'axis' ({axis}) must be in [-{x.ndim}, {x.ndim}) for an input of rank {x.ndim}")
    if attrs["reverse"]:
        x = xp.flip(x, axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if attrs["exclusive"]:
        out = xp.moveaxis(out, axis, 0)
        out = xp.concatenate([xp.zeros_like(out[:1]), out[:-1]])
        out = xp.moveaxis(out, 0, axis)
    return xp.flip(out, axis) if attrs["reverse"] else out


@register_op("cumsum", inputs=("X",), outputs=("Out",),
             attrs={"axis": -1, "flatten": False, "exclusive": False, "reverse": False},
             infer_shape=lambda attrs, x: (((int(np.prod(x.shape)) if min(x.shape, default=0) >= 0 else -1,)
                                            if attrs["flatten"] else x.shape), x.dtype))
def _cumsum_forward(attrs, x):
    return _cumsum(attrs, x)


@register_grad("cumsum")
def _cumsum_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    # each output sums a run of inputs; an input's gradient sums the outputs' gradients over the runs it is in
    dx = _cumsum({**attrs, "flatten": False, "reverse": not attrs["reverse"]}, douts[0])
    return (dx.reshape(x.shape),)

