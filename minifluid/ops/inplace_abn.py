"""inplace_abn: batch_norm followed by an activation (identity, leaky_relu or elu with ``alpha``) in one op.

The forward pass is ops/nn.py's batch_norm kernel, then the activation on its output. The backward pass reads the
output Y, as fluid's does, for the activation's derivative at the batch-normalised value z (z > 0 exactly where
y > 0; elu's ``alpha * e^z`` is ``y + alpha``), and hands dz = dY * act'(z) to batch_norm's gradient. minifluid writes Y to a new variable rather than over X (the layer's
NOTE), so the numbers are fluid's and the input keeps its value.
"""
from .nn import _batch_norm_backward, _batch_norm_forward, _bn_infer
from .registry import array_module, get_op_spec, register_grad, register_op

_ACTIVATIONS = ("", "identity", "leaky_relu", "elu")


def _activation(attrs):
    act = attrs["activation"]
    if act not in _ACTIVATIONS:
        raise ValueError(f"inplace_abn: Attr(activation) must be one of identity, leaky_relu or elu, but received "
                         f"{act!r}")
    return act


@register_op("inplace_abn", inputs=get_op_spec("batch_norm").inputs, outputs=get_op_spec("batch_norm").outputs,
             attrs={**get_op_spec("batch_norm").attrs, "activation": "", "alpha": 0.1, "use_sync_bn": False},
             optional=("MomentumTensor",), no_grad_inputs=("Mean", "Variance", "MomentumTensor"),
             infer_shape=_bn_infer)
def _inplace_abn_forward(attrs, x, scale, bias, mean, variance, momentum_t):
    act = _activation(attrs)
    y, *rest = _batch_norm_forward(attrs, x, scale, bias, mean, variance, momentum_t)
    xp, alpha = array_module(y), attrs["alpha"]
    if act == "leaky_relu":
        y = xp.where(y > 0, y, y * alpha).astype(y.dtype, copy=False)
    elif act == "elu":
        y = xp.where(y > 0, y, alpha * xp.expm1(xp.minimum(y, 0))).astype(y.dtype, copy=False)
    return (y, *rest)


@register_grad("inplace_abn", reads=("X", "Scale", "Bias", "Mean", "Variance", "Y", "SavedMean", "SavedVariance"),
               out_grads=("Y",))
def _inplace_abn_backward(attrs, ins, outs, douts, need):
    act = _activation(attrs)
    y, dy = outs[0], douts[0]
    alpha = attrs["alpha"]
    if act == "leaky_relu":  # y > 0 exactly where z > 0
        dy = array_module(y).where(y > 0, dy, dy * alpha).astype(dy.dtype, copy=False)
    elif act == "elu":
        dy = array_module(y).where(y > 0, dy, dy * (y + alpha)).astype(dy.dtype, copy=False)
    return _batch_norm_backward(attrs, ins, outs, (dy,) + tuple(douts[1:]), need)
