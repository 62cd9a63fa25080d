"""Click-through-rate model ops: cvm (continuous_value_model) and teacher_student_sigmoid_loss.

cvm reads the first two columns of each embedding as the show and click counts: with ``use_cvm`` it replaces
them by ``log(show + 1)`` and ``log(click + 1) - log(show + 1)``, without it drops them. Its "gradient" is
fluid's: the embedding columns get the upstream gradient, the show / click columns get the CVM input (the
counts, one row per instance, or per sequence when X carries LoD), which the sparse update reads; it is not the
derivative of the forward (tests/numerics/test_ctr_layers.py checks it against that rule).
teacher_student_sigmoid_loss is a sigmoid cross-entropy against the click z plus, where the label carries a
teacher's score z' (label = z + z'), a second one against z'; its gradient is fluid's, zero where the logit lies
outside [soft_max_lower_bound, soft_max_up_bound].
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _rank2(slot, shape):
    if len(shape) != 2:
        raise ValueError(f"Input({slot})'s rank should be 2. But received: Input({slot})'s rank is [{len(shape)}]")


# --- cvm: [N, D] -> [N, D] (use_cvm) or [N, D - 2] -------------------------------------------------------------
def _cvm_infer(attrs, x, cvm):
    _rank2("X", x.shape)
    _rank2("CVM", cvm.shape)
    if cvm.shape[1] not in (-1, 2):
        raise ValueError(f"The 2nd dimension of Input(CVM) should be 2, but received {cvm.shape[1]}")
    width = x.shape[1] if attrs["use_cvm"] or x.shape[1] < 0 else x.shape[1] - 2
    return (x.shape[0], width), x.dtype


@register_op("cvm", inputs=("X", "CVM"), outputs=("Y",), attrs={"use_cvm": True}, infer_shape=_cvm_infer,
             no_grad_inputs=("CVM",), context=True, share_lod={"Y": "X"})
def _cvm_forward(ctx, attrs, x, cvm):
    _cvm_infer(attrs, x, cvm)
    if not attrs["use_cvm"]:
        return x[:, 2:].copy()
    xp = array_module(x)
    y = x.copy()
    y[:, 0] = xp.log(x[:, 0] + 1)
    y[:, 1] = xp.log(x[:, 1] + 1) - y[:, 0]
    return y


@register_grad("cvm", reads=("X", "CVM"))
def _cvm_backward(ctx, attrs, ins, outs, douts, need):
    x, cvm = ins
    dy = douts[0]
    dx = array_module(x).empty(x.shape, dtype=dy.dtype)
    dx[:, 2:] = dy[:, 2:] if attrs["use_cvm"] else dy
    lod = ctx.input_lod("X")
    counts = cvm if not lod else np.repeat(cvm, lod[0], axis=0)  # one CVM row per sequence
    dx[:, :2] = counts
    return dx, None


# --- teacher_student_sigmoid_loss: [N, 1] logits, [N, 1] labels in {-2, -1} or [0, 2) ---------------------------
def _tssl_infer(attrs, x, label):
    _rank2("X", x.shape)
    _rank2("Label", label.shape)
    if x.shape[0] >= 0 and label.shape[0] >= 0 and x.shape[0] != label.shape[0]:
        raise ValueError(f"The 1st dimension of Input(X) and Input(Label) should be equal. The difference is "
                         f"[{x.shape[0]}]: [{label.shape[0]}]")
    if label.shape[1] not in (-1, 1):
        raise ValueError(f"The 2nd dimension of Input(Label) should be 1. But received Input(Label)'s 2nd dim is "
                         f"[{label.shape[1]}]")
    return (x.shape[0], 1), x.dtype


@register_op("teacher_student_sigmoid_loss", inputs=("X", "Label"), outputs=("Y",),
             attrs={"soft_max_up_bound": 15.0, "soft_max_lower_bound": -15.0}, infer_shape=_tssl_infer,
             no_grad_inputs=("Label",), share_lod={"Y": "X"})
def _tssl_forward(attrs, x, label):
    _tssl_infer(attrs, x, label)
    xp = array_module(x)
    softplus = xp.logaddexp(0, x)  # max(x, 0) + log(1 + exp(-|x|))
    clicked = (label >= -1) & (label < 0) | (label >= 1)
    teacher = xp.where(label >= 1, label - 1, label)
    loss = softplus - x * clicked  # the click term
    loss = loss + (label >= 0) * (softplus - x * teacher)  # the teacher's term, where the label has one
    return loss.astype(x.dtype, copy=False)


@register_grad("teacher_student_sigmoid_loss", reads=("X", "Label"))
def _tssl_backward(attrs, ins, outs, douts, need):
    x, label = ins
    xp = array_module(x)
    low, high = attrs["soft_max_lower_bound"], attrs["soft_max_up_bound"]
    pred = 1 / (1 + xp.exp(-xp.clip(x, low, high)))
    dx = xp.where(label < -1, pred, xp.where(label < 0, pred - 1, 2 * pred - label))
    dx = xp.where((x >= high) | (x <= low), 0, dx) * douts[0]
    return dx.astype(x.dtype, copy=False), None
