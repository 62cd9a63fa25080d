"""Losses computed element by element: sigmoid_cross_entropy_with_logits, smooth_l1_loss, squared_l2_distance,
log_loss, huber_loss, hinge_loss, modified_huber_loss, bce_loss, and label_smooth (which makes soft labels for them).

Each kernel is a few numpy calls over the whole batch; each gradient is its closed form.
"""
import numpy as np

from .registry import InvalidArgumentError, array_module, register_grad, register_op, same_as


# --- sigmoid_cross_entropy_with_logits ---------------------------------------------------------------
def _kept(attrs, label):
    """1 where the label is not ignore_index, and the normaliser (count of such labels) when asked."""
    keep = (label != attrs["ignore_index"]).astype(label.dtype, copy=False)
    norm = max(float(keep.sum()), 1.0) if attrs["normalize"] else 1.0  # fluid divides by 0 when all are ignored
    return keep, norm


@register_op("sigmoid_cross_entropy_with_logits", inputs=("X", "Label"), outputs=("Out",), infer_shape=same_as(0),
             attrs={"normalize": False, "ignore_index": -100}, no_grad_inputs=("Label",), share_lod={"Out": "X"})
def _sigmoid_ce_forward(attrs, x, label):
    xp = array_module(x)
    keep, norm = _kept(attrs, label)
    loss = xp.maximum(x, 0) - x * label + xp.log1p(xp.exp(-xp.abs(x)))  # overflow-free
    return (loss * keep / norm).astype(x.dtype, copy=False)


@register_grad("sigmoid_cross_entropy_with_logits")
def _sigmoid_ce_backward(attrs, ins, outs, douts, need):
    (x, label), dout = ins, douts[0]
    keep, norm = _kept(attrs, label)
    sig = 0.5 * (1.0 + array_module(x).tanh(0.5 * x))
    return (dout * (sig - label) * keep / norm).astype(x.dtype, copy=False), None


# --- smooth_l1_loss: per-sample sum of the smooth L1 of (X - Y) * InsideWeight, times OutsideWeight ------
def _smooth_l1_parts(attrs, x, y, inside):
    diff = x - y if inside is None else (x - y) * inside
    s2 = attrs["sigma"] ** 2
    small = array_module(x).abs(diff) < 1.0 / s2
    return diff, small, s2


@register_op("smooth_l1_loss", inputs=("X", "Y", "InsideWeight", "OutsideWeight"), outputs=("Diff", "Out"),
             attrs={"sigma": 1.0}, optional=("InsideWeight", "OutsideWeight"),
             no_grad_inputs=("InsideWeight", "OutsideWeight"),
             infer_shape=lambda attrs, x, y, i, o: ((x.shape, x.dtype), ((x.shape[0], 1), x.dtype)))
def _smooth_l1_forward(attrs, x, y, inside, outside):
    diff, small, s2 = _smooth_l1_parts(attrs, x, y, inside)
    xp = array_module(x)
    err = xp.where(small, 0.5 * s2 * diff * diff, xp.abs(diff) - 0.5 / s2)
    err = err if outside is None else err * outside
    return diff, err.reshape(x.shape[0], -1).sum(axis=1, keepdims=True).astype(x.dtype, copy=False)


@register_grad("smooth_l1_loss")
def _smooth_l1_backward(attrs, ins, outs, douts, need):
    x, y, inside, outside = ins
    diff, small, s2 = _smooth_l1_parts(attrs, x, y, inside)
    d = array_module(x).where(small, s2 * diff, array_module(x).sign(diff))
    d = d * douts[1].reshape((-1,) + (1,) * (x.ndim - 1))
    d = d if inside is None else d * inside
    d = d if outside is None else d * outside
    return (d if need[0] else None), (-d if need[1] else None), None, None


# --- log_loss: binary cross entropy of probabilities ---------------------------------------------------
# --- squared_l2_distance: per row, the squared distance of X's row to Y's (Y's one row shared) -----------------
def _sq_l2_infer(attrs, x, y):
    xs, ys = tuple(x.shape), tuple(y.shape)
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"squared_l2_distance: Input(X) and Input(Y) should have the same rank, at least 2. But "
                         f"received X's shape = {list(xs)} and Y's shape = {list(ys)}")
    cols_x, cols_y = int(np.prod(xs[1:])), int(np.prod(ys[1:]))
    if cols_x >= 0 and cols_y >= 0 and min(xs[1:] + ys[1:]) >= 0 and cols_x != cols_y:
        raise ValueError(f"squared_l2_distance: Input(X) and Input(Y) should have the same size per row. But received "
                         f"X's shape = {list(xs)} and Y's shape = {list(ys)}")
    if xs[0] >= 0 and ys[0] >= 0 and ys[0] not in (1, xs[0]):
        raise ValueError(f"squared_l2_distance: the first dimension of Input(Y) must be 1 or X's first dimension. "
                         f"But received X's shape = {list(xs)} and Y's shape = {list(ys)}")
    return ((xs[0], cols_x if min(xs[1:]) >= 0 else -1), x.dtype), ((xs[0], 1), x.dtype)


@register_op("squared_l2_distance", inputs=("X", "Y"), outputs=("sub_result", "Out"), infer_shape=_sq_l2_infer,
             share_lod={"Out": "X"})
def _sq_l2_forward(attrs, x, y):
    _sq_l2_infer(attrs, x, y)
    sub = x.reshape(x.shape[0], -1) - y.reshape(y.shape[0], -1)
    return sub, (sub * sub).sum(axis=1, keepdims=True)


@register_grad("squared_l2_distance")
def _sq_l2_backward(attrs, ins, outs, douts, need):
    x, y = ins
    g = 2 * douts[1].reshape(-1, 1) * outs[0]
    dy = None
    if need[1]:
        dy = (-g if y.shape[0] == x.shape[0] else -g.sum(axis=0, keepdims=True)).reshape(y.shape)
    return (g.reshape(x.shape) if need[0] else None), dy


@register_op("log_loss", inputs=("Predicted", "Labels"), outputs=("Loss",), attrs={"epsilon": 1e-4},
             no_grad_inputs=("Labels",), infer_shape=same_as(0), share_lod={"Loss": "Predicted"})
def _log_loss_forward(attrs, p, label):
    xp, eps = array_module(p), attrs["epsilon"]
    return (-label * xp.log(p + eps) - (1 - label) * xp.log(1 - p + eps)).astype(p.dtype, copy=False)


@register_grad("log_loss")
def _log_loss_backward(attrs, ins, outs, douts, need):
    (p, label), dout, eps = ins, douts[0], attrs["epsilon"]
    return (dout * (-label / (p + eps) + (1 - label) / (1 - p + eps))).astype(p.dtype, copy=False), None


# --- huber_loss: quadratic near 0, linear beyond delta (Residual = Y - X) --------------------------------
@register_op("huber_loss", inputs=("X", "Y"), outputs=("Residual", "Out"), attrs={"delta": 1.0},
             infer_shape=lambda attrs, x, y: ((x.shape, x.dtype), (x.shape, x.dtype)))
def _huber_forward(attrs, x, y):
    r, delta = y - x, attrs["delta"]
    a = array_module(x).abs(r)
    return r, array_module(x).where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta)).astype(x.dtype, copy=False)


@register_grad("huber_loss")
def _huber_backward(attrs, ins, outs, douts, need):
    (x, y), dout, delta = ins, douts[1], attrs["delta"]
    dr = dout * array_module(x).clip(y - x, -delta, delta)
    return (-dr if need[0] else None), (dr if need[1] else None)


# --- label_smooth: (1 - epsilon) * X + epsilon * prior (uniform 1/K without one) ----------------------------
@register_op("label_smooth", inputs=("X", "PriorDist"), outputs=("Out",), attrs={"epsilon": 0.0},
             optional=("PriorDist",), no_grad_inputs=("PriorDist",), infer_shape=same_as(0))
def _label_smooth_forward(attrs, x, prior):
    eps = attrs["epsilon"]
    smooth = eps / x.shape[-1] if prior is None else eps * prior.reshape(-1)
    return ((1 - eps) * x + smooth).astype(x.dtype, copy=False)


@register_grad("label_smooth")
def _label_smooth_backward(attrs, ins, outs, douts, need):
    return ((1 - attrs["epsilon"]) * douts[0]).astype(douts[0].dtype, copy=False), None


# --- hinge_loss and modified_huber_loss: margins of {0, 1} labels taken as {-1, 1} -----------------------------
def _pair_infer(what, a, b, out_shape):
    if len(a.shape) != 2 or a.shape[1] not in (1, -1) or tuple(a.shape) != tuple(b.shape) and -1 not in a.shape:
        raise ValueError(f"{what}: the input and the label must both be [N, 1], but received "
                         f"{list(a.shape)} and {list(b.shape)}")
    return out_shape


@register_op("hinge_loss", inputs=("Logits", "Labels"), outputs=("Loss",), no_grad_inputs=("Labels",),
             infer_shape=lambda attrs, x, y: _pair_infer("hinge_loss", x, y, ((x.shape[0], 1), x.dtype)))
def _hinge_loss_forward(attrs, x, y):
    """max(0, 1 - x * (2y - 1))."""
    return array_module(x).maximum(1 - x * (2 * y - 1), 0).astype(x.dtype, copy=False)


@register_grad("hinge_loss")
def _hinge_loss_backward(attrs, ins, outs, douts, need):
    x, y = ins
    sign = 2 * y - 1
    return (douts[0] * (x * sign < 1) * -sign).astype(x.dtype, copy=False), None


@register_op("modified_huber_loss", inputs=("X", "Y"), outputs=("IntermediateVal", "Out"), no_grad_inputs=("Y",),
             infer_shape=lambda attrs, x, y: _pair_infer("modified_huber_loss", x, y,
                                                         ((x.shape, x.dtype), ((x.shape[0], 1), x.dtype))))
def _modified_huber_forward(attrs, x, y):
    """v = x * (2y - 1); -4v below -1, (1 - v)^2 below 1, else 0. IntermediateVal keeps v for the gradient."""
    xp = array_module(x)
    v = x * (2 * y - 1)
    return v, xp.where(v < -1, -4 * v, xp.where(v < 1, (1 - v) ** 2, 0)).astype(x.dtype, copy=False)


@register_grad("modified_huber_loss")
def _modified_huber_backward(attrs, ins, outs, douts, need):
    (x, y), v = ins, outs[0]
    xp, sign = array_module(x), 2 * y - 1
    d = xp.where(v < -1, -4 * sign, xp.where(v < 1, -2 * (1 - v) * sign, 0)) * douts[1]
    return d.astype(x.dtype, copy=False), None


# --- bce_loss: binary cross entropy of probabilities X in [0, 1], each log clipped below at -100 ----------------
@register_op("bce_loss", inputs=("X", "Label"), outputs=("Out",), no_grad_inputs=("Label",), infer_shape=same_as(0),
             share_lod={"Out": "X"})
def _bce_loss_forward(attrs, x, label):
    xp = array_module(x)
    if x.size and (x.min() < 0 or x.max() > 1):
        raise InvalidArgumentError(f"bce_loss: Illegal input, input must be in [0, 1], but received values in "
                                   f"[{x.min()}, {x.max()}]")
    with np.errstate(divide="ignore"):
        log_p, log_q = xp.maximum(xp.log(x), -100), xp.maximum(xp.log(1 - x), -100)
    return ((label - 1) * log_q - label * log_p).astype(x.dtype, copy=False)


@register_grad("bce_loss")
def _bce_loss_backward(attrs, ins, outs, douts, need):
    x, label = ins
    d = douts[0] * (x - label) / array_module(x).maximum((1 - x) * x, 1e-12)
    return d.astype(x.dtype, copy=False), None
