"""``paddle.nn.functional`` (2.x): eager functions built on the fluid layers' ops.

Each function runs eagerly whatever the global mode (paddle 2.x defaults to dynamic mode; see
``eager_api``). Losses follow paddle 2.x: ``cross_entropy`` applies softmax itself and reduces
with ``reduction`` ('mean', 'sum' or 'none').
"""
from .. import layers
from ..layers import wiring
from .base import eager_api
from .nn import EagerEmit

__all__ = ["cross_entropy", "dropout", "linear", "mse_loss", "relu", "sigmoid", "softmax",
           "softmax_with_cross_entropy", "square_error_cost", "tanh"]

square_error_cost = eager_api(layers.square_error_cost)
softmax_with_cross_entropy = eager_api(layers.softmax_with_cross_entropy)
relu = eager_api(layers.relu)
sigmoid = eager_api(layers.sigmoid)
tanh = eager_api(layers.tanh)


@eager_api
def softmax(x, axis=-1, dtype=None, name=None):
    return layers.softmax(x, axis=axis)


def _reduce(loss, reduction):
    if reduction == "mean":
        return layers.reduce_mean(loss)
    if reduction == "sum":
        return layers.reduce_sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"The value of 'reduction' should be 'sum', 'mean' or 'none', but received {reduction}")


@eager_api
def mse_loss(input, label, reduction="mean", name=None):
    return _reduce(layers.square_error_cost(input, label), reduction)


@eager_api
def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  name=None):
    """Softmax cross entropy of logits ``input`` against int64 ``label`` ([N] or [N, 1])."""
    if weight is not None:
        raise NotImplementedError("cross_entropy(weight=...) is not implemented by minifluid")
    loss = layers.softmax_with_cross_entropy(input, label, soft_label=soft_label, ignore_index=ignore_index,
                                             axis=axis)
    return _reduce(loss, reduction)


@eager_api
def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    impl = "downgrade_in_infer" if mode == "downscale_in_infer" else mode
    return layers.dropout(x, p, is_test=not training, dropout_implementation=impl)


@eager_api
def linear(x, weight, bias=None, name=None):
    return wiring.fc_ops(EagerEmit, [x], [weight], bias, len(x.shape) - 1, None)
