"""Image ops: bilinear_interp, nearest_interp, trilinear_interp and bicubic_interp (fluid's resize,
align_corners / align_mode; the output size from the SizeTensor list, the OutSize tensor, the Scale tensor or
the attributes, in that priority), pad, pad2d.

Resizing gathers whole rows and columns (and depth slices) with index arrays, one axis at a time (two
fancy-index reads and a few multiply-adds over the batch per axis); gradients scatter back with
``np.add.at`` along one axis at a time. Source positions are
computed in float32 as fluid's kernels compute them, so nearest neighbours pick the same pixels.
"""
import numpy as np

from .registry import array_module, register_grad, register_op

_INTERP_ATTRS = {"out_d": -1, "out_h": -1, "out_w": -1, "scale": 0.0, "interp_method": "bilinear",
                 "align_corners": True, "align_mode": 1, "data_layout": "NCHW"}


def _spatial_axes(attrs, ndim):
    """The resized axes: H, W (4-D) or D, H, W (5-D), after C (NCHW) or before it (NHWC)."""
    first = 1 if attrs["data_layout"] == "NHWC" else 2
    return tuple(range(first, first + ndim - 2))


def _out_sizes(attrs, in_sizes, out_size=None, size_tensor=None, scale=None):
    """The output sizes by fluid's priority: SizeTensor (one int per axis), OutSize, the Scale tensor or attr,
    then out_d / out_h / out_w."""
    n = len(in_sizes)
    if size_tensor:
        if len(size_tensor) != n:
            raise ValueError(f"Input(SizeTensor)'s size of Op(interpolate) must be {n}. Attr(out_shape)'s length "
                             f"must be {n} for {n + 2}-D input tensor.")
        return tuple(int(np.asarray(v).reshape(-1)[0]) for v in size_tensor)
    if out_size is not None:
        return tuple(int(v) for v in out_size.reshape(-1)[:n])
    factor = float(np.asarray(scale).reshape(-1)[0]) if scale is not None else attrs["scale"]
    if factor > 0:
        return tuple(int(np.float32(s) * np.float32(factor)) if s >= 0 else -1 for s in in_sizes)
    return tuple((attrs["out_d"], attrs["out_h"], attrs["out_w"])[-n:])


def _ratio(in_size, out_size, align_corners):
    if out_size <= 1:
        return np.float32(0.0)
    return np.float32((in_size - 1) / (out_size - 1)) if align_corners else np.float32(in_size) / np.float32(out_size)


def _linear_taps(in_size, out_size, attrs):
    """([out, 2] lower / upper indices, [out, 2] their weights) per output position, as fluid's bilinear kernel."""
    ratio = _ratio(in_size, out_size, attrs["align_corners"])
    k = np.arange(out_size, dtype=np.float32)
    half = attrs["align_mode"] == 0 and not attrs["align_corners"]
    src = ratio * (k + np.float32(0.5)) - np.float32(0.5) if half else ratio * k
    lo = np.maximum(src.astype(np.int64), 0)  # C++ int cast: toward zero
    weight = ((np.maximum(src, 0) if half else src) - lo).astype(np.float64)
    return np.stack([lo, np.minimum(lo + 1, in_size - 1)], axis=1), np.stack([1 - weight, weight], axis=1)


def _cubic_taps(in_size, out_size, attrs, a=-0.75):
    """([out, 4] indices, [out, 4] weights): the cubic convolution (a = -0.75) of the pixels at floor(src) - 1
    .. floor(src) + 2, clamped to the image, as fluid's bicubic kernel."""
    ratio = _ratio(in_size, out_size, attrs["align_corners"])
    k = np.arange(out_size, dtype=np.float32)
    src = ratio * k if attrs["align_corners"] else ratio * (k + np.float32(0.5)) - np.float32(0.5)
    base = np.floor(src)
    t = (src - base).astype(np.float64)[:, None] + np.array([1.0, 0.0, -1.0, -2.0])  # distances to the 4 pixels
    t = np.abs(t)
    weights = np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a)
    return np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3), 0, in_size - 1), weights


def _nearest_index(in_size, out_size, attrs):
    ratio = _ratio(in_size, out_size, attrs["align_corners"])
    src = ratio * np.arange(out_size, dtype=np.float32) + (np.float32(0.5) if attrs["align_corners"] else 0)
    return np.minimum(src.astype(np.int64), in_size - 1)


_TAPS = {"bilinear": _linear_taps, "trilinear": _linear_taps, "bicubic": _cubic_taps}


def _check_rank(attrs, ndim):
    want = 5 if attrs["interp_method"] == "trilinear" else 4
    if ndim != want:
        raise ValueError(f"X's dimension must be {want} for {attrs['interp_method']}_interp, but received {ndim}")


def _interp_infer(attrs, x, out_size, size_tensor=(), scale=None):
    _check_rank(attrs, len(x.shape))
    axes = _spatial_axes(attrs, len(x.shape))
    # as fluid: the attrs at compile time (-1 where a Scale tensor decides), OutSize / SizeTensor at run time
    shape = list(x.shape)
    sizes = ((-1,) * len(axes) if scale is not None and not size_tensor else
             _out_sizes(attrs, [x.shape[a] for a in axes]))
    for axis, size in zip(axes, sizes):
        shape[axis] = size
    return (tuple(shape), x.dtype)


def _bcast(v, axis, ndim):
    return v.reshape([-1 if i == axis else 1 for i in range(ndim)])


def _interp_plan(attrs, x, sizes):
    """(resized axes, their taps); ``sizes``: the OutSize, SizeTensor and Scale inputs."""
    _check_rank(attrs, x.ndim)
    axes = _spatial_axes(attrs, x.ndim)
    in_sizes = [x.shape[a] for a in axes]
    out_sizes = _out_sizes(attrs, in_sizes, *sizes)
    if min(out_sizes) <= 0:
        names = "out_d, out_h and out_w" if len(axes) == 3 else "out_h and out_w"
        raise ValueError(f"{names} in Attr(out_shape) of Op(interpolate) should be greater than 0, got "
                         f"{list(out_sizes)}")
    if attrs["interp_method"] == "nearest":
        return axes, [_nearest_index(i, o, attrs) for i, o in zip(in_sizes, out_sizes)]
    return axes, [_TAPS[attrs["interp_method"]](i, o, attrs) for i, o in zip(in_sizes, out_sizes)]


def _interp_forward(attrs, x, out_size, size_tensor=(), scale=None):
    axes, plan = _interp_plan(attrs, x, (out_size, size_tensor, scale))
    if attrs["interp_method"] == "nearest":
        for axis, index in zip(axes, plan):
            x = x.take(index, axis=axis)
        return x
    # integer images (uint8) blend in float32 and truncate back, as fluid's kernels cast their float sums
    out = x if x.dtype.kind == "f" else x.astype(np.float32)
    for axis, (index, weights) in zip(axes, plan):  # one axis at a time: separable
        out = sum(out.take(i, axis=axis) * _bcast(w, axis, x.ndim).astype(out.dtype)
                  for i, w in zip(index.T, weights.T))
    return out.astype(x.dtype, copy=False)


def _scatter_axis(d, index, axis, size):
    """The adjoint of ``take(index, axis)``: sums ``d`` back into ``size`` positions along ``axis``."""
    shape = list(d.shape)
    shape[axis] = size
    out = array_module(d).zeros(shape, dtype=d.dtype)
    where = [slice(None)] * d.ndim
    where[axis] = index
    array_module(d).add.at(out, tuple(where), d)
    return out


def _interp_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    axes, plan = _interp_plan(attrs, x, ins[1:])
    d = douts[0]
    for axis, taps in reversed(list(zip(axes, plan))):
        size = x.shape[axis]
        if attrs["interp_method"] == "nearest":
            d = _scatter_axis(d, taps, axis, size)
            continue
        index, weights = taps
        d = sum(_scatter_axis(d * _bcast(w, axis, d.ndim).astype(d.dtype), i, axis, size)
                for i, w in zip(index.T, weights.T))
    return d, None, None, None


for _name, _method in (("bilinear_interp", "bilinear"), ("nearest_interp", "nearest"),
                       ("trilinear_interp", "trilinear"), ("bicubic_interp", "bicubic")):
    register_op(_name, inputs=("X", "OutSize", "SizeTensor", "Scale"), outputs=("Out",),
                attrs=dict(_INTERP_ATTRS, interp_method=_method), duplicable=("SizeTensor",),
                optional=("OutSize", "SizeTensor", "Scale"), no_grad_inputs=("OutSize", "SizeTensor", "Scale"),
                infer_shape=_interp_infer)(_interp_forward)
    register_grad(_name)(_interp_backward)


# --- pad: constant padding of every dimension ------------------------------------------------------------
def _pad_widths(attrs, ndim):
    p = attrs["paddings"]
    if len(p) != 2 * ndim:
        raise ValueError(f"Size of 'paddings' dimension should be equal to 2 * size of Input(X)'s dimension "
                         f"({2 * ndim}), but received ({len(p)}).")
    return [(p[2 * i], p[2 * i + 1]) for i in range(ndim)]


@register_op("pad", inputs=("X",), outputs=("Out",), attrs={"paddings": [], "pad_value": 0.0},
             infer_shape=lambda attrs, x: (tuple(d + a + b if d >= 0 else -1 for d, (a, b) in
                                                 zip(x.shape, _pad_widths(attrs, len(x.shape)))), x.dtype))
def _pad_forward(attrs, x):
    return array_module(x).pad(x, _pad_widths(attrs, x.ndim), constant_values=attrs["pad_value"])


@register_grad("pad")
def _pad_backward(attrs, ins, outs, douts, need):
    x, d = ins[0], douts[0]
    return (d[tuple(slice(a, a + n) for (a, _), n in zip(_pad_widths(attrs, x.ndim), x.shape))],)


# --- pad2d: constant, reflect or edge padding of H and W ---------------------------------------------------
_PAD2D_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


def _pad2d_widths(attrs, ndim):
    t, b, l, r = attrs["paddings"]
    widths = [(0, 0)] * ndim
    h, w = (1, 2) if attrs["data_format"] == "NHWC" else (2, 3)
    widths[h], widths[w] = (t, b), (l, r)
    return widths, (h, w)


def _pad2d_infer(attrs, x, paddings):
    # with the Paddings input the attr may be empty (fluid's layer leaves it so); those sizes wait for the run
    widths, axes = _pad2d_widths(attrs if paddings is None else dict(attrs, paddings=[0] * 4), len(x.shape))
    return (tuple(d + a + b if d >= 0 and (paddings is None or i not in axes) else -1
                  for i, (d, (a, b)) in enumerate(zip(x.shape, widths))), x.dtype)


@register_op("pad2d", inputs=("X", "Paddings"), outputs=("Out",), optional=("Paddings",),
             no_grad_inputs=("Paddings",), infer_shape=_pad2d_infer,
             attrs={"paddings": [0, 0, 0, 0], "mode": "constant", "pad_value": 0.0, "data_format": "NCHW"})
def _pad2d_forward(attrs, x, paddings):
    attrs = attrs if paddings is None else dict(attrs, paddings=[int(v) for v in paddings.reshape(-1)])
    widths, _ = _pad2d_widths(attrs, x.ndim)
    mode = attrs["mode"]
    if mode not in _PAD2D_MODES:
        raise ValueError(f"mode of pad2d should be one of constant, reflect, edge, but received {mode}")
    if mode == "constant":
        return array_module(x).pad(x, widths, constant_values=attrs["pad_value"])
    return array_module(x).pad(x, widths, mode=mode)


@register_grad("pad2d")
def _pad2d_backward(attrs, ins, outs, douts, need):
    x, paddings = ins
    attrs = attrs if paddings is None else dict(attrs, paddings=[int(v) for v in paddings.reshape(-1)])
    widths, axes = _pad2d_widths(attrs, x.ndim)
    d = douts[0]
    if attrs["mode"] == "constant":
        return d[tuple(slice(a, a + n) for (a, _), n in zip(widths, x.shape))], None
    for axis in axes:  # each output position reads one input position: sum back through that map
        index = np.pad(np.arange(x.shape[axis]), widths[axis], mode=attrs["mode"])
        d = _scatter_axis(d, index, axis, x.shape[axis])
    return d, None
