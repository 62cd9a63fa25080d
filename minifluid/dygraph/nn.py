"""``fluid.dygraph.nn``: Linear, Conv2D, Pool2D, BatchNorm, Dropout.

Each layer creates its parameters once, with the static layers' defaults (Xavier weights, zero
biases, conv filters Normal(0, sqrt(2 / (kh * kw * C)))), and its ``forward`` runs the same
registered ops the static builders append (``mul`` + ``elementwise_add`` for Linear, as
``layers.fc``), straight through the tracer: no LayerHelper on the per-step path.
"""
from ..initializer import Constant, Normal
from ..param_attr import ParamAttr
from .layer import Layer
from .tensor import Tensor, apply, default_tracer

__all__ = ["BatchNorm", "Conv2D", "Dropout", "Linear", "Pool2D"]


def _pair(value):
    return [value, value] if isinstance(value, int) else [int(v) for v in value]


def _add_bias_act(x, bias, act, axis):
    if bias is not None:
        x = apply("elementwise_add", {"X": x, "Y": bias}, {"axis": axis})
    return x if act is None else apply(act, {"X": x})


class Linear(Layer):
    """``act(input @ weight + bias)``; weight [input_dim, output_dim] (``linear_<n>.w_0``), bias [output_dim].

    Args:
        input_dim (int), output_dim (int). param_attr, bias_attr (ParamAttr, optional; bias_attr=False:
        no bias). act (str, optional): an activation op name. dtype (str, default 'float32').
    """

    def __init__(self, input_dim, output_dim, param_attr=None, bias_attr=None, act=None, dtype="float32"):
        super().__init__(dtype=dtype)
        self._act = act
        self.weight = self.create_parameter([input_dim, output_dim], param_attr, dtype)
        self.bias = self.create_parameter([output_dim], bias_attr, dtype, is_bias=True)

    def forward(self, input):
        ndim = len(input._value.shape)
        out = apply("mul", {"X": input, "Y": self.weight}, {"x_num_col_dims": ndim - 1, "y_num_col_dims": 1})
        return _add_bias_act(out, self.bias, self._act, ndim - 1)


class Conv2D(Layer):
    """2-D convolution over NCHW input; filter [num_filters, num_channels / groups, kh, kw]."""

    def __init__(self, num_channels, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
                 param_attr=None, bias_attr=None, use_cudnn=True, act=None, dtype="float32"):
        super().__init__(dtype=dtype)
        groups = 1 if groups is None else int(groups)
        ksize = _pair(filter_size)
        std = (2.0 / (ksize[0] * ksize[1] * num_channels)) ** 0.5
        self._attrs = {"strides": _pair(stride), "paddings": _pair(padding), "dilations": _pair(dilation),
                       "groups": groups}
        self._act = act
        self.weight = self.create_parameter([num_filters, num_channels // groups] + ksize, param_attr, dtype,
                                            default_initializer=Normal(0.0, std, 0))
        self.bias = self.create_parameter([num_filters], bias_attr, dtype, is_bias=True)

    def forward(self, input):
        out = apply("conv2d", {"Input": input, "Filter": self.weight}, self._attrs, out_slot="Output")
        return _add_bias_act(out, self.bias, self._act, 1)


class Pool2D(Layer):
    """Max or average pooling over NCHW input (fluid.layers.pool2d's arguments)."""

    def __init__(self, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
                 use_cudnn=True, ceil_mode=False, exclusive=True, data_format="NCHW"):
        if pool_type not in ("max", "avg"):
            raise ValueError(f"Unknown Attr(pool_type): '{pool_type}'. It can only be 'max' or 'avg'.")
        super().__init__()
        self._attrs = {"pooling_type": pool_type, "ksize": [1, 1] if pool_size == -1 else _pair(pool_size),
                       "global_pooling": global_pooling, "strides": _pair(pool_stride),
                       "paddings": _pair(pool_padding), "ceil_mode": ceil_mode, "exclusive": exclusive,
                       "data_format": data_format}

    def forward(self, input):
        return apply("pool2d", {"X": input}, self._attrs)


class BatchNorm(Layer):
    """Batch normalization; running mean/variance are non-trainable parameters updated in training."""

    def __init__(self, num_channels, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
                 bias_attr=None, dtype="float32", data_layout="NCHW", in_place=False, moving_mean_name=None,
                 moving_variance_name=None, do_model_average_for_mean_and_var=True, use_global_stats=False,
                 trainable_statistics=False):
        super().__init__(dtype=dtype)
        self._act, self._is_test = act, is_test
        self._attrs = {"momentum": momentum, "epsilon": epsilon, "data_layout": data_layout,
                       "use_global_stats": use_global_stats, "trainable_statistics": trainable_statistics}
        self.weight = self.create_parameter([num_channels], param_attr, dtype, default_initializer=Constant(1.0))
        self.bias = self.create_parameter([num_channels], bias_attr, dtype, is_bias=True)
        self._mean = self.create_parameter([num_channels], ParamAttr(moving_mean_name, Constant(0.0),
                                                                     trainable=False), dtype)
        self._variance = self.create_parameter([num_channels], ParamAttr(moving_variance_name, Constant(1.0),
                                                                         trainable=False), dtype)

    def forward(self, input):
        y, saved_mean, saved_var = Tensor(None, stop_gradient=False), Tensor(None), Tensor(None)
        attrs = dict(self._attrs, is_test=self._is_test or not self.training)
        default_tracer().trace_op(
            "batch_norm", {"X": input, "Scale": self.weight, "Bias": self.bias, "Mean": self._mean,
                           "Variance": self._variance},
            {"Y": y, "MeanOut": self._mean, "VarianceOut": self._variance, "SavedMean": saved_mean,
             "SavedVariance": saved_var}, attrs)
        return y if self._act is None else apply(self._act, {"X": y})


class Dropout(Layer):
    """Dropout with probability ``p`` in training; the identity (or ``x * (1 - p)``) in eval mode."""

    def __init__(self, p=0.5, seed=None, dropout_implementation="downgrade_in_infer", is_test=False):
        super().__init__()
        self._attrs = {"dropout_prob": p, "fix_seed": seed is not None, "seed": seed or 0,
                       "dropout_implementation": dropout_implementation}
        self._is_test = is_test

    def forward(self, input):
        out = Tensor(None, stop_gradient=False)
        attrs = dict(self._attrs, is_test=self._is_test or not self.training)
        default_tracer().trace_op("dropout", {"X": input}, {"Out": out}, attrs)
        return out
