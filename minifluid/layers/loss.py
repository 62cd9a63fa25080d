"""Loss layers: softmax_with_cross_entropy, cross_entropy, square_error_cost."""
from .helper import LayerHelper, known_attrs

__all__ = ["cross_entropy", "softmax_with_cross_entropy", "square_error_cost"]

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
