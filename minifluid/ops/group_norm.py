"""Per-sample normalisation over channel groups: group_norm and instance_norm.

Both view the input as [N, groups, rest] (instance_norm: one group per channel), take the mean and
variance of each row with one reduction, scale and shift per channel; the gradient is the closed form
that layer_norm's (ops/norm.py) is, per group. group_norm keeps the variance, instance_norm (as fluid
does) the inverse standard deviation 1 / sqrt(var + epsilon).
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _channel_axis(layout, ndim):
    return 1 if layout == "NCHW" else ndim - 1


def _grouped(x, groups, layout):
    """``x`` as [N, groups, rest] (NCHW) or [N, rest, groups, C / groups] (NHWC), and the axes to reduce."""
    n, c = x.shape[0], x.shape[_channel_axis(layout, x.ndim)]
    if layout == "NCHW":
        return x.reshape(n, groups, -1), (2,)
    return x.reshape(n, -1, groups, c // groups), (1, 3)


def _per_channel(v, layout, ndim):
    """A [C] vector shaped to broadcast against the input's channel axis."""
    return v.reshape((1, -1) + (1,) * (ndim - 2)) if layout == "NCHW" else v


def _normalise(x, groups, layout, epsilon, scale, bias):
    """(y, mean, var, inv) with mean / var / inv shaped [N, groups]."""
    g, axes = _grouped(x, groups, layout)
    mean = g.mean(axis=axes, keepdims=True)
    var = ((g - mean) ** 2).mean(axis=axes, keepdims=True)
    inv = 1.0 / array_module(x).sqrt(var + epsilon)
    y = ((g - mean) * inv).reshape(x.shape)
    y = y if scale is None else y * _per_channel(scale, layout, x.ndim)
    y = y if bias is None else y + _per_channel(bias, layout, x.ndim)
    flat = (lambda a: a.reshape(x.shape[0], groups))
    return y.astype(x.dtype, copy=False), flat(mean), flat(var), flat(inv)


def _normalise_backward(x, dy, scale, groups, layout, mean, inv, need):
    """(dx, dscale, dbias) from the per-group mean and inverse std (both [N, groups])."""
    g, axes = _grouped(x, groups, layout)
    keep = (x.shape[0], groups, 1) if layout == "NCHW" else (x.shape[0], 1, groups, 1)
    inv = inv.reshape(keep)
    xhat = (g - mean.reshape(keep)) * inv
    caxis = _channel_axis(layout, x.ndim)
    others = tuple(a for a in range(x.ndim) if a != caxis)
    dscale = (dy * xhat.reshape(x.shape)).sum(axis=others).reshape(scale.shape) if need[1] else None
    dbias = dy.sum(axis=others) if need[2] else None
    dx = None
    if need[0]:
        gy = dy if scale is None else dy * _per_channel(scale, layout, x.ndim)
        gg, _ = _grouped(gy, groups, layout)
        dx = inv * (gg - gg.mean(axis=axes, keepdims=True) - xhat * (gg * xhat).mean(axis=axes, keepdims=True))
        dx = dx.reshape(x.shape).astype(x.dtype, copy=False)
    return dx, dscale, dbias


def _check_param(name, op, p, channels):
    if p is not None and (len(p.shape) != 1 or (channels >= 0 and p.shape[0] >= 0 and p.shape[0] != channels)):
        raise ValueError(f"The Input({name}) of Op({op}) should be a 1-D Tensor of size {channels} (the input's "
                         f"channels), but received shape {list(p.shape)}")


# --- group_norm: normalise each sample over each group of C / groups channels ------------------------------
def _gn_check(attrs, x, scale, bias):
    layout, groups, eps = attrs["data_layout"], attrs["groups"], attrs["epsilon"]
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"Attr(data_layout) of Op(group_norm) should be NCHW or NHWC, but received {layout}")
    if len(x.shape) < 2:
        raise ValueError(f"The Input(X) of Op(group_norm) should have at least 2 dimensions, but received shape "
                         f"{list(x.shape)}")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"'epsilon' in Op(GroupNorm) should be between 0.0 and 1.0f, But received [{eps}].")
    channels = x.shape[_channel_axis(layout, len(x.shape))]
    if groups < 1:
        raise ValueError(f"The Attr(groups) of Op(group_norm) must be greater than or equal to 1. But received: "
                         f"groups is [{groups}].")
    if channels >= 0 and (groups > channels or channels % groups):
        raise ValueError(f"The Attr(groups) of Op(group_norm) must divide the number of channels; the channels "
                         f"are [{channels}] (input shape {list(x.shape)}), but received groups [{groups}].")
    _check_param("Scale", "group_norm", scale, channels)
    _check_param("Bias", "group_norm", bias, channels)


def _gn_infer(attrs, x, scale, bias):
    _gn_check(attrs, x, scale, bias)
    stats = ((x.shape[0], attrs["groups"]), x.dtype)
    return (x.shape, x.dtype), stats, stats


@register_op("group_norm", inputs=("X", "Scale", "Bias"), outputs=("Y", "Mean", "Variance"),
             attrs={"epsilon": 1e-5, "groups": 1, "data_layout": "NCHW"}, optional=("Scale", "Bias"),
             infer_shape=_gn_infer, share_lod={"Y": "X"})
def _group_norm_forward(attrs, x, scale, bias):
    _gn_check(attrs, x, scale, bias)
    y, mean, var, _ = _normalise(x, attrs["groups"], attrs["data_layout"], attrs["epsilon"], scale, bias)
    return y, mean, var


@register_grad("group_norm", out_grads=("Y",))
def _group_norm_backward(attrs, ins, outs, douts, need):
    (x, scale, _), (_, mean, var) = ins, outs
    inv = 1.0 / array_module(x).sqrt(var + attrs["epsilon"])
    return _normalise_backward(x, douts[0], scale, attrs["groups"], attrs["data_layout"], mean, inv, need)


# --- instance_norm: normalise each channel of each sample over its spatial positions ---------------------
def _in_check(x, scale, bias):
    if not 2 <= len(x.shape) <= 5:
        raise ValueError(f"ShapeError: the dimension of input X must be between 2 and 5. But received: the shape of "
                         f"input X = {list(x.shape)}, the dimension of input X = [{len(x.shape)}]")
    _check_param("Scale", "instance_norm", scale, x.shape[1])
    _check_param("Bias", "instance_norm", bias, x.shape[1])


def _in_infer(attrs, x, scale, bias):
    _in_check(x, scale, bias)
    n, c = x.shape[0], x.shape[1]
    stats = ((n * c if n >= 0 and c >= 0 else -1,), x.dtype)
    return (x.shape, x.dtype), stats, stats


@register_op("instance_norm", inputs=("X", "Scale", "Bias"), outputs=("Y", "SavedMean", "SavedVariance"),
             attrs={"epsilon": 1e-5}, optional=("Scale", "Bias"), infer_shape=_in_infer, share_lod={"Y": "X"})
def _instance_norm_forward(attrs, x, scale, bias):
    _in_check(x, scale, bias)
    y, mean, _, inv = _normalise(x, x.shape[1], "NCHW", attrs["epsilon"], scale, bias)
    return y, mean.reshape(-1), inv.reshape(-1)


@register_grad("instance_norm", out_grads=("Y",))
def _instance_norm_backward(attrs, ins, outs, douts, need):
    (x, scale, _), (_, mean, inv) = ins, outs
    c = x.shape[1]
    return _normalise_backward(x, douts[0], scale, c, "NCHW", mean.reshape(-1, c), inv.reshape(-1, c), need)
