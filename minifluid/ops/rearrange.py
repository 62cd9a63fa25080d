"""Channel-rearranging vision ops: pixel_shuffle, space_to_depth, shuffle_channel, maxout, affine_channel.

The first three are one reshape-transpose-reshape each, their gradients the inverse permutation;
maxout takes the max over groups of adjacent channels (the gradient goes to the first maximum, as
fluid's kernel does); affine_channel scales and shifts per channel.
"""
import numpy as np

from .registry import register_grad, register_op


def _check_4d(op, x, what="[N, C, H, W]"):
    if len(x.shape) != 4:
        raise ValueError(f"The Input(X) of Op({op}) should be a 4-D tensor of format {what}, but received shape "
                         f"{list(x.shape)}")


def _known(d):
    return d >= 0


def _permute(x, split_shape, axes, out_shape):
    return x.reshape(split_shape).transpose(axes).reshape(out_shape)


def _inverse(axes):
    return tuple(int(a) for a in np.argsort(axes))


# --- pixel_shuffle: [N, C*r*r, H, W] -> [N, C, H*r, W*r] ------------------------------------------------
def _ps_infer(attrs, x):
    _check_4d("pixel_shuffle", x)
    r = attrs["upscale_factor"]
    if r < 1:
        raise ValueError(f"upscale_factor should be larger than 0, but received {r}")
    n, c, h, w = x.shape
    if _known(c) and c % (r * r):
        raise ValueError(f"The square of upscale_factor[{r}] should divide the number of channel[{c}]")
    return ((n, c // (r * r) if _known(c) else -1, h * r if _known(h) else -1, w * r if _known(w) else -1),
            x.dtype)


_PS_AXES = (0, 1, 4, 2, 5, 3)


@register_op("pixel_shuffle", inputs=("X",), outputs=("Out",), attrs={"upscale_factor": 1}, infer_shape=_ps_infer)
def _pixel_shuffle_forward(attrs, x):
    _ps_infer(attrs, x)
    n, c, h, w = x.shape
    r = attrs["upscale_factor"]
    return _permute(x, (n, c // (r * r), r, r, h, w), _PS_AXES, (n, c // (r * r), h * r, w * r))


@register_grad("pixel_shuffle", reads=())
def _pixel_shuffle_backward(attrs, ins, outs, douts, need):
    n, c, h, w = douts[0].shape
    r = attrs["upscale_factor"]
    return (_permute(douts[0], (n, c, h // r, r, w // r, r), _inverse(_PS_AXES), (n, c * r * r, h // r, w // r)),)


# --- space_to_depth: [N, C, H, W] -> [N, C*b*b, H/b, W/b] in fluid's (darknet reorg) order ----------------
# fluid writes input channel k = (oy * b + ox) * C / b^2 + c2 at row j, column i to position
# [c2, j * b + oy, i * b + ox] of the output's memory read as [N, C / b^2, H * b, W * b].
def _s2d_infer(attrs, x):
    _check_4d("space_to_depth", x)
    b = attrs["blocksize"]
    if b <= 1:
        raise ValueError(f"The blocksize should be Greater than 1, but received {b}")
    n, c, h, w = x.shape
    for name, d, m in (("channel", c, b * b), ("Height", h, b), ("Width", w, b)):
        if _known(d) and (d <= 0 or d % m):
            raise ValueError(f"input {name} ({d}) should be divisible by {'the square of ' if m != b else ''}"
                             f"SpaceToDepthOp blocksize ({b})")
    return ((n, c * b * b if _known(c) else -1, h // b if _known(h) else -1, w // b if _known(w) else -1), x.dtype)


_S2D_AXES = (0, 3, 4, 1, 5, 2)


@register_op("space_to_depth", inputs=("X",), outputs=("Out",), attrs={"blocksize": 2}, infer_shape=_s2d_infer)
def _space_to_depth_forward(attrs, x):
    _s2d_infer(attrs, x)
    n, c, h, w = x.shape
    b = attrs["blocksize"]
    return _permute(x, (n, b, b, c // (b * b), h, w), _S2D_AXES, (n, c * b * b, h // b, w // b))


@register_grad("space_to_depth", reads=("X",))
def _space_to_depth_backward(attrs, ins, outs, douts, need):
    n, c, h, w = ins[0].shape
    b = attrs["blocksize"]
    return (_permute(douts[0], (n, c // (b * b), h, b, w, b), _inverse(_S2D_AXES), ins[0].shape),)


# --- shuffle_channel: channel i * (C / g) + j goes to j * g + i ----------------------------------------------
def _sc_infer(attrs, x):
    _check_4d("shuffle_channel", x)
    g, c = attrs["group"], x.shape[1]
    if g < 1 or (_known(c) and c % g):
        raise ValueError(f"Attr(group) of Op(shuffle_channel) must be positive and divide the channels ({c}), "
                         f"but received {g}")
    return x.shape, x.dtype


@register_op("shuffle_channel", inputs=("X",), outputs=("Out",), attrs={"group": 1}, infer_shape=_sc_infer)
def _shuffle_channel_forward(attrs, x):
    _sc_infer(attrs, x)
    n, c, h, w = x.shape
    g = attrs["group"]
    return _permute(x, (n, g, c // g, h, w), (0, 2, 1, 3, 4), x.shape)


@register_grad("shuffle_channel", reads=())
def _shuffle_channel_backward(attrs, ins, outs, douts, need):
    n, c, h, w = douts[0].shape
    g = attrs["group"]
    return (_permute(douts[0], (n, c // g, g, h, w), (0, 2, 1, 3, 4), douts[0].shape),)


# --- maxout: the max over each group of ``groups`` adjacent channels ---------------------------------------
def _maxout_split(attrs, shape):
    """[..., C / groups, groups, ...] for ``shape`` and the axis of the group members."""
    axis, g = attrs["axis"], attrs["groups"]
    axis = axis + len(shape) if axis < 0 else axis
    return tuple(shape[:axis]) + (shape[axis] // g, g) + tuple(shape[axis + 1:]), axis + 1


def _maxout_infer(attrs, x):
    _check_4d("maxout", x, "NCHW or NHWC")
    axis, g = attrs["axis"], attrs["groups"]
    if axis not in (1, -1, 3):
        raise ValueError(f"Attr(axis) should be 1 when data format is NCHW, -1 or 3 when data format is NHWC. "
                         f"Received Attr(axis): {axis}.")
    c = x.shape[axis]
    if g < 1 or (_known(c) and c % g):
        raise ValueError(f"Attr(groups) of Op(maxout) must be positive and divide the channels ({c}), but received "
                         f"{g}")
    out = list(x.shape)
    out[axis] = c // g if _known(c) else -1
    return tuple(out), x.dtype


@register_op("maxout", inputs=("X",), outputs=("Out",), attrs={"groups": 1, "axis": 1}, infer_shape=_maxout_infer)
def _maxout_forward(attrs, x):
    _maxout_infer(attrs, x)
    split, member = _maxout_split(attrs, x.shape)
    return x.reshape(split).max(axis=member)


@register_grad("maxout", reads=("X",))
def _maxout_backward(attrs, ins, outs, douts, need):
    x, dout = ins[0], douts[0]
    split, member = _maxout_split(attrs, x.shape)
    first = np.expand_dims(x.reshape(split).argmax(axis=member), member)
    dx = np.zeros(split, dtype=dout.dtype)
    np.put_along_axis(dx, first, np.expand_dims(dout, member), axis=member)
    return (dx.reshape(x.shape),)


# --- affine_channel: x * scale[c] + bias[c] over the channel axis (NCHW: 1, NHWC: last) --------------------
def _ac_shape(attrs, ndim):
    return (1, -1) + (1,) * (ndim - 2) if attrs["data_layout"] != "NHWC" else (-1,)


def _ac_infer(attrs, x, scale, bias):
    c = x.shape[1 if attrs["data_layout"] != "NHWC" else -1]
    for slot, p in (("Scale", scale), ("Bias", bias)):
        if p is not None and len(p.shape) != 1:
            raise ValueError(f"The dimensions of Input({slot}) must be 1, But received the dimensions of "
                             f"Input({slot}) is [{len(p.shape)}]")
        if p is not None and _known(c) and _known(p.shape[0]) and p.shape[0] != c:
            raise ValueError(f"The first dimension value of Input({slot}) must be [{c}], But received "
                             f"[{p.shape[0]}].")
    return x.shape, x.dtype


@register_op("affine_channel", inputs=("X", "Scale", "Bias"), outputs=("Out",), attrs={"data_layout": "AnyLayout"},
             optional=("Scale", "Bias"), infer_shape=_ac_infer, share_lod={"Out": "X"})
def _affine_channel_forward(attrs, x, scale, bias):
    _ac_infer(attrs, x, scale, bias)
    shape = _ac_shape(attrs, x.ndim)
    out = x if scale is None else x * scale.reshape(shape)
    return (out if bias is None else out + bias.reshape(shape)).astype(x.dtype, copy=False)


@register_grad("affine_channel")
def _affine_channel_backward(attrs, ins, outs, douts, need):
    (x, scale, _), dout = ins, douts[0]
    shape = _ac_shape(attrs, x.ndim)
    others = tuple(a for a in range(x.ndim) if a != (1 if shape[0] == 1 else x.ndim - 1))
    dx = (dout if scale is None else dout * scale.reshape(shape)) if need[0] else None
    dscale = (dout * x).sum(axis=others) if need[1] else None
    dbias = dout.sum(axis=others) if need[2] else None
    return dx, dscale, dbias
