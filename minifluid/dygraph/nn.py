"""``fluid.dygraph.nn``: Linear, Conv2D, Pool2D, BatchNorm, Dropout (and, bound at the end, the layers of
nn_more.py, nn_units.py and losses.py).

Each layer runs what ``layers/wiring.py`` describes for its static twin (``fc``, ``conv2d`` ...):
``__init__`` creates the parameters it lists, once, with the static layers' defaults (Xavier
weights, zero biases, conv filters Normal(0, sqrt(2 / (kh * kw * C)))), and ``forward`` runs the
same ops through ``emitter(self)`` (dygraph/emit.py): straight into the tracer in dygraph mode (no
LayerHelper on the per-step path), appended to the current Program in static mode.
"""
from ..layers import wiring
from .emit import EagerEmit, emitter  # noqa: F401  (EagerEmit: re-exported for functional.py)
from .layer import Layer

__all__ = ["BCELoss", "BatchNorm", "BilinearTensorProduct", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose",
           "Dropout", "Embedding", "GRUUnit", "GroupNorm", "InstanceNorm", "L1Loss", "LayerNorm", "Linear", "MSELoss",
           "NCE", "NLLLoss", "PRelu", "Pool2D", "SpectralNorm", "TreeConv"]


def _params(layer, specs):
    """The layer's parameters (layers/wiring.py lists them; None for one left out)."""
    return [None if s is None else layer.create_parameter(s.shape, s.attr, is_bias=s.is_bias,
                                                          default_initializer=s.default_initializer) for s in specs]


class Linear(Layer):
    """``act(input @ weight + bias)``; weight [input_dim, output_dim] (``linear_<n>.w_0``), bias [output_dim].

    Args:
        input_dim (int), output_dim (int). param_attr, bias_attr (ParamAttr, optional; bias_attr=False:
        no bias). act (str, optional): an activation op name. dtype (str, default 'float32').
    """

    def __init__(self, input_dim, output_dim, param_attr=None, bias_attr=None, act=None, dtype="float32"):
        super().__init__(dtype=dtype)
        self._act = act
        self.weight, self.bias = _params(self, wiring.fc_params([input_dim], output_dim, [param_attr], bias_attr))

    def forward(self, input):
        return wiring.fc_ops(emitter(self), [input], [self.weight], self.bias, len(input.shape) - 1, self._act)


class Conv2D(Layer):
    """2-D convolution over NCHW input; filter [num_filters, num_channels / groups, kh, kw]."""

    def __init__(self, num_channels, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
                 param_attr=None, bias_attr=None, use_cudnn=True, act=None, dtype="float32"):
        super().__init__(dtype=dtype)
        groups = 1 if groups is None else int(groups)
        self._attrs = wiring.conv2d_attrs(stride, padding, dilation, groups, use_cudnn)
        self._act = act
        self.weight, self.bias = _params(self, wiring.conv2d_params(num_channels, num_filters, filter_size, groups,
                                                                    param_attr, bias_attr))

    def forward(self, input):
        return wiring.conv2d_ops(emitter(self), input, self.weight, self.bias, self._attrs, self._act)


class Pool2D(Layer):
    """Max or average pooling over NCHW input (fluid.layers.pool2d's arguments)."""

    def __init__(self, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
                 use_cudnn=True, ceil_mode=False, exclusive=True, data_format="NCHW"):
        super().__init__()
        self._attrs = wiring.pool2d_attrs(pool_size, pool_type, pool_stride, pool_padding, global_pooling,
                                          use_cudnn, ceil_mode, exclusive, data_format)

    def forward(self, input):
        return emitter(self).op("pool2d", {"X": input}, self._attrs)


class BatchNorm(Layer):
    """Batch normalization; running mean/variance are non-trainable parameters updated in training."""

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                 bias_attr=None, dtype="float32", data_layout="NCHW", in_place=False, moving_mean_name=None,
                 moving_variance_name=None, do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False):
        super().__init__(dtype=dtype)
        self._act, self._is_test = act, is_test
        self._attrs = wiring.batch_norm_attrs(momentum, epsilon, is_test, data_layout, use_global_stats,
                                              trainable_statistics)
        self.weight, self.bias, self._mean, self._variance = _params(self, wiring.batch_norm_params(
            num_channels, param_attr, bias_attr, moving_mean_name, moving_variance_name))

    def forward(self, input):
        attrs = dict(self._attrs, is_test=self._is_test or not self.training)
        return wiring.batch_norm_ops(emitter(self), input, [self.weight, self.bias, self._mean, self._variance], attrs,
                                     self._act)


class Dropout(Layer):
    """Dropout with probability ``p`` in training; the identity (or ``x * (1 - p)``) in eval mode."""

    def __init__(self, p=0.5, seed=None, dropout_implementation="downgrade_in_infer", is_test=False):
        super().__init__()
        self._attrs = wiring.dropout_attrs(p, is_test, seed, dropout_implementation)
        self._is_test = is_test

    def forward(self, input):
        return wiring.dropout_ops(emitter(self), input, dict(self._attrs, is_test=self._is_test or not self.training))


for _layer in (BatchNorm, Conv2D, Dropout, Linear, Pool2D):
    _layer._tensor_inputs = True  # a numpy input is a clear TypeError (Layer._tensor_inputs)
_FLOATS = ("float16", "float32", "float64")
BatchNorm._input_dtypes = Conv2D._input_dtypes = Linear._input_dtypes = (("input", _FLOATS),)
Pool2D._input_dtypes = (("input", ("int8", "uint8") + _FLOATS),)


# fluid 1.8's dygraph.nn holds these too; their modules import this one, so they come last
from .losses import BCELoss, L1Loss, MSELoss, NLLLoss  # noqa: E402
from .nn_3d import Conv3D, Conv3DTranspose, SpectralNorm  # noqa: E402
from .nn_more import Conv2DTranspose, Embedding, GroupNorm, InstanceNorm, LayerNorm, PRelu  # noqa: E402
from .nn_units import NCE, BilinearTensorProduct, GRUUnit, TreeConv  # noqa: E402
