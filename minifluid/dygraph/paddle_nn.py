"""``paddle.nn`` (2.x) on minifluid's dygraph: Layer, Linear, Conv2D, pooling, activations, losses.

The classes are the fluid dygraph layers under paddle 2.x names and arguments. Calling one runs
eagerly whatever the global mode (paddle 2.x defaults to dynamic mode), so a 2.x script needs no
``paddle.disable_static()``; ``fluid.layers.*`` inside a custom ``forward`` run eagerly as well.
"""
from . import container as _container
from . import functional
from . import nn as _nn
from .paddle_layers import *  # noqa: F401,F403  (names in paddle_layers.__all__)
from .base import eager_api
from .layer import Layer as _Layer
from .tensor import apply

__all__ = ["AdaptiveAvgPool2D", "AdaptiveMaxPool2D", "AvgPool2D", "BCELoss", "BCEWithLogitsLoss", "BatchNorm",
           "BatchNorm1D", "BatchNorm2D", "Conv2D", "Conv2DTranspose", "CrossEntropyLoss", "Dropout", "Dropout2D",
           "ELU", "Embedding", "Flatten", "GELU", "Hardshrink", "Hardsigmoid", "Hardswish", "L1Loss", "Layer",
           "LayerList", "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid", "LogSoftmax", "MSELoss", "MaxPool2D",
           "NLLLoss", "PReLU", "Pad2D", "ParameterList", "ReLU", "ReLU6", "SELU", "Sequential", "Sigmoid",
           "SmoothL1Loss", "Softmax", "Softplus", "Softshrink", "Softsign", "Swish", "Tanh", "Tanhshrink",
           "ThresholdedReLU", "Upsample", "functional"]

_eager_call = eager_api(_Layer.__call__)


class Layer(_Layer):
    """paddle.nn.Layer: fluid.dygraph.Layer whose calls run eagerly in any mode."""

    __call__ = _eager_call


class Linear(_nn.Linear):
    """``x @ weight + bias``; weight [in_features, out_features] (Xavier), bias [out_features] (zeros)."""

    __call__ = _eager_call

    def __init__(self, in_features, out_features, weight_attr=None, bias_attr=None, name=None):
        super().__init__(in_features, out_features, weight_attr, bias_attr)


class Conv2D(_nn.Conv2D):
    __call__ = _eager_call

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 padding_mode="zeros", weight_attr=None, bias_attr=None, data_format="NCHW"):
        if padding_mode != "zeros" or data_format != "NCHW":
            raise NotImplementedError("Conv2D: minifluid supports padding_mode='zeros' and data_format='NCHW'")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, weight_attr,
                         bias_attr)


class MaxPool2D(_nn.Pool2D):
    __call__ = _eager_call

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, name=None):
        super().__init__(kernel_size, "max", kernel_size if stride is None else stride, padding, ceil_mode=ceil_mode)


class AvgPool2D(_nn.Pool2D):
    __call__ = _eager_call

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, name=None):
        super().__init__(kernel_size, "avg", kernel_size if stride is None else stride, padding,
                         ceil_mode=ceil_mode, exclusive=exclusive)


class Dropout(_nn.Dropout):
    __call__ = _eager_call

    def __init__(self, p=0.5, axis=None, mode="upscale_in_train", name=None):
        super().__init__(p, dropout_implementation="downgrade_in_infer" if mode == "downscale_in_infer" else mode)


def _activation(op_type):
    class Activation(Layer):
        def forward(self, x):
            return apply(op_type, {"X": x})
    Activation.__name__ = Activation.__qualname__ = {"relu": "ReLU"}.get(op_type, op_type.capitalize())
    return Activation


ReLU, Sigmoid, Tanh = (_activation(t) for t in ("relu", "sigmoid", "tanh"))


class Softmax(Layer):
    def __init__(self, axis=-1, name=None):
        super().__init__()
        self._axis = axis

    def forward(self, x):
        return apply("softmax", {"X": x}, {"axis": self._axis})


class Flatten(Layer):
    """Flatten dimensions ``start_axis`` .. ``stop_axis`` into one."""

    def __init__(self, start_axis=1, stop_axis=-1):
        super().__init__()
        self._start, self._stop = start_axis, stop_axis

    def forward(self, x):
        shape = x.shape
        stop = self._stop % len(shape)
        return apply("reshape2", {"X": x}, {"shape": shape[:self._start] + [-1] + shape[stop + 1:]})


class Sequential(_container.Sequential):
    __call__ = _eager_call


class LayerList(_container.LayerList):
    __call__ = _eager_call


class ParameterList(_container.ParameterList):
    __call__ = _eager_call


class MSELoss(Layer):
    def __init__(self, reduction="mean"):
        super().__init__()
        self._reduction = reduction

    def forward(self, input, label):
        return functional.mse_loss(input, label, self._reduction)


class CrossEntropyLoss(Layer):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1, name=None):
        super().__init__()
        self._kwargs = dict(weight=weight, ignore_index=ignore_index, reduction=reduction, soft_label=soft_label,
                            axis=axis)

    def forward(self, input, label):
        return functional.cross_entropy(input, label, **self._kwargs)


for _layer in (CrossEntropyLoss, Flatten, MSELoss, ReLU, Sigmoid, Softmax, Tanh):
    _layer._tensor_inputs = True  # a numpy input is a clear TypeError (Layer._tensor_inputs)
