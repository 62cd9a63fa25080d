"""Fused inference ops of fluid 1.8 (no gradient, as in fluid): fusion_squared_mat_sub, ((X Y)^2 - X^2 Y^2) * scalar,
and fusion_repeated_fc_relu, a chain of fc + bias + relu layers."""
import numpy as np

from . import parallel
from .registry import register_op


def _mat_sub_infer(attrs, x, y):
    if len(x.shape) != 2 or len(y.shape) != 2 or x.shape[1] != y.shape[0] and min(x.shape[1], y.shape[0]) >= 0:
        raise ValueError(f"fusion_squared_mat_sub: X and Y must be matrices with X's width equal to Y's height, but "
                         f"received X's shape {list(x.shape)} and Y's shape {list(y.shape)}")
    out = ((x.shape[0], y.shape[1]), x.dtype)
    return (x.shape, x.dtype), (y.shape, y.dtype), out, out


@register_op("fusion_squared_mat_sub", inputs=("X", "Y"), outputs=("SquaredX", "SquaredY", "SquaredXY", "Out"),
             attrs={"scalar": 1.0}, infer_shape=_mat_sub_infer, no_gradient=True)
def _squared_mat_sub_forward(attrs, x, y):
    _mat_sub_infer(attrs, x, y)
    sx, sy = x * x, y * y
    xy = parallel.matmul(x, y)
    sxy = xy * xy
    return sx, sy, sxy, ((sxy - parallel.matmul(sx, sy)) * attrs["scalar"]).astype(x.dtype, copy=False)


def _repeated_fc_infer(attrs, x, ws, bs):
    if len(ws) < 2 or len(bs) != len(ws):
        raise ValueError(f"fusion_repeated_fc_relu: needs at least 2 weights and one bias per weight, but received "
                         f"{len(ws)} weights and {len(bs)} biases")
    rows, width, metas = x.shape[0], int(np.prod(x.shape[1:])), []
    for i, w in enumerate(ws):
        if len(w.shape) != 2 or w.shape[0] != width and min(w.shape[0], width) >= 0:
            raise ValueError(f"fusion_repeated_fc_relu: W[{i}] must be [{width}, N], but received {list(w.shape)}")
        width = w.shape[1]
        metas.append(((rows, width), x.dtype))
    return metas[:-1], metas[-1]


@register_op("fusion_repeated_fc_relu", inputs=("X", "W", "Bias"), outputs=("ReluOut", "Out"),
             duplicable=("W", "Bias", "ReluOut"), infer_shape=_repeated_fc_infer, no_gradient=True)
def _repeated_fc_relu_forward(attrs, x, ws, bs):
    """relu(... relu(X W0 + b0) W1 + b1 ...): every layer's output but the last is a ReluOut."""
    _repeated_fc_infer(attrs, x, ws, bs)
    h, outs = x.reshape(x.shape[0], -1), []
    for w, b in zip(ws, bs):
        h = parallel.matmul(h, w) + b.reshape(1, -1)
        np.maximum(h, 0, out=h)
        outs.append(h)
    return outs[:-1], outs[-1]
