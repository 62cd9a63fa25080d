"""Ranking and divergence losses of fluid 1.8: rank_loss, margin_rank_loss, bpr_loss, kldiv_loss (with gradients)."""
from .registry import array_module, register_grad, register_op


def _softplus(xp, v):
    return xp.logaddexp(0, v)


def _sigmoid(xp, v):
    return 0.5 * (1.0 + xp.tanh(0.5 * v))


# --- rank_loss: RankNet's log(1 + exp(left - right)) - label * (left - right) ------------------------------------
def _rank_loss_infer(attrs, label, left, right):
    """Each input is [N] or [N, 1] (they are read as flat vectors); Out has Label's shape."""
    for name, shape in (("Label", label.shape), ("Left", left.shape), ("Right", right.shape)):
        if len(shape) not in (1, 2) or len(shape) == 2 and shape[1] != 1:
            raise ValueError(f"rank_loss: Input({name}) must be [N] or [N, 1], but received shape {list(shape)}")
        if shape[0] >= 0 and label.shape[0] >= 0 and shape[0] != label.shape[0]:
            raise ValueError(f"rank_loss: the first dimension of Input(Label) and Input({name}) must have the same "
                             f"value. But received Label.dims[0]={label.shape[0]}, {name}.dims[0]={shape[0]}.")
    return (label.shape, left.dtype)


@register_op("rank_loss", inputs=("Label", "Left", "Right"), outputs=("Out",), no_grad_inputs=("Label",),
             infer_shape=_rank_loss_infer)
def _rank_loss_forward(attrs, label, left, right):
    _rank_loss_infer(attrs, label, left, right)
    diff = left.reshape(-1) - right.reshape(-1)
    return (_softplus(array_module(diff), diff) - label.reshape(-1) * diff).reshape(label.shape)


@register_grad("rank_loss")
def _rank_loss_backward(attrs, ins, outs, douts, need):
    (label, left, right), dout = ins, douts[0]
    g = dout.reshape(-1) * (_sigmoid(array_module(left), left.reshape(-1) - right.reshape(-1)) - label.reshape(-1))
    return None, (g.reshape(left.shape) if need[1] else None), (-g.reshape(right.shape) if need[2] else None)


# --- margin_rank_loss: max(0, -label * (x1 - x2) + margin); Activated marks where it is positive ------------------
@register_op("margin_rank_loss", inputs=("Label", "X1", "X2"), outputs=("Out", "Activated"), attrs={"margin": 0.1},
             no_grad_inputs=("Label",),
             infer_shape=lambda attrs, label, x1, x2: ((x1.shape, x1.dtype), (x1.shape, x1.dtype)))
def _margin_rank_loss_forward(attrs, label, x1, x2):
    raw = -label * (x1 - x2) + attrs["margin"]
    active = (raw > 0).astype(x1.dtype)
    return raw * active, active


@register_grad("margin_rank_loss")
def _margin_rank_loss_backward(attrs, ins, outs, douts, need):
    label, active, dout = ins[0], outs[1], douts[0]
    g = dout * active * label
    return None, (-g if need[1] else None), (g if need[2] else None)


# --- bpr_loss: mean over the other classes j of -log(sigmoid(x[label] - x[j])), one per row ---------------------
def _bpr_parts(xp, x, label):
    rows = xp.arange(x.shape[0])
    pos = x[rows, label.reshape(-1)][:, None]
    others = xp.ones(x.shape, dtype=bool)
    others[rows, label.reshape(-1)] = False
    return pos, others


@register_op("bpr_loss", inputs=("X", "Label"), outputs=("Y",), no_grad_inputs=("Label",),
             infer_shape=lambda attrs, x, label: (tuple(x.shape[:-1]) + (1,), x.dtype))
def _bpr_loss_forward(attrs, x, label):
    """Rows are all but the last dimension of ``x`` (as fluid flattens them); Y [..., 1]."""
    xp, shape = array_module(x), x.shape
    x = x.reshape(-1, shape[-1])
    pos, others = _bpr_parts(xp, x, label)
    y = (_softplus(xp, x - pos) * others).sum(axis=1, keepdims=True) / (x.shape[1] - 1)
    return y.astype(x.dtype).reshape(shape[:-1] + (1,))


@register_grad("bpr_loss")
def _bpr_loss_backward(attrs, ins, outs, douts, need):
    (x, label), dout = ins, douts[0]
    xp, shape = array_module(x), x.shape
    x = x.reshape(-1, shape[-1])
    pos, others = _bpr_parts(xp, x, label)
    g = _sigmoid(xp, x - pos) * others * (dout.reshape(-1, 1) / (x.shape[1] - 1))  # d/dx_j for j != label
    rows = xp.arange(x.shape[0])
    g[rows, label.reshape(-1)] = -g.sum(axis=1)
    return g.reshape(shape), None


# --- kldiv_loss: target * (log(target) - x) where target > 0, reduced by 'none', 'batchmean', 'mean' or 'sum' -----
_REDUCTIONS = ("none", "batchmean", "mean", "sum")


def _reduction(attrs):
    if attrs["reduction"] not in _REDUCTIONS:
        raise ValueError(f"kldiv_loss: 'reduction' must be one of {list(_REDUCTIONS)}, got {attrs['reduction']!r}")
    return attrs["reduction"]


@register_op("kldiv_loss", inputs=("X", "Target"), outputs=("Loss",), attrs={"reduction": "mean"},
             no_grad_inputs=("Target",),
             infer_shape=lambda attrs, x, t: ((x.shape if _reduction(attrs) == "none" else (1,)), x.dtype))
def _kldiv_loss_forward(attrs, x, target):
    xp = array_module(x)
    positive = target > 0
    loss = xp.where(positive, target * (xp.log(xp.where(positive, target, 1)) - x), 0).astype(x.dtype)
    how = _reduction(attrs)
    if how == "none":
        return loss
    total = loss.sum() / (x.shape[0] if how == "batchmean" else x.size if how == "mean" else 1)
    return xp.asarray([total], dtype=x.dtype)


@register_grad("kldiv_loss")
def _kldiv_loss_backward(attrs, ins, outs, douts, need):
    (x, target), dout = ins, douts[0]
    how = _reduction(attrs)
    scale = {"none": 1, "sum": 1, "mean": x.size, "batchmean": x.shape[0]}[how]
    return (-(target * (target > 0)) * dout / scale).astype(x.dtype, copy=False), None
