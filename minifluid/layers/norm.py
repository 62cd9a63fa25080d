"""Normalisation layers: layer_norm, group_norm, instance_norm, l2_normalize, lrn (fluid 1.8 signatures,
defaults and checks)."""
import numpy as np

from ..ops.norm import check_begin_norm_axis
from .activation import check_variable_and_dtype
from . import wiring
from ..initializer import Constant
from .helper import LayerHelper
from .nn import _params

__all__ = ["group_norm", "instance_norm", "l2_normalize", "layer_norm", "lrn"]


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05, param_attr=None, bias_attr=None,
               act=None, name=None):
    """Normalise each sample over the dims from ``begin_norm_axis`` on, then scale (``<name>.w_0``, ones) and
    shift (``<name>.b_0``, zeros), both of shape [prod(input.shape[begin_norm_axis:])]."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "layer_norm")
    helper = LayerHelper("layer_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    check_begin_norm_axis(begin_norm_axis, len(input.shape))
    tail = input.shape[begin_norm_axis:]
    if any(d < 0 for d in tail):
        raise ValueError(f"layer_norm: the dims of {input.name!r} from begin_norm_axis={begin_norm_axis} must be "
                         f"known, got shape {list(input.shape)}")
    scale, bias = _params(helper, wiring.layer_norm_params(int(np.prod(tail)), scale, shift, helper.param_attr,
                                                           helper.bias_attr), dtype)
    return wiring.layer_norm_ops(wiring.StaticEmit(helper, dtype), input, scale, bias, epsilon, begin_norm_axis, act)


def l2_normalize(x, axis, epsilon=1e-12, name=None):
    """``x / sqrt(sum(x ** 2, axis) + epsilon)``; a 1-D ``x`` is normalised along axis 0."""
    check_variable_and_dtype(x, "X", ("float32", "float64"), "norm")
    axis = 0 if len(x.shape) == 1 else axis
    helper = LayerHelper("l2_normalize", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    norm = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type="norm", inputs={"X": [x]}, outputs={"Out": [out], "Norm": [norm]},
                     attrs={"axis": 1 if axis is None else axis, "epsilon": epsilon})
    return out


def lrn(input, n=5, k=1.0, alpha=1e-4, beta=0.75, name=None, data_format="NCHW"):
    """Local response normalisation across channels: ``input * (k + alpha * sum of squares over the n
    neighbouring channels) ** -beta``."""
    check_variable_and_dtype(input, "input", ("float32",), "lrn")
    if len(input.shape) != 4:
        raise ValueError(f"Input's dimension size of Op(lrn) must be 4, but received {len(input.shape)}.")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"Attr(data_format) of Op(lrn) got wrong value: received {data_format} but only NCHW or "
                         "NHWC supported.")
    helper = LayerHelper("lrn", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    mid = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="lrn", inputs={"X": [input]}, outputs={"Out": [out], "MidOut": [mid]},
                     attrs={"n": n, "k": k, "alpha": alpha, "beta": beta, "data_format": data_format})
    return out


def _channel_params(helper, channels, dtype, scale, bias):
    """[Scale, Bias] of shape [channels] (ones and zeros); a flag that is off leaves that one out."""
    if channels < 0 and (scale or bias):
        raise ValueError(f"{helper.layer_type}: the channel dimension of the input must be known, got {channels}")
    return [helper.create_parameter(attr=helper.param_attr, shape=[channels], dtype=dtype,
                                    default_initializer=Constant(1.0)) if scale else None,
            helper.create_parameter(attr=helper.bias_attr, shape=[channels], dtype=dtype, is_bias=True,
                                    default_initializer=Constant(0.0)) if bias else None]


def _append_norm(helper, op_type, x, params, stats, attrs):
    dtype = helper.input_dtype()
    out = helper.create_variable_for_type_inference(dtype)
    inputs = {"X": [x], **{slot: [p] for slot, p in zip(("Scale", "Bias"), params) if p is not None}}
    outputs = {"Y": [out], **{s: [helper.create_variable_for_type_inference(dtype, stop_gradient=True)] for s in stats}}
    helper.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    return out


def group_norm(input, groups, epsilon=1e-05, param_attr=None, bias_attr=None, act=None, data_layout="NCHW",
               name=None):
    """Normalise each sample over each of ``groups`` groups of channels, then scale and shift per channel.

    As in fluid 1.8, the scale (``<name>.w_0``, ones) and shift (``<name>.b_0``, zeros), both [C], are
    created only when ``param_attr`` / ``bias_attr`` is given (a ParamAttr or a name): with the defaults
    the layer has no parameters, so programs saved by fluid load unchanged.
    """
    helper = LayerHelper("group_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    check_variable_and_dtype(input, "input", ("float32", "float64"), "group_norm")
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError("Param(data_layout) of Op(fluid.layers.group_norm) got wrong value: received "
                         f"{data_layout} but only NCHW or NHWC supported.")
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    params = _channel_params(helper, channels, helper.input_dtype(), bool(param_attr), bool(bias_attr))
    out = _append_norm(helper, "group_norm", input, params, ("Mean", "Variance"),
                       {"epsilon": epsilon, "groups": groups, "data_layout": data_layout})
    return wiring.StaticEmit(helper, helper.input_dtype()).act(out, act)


def instance_norm(input, epsilon=1e-05, param_attr=None, bias_attr=None, name=None):
    """Normalise each channel of each sample over its spatial positions, then scale (``<name>.w_0``, ones)
    and shift (``<name>.b_0``, zeros), both [C]; ``input`` has rank 2 to 5, channels on axis 1."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "instance_norm")
    if bias_attr is False:
        raise AssertionError("bias_attr should not be False in instance_norm.")
    helper = LayerHelper("instance_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    params = _channel_params(helper, input.shape[1], helper.input_dtype(), True, True)
    return _append_norm(helper, "instance_norm", input, params, ("SavedMean", "SavedVariance"), {"epsilon": epsilon})
