"""Normalisation ops: layer_norm, norm (l2_normalize) and lrn (local response normalisation across channels).

Kernels reduce with keepdims over the whole batch; gradients are the closed forms.
"""
import numpy as np

from .registry import array_module, register_grad, register_op


# --- layer_norm: normalise over the dims from begin_norm_axis, then scale and shift ------------------
def check_begin_norm_axis(axis, rank):
    """fluid's check of layer_norm's begin_norm_axis (the layer calls it too)."""
    if not 0 < axis < rank:
        raise ValueError(f"'begin_norm_axis' in Op(layer_norm) should be less than input dimension ({rank}) "
                         f"and greater than 0, but received {axis}")


def _ln_split(attrs, shape):
    axis = attrs["begin_norm_axis"]
    check_begin_norm_axis(axis, len(shape))
    left = int(np.prod(shape[:axis])) if all(d >= 0 for d in shape[:axis]) else -1
    return left, int(np.prod(shape[axis:]))


def _ln_infer(attrs, x, scale, bias):
    left, _ = _ln_split(attrs, x.shape)
    return (x.shape, x.dtype), ((left,), x.dtype), ((left,), x.dtype)


@register_op("layer_norm", inputs=("X", "Scale", "Bias"), outputs=("Y", "Mean", "Variance"),
             attrs={"epsilon": 1e-5, "begin_norm_axis": 1}, optional=("Scale", "Bias"), infer_shape=_ln_infer,
             share_lod={"Y": "X"})
def _layer_norm_forward(attrs, x, scale, bias):
    left, right = _ln_split(attrs, x.shape)
    x2 = x.reshape(left, right)
    mean = x2.mean(axis=1)
    var = x2.var(axis=1)
    y = (x2 - mean[:, None]) / array_module(x).sqrt(var[:, None] + attrs["epsilon"])
    y = y if scale is None else y * scale.reshape(1, right)
    y = y if bias is None else y + bias.reshape(1, right)
    return y.reshape(x.shape).astype(x.dtype, copy=False), mean, var


@register_grad("layer_norm", out_grads=("Y",))
def _layer_norm_backward(attrs, ins, outs, douts, need):
    (x, scale, bias), (_, mean, var), dy = ins, outs, douts[0]
    left, right = _ln_split(attrs, x.shape)
    inv = 1.0 / array_module(x).sqrt(var[:, None] + attrs["epsilon"])
    xhat = (x.reshape(left, right) - mean[:, None]) * inv
    dy2 = dy.reshape(left, right)
    dscale = (dy2 * xhat).sum(axis=0).reshape(scale.shape) if need[1] else None
    dbias = dy2.sum(axis=0).reshape(bias.shape) if need[2] else None
    dx = None
    if need[0]:
        g = dy2 if scale is None else dy2 * scale.reshape(1, right)
        dx = inv * (g - g.mean(axis=1, keepdims=True) - xhat * (g * xhat).mean(axis=1, keepdims=True))
        dx = dx.reshape(x.shape).astype(x.dtype, copy=False)
    return dx, dscale, dbias


# --- norm: x / sqrt(sum(x^2) + epsilon) along one axis (fluid.layers.l2_normalize) ----------------------
@register_op("norm", inputs=("X",), outputs=("Out", "Norm"), attrs={"axis": 1, "epsilon": 1e-10, "is_test": False},
             infer_shape=lambda attrs, x: ((x.shape, x.dtype), (tuple(1 if i == attrs["axis"] % len(x.shape) else d
                                                                        for i, d in enumerate(x.shape)), x.dtype)))
def _norm_forward(attrs, x):
    norm = array_module(x).sqrt((x * x).sum(axis=attrs["axis"], keepdims=True) + attrs["epsilon"])
    return x / norm, norm


@register_grad("norm")
def _norm_backward(attrs, ins, outs, douts, need):
    x, (out, norm), dout = ins[0], outs, douts[0]
    return ((dout - out * (dout * out).sum(axis=attrs["axis"], keepdims=True)) / norm,)


# --- lrn: x * (k + alpha * sum of x^2 over n neighbouring channels) ** -beta ----------------------------
def _channel_window_sum(sq, n):
    """Sum over the window of ``n`` channels around each channel (zero-padded), via one cumulative sum."""
    xp = array_module(sq)
    pre = (n - 1) // 2
    padded = xp.pad(sq, ((0, 0), (pre + 1, n - 1 - pre), (0, 0), (0, 0)))
    c = xp.cumsum(padded, axis=1)
    return c[:, n:] - c[:, :-n]


def _nchw(attrs, x):
    return x.transpose(0, 3, 1, 2) if attrs["data_format"] == "NHWC" else x


@register_op("lrn", inputs=("X",), outputs=("Out", "MidOut"),
             attrs={"n": 5, "k": 2.0, "alpha": 1e-4, "beta": 0.75, "data_format": "AnyLayout", "is_test": False},
             infer_shape=lambda attrs, x: ((x.shape, x.dtype), (x.shape, x.dtype)))
def _lrn_forward(attrs, x):
    if x.ndim != 4:
        raise ValueError(f"Input(input) rank should be 4, but received input rank ({x.ndim})")
    xc = _nchw(attrs, x)
    mid = attrs["k"] + attrs["alpha"] * _channel_window_sum(xc * xc, attrs["n"])
    out = xc * mid ** -attrs["beta"]
    back = (lambda a: a.transpose(0, 2, 3, 1)) if attrs["data_format"] == "NHWC" else (lambda a: a)
    return back(out).astype(x.dtype, copy=False), back(mid).astype(x.dtype, copy=False)


@register_grad("lrn")
def _lrn_backward(attrs, ins, outs, douts, need):
    x, dout = _nchw(attrs, ins[0]), _nchw(attrs, douts[0])
    out, mid = _nchw(attrs, outs[0]), _nchw(attrs, outs[1])
    n, alpha, beta = attrs["n"], attrs["alpha"], attrs["beta"]
    # the window is symmetric up to its offset: channel j is in c's window iff c is in j's mirrored window
    ratio = (dout * out / mid)[:, ::-1]
    back = _channel_window_sum(ratio, n)[:, ::-1]
    dx = dout * mid ** -beta - 2 * alpha * beta * x * back
    return ((dx.transpose(0, 2, 3, 1) if attrs["data_format"] == "NHWC" else dx).astype(ins[0].dtype, copy=False),)
