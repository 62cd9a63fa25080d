"""pool2d (max / avg, global, adaptive on divisible sizes) on channels-last memory (NOTE [ Channels-last
inside the kernels ] in im2col.py).

fluid's CPU kernel reads rows [max(s, 0), min(s + k, H)) for s = o * stride - pad_top (columns alike):
the padding never enters a window. Here the padded buffer holds -FLT_MAX (max; fluid's initial value, so
a window of padding only gives -FLT_MAX too) or 0 (avg) and the exclusive divisor is that clipped area.
A max window routes its gradient to the first element (row-major) equal to its output, as fluid does.
"""
import numpy as np

from .im2col import POOL_SIZE_ERROR, Geometry, from_nhwc, nhwc_shape, to_nhwc
from .registry import array_module, register_grad, register_op

_MAX_POOL_INIT = float(np.finfo(np.float32).min)  # -FLT_MAX, fluid's start value for a max window


def _pool_geometry(attrs, x4_shape):
    h, w = x4_shape[1:3]
    if attrs["global_pooling"]:
        return Geometry({"paddings": [0, 0]}, (h, w), (h, w), (1, 1), (1, 1))
    if attrs["adaptive"]:
        oh, ow = attrs["ksize"]
        if h % oh or w % ow:
            raise NotImplementedError(f"pool2d adaptive=True needs input size divisible by ksize, got {h}x{w} "
                                      f"for {oh}x{ow}")
        return Geometry({"paddings": [0, 0]}, (h, w), (h // oh, w // ow), (h // oh, w // ow), (1, 1))
    return Geometry(attrs, (h, w), attrs["ksize"], attrs["strides"], (1, 1), attrs["ceil_mode"], POOL_SIZE_ERROR)


def _pool_infer(attrs, x):
    fmt = attrs["data_format"]
    n, h, w, c = nhwc_shape(x.shape, fmt)
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


def _taps(geo, padded):
    for i in range(geo.k[0]):
        for j in range(geo.k[1]):
            rows, cols = geo.tap_slices(i, j)
            yield i, j, padded[:, rows, cols]


@register_op("pool2d", inputs=("X",), outputs=("Out",), infer_shape=_pool_infer,
             attrs={"pooling_type": "max", "ksize": [1, 1], "global_pooling": False, "strides": [1, 1],
                    "paddings": [0, 0], "exclusive": True, "adaptive": False, "ceil_mode": False,
                    "use_cudnn": True, "use_mkldnn": False, "use_quantizer": False, "data_format": "NCHW",
                    "padding_algorithm": "EXPLICIT", "is_test": False})
def _pool2d_forward(attrs, x):
    fmt = attrs["data_format"]
    x4 = to_nhwc(x, fmt)
    xp, is_max = array_module(x4), attrs["pooling_type"] == "max"
    if attrs["global_pooling"]:
        out = x4.max(axis=(1, 2), keepdims=True) if is_max else x4.mean(axis=(1, 2), keepdims=True)
        return from_nhwc(out.astype(x4.dtype, copy=False), fmt)
    geo = _pool_geometry(attrs, x4.shape)
    taps = _taps(geo, geo.padded(x4, _MAX_POOL_INIT if is_max else 0.0, role="pool"))
    first = next(taps)[2]
    out = xp.empty(first.shape, dtype=x4.dtype)
    out[...] = first  # a fresh array: the padded buffer is scratch
    combine = xp.maximum if is_max else xp.add
    for _, _, tap in taps:  # a loop over kernel taps; each step is one vectorised op
        combine(out, tap, out=out)
    if not is_max:
        with np.errstate(divide="ignore", invalid="ignore"):  # a window of padding only: 0 / 0, as in fluid
            out /= _avg_count(geo, x4, attrs)
    return from_nhwc(out, fmt)


def _global_pool_grad(attrs, x4, d4):
    xp, (n, h, w, c) = array_module(x4), x4.shape
    if attrs["pooling_type"] != "max":
        return xp.broadcast_to(d4 / (h * w), x4.shape).astype(x4.dtype)
    first = x4.reshape(n, h * w, c).argmax(axis=1)[:, None, :] == xp.arange(h * w)[None, :, None]
    return (first * d4.reshape(n, 1, c)).reshape(x4.shape).astype(x4.dtype, copy=False)


@register_grad("pool2d")
def _pool2d_backward(attrs, ins, outs, douts, need):
    fmt = attrs["data_format"]
    x4, d4 = to_nhwc(ins[0], fmt), to_nhwc(douts[0], fmt)
    xp = array_module(x4)
    if attrs["global_pooling"]:
        return (from_nhwc(_global_pool_grad(attrs, x4, d4), fmt),)
    geo = _pool_geometry(attrs, x4.shape)
    if attrs["pooling_type"] != "max":
        with np.errstate(divide="ignore", invalid="ignore"):
            g = d4 / _avg_count(geo, x4, attrs)
        return (from_nhwc(geo.col2im(lambda i, j: g, x4.shape, x4.dtype, xp), fmt),)
    out = to_nhwc(outs[0], fmt) if outs[0] is not None else to_nhwc(
        _pool2d_forward({**attrs, "data_format": "NHWC"}, x4), "NHWC")
    taps = dict(((i, j), tap) for i, j, tap in _taps(geo, geo.padded(x4, _MAX_POOL_INIT, role="pool")))
    taken = xp.zeros(out.shape, dtype=bool)
    hit = xp.empty(out.shape, dtype=bool)

    def tap_grad(i, j):  # route dout to the first tap (row-major) that holds the max
        xp.equal(taps[i, j], out, out=hit)
        xp.greater(hit, taken, out=hit)  # hit and not taken
        taken[...] |= hit
        return d4 * hit
    return (from_nhwc(geo.col2im(tap_grad, x4.shape, x4.dtype, xp), fmt),)
