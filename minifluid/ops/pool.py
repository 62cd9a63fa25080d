"""pool2d (max / avg, global, adaptive) on channels-last memory (NOTE [ Channels-last inside the kernels ]
in im2col.py).

fluid's CPU kernel reads rows [max(s, 0), min(s + k, H)) for s = o * stride - pad_top (columns alike):
the padding never enters a window. Here the padded buffer holds -FLT_MAX (max; fluid's initial value, so
a window of padding only gives -FLT_MAX too) or 0 (avg) and the exclusive divisor is that clipped area.
A max window routes its gradient to the first element (row-major) equal to its output, as fluid does.

NOTE [ Adaptive windows ]
Adaptive output i along an axis of size n with m outputs pools rows [floor(i*n/m), ceil((i+1)*n/m)), as
fluid's kernels do; windows may differ in size and overlap when m does not divide n (when it does they
are the plain k = n/m windows and the strided path above runs). Average: out = P_h x P_w^T with P the
[m, n] matrices of 1/len over each window, and the gradient is the transposed products. Max: one gather
of every window padded to the longest one by repeating its last row (which changes neither the max nor
the first position holding it), an argmax for fluid's first-element routing, and the gradient added
back with one bincount over input positions (overlapping windows add up).
"""
import numpy as np

from .im2col import POOL_SIZE_ERROR, Geometry, from_nhwc, nhwc_shape, to_nhwc
from .registry import array_module, register_grad, register_op

_MAX_POOL_INIT = float(np.finfo(np.float32).min)  # -FLT_MAX, fluid's start value for a max window


def global_adaptive(attrs, spatial):
    """fluid's global_pooling with adaptive: the window is the whole input and the adaptive output takes its size,
    so each output pools one pixel (the attrs of that adaptive pooling; other attrs unchanged)."""
    if attrs["global_pooling"] and attrs["adaptive"]:
        return dict(attrs, global_pooling=False, ksize=list(spatial))
    return attrs


def _pool_geometry(attrs, x4_shape):
    h, w = x4_shape[1:3]
    if attrs["global_pooling"]:
        return Geometry({"paddings": [0, 0]}, (h, w), (h, w), (1, 1), (1, 1))
    if attrs["adaptive"]:
        oh, ow = attrs["ksize"]
        if h % oh or w % ow:
            return None  # uneven windows (NOTE [ Adaptive windows ])
        return Geometry({"paddings": [0, 0]}, (h, w), (h // oh, w // ow), (h // oh, w // ow), (1, 1))
    return Geometry(attrs, (h, w), attrs["ksize"], attrs["strides"], (1, 1), attrs["ceil_mode"], POOL_SIZE_ERROR)


def _pool_infer(attrs, x):
    fmt = attrs["data_format"]
    n, h, w, c = nhwc_shape(x.shape, fmt)
    attrs = global_adaptive(attrs, (h, w))
    if attrs["global_pooling"]:
        out = (1, 1)
    elif attrs["adaptive"]:
        out = tuple(attrs["ksize"])
    else:
        out = _pool_geometry(attrs, (n, h, w, c)).out
    return ((n, c) + out if fmt != "NHWC" else (n,) + out + (c,), x.dtype)


def _avg_count(geo, x4, attrs):
    """Divisor per output pixel. exclusive: the window clipped to the input, [start, min(start + k, size))
    with start = max(o * stride - pad, 0), counted as (h_end - h_start) * (w_end - w_start) without any
    further clamping, exactly as fluid's CPU kernel does; otherwise kh * kw."""
    if not attrs["exclusive"] or attrs["global_pooling"]:
        return geo.k[0] * geo.k[1]
    xp, counts = array_module(x4), []
    for axis in range(2):
        start = xp.arange(geo.out[axis]) * geo.s[axis] - geo.pads[2 * axis]
        end = xp.minimum(start + geo.k[axis], x4.shape[1 + axis])
        counts.append(end - xp.maximum(start, 0))
    return (counts[0][:, None] * counts[1][None, :]).astype(x4.dtype)[:, :, None]


def _adaptive_windows(size, out, xp):
    """(start [out], end [out]) of the adaptive windows along one axis (NOTE [ Adaptive windows ])."""
    i = xp.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _adaptive_matrix(size, out, dtype, xp):
    """[out, size]: 1/len over each window, 0 elsewhere."""
    start, end = _adaptive_windows(size, out, xp)
    pos = xp.arange(size)[None, :]
    return ((pos >= start[:, None]) & (pos < end[:, None])) / (end - start)[:, None].astype(dtype)


def _adaptive_taps(size, out, xp):
    """[out, longest window]: the positions each window reads, the last repeated to the longest length."""
    start, end = _adaptive_windows(size, out, xp)
    return xp.minimum(start[:, None] + xp.arange(int((end - start).max()))[None, :], end[:, None] - 1)


def _adaptive_max_gather(x4, oh, ow):
    """(out [N, OH, OW, C], the flat H*W position of each window's first max)."""
    xp, (n, h, w, c) = array_module(x4), x4.shape
    rows, cols = _adaptive_taps(h, oh, xp), _adaptive_taps(w, ow, xp)
    flat = (rows[:, None, :, None] * w + cols[None, :, None, :]).reshape(oh, ow, -1)  # [OH, OW, taps], row-major
    windows = x4.reshape(n, h * w, c)[:, flat]  # [N, OH, OW, taps, C]
    first = windows.argmax(axis=3)
    return windows.max(axis=3), flat[xp.arange(oh)[:, None, None], xp.arange(ow)[:, None], first]


def _adaptive_forward(attrs, x4):
    xp, (oh, ow) = array_module(x4), attrs["ksize"]
    if attrs["pooling_type"] == "max":
        return _adaptive_max_gather(x4, oh, ow)[0]
    ph, pw = (_adaptive_matrix(size, o, x4.dtype, xp) for size, o in ((x4.shape[1], oh), (x4.shape[2], ow)))
    return xp.einsum("ih,nhwc,jw->nijc", ph, x4, pw, optimize=True).astype(x4.dtype, copy=False)


def _adaptive_backward(attrs, x4, d4):
    xp, (oh, ow), (n, h, w, c) = array_module(x4), attrs["ksize"], x4.shape
    if attrs["pooling_type"] != "max":
        ph, pw = _adaptive_matrix(h, oh, x4.dtype, xp), _adaptive_matrix(w, ow, x4.dtype, xp)
        return xp.einsum("ih,nijc,jw->nhwc", ph, d4, pw, optimize=True).astype(x4.dtype, copy=False)
    where = _adaptive_max_gather(x4, oh, ow)[1]  # [N, OH, OW, C] positions in H*W
    target = (xp.arange(n)[:, None, None, None] * (h * w) + where) * c + xp.arange(c)
    dx = xp.bincount(target.reshape(-1), weights=d4.reshape(-1), minlength=x4.size)
    return dx.reshape(x4.shape).astype(x4.dtype, copy=False)


def _taps(geo, padded):
    for i in range(geo.k[0]):
        for j in range(geo.k[1]):
            rows, cols = geo.tap_slices(i, j)
            yield i, j, padded[:, rows, cols]


_POOL_ATTRS = {"pooling_type": "max", "ksize": [1, 1], "global_pooling": False, "strides": [1, 1], "paddings": [0, 0],
               "exclusive": True, "adaptive": False, "ceil_mode": False, "use_cudnn": True, "use_mkldnn": False,
               "use_quantizer": False, "data_format": "NCHW", "padding_algorithm": "EXPLICIT", "is_test": False}


@register_op("pool2d", inputs=("X",), outputs=("Out",), infer_shape=_pool_infer, attrs=_POOL_ATTRS)
def _pool2d_forward(attrs, x):
    fmt = attrs["data_format"]
    x4 = to_nhwc(x, fmt)
    attrs = global_adaptive(attrs, x4.shape[1:3])
    xp, is_max = array_module(x4), attrs["pooling_type"] == "max"
    if attrs["global_pooling"]:
        out = x4.max(axis=(1, 2), keepdims=True) if is_max else x4.mean(axis=(1, 2), keepdims=True)
        return from_nhwc(out.astype(x4.dtype, copy=False), fmt)
    geo = _pool_geometry(attrs, x4.shape)
    if geo is None:
        return from_nhwc(_adaptive_forward(attrs, x4), fmt)
    out = xp.empty((x4.shape[0],) + geo.out + (x4.shape[3],), dtype=x4.dtype)
    combine = xp.maximum if is_max else xp.add
    count = None if is_max else _avg_count(geo, x4, attrs)

    def chunk(lo, hi):  # a few images at a time, on the intra-op threads (parallel.py)
        taps, dst = _taps(geo, geo.padded(x4[lo:hi], _MAX_POOL_INIT if is_max else 0.0, role="pool")), out[lo:hi]
        dst[...] = next(taps)[2]
        for _, _, tap in taps:  # a loop over kernel taps; each step is one vectorised op
            combine(dst, tap, out=dst)
        if count is not None:
            with np.errstate(divide="ignore", invalid="ignore"):  # a window of padding only: 0 / 0, as in fluid
                dst /= count
    geo.map_images(x4.shape[0], x4.shape[3] * x4.dtype.itemsize, chunk, xp)
    return from_nhwc(out, fmt)


def _global_pool_grad(attrs, x4, d4):
    xp, (n, h, w, c) = array_module(x4), x4.shape
    if attrs["pooling_type"] != "max":
        return xp.broadcast_to(d4 / (h * w), x4.shape).astype(x4.dtype, order="C")  # channels-last, as x4
    first = x4.reshape(n, h * w, c).argmax(axis=1)[:, None, :] == xp.arange(h * w)[None, :, None]
    return (first * d4.reshape(n, 1, c)).reshape(x4.shape).astype(x4.dtype, copy=False)


@register_grad("pool2d")
def _pool2d_backward(attrs, ins, outs, douts, need):
    fmt = attrs["data_format"]
    x4, d4 = to_nhwc(ins[0], fmt), to_nhwc(douts[0], fmt)
    attrs = global_adaptive(attrs, x4.shape[1:3])
    xp = array_module(x4)
    if attrs["global_pooling"]:
        return (from_nhwc(_global_pool_grad(attrs, x4, d4), fmt),)
    geo = _pool_geometry(attrs, x4.shape)
    if geo is None:
        return (from_nhwc(_adaptive_backward(attrs, x4, d4), fmt),)
    if attrs["pooling_type"] != "max":
        with np.errstate(divide="ignore", invalid="ignore"):
            g = d4 / _avg_count(geo, x4, attrs)
        return (from_nhwc(geo.col2im(lambda i, j: g, x4.shape, x4.dtype, xp), fmt),)
    out = to_nhwc(outs[0], fmt) if outs[0] is not None else to_nhwc(
        _pool2d_forward({**attrs, "data_format": "NHWC"}, x4), "NHWC")
    dx = xp.empty(x4.shape, dtype=x4.dtype)
    (n, h, w, c), (kh, kw) = x4.shape, geo.k
    tiles = geo.s == geo.k and geo.d == (1, 1) and not any(geo.pads) and (h, w) == (geo.out[0] * kh, geo.out[1] * kw)

    def chunk(lo, hi):  # a few images at a time, on the intra-op threads (parallel.py)
        taps = dict(((i, j), tap) for i, j, tap in _taps(geo, geo.padded(x4[lo:hi], _MAX_POOL_INIT, role="pool")))
        o, d = out[lo:hi], d4[lo:hi]
        taken = xp.zeros(o.shape, dtype=bool)
        hit = xp.empty(o.shape, dtype=bool)

        def tap_grad(i, j):  # route dout to the first tap (row-major) that holds the max
            xp.equal(taps[i, j], o, out=hit)
            xp.greater(hit, taken, out=hit)  # hit and not taken
            taken[...] |= hit
            return d * hit
        if tiles:  # windows tile the input (2x2 stride 2): each tap writes its own pixels, no adds
            per_tap = dx[lo:hi].reshape(hi - lo, geo.out[0], kh, geo.out[1], kw, c)
            for i in range(kh):
                for j in range(kw):
                    per_tap[:, :, i, :, j] = tap_grad(i, j)
        else:
            geo.col2im(tap_grad, (hi - lo,) + x4.shape[1:], x4.dtype, xp, out=dx[lo:hi])
    geo.map_images(x4.shape[0], x4.shape[3] * x4.dtype.itemsize, chunk, xp)
    return (from_nhwc(dx, fmt),)


# --- spp: spatial pyramid pooling, level p pools into 2^p x 2^p bins, each flattened, levels side by side ------------
def _spp_levels(attrs, x_shape):
    """Per level: (bins, the pool2d attrs of its bins) with fluid's kernel ceil(size / bins), stride = kernel and
    padding (kernel * bins - size + 1) / 2."""
    levels = []
    for p in range(attrs["pyramid_height"]):
        bins = 2 ** p
        k = [-(-size // bins) for size in x_shape[2:4]]
        pads = [(kk * bins - size + 1) // 2 for kk, size in zip(k, x_shape[2:4])]
        levels.append((bins, {**_POOL_ATTRS, "pooling_type": attrs["pooling_type"], "ksize": k, "strides": k,
                              "paddings": pads}))
    return levels


def _spp_infer(attrs, x):
    if len(x.shape) != 4:
        raise ValueError(f"Spping intput must be of 4-dimensional, but received shape {list(x.shape)}")
    if attrs["pooling_type"] not in ("max", "avg"):
        raise ValueError(f"Attr(pooling_type) of Op(spp) should be 'max' or 'avg', but received "
                         f"{attrs['pooling_type']!r}")
    width = (4 ** attrs["pyramid_height"] - 1) // 3 * x.shape[1] if x.shape[1] >= 0 else -1
    return (x.shape[0], width), x.dtype


@register_op("spp", inputs=("X",), outputs=("Out",), infer_shape=_spp_infer,
             attrs={"pyramid_height": 1, "pooling_type": "max"})
def _spp_forward(attrs, x):
    _spp_infer(attrs, x)
    xp, n = array_module(x), x.shape[0]
    return xp.concatenate([_pool2d_forward(level, x)[:, :, :bins, :bins].reshape(n, -1)
                           for bins, level in _spp_levels(attrs, x.shape)], axis=1)


@register_grad("spp", reads=("X",))
def _spp_backward(attrs, ins, outs, douts, need):
    x, d, start = ins[0], douts[0], 0
    dx = array_module(x).zeros_like(x)
    for bins, level in _spp_levels(attrs, x.shape):  # a loop over pyramid levels (a few), each one pool2d gradient
        out = _pool2d_forward(level, x)
        part = d[:, start:start + x.shape[1] * bins * bins].reshape(x.shape[:2] + (bins, bins))
        start += x.shape[1] * bins * bins
        d_level = array_module(x).zeros(out.shape, dtype=x.dtype)
        d_level[:, :, :bins, :bins] = part
        dx += _pool2d_backward(level, (x,), (out,), (d_level,), (True,))[0]
    return (dx,)


# --- unpool: max unpooling, each value written to the flat OH*OW position its Indices entry names ------------------
def _unpool_size(attrs, x_shape):
    return tuple((size - 1) * s - 2 * p + k if size >= 0 else -1
                 for size, k, s, p in zip(x_shape[2:4], attrs["ksize"], attrs["strides"], attrs["paddings"]))


def _unpool_infer(attrs, x, indices):
    if len(x.shape) != 4:
        raise ValueError(f"Input(X) of Op(unpool) should be a 4-D Tensor, but received {len(x.shape)}-D, the shape "
                         f"is {list(x.shape)}")
    if tuple(x.shape) != tuple(indices.shape):
        raise ValueError(f"The dimensions of Input(X) and Input(Indices) of Op(unpool) should be equal, but received "
                         f"X's shape {list(x.shape)} and Indices' shape {list(indices.shape)}")
    return tuple(x.shape[:2]) + _unpool_size(attrs, x.shape), x.dtype


def _unpool_targets(attrs, x, indices):
    """(flat [N*C, OH*OW] output shape, row of every input value, its column: the Indices entry)."""
    if attrs["unpooling_type"] != "max":
        raise ValueError(f"Attr(unpooling_type) of Op(unpool) can only be 'max', but received "
                         f"{attrs['unpooling_type']!r}")
    xp, (oh, ow) = array_module(x), _unpool_size(attrs, x.shape)
    cols = indices.reshape(x.shape[0] * x.shape[1], -1).astype(np.int64)
    if cols.size and (cols.min() < 0 or cols.max() >= oh * ow):
        raise ValueError(f"unpool: Input(Indices) holds positions outside the {oh}x{ow} output: "
                         f"[{int(cols.min())}, {int(cols.max())}]")
    return (cols.shape[0], oh * ow), xp.arange(cols.shape[0])[:, None], cols


@register_op("unpool", inputs=("X", "Indices"), outputs=("Out",), no_grad_inputs=("Indices",),
             infer_shape=_unpool_infer,
             attrs={"ksize": [1, 1], "strides": [1, 1], "paddings": [0, 0], "unpooling_type": "max"})
def _unpool_forward(attrs, x, indices):
    _unpool_infer(attrs, x, indices)
    shape, rows, cols = _unpool_targets(attrs, x, indices)
    out = array_module(x).zeros(shape, dtype=x.dtype)
    out[rows, cols] = x.reshape(cols.shape)
    return out.reshape(tuple(x.shape[:2]) + _unpool_size(attrs, x.shape))


@register_grad("unpool", reads=("X", "Indices"))
def _unpool_backward(attrs, ins, outs, douts, need):
    (x, indices), d = ins, douts[0]
    shape, rows, cols = _unpool_targets(attrs, x, indices)
    return d.reshape(shape)[rows, cols].reshape(x.shape), None
