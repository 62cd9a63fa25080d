"""Loss and metric ops: softmax_with_cross_entropy, cross_entropy(2), accuracy, top_k, nll_loss.

Hard labels are int64 class ids with the class axis of size 1 ([N, 1] for [N, C] inputs);
rows whose label equals ``ignore_index`` get loss 0 and gradient 0.
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _class_axis_one(shape, axis):
    """``shape`` with the class axis set to 1 (the loss / hard-label shape)."""
    shape = list(shape)
    shape[axis % len(shape)] = 1
    return tuple(shape)


def _onehot(xp, label, n_class, axis, ignore_index):
    """Boolean one-hot of hard ``label`` (class axis of size 1) along ``axis``; ignored rows all False.

    Returns (onehot, valid) where ``valid`` marks the rows that are not ignored."""
    label = label.astype(np.int64, copy=False)
    iota_shape = [1] * label.ndim
    iota_shape[axis] = n_class
    valid = label != ignore_index
    if bool((valid & ((label < 0) | (label >= n_class))).any()):
        bad = label[valid & ((label < 0) | (label >= n_class))].reshape(-1)[0]
        raise ValueError(f"label value {int(bad)} is out of range [0, {n_class}) (ignore_index={ignore_index})")
    return (xp.arange(n_class).reshape(iota_shape) == label) & valid, valid


def _hard_label(label, ndim, axis):
    """Accept [N] labels for [N, C] inputs (fluid wants [N, 1])."""
    return label.reshape(label.shape[:axis] + (1,) + label.shape[axis:]) if label.ndim == ndim - 1 else label


# --- softmax_with_cross_entropy: stable log-softmax, then NLL ----------------------------------
def _swce_infer(attrs, logits, label):
    return (logits.shape, logits.dtype), (_class_axis_one(logits.shape, attrs["axis"]), logits.dtype)


@register_op("softmax_with_cross_entropy", inputs=("Logits", "Label"), outputs=("Softmax", "Loss"),
             attrs={"soft_label": False, "ignore_index": -100, "numeric_stable_mode": True, "axis": -1},
             no_grad_inputs=("Label",), infer_shape=_swce_infer, share_lod={"Softmax": "Logits", "Loss": "Logits"})
def _swce_forward(attrs, logits, label):
    xp = array_module(logits)
    axis = attrs["axis"] % logits.ndim
    shifted = logits - logits.max(axis=axis, keepdims=True)
    logp = shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))
    if attrs["soft_label"]:
        loss = -(label * logp).sum(axis=axis, keepdims=True)
    else:
        onehot, _ = _onehot(xp, _hard_label(label, logits.ndim, axis), logits.shape[axis], axis,
                            attrs["ignore_index"])
        loss = -(onehot * logp).sum(axis=axis, keepdims=True)
    return xp.exp(logp), loss.astype(logits.dtype, copy=False)


@register_grad("softmax_with_cross_entropy")
def _swce_backward(attrs, ins, outs, douts, need):
    logits, label = ins
    (softmax, _), (dsoftmax, dloss) = outs, douts
    axis = attrs["axis"] % logits.ndim
    xp = array_module(logits)
    if dloss is None:
        dlogits = xp.zeros_like(softmax)
    elif attrs["soft_label"]:
        dlogits = (softmax * label.sum(axis=axis, keepdims=True) - label) * dloss
    else:
        onehot, valid = _onehot(xp, _hard_label(label, logits.ndim, axis), logits.shape[axis], axis,
                                attrs["ignore_index"])
        dlogits = (softmax * valid - onehot) * dloss
    if dsoftmax is not None:  # fluid drops this path; keeping it makes the gradient exact
        dlogits = dlogits + softmax * (dsoftmax - (dsoftmax * softmax).sum(axis=axis, keepdims=True))
    return dlogits.astype(logits.dtype, copy=False), None


# --- cross_entropy (X holds probabilities; class axis is the last) -------------------------------
def _xent_hard(x, label, ignore_index):
    xp = array_module(x)
    label = _hard_label(label, x.ndim, x.ndim - 1)
    onehot, valid = _onehot(xp, label, x.shape[-1], x.ndim - 1, ignore_index)
    picked = (x * onehot).sum(axis=-1, keepdims=True)  # x[label], 0 for ignored rows
    safe = xp.where(valid, xp.maximum(picked, np.finfo(x.dtype).tiny), 1)  # fluid clips -log(0)
    return xp.where(valid, -xp.log(safe), 0).astype(x.dtype, copy=False), picked, onehot, safe


def _xent_infer(attrs, x, label):
    if label.shape is not None and x.shape is not None and len(label.shape) == len(x.shape) - 1:
        return (tuple(x.shape[:-1]), x.dtype)  # fluid: Y has the label's shape when the label has no class axis
    return (_class_axis_one(x.shape, -1), x.dtype)


def _like_label(y, x, label):
    """``y`` ([..., 1]) in fluid's output shape: the label's when the label has rank x.ndim - 1."""
    return y.reshape(x.shape[:-1]) if label.ndim == x.ndim - 1 else y


def _keepdims(dy, x):
    return None if dy is None else dy.reshape(x.shape[:-1] + (1,))


@register_op("cross_entropy", inputs=("X", "Label"), outputs=("Y",), attrs={"soft_label": False, "ignore_index": -100},
             no_grad_inputs=("Label",), infer_shape=_xent_infer, share_lod={"Y": "X"})
def _cross_entropy_forward(attrs, x, label):
    if attrs["soft_label"]:
        return -(label * array_module(x).log(x)).sum(axis=-1, keepdims=True)
    return _like_label(_xent_hard(x, label, attrs["ignore_index"])[0], x, label)


@register_grad("cross_entropy")
def _cross_entropy_backward(attrs, ins, outs, douts, need):
    (x, label), dy = ins, _keepdims(douts[0], ins[0])
    if attrs["soft_label"]:
        return -dy * label / x, None
    _, _, onehot, safe = _xent_hard(x, label, attrs["ignore_index"])
    return (onehot * (-dy / safe)).astype(x.dtype, copy=False), None


@register_op("cross_entropy2", inputs=("X", "Label"), outputs=("Y", "XShape", "MatchX"), attrs={"ignore_index": -100},
             no_grad_inputs=("Label",),
             infer_shape=lambda attrs, x, label: (_xent_infer(attrs, x, label), ((0,) + tuple(x.shape), x.dtype),
                                                  (_class_axis_one(x.shape, -1), x.dtype)))
def _cross_entropy2_forward(attrs, x, label):
    y, picked, _, _ = _xent_hard(x, label, attrs["ignore_index"])
    xshape = array_module(x).empty((0,) + x.shape, x.dtype)  # fluid's XShape: [0] + X's dims, holds no data
    return _like_label(y, x, label), xshape, picked  # MatchX keeps X's rank: [..., 1]


@register_grad("cross_entropy2")
def _cross_entropy2_backward(attrs, ins, outs, douts, need):
    dy, dmatch = _keepdims(douts[0], ins[0]), _keepdims(douts[2], ins[0])
    _, _, onehot, safe = _xent_hard(ins[0], ins[1], attrs["ignore_index"])
    dx = onehot * (-dy / safe) if dy is not None else onehot * 0.0
    if dmatch is not None:  # MatchX = x[label]
        dx = dx + onehot * dmatch
    return dx.astype(ins[0].dtype, copy=False), None


# --- accuracy (metric: no gradient) ---------------------------------------------------------------
@register_op("accuracy", inputs=("Out", "Indices", "Label"), outputs=("Accuracy", "Correct", "Total"),
             no_grad_inputs=("Out", "Indices", "Label"),
             infer_shape=lambda attrs, out, idx, label: (((1,), "float32"), ((1,), "int32"), ((1,), "int32")),
             no_gradient=True)
def _accuracy_forward(attrs, out, indices, label):
    xp = array_module(indices)
    total = indices.shape[0]
    correct = int((indices.reshape(total, -1) == label.reshape(total, 1)).any(axis=1).sum()) if total else 0
    acc = correct / total if total else 0.0
    return (xp.asarray([acc], dtype=np.float32), xp.asarray([correct], dtype=np.int32),
            xp.asarray([total], dtype=np.int32))


# --- top_k over the last axis ---------------------------------------------------------------------
def _top_k_infer(attrs, x, k_tensor):
    shape = tuple(x.shape[:-1]) + (attrs["k"] if k_tensor is None else -1,)
    return (shape, x.dtype), (shape, "int64")


@register_op("top_k", inputs=("X", "K"), outputs=("Out", "Indices"), attrs={"k": 1}, optional=("K",),
             no_grad_inputs=("K",), infer_shape=_top_k_infer, share_lod={"Out": "X", "Indices": "X"})
def _top_k_forward(attrs, x, k_tensor):
    xp = array_module(x)
    k = int(k_tensor.reshape(-1)[0]) if k_tensor is not None else attrs["k"]
    order = xp.argsort(-x, axis=-1, kind="stable") if xp is np else xp.argsort(-x, axis=-1)
    indices = order[..., :k].astype(np.int64, copy=False)
    return xp.take_along_axis(x, indices, axis=-1), indices


@register_grad("top_k")
def _top_k_backward(attrs, ins, outs, douts, need):
    x, (_, indices), dout = ins[0], outs, douts[0]
    xp = array_module(x)
    onehot = indices[..., :, None] == xp.arange(x.shape[-1])  # [..., k, C]
    return (dout[..., :, None] * onehot).sum(axis=-2).astype(x.dtype, copy=False), None


# --- nll_loss: -Weight[label] * X[n, label] for log-probabilities X [N, C] or [N, C, H, W] ----------------------
def _nll_infer(attrs, x, label, weight=None):
    xs, ls = tuple(x.shape), tuple(label.shape)
    if len(xs) not in (2, 4):
        raise ValueError(f"nll_loss: the tensor rank of Input(X) must be 2 or 4, but received X's shape {list(xs)}")
    want = (xs[0],) if len(xs) == 2 else (xs[0],) + xs[2:]
    if len(ls) != len(want) or any(a != b and a >= 0 and b >= 0 for a, b in zip(ls, want)):
        raise ValueError(f"nll_loss: Input(Label)'s shape {list(ls)} does not match Input(X)'s {list(xs)} (expected "
                         f"{list(want)})")
    if weight is not None and (len(weight.shape) != 1 or weight.shape[0] not in (xs[1], -1) and xs[1] >= 0):
        raise ValueError(f"nll_loss: Input(Weight) should be a 1-D tensor of the class number {xs[1]}, but received "
                         f"shape {list(weight.shape)}")
    return (want if attrs["reduction"] == "none" else (1,), x.dtype), ((1,), x.dtype)


def _nll_pick(attrs, x, label, weight):
    """(the picked log-probabilities, each position's weight (0 where ignored), the labels made safe to index)."""
    xp = array_module(x)
    label = label.astype(np.int64, copy=False)
    kept = label != attrs["ignore_index"]
    n_class = x.shape[1]
    if bool((kept & ((label < 0) | (label >= n_class))).any()):
        bad = int(label[kept & ((label < 0) | (label >= n_class))].reshape(-1)[0])
        raise ValueError(f"nll_loss: label should not be out of bounds: got {bad}, classes [0, {n_class}) "
                         f"(ignore_index {attrs['ignore_index']})")
    safe = xp.where(kept, label, 0)
    picked = xp.take_along_axis(x, safe[:, None], axis=1)[:, 0]
    w = kept.astype(x.dtype) if weight is None else weight[safe] * kept
    return picked, w, safe


@register_op("nll_loss", inputs=("X", "Label", "Weight"), outputs=("Out", "Total_weight"), optional=("Weight",),
             no_grad_inputs=("Label", "Weight"), attrs={"ignore_index": -100, "reduction": "mean"},
             infer_shape=_nll_infer)
def _nll_loss_forward(attrs, x, label, weight=None):
    """Per position (``reduction='none'``, Total_weight 0), summed, or summed over the kept weights ('mean')."""
    if attrs["reduction"] not in ("none", "sum", "mean"):
        raise ValueError(f"nll_loss: reduction must be 'none', 'sum' or 'mean', but received {attrs['reduction']!r}")
    _nll_infer(attrs, x, label, weight)
    picked, w, _ = _nll_pick(attrs, x, label, weight)
    loss = -picked * w
    if attrs["reduction"] == "none":
        return loss, np.zeros(1, x.dtype)
    total = w.sum()
    out = loss.sum() / total if attrs["reduction"] == "mean" and total != 0 else loss.sum()
    return np.asarray(out, x.dtype).reshape(1), np.asarray(total, x.dtype).reshape(1)


@register_grad("nll_loss")
def _nll_loss_backward(attrs, ins, outs, douts, need):
    x, label, weight = ins
    _, w, safe = _nll_pick(attrs, x, label, weight)
    d = douts[0]
    if attrs["reduction"] != "none":
        total = outs[1].reshape(()) if attrs["reduction"] == "mean" and outs[1].reshape(()) != 0 else 1
        d = d.reshape(()) / total
    dx = array_module(x).zeros_like(x)
    array_module(x).put_along_axis(dx, safe[:, None], (-w * d)[:, None].astype(x.dtype), axis=1)
    return dx, None, None
