"""Assorted vision ops: mish, unfold, temporal_shift and fsp (the flow-of-solution-procedure matrix).

mish is ``x * tanh(softplus(x))`` with fluid's thresholded softplus (its gradient the exact derivative
of that, cut-offs included); unfold copies every sliding window of a padded NCHW input out of the strided
window view that ``im2col.Geometry`` builds (its gradient the per-tap sum ``Geometry.col2im``);
temporal_shift moves channel slices one segment back or forward in time inside each clip (slice copies,
the gradient the same copies the other way); fsp is one batched matrix product ``X Y^T / (H * W)`` over
the flattened spatial positions.
"""
import numpy as np

from .im2col import Geometry, from_nhwc, to_nhwc
from .registry import array_module, register_grad, register_op


def _known(d):
    return d >= 0


# --- mish: x * tanh(softplus(x)), softplus cut off at +-threshold as fluid computes it -------------------
def _softplus(x, threshold):
    """(softplus, its derivative) with fluid's cut-offs: x above ``threshold``, exp(x) below -threshold."""
    xp = array_module(x)
    sp, dsp = xp.logaddexp(0, x), 0.5 * (1 + xp.tanh(0.5 * x))  # log1p(exp(x)) and the sigmoid, overflow-free
    if threshold > 0:
        high, low = x > threshold, x < -threshold
        sp, dsp = xp.where(high, x, xp.where(low, xp.exp(x), sp)), xp.where(high, 1, xp.where(low, xp.exp(x), dsp))
    return sp, dsp


@register_op("mish", inputs=("X",), outputs=("Out",), attrs={"threshold": 20.0},
             infer_shape=lambda attrs, x: (x.shape, x.dtype), share_lod={"Out": "X"})
def _mish_forward(attrs, x):
    return (x * array_module(x).tanh(_softplus(x, attrs["threshold"])[0])).astype(x.dtype, copy=False)


@register_grad("mish", reads=("X",))
def _mish_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    sp, dsp = _softplus(x, attrs["threshold"])
    tsp = array_module(x).tanh(sp)
    return ((douts[0] * (tsp + x * (1 - tsp * tsp) * dsp)).astype(x.dtype, copy=False),)


# --- unfold: [N, C, H, W] -> [N, C * kh * kw, OH * OW] (im2col in (c, i, j) x (oh, ow) order) -------------
_UNFOLD_SIZE_ERROR = ("Due to the settings of padding({p0}, {p1}), filter_size({k}), dilation({d}) and stride({s}), "
                      "the output size is less than 0, please check again. Input_size:{size}")


def _unfold_geometry(attrs, x_shape):
    k, s, p, d = (list(attrs[a]) for a in ("kernel_sizes", "strides", "paddings", "dilations"))
    if len(x_shape) != 4:
        raise ValueError(f"Input should be 4-D tensor of format [N, C, H, W], but get {len(x_shape)}")
    if len(x_shape) - len(k) != 2:
        raise ValueError("The dims of X should be larger than that of kernel_sizes by a number of 2, due to the "
                         "batch size and input channel dim. But recieved dims(X:%d) - dims(kernel_sizes:%d) != 2"
                         % (len(x_shape), len(k)))
    if len(s) != len(k):
        raise ValueError(f"The dims of strides should be the same with that of kernel_sizes. But recieved "
                         f"dims(strides: {len(s)}) != dims(kernel_sizes: {len(k)}).")
    if len(p) != 2 * len(s):
        raise ValueError(f"The dims of paddings should be 2 times of that of strides. But recieved "
                         f"dims(paddings: {len(p)}) != 2*dims(strides: {len(s)}).")
    if len(s) != len(d):
        raise ValueError(f"The dims of strides should be the same with that of dilations. But recieved "
                         f"dims(strides: {len(s)}) != dims(dilations: {len(d)}).")
    # unfold's paddings are [top, left, bottom, right]; Geometry takes [top, bottom, left, right]
    return Geometry({"paddings": [p[0], p[2], p[1], p[3]]}, x_shape[2:], k, s, d, message=_UNFOLD_SIZE_ERROR)


def _unfold_infer(attrs, x):
    g = _unfold_geometry(attrs, x.shape)
    n, c = x.shape[:2]
    cols = c * g.k[0] * g.k[1] if _known(c) else -1
    return (n, cols, g.out[0] * g.out[1] if min(g.out) >= 0 else -1), x.dtype


@register_op("unfold", inputs=("X",), outputs=("Y",),
             attrs={"kernel_sizes": [], "strides": [1, 1], "paddings": [0, 0, 0, 0], "dilations": [1, 1]},
             infer_shape=_unfold_infer)
def _unfold_forward(attrs, x):
    g = _unfold_geometry(attrs, x.shape)
    windows = g.windows(g.padded(to_nhwc(x, "NCHW"), role="unfold"))  # [N, OH, OW, kh, kw, C] of scratch
    out = array_module(x).empty((x.shape[0], x.shape[1]) + g.k + g.out, dtype=x.dtype)
    out[...] = windows.transpose(0, 5, 3, 4, 1, 2)
    return out.reshape(x.shape[0], -1, g.out[0] * g.out[1])


@register_grad("unfold", reads=("X",))
def _unfold_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    g = _unfold_geometry(attrs, x.shape)
    n, c = x.shape[:2]
    taps = douts[0].reshape((n, c) + g.k + g.out)
    dx = g.col2im(lambda i, j: taps[:, :, i, j].transpose(0, 2, 3, 1), (n,) + x.shape[2:] + (c,), douts[0].dtype,
                  array_module(x))
    return (from_nhwc(dx, "NCHW"),)


# --- temporal_shift: [N*T, C, H, W]; channels [0, c1) read segment t - 1, [c1, c2) segment t + 1 ----------
def _ts_check(attrs, x):
    t, ratio = attrs["seg_num"], attrs["shift_ratio"]
    if len(x.shape) != 4:
        raise ValueError(f"Input(X) rank should be 4 in shape of [N*T, C, H, W], but received X rank({len(x.shape)})")
    if t <= 0:
        raise ValueError(f"Attr(seg_num) should be greater than 0, but received {t}")
    if not 0 < ratio < 0.5:
        raise ValueError(f"Attr(shift_ratio) should be {'greater than 0' if ratio <= 0 else 'less than 0.5'}, "
                         f"but received {ratio}")
    if _known(x.shape[0]) and x.shape[0] % t:
        raise ValueError(f"Input(X) dimension[0] should be divided exactly by Attr(seg_num), but received X "
                         f"dimension[0]({x.shape[0]}) mod seg_num({t}) != 0")


def _ts_split(attrs, c):
    ratio = np.float32(attrs["shift_ratio"])
    return int(np.float32(c) * ratio), int(np.float32(c) * np.float32(2) * ratio)


def _ts_shift(attrs, x, back):
    """The shifted copy of ``x`` (``back``: the adjoint, each slice moved the other way)."""
    t = attrs["seg_num"]
    c1, c2 = _ts_split(attrs, x.shape[1])
    v = x.reshape((-1, t) + x.shape[1:])
    out = array_module(x).zeros_like(v)
    first, second = (slice(1, None), slice(None, -1)) if not back else (slice(None, -1), slice(1, None))
    out[:, first, :c1] = v[:, second, :c1]
    out[:, second, c1:c2] = v[:, first, c1:c2]
    out[:, :, c2:] = v[:, :, c2:]
    return out.reshape(x.shape)


@register_op("temporal_shift", inputs=("X",), outputs=("Out",), attrs={"seg_num": 1, "shift_ratio": 0.25},
             infer_shape=lambda attrs, x: (_ts_check(attrs, x), (x.shape, x.dtype))[1])
def _temporal_shift_forward(attrs, x):
    _ts_check(attrs, x)
    return _ts_shift(attrs, x, back=False)


@register_grad("temporal_shift", reads=())
def _temporal_shift_backward(attrs, ins, outs, douts, need):
    return (_ts_shift(attrs, douts[0], back=True),)


# --- fsp: Out[n] = X[n] Y[n]^T / (H * W) over [C, H * W] matrices ----------------------------------------
def _fsp_infer(attrs, x, y):
    for slot, v in (("X", x), ("Y", y)):
        if len(v.shape) != 4:
            raise ValueError(f"The Input({slot}) must have shape [batch_size, channel, height, width].Now the "
                             f"dimension of '{slot}' is {len(v.shape)}.")
    for axis, what in ((2, "height"), (3, "width")):
        if _known(x.shape[axis]) and _known(y.shape[axis]) and x.shape[axis] != y.shape[axis]:
            raise ValueError(f"The Input(X)({x.shape[axis]}) and Input(Y)({y.shape[axis]}) should have the same "
                             f"{what}.")
    return (x.shape[0], x.shape[1], y.shape[1]), x.dtype


def _flat(v):
    return v.reshape(v.shape[0], v.shape[1], -1)


@register_op("fsp", inputs=("X", "Y"), outputs=("Out",), infer_shape=_fsp_infer, share_lod={"Out": "X"})
def _fsp_forward(attrs, x, y):
    _fsp_infer(attrs, x, y)
    hw = x.shape[2] * x.shape[3]
    return (_flat(x) @ _flat(y).transpose(0, 2, 1) / hw).astype(x.dtype, copy=False)


@register_grad("fsp")
def _fsp_backward(attrs, ins, outs, douts, need):
    x, y = ins
    d = douts[0] / (x.shape[2] * x.shape[3])
    dx = (d @ _flat(y)).reshape(x.shape).astype(x.dtype, copy=False) if need[0] else None
    dy = (d.transpose(0, 2, 1) @ _flat(x)).reshape(y.shape).astype(y.dtype, copy=False) if need[1] else None
    return dx, dy


# --- bilinear_tensor_product: Out[n, k] = X[n] W[k] Y[n]^T + Bias[0, k] -----------------------------------
def _btp_infer(attrs, x, y, weight, bias):
    for slot, v, rank in (("X", x, 2), ("Y", y, 2), ("Weight", weight, 3)):
        if len(v.shape) != rank:
            raise ValueError(f"The input({slot}) must be a {rank}D {'Tensor' if rank == 2 else 'tensor'}.")
    if _known(x.shape[0]) and _known(y.shape[0]) and x.shape[0] != y.shape[0]:
        raise ValueError("The first dimension(batch_size) of input(X) must be equal to the first dimension of the "
                         "input(Y).")
    for slot, v, axis, what in (("X", x, 1, "second"), ("Y", y, 2, "third")):
        if _known(v.shape[1]) and _known(weight.shape[axis]) and v.shape[1] != weight.shape[axis]:
            raise ValueError(f"The second dimension of input({slot}) must be equal to the {what} dimension of the "
                             f"input(Weight).")
    if bias is not None:
        if len(bias.shape) != 2 or bias.shape[0] not in (1, -1):
            raise ValueError("The Input(Bias) must be a 2-D tensor with the 2nd dimension fixed to 1 (a row vector).")
        if _known(bias.shape[1]) and _known(weight.shape[0]) and bias.shape[1] != weight.shape[0]:
            raise ValueError("The second dimension of input(Bias) must be equal to the first dimension of the "
                             "input(Weight).")
    return (x.shape[0], weight.shape[0]), x.dtype


@register_op("bilinear_tensor_product", inputs=("X", "Y", "Weight", "Bias"), outputs=("Out",), optional=("Bias",),
             infer_shape=_btp_infer, share_lod={"Out": "X"})
def _btp_forward(attrs, x, y, weight, bias):
    _btp_infer(attrs, x, y, weight, bias)
    out = array_module(x).einsum("ni,kij,nj->nk", x, weight, y, optimize=True)
    return (out if bias is None else out + bias).astype(x.dtype, copy=False)


@register_grad("bilinear_tensor_product", reads=("X", "Y", "Weight"))
def _btp_backward(attrs, ins, outs, douts, need):
    (x, y, weight, _), d = ins, douts[0]
    einsum = array_module(x).einsum
    return (einsum("nk,kij,nj->ni", d, weight, y, optimize=True) if need[0] else None,
            einsum("nk,kij,ni->nj", d, weight, x, optimize=True) if need[1] else None,
            einsum("nk,ni,nj->kij", d, x, y, optimize=True) if need[2] else None,
            d.sum(axis=0, keepdims=True) if need[3] else None)


# --- sigmoid_focal_loss: per class, Label = class + 1 is the positive, -1 ignores the sample ----------------
def _sfl_infer(attrs, x, label, fg_num):
    xs, ls = list(x.shape), list(label.shape)
    if len(xs) != len(ls):
        raise ValueError(f"The rank of Input(X) should be equal to the rank of Input(Label), but received X rank "
                         f"is:{len(xs)}, X shape is:{xs}, Label rank is:{len(ls)}, Label shape is:{ls}.")
    if len(fg_num.shape) != 1:
        raise ValueError(f"The rank of Input(FgNum) must be 1, but received FgNum rank is :{len(fg_num.shape)}, "
                         f"FgNum shape is:{list(fg_num.shape)}.")
    if all(_known(d) for d in xs[:-1] + ls[:-1]) and xs[:-1] != ls[:-1]:
        raise ValueError(f"Input(X) and Input(Label) should have the same shape except the last dimension, but "
                         f"received X shape is:{xs}, Label shape is:{ls}.")
    if _known(ls[-1]) and ls[-1] != 1:
        raise ValueError(f"The last dimension of Input(Label) should be 1, but received Label shape is:{ls}.")
    return x.shape, x.dtype


def _sfl_terms(attrs, x, label, fg_num):
    """(p, log p, log(1 - p), positive weight, negative weight): the weights alpha / fg and
    (1 - alpha) / fg where the class is the label's and where it is another (none for label -1)."""
    xp = array_module(x)
    classes = xp.arange(1, x.shape[-1] + 1)
    pos = label == classes
    neg = (label != -1) & ~pos
    fg = max(int(fg_num.reshape(-1)[0]), 1)
    alpha = attrs["alpha"]
    log_p, log_q = -xp.logaddexp(0, -x), -xp.logaddexp(0, x)  # log sigmoid(x), log(1 - sigmoid(x))
    log_p = xp.maximum(log_p, np.log(np.finfo(np.float32).tiny))  # fluid clamps p at FLT_MIN
    return xp.exp(-xp.logaddexp(0, -x)), log_p, log_q, pos * (alpha / fg), neg * ((1 - alpha) / fg)


@register_op("sigmoid_focal_loss", inputs=("X", "Label", "FgNum"), outputs=("Out",),
             attrs={"gamma": 2.0, "alpha": 0.25}, no_grad_inputs=("Label", "FgNum"), infer_shape=_sfl_infer)
def _sfl_forward(attrs, x, label, fg_num):
    _sfl_infer(attrs, x, label, fg_num)
    p, log_p, log_q, s_pos, s_neg = _sfl_terms(attrs, x, label, fg_num)
    g = attrs["gamma"]
    return (-s_pos * (1 - p) ** g * log_p - s_neg * p ** g * log_q).astype(x.dtype, copy=False)


@register_grad("sigmoid_focal_loss", reads=("X", "Label", "FgNum"))
def _sfl_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    p, log_p, log_q, s_pos, s_neg = _sfl_terms(attrs, *ins)
    g = attrs["gamma"]
    d_pos = (1 - p) ** g * (1 - p - p * g * log_p)  # d/dx of (1 - p)^g log p
    d_neg = p ** g * (g * (1 - p) * log_q - p)  # d/dx of p^g log(1 - p)
    return ((-(s_pos * d_pos + s_neg * d_neg) * douts[0]).astype(x.dtype, copy=False), None, None)
