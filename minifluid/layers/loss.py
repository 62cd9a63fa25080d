"""Loss layers: softmax_with_cross_entropy, cross_entropy, square_error_cost, sigmoid_cross_entropy_with_logits,
smooth_l1, log_loss, huber_loss, label_smooth, mse_loss, rank_loss, margin_rank_loss, bpr_loss, kldiv_loss (ops in
ops/ranking.py), dice_loss."""
from ..framework import dygraph_mode
from .activation import check_variable_and_dtype
from .helper import LayerHelper, known_attrs
from .manip import one_hot
from .math import reduce_mean, reduce_sum

__all__ = ["bpr_loss", "cross_entropy", "dice_loss", "huber_loss", "kldiv_loss", "label_smooth", "log_loss",
           "margin_rank_loss", "mse_loss", "rank_loss", "sigmoid_cross_entropy_with_logits", "smooth_l1",
           "softmax_with_cross_entropy", "square_error_cost"]

_IGNORE_INDEX = -100


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=_IGNORE_INDEX,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    """Per-sample cross entropy of softmax(logits) against ``label``; shape [N, 1] for hard labels.

    Returns ``loss``, or ``(loss, softmax)`` when ``return_softmax`` is True.
    """
    helper = LayerHelper("softmax_with_cross_entropy", input=logits)
    softmax = helper.create_variable_for_type_inference(logits.dtype)
    loss = helper.create_variable_for_type_inference(logits.dtype)
    helper.append_op(type="softmax_with_cross_entropy", inputs={"Logits": [logits], "Label": [label]},
                     outputs={"Softmax": [softmax], "Loss": [loss]},
                     attrs={"soft_label": soft_label, "ignore_index": ignore_index,
                            **known_attrs("softmax_with_cross_entropy", numeric_stable_mode=numeric_stable_mode,
                                          axis=axis)})
    return (loss, softmax) if return_softmax else loss


def cross_entropy(input, label, soft_label=False, ignore_index=_IGNORE_INDEX):
    """Cross entropy of probabilities ``input`` (e.g. a softmax output) against ``label``: fluid's
    ``cross_entropy2`` op for hard labels (outputs ``Y``, ``MatchX``, ``XShape``), ``cross_entropy``
    for soft ones."""
    if not dygraph_mode.in_dygraph_mode():
        check_variable_and_dtype(input, "input", ("float16", "float32", "float64"),
                                 "cross_entropy" if soft_label else "cross_entropy2")
    helper = LayerHelper("cross_entropy", input=input)
    out = helper.create_variable_for_type_inference(input.dtype)
    if soft_label:
        helper.append_op(type="cross_entropy", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]},
                         attrs={"soft_label": True, "ignore_index": ignore_index})
        return out
    match_x = helper.create_variable_for_type_inference(input.dtype)
    xshape = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="cross_entropy2", inputs={"X": [input], "Label": [label]},
                     outputs={"Y": [out], "MatchX": [match_x], "XShape": [xshape]},
                     attrs={"ignore_index": ignore_index})
    return out


def square_error_cost(input, label):
    """Elementwise ``(input - label) ** 2``."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "square_error_cost")
    check_variable_and_dtype(label, "label", ("float32", "float64"), "square_error_cost")
    helper = LayerHelper("square_error_cost", input=input)
    diff = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [diff]})
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="square", inputs={"X": [diff]}, outputs={"Out": [out]})
    return out


def mse_loss(input, label):
    """The mean of ``(input - label) ** 2`` over all elements, shape [1]."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "mse_loss")
    check_variable_and_dtype(label, "label", ("float32", "float64"), "mse_loss")
    return reduce_mean(square_error_cost(input, label))


def sigmoid_cross_entropy_with_logits(x, label, ignore_index=_IGNORE_INDEX, name=None, normalize=False):
    """Elementwise binary cross entropy of ``sigmoid(x)`` against ``label`` (same shape, probabilities); entries
    whose label is ``ignore_index`` give 0, and ``normalize`` divides by the number of the others."""
    check_variable_and_dtype(x, "input", ("float16", "float32", "float64"), "sigmoid_cross_entropy_with_logits")
    return _loss_op("sigmoid_cross_entropy_with_logits", {"X": [x], "Label": [label]}, x.dtype,
                    {"ignore_index": ignore_index, "normalize": normalize}, name=name)


def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    """Per-sample ([N, 1]) sum of the smooth L1 of ``(x - y) * inside_weight``, times ``outside_weight``:
    ``0.5 * (sigma * d) ** 2`` where ``|d| < 1 / sigma ** 2``, else ``|d| - 0.5 / sigma ** 2``."""
    check_variable_and_dtype(x, "X", ("float32", "float64"), "smooth_l1_loss")
    check_variable_and_dtype(y, "Y", ("float32", "float64"), "smooth_l1_loss")
    inputs = {"X": [x], "Y": [y]}
    if inside_weight is not None:
        inputs["InsideWeight"] = [inside_weight]
    if outside_weight is not None:
        inputs["OutsideWeight"] = [outside_weight]
    return _loss_op("smooth_l1_loss", inputs, x.dtype, {"sigma": 1.0 if sigma is None else float(sigma)},
                    ("Diff", "Out"))


def log_loss(input, label, epsilon=1e-4, name=None):
    """``-label * log(input + eps) - (1 - label) * log(1 - input + eps)`` for probabilities ``input`` [N, 1]."""
    check_variable_and_dtype(input, "input", ("float32",), "log_loss")
    check_variable_and_dtype(label, "label", ("float32",), "log_loss")
    return _loss_op("log_loss", {"Predicted": [input], "Labels": [label]}, input.dtype, {"epsilon": epsilon},
                    ("Loss",), name)


def huber_loss(input, label, delta):
    """Huber loss of the residual ``label - input``: quadratic up to ``delta``, linear beyond."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "huber_loss")
    check_variable_and_dtype(label, "label", ("float32", "float64"), "huber_loss")
    return _loss_op("huber_loss", {"X": [input], "Y": [label]}, input.dtype, {"delta": float(delta)},
                    ("Residual", "Out"))


def label_smooth(label, prior_dist=None, epsilon=0.1, dtype="float32", name=None):
    """``(1 - epsilon) * label + epsilon * prior_dist`` (uniform ``1 / num_classes`` without ``prior_dist``)."""
    if epsilon > 1.0 or epsilon < 0.0:
        raise ValueError("The value of epsilon must be between 0 and 1.")
    check_variable_and_dtype(label, "label", ("float32", "float64"), "label_smooth")
    inputs = {"X": [label]} if prior_dist is None else {"X": [label], "PriorDist": [prior_dist]}
    return _loss_op("label_smooth", inputs, dtype, {"epsilon": float(epsilon)}, name=name)


def _loss_op(op_type, inputs, dtype, attrs, outputs=("Out",), name=None):
    """Append ``op_type``; returns its last output (the loss; earlier ones are its intermediates)."""
    helper = LayerHelper(op_type, name=name)
    outs = {slot: [helper.create_variable_for_type_inference(dtype)] for slot in outputs}
    helper.append_op(type=op_type, inputs=inputs, outputs=outs, attrs=attrs)
    return outs[outputs[-1]][0]


def rank_loss(label, left, right, name=None):
    """RankNet's loss ``log(1 + exp(left - right)) - label * (left - right)`` per pair (all float32 ``[N, 1]``)."""
    for v, label_name in ((label, "label"), (left, "left"), (right, "right")):
        check_variable_and_dtype(v, label_name, ("float32",), "rank_loss")
    return _loss_op("rank_loss", {"Label": [label], "Left": [left], "Right": [right]}, "float32", {}, name=name)


def margin_rank_loss(label, left, right, margin=0.1, name=None):
    """``max(0, -label * (left - right) + margin)`` per pair."""
    for v, label_name in ((label, "label"), (left, "left"), (right, "right")):
        check_variable_and_dtype(v, label_name, ("float32",), "margin_rank_loss")
    return _loss_op("margin_rank_loss", {"Label": [label], "X1": [left], "X2": [right]}, left.dtype,
                    {"margin": float(margin)}, ("Activated", "Out"), name)


def bpr_loss(input, label, name=None):
    """Bayesian personalised ranking: per row, the mean over the other classes j of
    ``-log(sigmoid(input[label] - input[j]))``, shape ``[N, 1]``."""
    check_variable_and_dtype(input, "input", ("float16", "float32", "float64"), "bpr_loss")
    return _loss_op("bpr_loss", {"X": [input], "Label": [label]}, input.dtype, {}, ("Y",), name)


def kldiv_loss(x, target, reduction="mean", name=None):
    """``target * (log(target) - x)`` where target > 0 (``x`` holds log-probabilities), reduced by ``reduction``:
    'none', 'batchmean' (sum / batch size), 'mean' or 'sum'."""
    check_variable_and_dtype(x, "x", ("float32", "float64"), "kldiv_loss")
    check_variable_and_dtype(target, "target", ("float32", "float64"), "kldiv_loss")
    if not isinstance(reduction, str):
        raise TypeError(f"The type of 'reduction' in kldiv_loss must be str, but received {type(reduction).__name__}. ")
    if reduction not in ("none", "batchmean", "mean", "sum"):
        raise ValueError(f"kldiv_loss: 'reduction' must be one of ['none', 'batchmean', 'mean', 'sum'], got "
                         f"{reduction!r}")
    return _loss_op("kldiv_loss", {"X": [x], "Target": [target]}, x.dtype, {"reduction": reduction}, ("Loss",), name)


def dice_loss(input, label, epsilon=0.00001, name=None):
    """``1 - 2 |input . onehot(label)| / (|input| + |onehot(label)| + epsilon)`` per sample, averaged: ``input``
    holds class probabilities in its last dimension, ``label`` int ids with a trailing dimension of 1."""
    onehot = one_hot(label, depth=input.shape[-1])
    dims = list(range(1, len(input.shape)))
    overlap = reduce_sum(input * onehot, dim=dims)
    total = reduce_sum(input, dim=dims) + reduce_sum(onehot, dim=dims)
    return reduce_mean(1.0 - overlap * 2.0 / (total + epsilon))
