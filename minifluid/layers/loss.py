"""Loss layers: softmax_with_cross_entropy, cross_entropy, square_error_cost, sigmoid_cross_entropy_with_logits,
smooth_l1, log_loss, huber_loss, label_smooth, mse_loss."""
from .activation import check_variable_and_dtype
from .helper import LayerHelper, known_attrs
from .math import reduce_mean

__all__ = ["cross_entropy", "huber_loss", "label_smooth", "log_loss", "mse_loss", "sigmoid_cross_entropy_with_logits",
           "smooth_l1", "softmax_with_cross_entropy", "square_error_cost"]

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
    """Cross entropy of probabilities ``input`` (e.g. a softmax output) against ``label``."""
    helper = LayerHelper("cross_entropy", input=input)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="cross_entropy", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]},
                     attrs={"soft_label": soft_label, "ignore_index": ignore_index})
    return out


def square_error_cost(input, label):
    """Elementwise ``(input - label) ** 2``."""
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
