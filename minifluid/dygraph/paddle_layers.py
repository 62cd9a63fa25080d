"""More of ``paddle.nn`` (2.0): Embedding, BatchNorm1D/2D, LayerNorm, Conv2DTranspose, adaptive pooling,
Dropout2D, the activation layers and the losses, each a thin Layer over ``paddle.nn.functional``
(same ops and gradients as fluid's layers). paddle_nn.py re-exports them as ``paddle.nn.*``.
"""

from ..initializer import Constant
from ..layers import wiring
from . import functional as F
from . import nn as _nn
from . import nn_more as _more
from .base import eager_api
from .layer import Layer as _Layer

__all__ = ["AdaptiveAvgPool2D", "AdaptiveMaxPool2D", "BCELoss", "BCEWithLogitsLoss", "BatchNorm", "BatchNorm1D",
           "BatchNorm2D", "Conv2DTranspose", "Dropout2D", "ELU", "Embedding", "GELU", "Hardshrink", "Hardsigmoid",
           "Hardswish", "L1Loss", "LayerNorm", "LeakyReLU", "LogSigmoid", "LogSoftmax", "NLLLoss", "PReLU", "Pad2D",
           "ReLU6", "SELU", "SmoothL1Loss", "Softplus", "Softshrink", "Softsign", "Swish", "Tanhshrink",
           "ThresholdedReLU", "Upsample"]


class _Layer2(_Layer):
    __call__ = eager_api(_Layer.__call__)
    _tensor_inputs = True  # a numpy input is a clear TypeError (Layer._tensor_inputs)


def _functional_layer(name, fn, *arg_names, **defaults):
    """A parameterless Layer calling ``fn(x, *its constructor arguments)``."""
    def __init__(self, *args, **kwargs):
        _Layer2.__init__(self)
        values = dict(defaults)
        values.update(zip(arg_names, args))
        values.update((k, v) for k, v in kwargs.items() if k != "name")
        self._kwargs = values

    def forward(self, *inputs):
        return fn(*inputs, **self._kwargs)
    return type(name, (_Layer2,), {"__init__": __init__, "forward": forward,
                                   "__doc__": f"paddle.nn.{name}: ``paddle.nn.functional.{fn.__name__}`` as a Layer."})


ELU = _functional_layer("ELU", F.elu, "alpha", alpha=1.0)
GELU = _functional_layer("GELU", F.gelu, "approximate", approximate=False)
LeakyReLU = _functional_layer("LeakyReLU", F.leaky_relu, "negative_slope", negative_slope=0.01)
LogSoftmax = _functional_layer("LogSoftmax", F.log_softmax, "axis", axis=-1)
ReLU6, Softsign, Tanhshrink, LogSigmoid, Hardswish, Swish = (
    _functional_layer(n, f) for n, f in (("ReLU6", F.relu6), ("Softsign", F.softsign), ("Tanhshrink", F.tanhshrink),
                                         ("LogSigmoid", F.log_sigmoid), ("Hardswish", F.hardswish),
                                         ("Swish", F.swish)))
Hardsigmoid = _functional_layer("Hardsigmoid", F.hardsigmoid)
SELU = _functional_layer("SELU", F.selu, "scale", "alpha", scale=1.0507009873554804934193349852946,
                         alpha=1.6732632423543772848170429916717)
Softplus = _functional_layer("Softplus", F.softplus, "beta", "threshold", beta=1, threshold=20)
Hardshrink = _functional_layer("Hardshrink", F.hardshrink, "threshold", threshold=0.5)
Softshrink = _functional_layer("Softshrink", F.softshrink, "threshold", threshold=0.5)
ThresholdedReLU = _functional_layer("ThresholdedReLU", F.thresholded_relu, "threshold", threshold=1.0)
Dropout2D = _functional_layer("Dropout2D", F.dropout2d, "p", "data_format", p=0.5, data_format="NCHW")
AdaptiveAvgPool2D = _functional_layer("AdaptiveAvgPool2D", F.adaptive_avg_pool2d, "output_size", "data_format")
AdaptiveMaxPool2D = _functional_layer("AdaptiveMaxPool2D", F.adaptive_max_pool2d, "output_size", "return_mask")
Upsample = _functional_layer("Upsample", F.interpolate, "size", "scale_factor", "mode", "align_corners",
                             "align_mode", "data_format")
Pad2D = _functional_layer("Pad2D", F.pad, "pad", "mode", "value", "data_format", mode="constant", value=0.0)
L1Loss = _functional_layer("L1Loss", F.l1_loss, "reduction", reduction="mean")
SmoothL1Loss = _functional_layer("SmoothL1Loss", F.smooth_l1_loss, "reduction", "delta", reduction="mean", delta=1.0)
BCELoss = _functional_layer("BCELoss", F.binary_cross_entropy, "weight", "reduction", reduction="mean")
NLLLoss = _functional_layer("NLLLoss", F.nll_loss, "weight", "ignore_index", "reduction", ignore_index=-100,
                            reduction="mean")
BCEWithLogitsLoss = _functional_layer("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits, "weight",
                                      "reduction", "pos_weight", reduction="mean")


def _Dropout2D_train_flag(self, x):  # Dropout2D is the identity in eval mode
    return F.dropout2d(x, self._kwargs.get("p", 0.5), self.training, self._kwargs.get("data_format", "NCHW"))


Dropout2D.forward = _Dropout2D_train_flag


class Embedding(_more.Embedding):
    """Rows of ``weight`` [num_embeddings, embedding_dim] (Xavier) for int ids of any shape; ``padding_idx`` reads
    as zeros and learns nothing."""

    __call__ = eager_api(_Layer.__call__)

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, sparse=False, weight_attr=None, name=None):
        super().__init__([num_embeddings, embedding_dim], padding_idx=padding_idx, param_attr=weight_attr)


class BatchNorm(_nn.BatchNorm):
    """fluid.dygraph.BatchNorm under paddle.nn (calls run eagerly in any mode)."""

    __call__ = eager_api(_Layer.__call__)


class BatchNorm2D(BatchNorm):
    """paddle 2.x batch norm over axis 1 (``BatchNorm1D``: [N, C] or [N, C, L]; ``BatchNorm2D``: NCHW)."""

    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCHW", use_global_stats=None, name=None):
        if data_format not in ("NCHW", "NC", "NCL"):
            raise NotImplementedError(f"{type(self).__name__}: minifluid supports channels-first data_format")
        super().__init__(num_features, momentum=momentum, epsilon=epsilon, param_attr=weight_attr,
                         bias_attr=bias_attr, use_global_stats=bool(use_global_stats))


class BatchNorm1D(BatchNorm2D):
    def __init__(self, num_features, momentum=0.9, epsilon=1e-05, weight_attr=None, bias_attr=None,
                 data_format="NCL", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, "NCL", use_global_stats)


class LayerNorm(_more.LayerNorm):
    """Normalise over the trailing ``normalized_shape``; weight (ones) and bias (zeros) of that size."""

    __call__ = eager_api(_Layer.__call__)

    def __init__(self, normalized_shape, epsilon=1e-05, weight_attr=None, bias_attr=None, name=None):
        super().__init__(normalized_shape, epsilon=epsilon, param_attr=weight_attr, bias_attr=bias_attr)


class Conv2DTranspose(_Layer2):
    """Transposed convolution; weight [in_channels, out_channels / groups, kh, kw], bias [out_channels]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 dilation=1, weight_attr=None, bias_attr=None, data_format="NCHW"):
        super().__init__()
        k = wiring.pair(kernel_size, "kernel_size")
        self._args = dict(stride=stride, padding=padding, output_padding=output_padding, groups=groups,
                          dilation=dilation, data_format=data_format)
        self.weight = self.create_parameter([in_channels, out_channels // groups] + k, weight_attr)
        self.bias = self.create_parameter([out_channels], bias_attr, is_bias=True)

    def forward(self, x, output_size=None):
        return F.conv2d_transpose(x, self.weight, self.bias, output_size=output_size, **self._args)


class PReLU(_Layer2):
    """Learned slopes for x < 0: one (``num_parameters=1``) or one per channel, initialised to ``init``."""

    def __init__(self, num_parameters=1, init=0.25, weight_attr=None, name=None):
        super().__init__()
        self.weight = self.create_parameter([num_parameters], weight_attr, default_initializer=Constant(init))

    def forward(self, x):
        return F.prelu(x, self.weight)

