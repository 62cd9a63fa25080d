"""Normalisation layers: layer_norm, group_norm, instance_norm, l2_normalize, lrn, inplace_abn, data_norm (fluid 1.8
signatures, defaults and checks)."""
import numpy as np

from ..ops.norm import check_begin_norm_axis
from .activation import check_variable_and_dtype
from . import wiring
from ..initializer import Constant
from ..param_attr import ParamAttr
from .helper import LayerHelper
from .nn import _params

__all__ = ["data_norm", "group_norm", "inplace_abn", "instance_norm", "l2_normalize", "layer_norm", "lrn"]


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


def inplace_abn(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None, bias_attr=None,
                data_layout="NCHW", name=None, moving_mean_name=None, moving_variance_name=None,
                do_model_average_for_mean_and_var=True, use_global_stats=False, act_alpha=1.0):
    """batch_norm then ``act`` (None / identity, leaky_relu or elu with ``act_alpha``) as one inplace_abn op, with
    batch_norm's parameters. NOTE: fluid writes the result over ``input``; minifluid returns it in a new variable
    (same numbers), so ``input`` keeps its value."""
    if act not in (None, "identity", "leaky_relu", "elu"):
        raise AssertionError("inplace_abn only support act as None, 'identity', 'leaky_relu', 'elu' currently")
    if bias_attr is False:
        raise AssertionError("bias_attr should not be False in inplace_abn.")
    check_variable_and_dtype(input, "input", ("float32", "float64"), "inplace_abn")
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError("unsupported data layout:" + data_layout)
    helper = LayerHelper("inplace_abn", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    scale, bias, mean, variance = _params(helper, wiring.batch_norm_params(
        channels, helper.param_attr, helper.bias_attr, moving_mean_name, moving_variance_name), dtype)
    attrs = dict(wiring.batch_norm_attrs(momentum, epsilon, is_test, data_layout, use_global_stats),
                 activation=act or "", alpha=float(act_alpha))
    return wiring.StaticEmit(helper, dtype).op(
        "inplace_abn", wiring.batch_norm_inputs(input, [scale, bias, mean, variance], momentum), attrs,
        out="Y", extra={"MeanOut": mean, "VarianceOut": variance, "SavedMean": wiring.New(),
                        "SavedVariance": wiring.New()})


def data_norm(input, act=None, epsilon=1e-05, param_attr=None, data_layout="NCHW", in_place=False, name=None,
              moving_mean_name=None, moving_variance_name=None, do_model_average_for_mean_and_var=True, slot_dim=-1,
              sync_stats=False, summary_decay_rate=0.9999999, enable_scale_and_shift=False):
    """Normalise each column by the running statistics ``<name>.batch_size`` / ``.batch_sum`` /
    ``.batch_square_sum`` (``name`` defaults to "dn"; initial values 1e4, 0, 1e4, or ``param_attr``'s "batch_size",
    "batch_sum", "batch_square"): ``(x - sum / size) * sqrt(size / square_sum)``, then ``* scale_w + bias`` when
    ``enable_scale_and_shift``. The backward pass folds each batch into the statistics (NOTE [ data_norm
    statistics ] in ops/ctr.py); with ``slot_dim``, slots whose first value (the show) is 0 give zeros and count
    for nothing."""
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError("unsupported data layout:" + data_layout)
    check_variable_and_dtype(input, "input", ("float32", "float64"), "data_norm")
    helper = LayerHelper("data_norm", input=input, act=act, name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    given = param_attr if isinstance(param_attr, dict) else {}
    stats = {"BatchSize": ("batch_size", given.get("batch_size", 1e4)),
             "BatchSum": ("batch_sum", given.get("batch_sum", 0.0)),
             "BatchSquareSum": ("batch_square_sum", given.get("batch_square", 1e4))}
    prefix = name or "dn"

    def param(suffix, value, learning_rate):
        attr = ParamAttr(name=f"{prefix}.{suffix}", initializer=Constant(float(value)), learning_rate=learning_rate)
        return helper.create_parameter(attr=attr, shape=[channels], dtype=dtype)
    inputs = {"X": [input], **{slot: [param(suffix, value, 0.0)] for slot, (suffix, value) in stats.items()}}
    attrs = {"epsilon": epsilon, "sync_stats": sync_stats, "summary_decay_rate": summary_decay_rate,
             "data_layout": data_layout, "slot_dim": slot_dim, "enable_scale_and_shift": enable_scale_and_shift}
    if enable_scale_and_shift:
        inputs["scale_w"] = [param("scale_w", given.get("scale_w", 1.0), 1.0)]
        inputs["bias"] = [param("bias", given.get("bias", 0.0), 1.0)]
    out = input if in_place else helper.create_variable_for_type_inference(dtype)
    means, scales = (helper.create_variable_for_type_inference(dtype, stop_gradient=True) for _ in range(2))
    helper.append_op(type="data_norm", inputs=inputs, outputs={"Y": [out], "Means": [means], "Scales": [scales]},
                     attrs=attrs)
    return helper.append_activation(out)
