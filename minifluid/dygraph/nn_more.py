"""More of ``fluid.dygraph.nn`` (1.8): Embedding, LayerNorm, GroupNorm, InstanceNorm, PRelu, Conv2DTranspose,
with fluid 1.8's constructor arguments and parameter shapes; each runs the same ops as its static twin in
``fluid.layers`` (``embedding``, ``layer_norm``, ``group_norm``, ``instance_norm``, ``prelu``,
``conv2d_transpose``). LayerNorm's are described once, in layers/wiring.py."""
import numpy as np

from ..initializer import Constant
from ..layers import wiring
from ..layers.image import _conv_transpose_padding
from .layer import Layer
from .emit import emitter
from .nn import _params

__all__ = ["Conv2DTranspose", "Embedding", "GroupNorm", "InstanceNorm", "LayerNorm", "PRelu"]


class Embedding(Layer):
    """Rows of the table ``weight`` of shape ``size`` = [vocab, width] for int64 ids of any shape (a ``width``
    dimension is appended); ``padding_idx`` (negative: from the end) reads as zeros and learns nothing."""

    def __init__(self, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
                 dtype="float32"):
        super().__init__(dtype=dtype)
        self._size = list(size)
        padding_idx = -1 if padding_idx is None else padding_idx if padding_idx >= 0 else size[0] + padding_idx
        self._attrs = {"is_sparse": is_sparse, "is_distributed": is_distributed, "remote_prefetch": False,
                       "padding_idx": padding_idx}
        self.weight = self.create_parameter(self._size, param_attr)

    def forward(self, input):
        return emitter(self).op("lookup_table_v2", {"Ids": input, "W": self.weight}, self._attrs)


class LayerNorm(Layer):
    """Normalise over the trailing ``normalized_shape``, then scale (ones) and shift (zeros)."""

    def __init__(self, normalized_shape, scale=True, shift=True, epsilon=1e-05, param_attr=None, bias_attr=None,
                 act=None, dtype="float32"):
        super().__init__(dtype=dtype)
        shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
        self._shape, self._epsilon, self._act = shape, epsilon, act
        self.weight, self.bias = _params(self, wiring.layer_norm_params(int(np.prod(shape)), scale, shift,
                                                                        param_attr, bias_attr))

    def forward(self, input):
        return wiring.layer_norm_ops(emitter(self), input, self.weight, self.bias, self._epsilon,
                                     len(input.shape) - len(self._shape), self._act)


def _norm_params(layer, channels, param_attr, bias_attr):
    return _params(layer, [wiring.ParamSpec([channels], param_attr, default_initializer=Constant(1.0)),
                           wiring.ParamSpec([channels], bias_attr, is_bias=True, default_initializer=Constant(0.0))])


def _norm_inputs(x, scale, bias):
    return {"X": x, **{slot: p for slot, p in (("Scale", scale), ("Bias", bias)) if p is not None}}


class GroupNorm(Layer):
    """Normalise each sample over each of ``groups`` groups of channels, then scale and shift per channel.
    As fluid 1.8's, the layer has ``weight`` / ``bias`` ([channels]) only when ``param_attr`` / ``bias_attr``
    is given; only NCHW input."""

    def __init__(self, channels, groups, epsilon=1e-05, param_attr=None, bias_attr=None, act=None,
                 data_layout="NCHW", dtype="float32"):
        super().__init__(dtype=dtype)
        if data_layout != "NCHW":
            raise ValueError("unsupported data layout:" + data_layout)
        self._attrs, self._act = {"epsilon": epsilon, "groups": groups, "data_layout": data_layout}, act
        self.weight, self.bias = _norm_params(self, channels, param_attr or False, bias_attr or False)

    def forward(self, input):
        emit = emitter(self)
        y = emit.op("group_norm", _norm_inputs(input, self.weight, self.bias), self._attrs, out="Y",
                    extra={"Mean": wiring.New(), "Variance": wiring.New()})
        return emit.act(y, self._act)


class InstanceNorm(Layer):
    """Normalise each channel of each sample over its spatial positions, then scale (``scale``, ones) and
    shift (``bias``, zeros), both [num_channels]."""

    def __init__(self, num_channels, epsilon=1e-5, param_attr=None, bias_attr=None, dtype="float32"):
        super().__init__(dtype=dtype)
        if bias_attr is False:
            raise AssertionError("bias_attr should not be False in InstanceNorm.")
        self._epsilon = epsilon
        self.scale, self.bias = _norm_params(self, num_channels, param_attr, bias_attr)

    def forward(self, input):
        return emitter(self).op("instance_norm", _norm_inputs(input, self.scale, self.bias),
                                {"epsilon": self._epsilon}, out="Y",
                                extra={"SavedMean": wiring.New(), "SavedVariance": wiring.New()})


class PRelu(Layer):
    """``max(0, x) + alpha * min(0, x)``: one alpha (``mode='all'``), one per channel (``'channel'``, give
    ``channel``) or one per element of a sample (``'element'``, give ``input_shape``); alpha starts at 1.0."""

    def __init__(self, mode, channel=None, input_shape=None, param_attr=None, dtype="float32"):
        super().__init__("prelu", dtype=dtype)  # fluid names it so (not p_relu)
        if mode == "all":
            shape = [1]
        elif mode == "channel":
            if not isinstance(channel, int):
                raise AssertionError("channel argument is required when mode is 'channel'.")
            shape = [1, channel, 1, 1]
        elif mode == "element":
            if not isinstance(input_shape, (list, tuple)):
                raise AssertionError("input_shape argument is required when mode is 'element'.")
            shape = [1] + list(input_shape)[1:]
        else:
            raise ValueError("mode should be one of all, channel, element.")
        self._mode = mode
        self.weight = self.create_parameter(shape, param_attr, default_initializer=Constant(1.0))

    def forward(self, input):
        return emitter(self).op("prelu", {"X": input, "Alpha": self.weight}, {"mode": self._mode})


class Conv2DTranspose(Layer):
    """Transposed 2-D convolution; weight [num_channels, num_filters / groups, kh, kw], bias [num_filters]
    (fluid.layers.conv2d_transpose's arguments and output-size rule)."""

    def __init__(self, num_channels, num_filters, filter_size, output_size=None, padding=0, stride=1, dilation=1,
                 groups=None, param_attr=None, bias_attr=None, use_cudnn=True, act=None, dtype="float32"):
        super().__init__(dtype=dtype)
        if param_attr is False:
            raise AssertionError("param_attr should not be False in conv2d_transpose.")
        groups = 1 if groups is None else int(groups)
        paddings, algo = _conv_transpose_padding(padding, "NCHW")
        self._attrs = {"output_size": wiring.pair(output_size, "output_size") if output_size is not None else [],
                       "strides": wiring.pair(stride, "stride"), "paddings": paddings, "padding_algorithm": algo,
                       "dilations": wiring.pair(dilation, "dilation"), "groups": groups, "use_cudnn": use_cudnn}
        self._act = act
        self.weight = self.create_parameter([num_channels, num_filters // groups] +
                                            wiring.pair(filter_size, "filter_size"), param_attr)
        self.bias = self.create_parameter([num_filters], bias_attr, is_bias=True)

    def forward(self, input):
        emit = emitter(self)
        out = emit.op("conv2d_transpose", {"Input": input, "Filter": self.weight}, self._attrs, out="Output")
        return emit.act(emit.bias(out, self.bias, 1), self._act)


for _layer in (Conv2DTranspose, Embedding, GroupNorm, InstanceNorm, LayerNorm, PRelu):
    _layer._tensor_inputs = True  # a numpy input is a clear TypeError (Layer._tensor_inputs)
Conv2DTranspose._input_dtypes = (("input", ("float16", "float32", "float64")),)
InstanceNorm._input_dtypes = LayerNorm._input_dtypes = (("input", ("float32", "float64")),)
Embedding._input_dtypes = (("input", ("int64",)),)
PRelu._input_dtypes = (("input", ("float32",)),)
