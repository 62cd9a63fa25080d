"""``fluid.dygraph.nn`` (1.8): Conv3D, Conv3DTranspose and SpectralNorm, with fluid 1.8's constructor arguments,
parameter shapes and initialisers; each runs the op its static twin runs (``conv3d``, ``conv3d_transpose``,
``spectral_norm``: ops/conv3d.py, ops/spectral_norm.py). Inputs are NCDHW. Unlike fluid 1.8's Conv3DTranspose,
which creates a bias but adds it only when ``bias_attr`` is given, both convolutions add the bias they have
(none when ``bias_attr`` is False)."""
import numpy as np

from ..initializer import Normal
from ..layers.activation import check_variable_and_dtype
from ..param_attr import ParamAttr
from .emit import emitter
from .layer import Layer

__all__ = ["Conv3D", "Conv3DTranspose", "SpectralNorm"]


def _triple(value, name):
    """fluid's convert_to_list(value, 3, name)."""
    values = [value] * 3 if isinstance(value, int) else list(value)
    if len(values) != 3 or not all(isinstance(v, int) for v in values):
        raise ValueError(f"The {name}'s length must be 3 and every element an integer. Received: {value}")
    return values


class _Conv3DBase(Layer):
    op_type = None

    def _attrs(self, stride, padding, dilation, groups, use_cudnn):
        return {"strides": _triple(stride, "stride"), "paddings": _triple(padding, "padding"),
                "dilations": _triple(dilation, "dilation"), "groups": groups, "use_cudnn": use_cudnn,
                "padding_algorithm": "EXPLICIT", "data_format": "NCDHW"}

    def forward(self, input):
        emit = emitter(self)
        out = emit.op(self.op_type, {"Input": input, "Filter": self.weight}, self._op_attrs, out="Output")
        return emit.act(emit.bias(out, self.bias, 1), self._act)


class Conv3D(_Conv3DBase):
    """3-D convolution over NCDHW input: weight [num_filters, num_channels / groups, kd, kh, kw] drawn from
    Normal(0, sqrt(2 / (kd * kh * kw * num_channels))), bias [num_filters]."""

    op_type = "conv3d"

    def __init__(self, num_channels, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
                 param_attr=None, bias_attr=None, use_cudnn=True, act=None, dtype="float32"):
        assert param_attr is not False, "param_attr should not be False here."
        super().__init__(dtype=dtype)
        if groups is not None and num_channels % groups != 0:
            raise ValueError("num_channels must be divisible by groups.")
        filter_size = _triple(filter_size, "filter_size")
        std = (2.0 / (filter_size[0] * filter_size[1] * filter_size[2] * num_channels)) ** 0.5
        self._act = act
        self._op_attrs = self._attrs(stride, padding, dilation, groups or 1, use_cudnn)
        self.weight = self.create_parameter([num_filters, num_channels // (groups or 1)] + filter_size, param_attr,
                                            default_initializer=Normal(0.0, std, 0))
        self.bias = self.create_parameter([num_filters], bias_attr, is_bias=True)


class Conv3DTranspose(_Conv3DBase):
    """Transposed 3-D convolution (conv3d's adjoint) over NCDHW input: weight [num_channels, num_filters / groups,
    kd, kh, kw], bias [num_filters]; output size (in - 1) * stride - 2 * padding + dilation * (k - 1) + 1."""

    op_type = "conv3d_transpose"

    def __init__(self, num_channels, num_filters, filter_size, padding=0, stride=1, dilation=1, groups=None,
                 param_attr=None, bias_attr=None, use_cudnn=True, act=None, dtype="float32"):
        if not isinstance(use_cudnn, bool):
            raise ValueError("use_cudnn should be True or False")
        assert param_attr is not False, "param_attr should not be False in conv3d_transpose."
        super().__init__(dtype=dtype)
        groups = 1 if groups is None else int(groups)
        self._act = act
        self._op_attrs = dict(self._attrs(stride, padding, dilation, groups, use_cudnn), output_size=[])
        filter_size = _triple(filter_size, "conv3d_transpose.filter_size")
        self.weight = self.create_parameter([num_channels, num_filters // groups] + filter_size, param_attr)
        self.bias = self.create_parameter([num_filters], bias_attr, is_bias=True)


class SpectralNorm(Layer):
    """``weight`` divided by its largest singular value (``power_iters`` rounds of power iteration on the
    matrix with ``weight.shape[dim]`` rows, from ``weight_u`` [h] and ``weight_v`` [w], drawn from N(0, 1) and
    never trained) for weights of shape ``weight_shape``."""

    def __init__(self, weight_shape, dim=0, power_iters=1, eps=1e-12, dtype="float32"):
        super().__init__(dtype=dtype)
        self._attrs = {"dim": dim, "power_iters": power_iters, "eps": eps}
        shape = list(weight_shape)
        h = shape[dim]
        w = int(np.prod(shape)) // h
        self.weight_u, self.weight_v = (self.create_parameter([n], ParamAttr(), default_initializer=Normal(0.0, 1.0))
                                        for n in (h, w))
        self.weight_u.stop_gradient = self.weight_v.stop_gradient = True

    def forward(self, weight):
        check_variable_and_dtype(weight, "weight", ("float32", "float64"), "SpectralNorm")
        return emitter(self).op("spectral_norm", {"Weight": weight, "U": self.weight_u, "V": self.weight_v},
                                self._attrs)


for _layer in (Conv3D, Conv3DTranspose, SpectralNorm):
    _layer._tensor_inputs = True  # a numpy input is a clear TypeError (Layer._tensor_inputs)
