"""3-D convolution and pooling layers: conv3d, conv3d_transpose, pool3d, adaptive_pool3d (fluid 1.8 signatures,
defaults and argument errors; the ops are in ops/conv3d.py and ops/pool3d.py)."""
from ..framework.variable import Variable
from ..initializer import Normal
from .helper import LayerHelper

__all__ = ["adaptive_pool3d", "conv3d", "conv3d_transpose", "pool3d"]

_FORMATS = ("NCDHW", "NDHWC")


def _triple(value, name):
    """fluid's convert_to_list(value, 3, name)."""
    if isinstance(value, int):
        return [value] * 3
    try:
        values = list(value)
    except TypeError:
        raise ValueError(f"The {name}'s type must be list or tuple. Received: {value}") from None
    if len(values) != 3 or not all(isinstance(v, int) for v in values):
        raise ValueError(f"The {name}'s length must be 3 and every element an integer. Received: {value}")
    return values


def _padding(padding, data_format, what="padding", symmetric_to_three=True):
    """(paddings attr, padding_algorithm) from fluid's forms: an int, [d, h, w], [front, back, top, bottom, left,
    right], five [before, after] pairs (batch and channel ones zero) or 'SAME' / 'VALID'."""
    if isinstance(padding, str):
        algo = padding.upper()
        if algo not in ("SAME", "VALID"):
            raise ValueError(f"Unknown {'Attr(pool_padding)' if what == 'pool_padding' else 'padding'}: '{algo}'. "
                             f"It can only be 'SAME' or 'VALID'.")
        return ([0, 0, 0] if symmetric_to_three else [0] * 6), algo
    if isinstance(padding, (list, tuple)) and len(padding) == 5 and isinstance(padding[0], (list, tuple)):
        outer = (padding[0], padding[1]) if data_format == "NCDHW" else (padding[0], padding[4])
        if any(list(p) != [0, 0] for p in outer):
            raise ValueError(f"Non-zero {what}({padding}) in the batch or channel dimensions is not supported.")
        spatial = padding[2:5] if data_format == "NCDHW" else padding[1:4]
        padding = [int(v) for pair in spatial for v in pair]
    if isinstance(padding, (list, tuple)) and len(padding) == 6:
        padding = [int(v) for v in padding]
        if symmetric_to_three and padding[0::2] == padding[1::2]:
            return padding[0::2], "EXPLICIT"
        return padding, "EXPLICIT"
    three = _triple(padding, what)
    return (three if symmetric_to_three else [v for v in three for _ in (0, 1)]), "EXPLICIT"


def _channels(input, data_format, op):
    if data_format not in _FORMATS:
        raise ValueError(f"Attr(data_format) should be 'NCDHW' or 'NDHWC'. Received Attr(data_format): {data_format}.")
    if not isinstance(input, Variable):
        raise TypeError(f"Input of {op} must be Variable")
    if len(input.shape) != 5:
        raise ValueError(f"Input of {op} should be a 5-D tensor ({data_format}), but received shape {list(input.shape)}")
    return input.shape[1] if data_format == "NCDHW" else input.shape[4]


def _bias_and_act(helper, pre_bias, data_format):
    start = 1 if data_format == "NCDHW" else 4
    return helper.append_activation(helper.append_bias_op(pre_bias, dim_start=start, dim_end=start + 1))


def conv3d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None, param_attr=None,
           bias_attr=None, use_cudnn=True, act=None, name=None, data_format="NCDHW"):
    """3-D convolution of ``input`` [N, C, D, H, W] (or NDHWC): filter ``conv3d_<n>.w_0`` [num_filters,
    C / groups, kd, kh, kw] drawn from Normal(0, sqrt(2 / (kd * kh * kw * C))), bias ``.b_0`` [num_filters]."""
    if param_attr is False:
        raise AssertionError("param_attr should not be False here.")
    if not isinstance(use_cudnn, bool):
        raise ValueError(f"Attr(use_cudnn) should be True or False. Received Attr(use_cudnn): {use_cudnn}. ")
    channels = _channels(input, data_format, "conv3d")
    if channels < 0:
        raise ValueError(f"The channel dimmention of the input({list(input.shape)}) should be defined. Received: "
                         f"{channels}.")
    if groups is not None and channels % groups:
        raise ValueError(f"The number of input channels must be divisible by Attr(groups). Received: number of "
                         f"channels({channels}), groups({groups}).")
    helper = LayerHelper("conv3d", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    filter_size, stride = _triple(filter_size, "filter_size"), _triple(stride, "stride")
    dilation = _triple(dilation, "dilation")
    paddings, algo = _padding(padding, data_format)
    std = (2.0 / (filter_size[0] * filter_size[1] * filter_size[2] * channels)) ** 0.5
    weight = helper.create_parameter(attr=helper.param_attr, shape=[num_filters, channels // (groups or 1)] + filter_size,
                                     dtype=dtype, default_initializer=Normal(0.0, std, 0))
    pre_bias = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="conv3d", inputs={"Input": [input], "Filter": [weight]}, outputs={"Output": [pre_bias]},
                     attrs={"strides": stride, "paddings": paddings, "dilations": dilation, "groups": groups or 1,
                            "use_cudnn": use_cudnn, "use_mkldnn": False, "padding_algorithm": algo,
                            "data_format": data_format})
    return _bias_and_act(helper, pre_bias, data_format)


def conv3d_transpose(input, num_filters, output_size=None, filter_size=None, padding=0, stride=1, dilation=1,
                     groups=None, param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
                     data_format="NCDHW"):
    """Transposed 3-D convolution (conv3d's adjoint): filter ``conv3d_transpose_<n>.w_0`` [C, num_filters / groups,
    kd, kh, kw]; output size (in - 1) * stride - pad_0 - pad_1 + dilation * (k - 1) + 1, or ``output_size`` (below
    that + stride); without ``filter_size`` the filter size follows from ``output_size``."""
    if param_attr is False:
        raise AssertionError("param_attr should not be False in conv3d_transpose.")
    if data_format not in _FORMATS:
        raise ValueError(f"Param(data_format) of Op(fluid.layers.conv3d_transpose) got wrong value: received "
                         f"{data_format} but only NCDHW or NDHWC supported.")
    channels = _channels(input, data_format, "conv3d_transpose")
    if not isinstance(use_cudnn, bool):
        raise ValueError("use_cudnn should be True or False")
    stride, dilation = _triple(stride, "stride"), _triple(dilation, "dilation")
    paddings, algo = _padding(padding, data_format, symmetric_to_three=False)
    if filter_size is None:
        if output_size is None:
            raise ValueError("output_size must be set when filter_size is None")
        output_size = _triple(output_size, "output_size")
        dhw = input.shape[2:5] if data_format == "NCDHW" else input.shape[1:4]
        filter_size = [(output_size[i] - (dhw[i] - 1) * stride[i] + paddings[2 * i] + paddings[2 * i + 1] - 1)
                       // dilation[i] + 1 for i in range(3)]
    else:
        filter_size = _triple(filter_size, "conv3d_transpose.filter_size")
    if output_size is None:
        output_size = []
    elif isinstance(output_size, (list, tuple, int)):
        output_size = _triple(output_size, "output_size")
    else:
        raise ValueError("output_size should be int, list[int] or tuple[int]")
    groups = 1 if groups is None else int(groups)
    helper = LayerHelper("conv3d_transpose", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    dtype = helper.input_dtype()
    weight = helper.create_parameter(attr=helper.param_attr, shape=[channels, num_filters // groups] + filter_size,
                                     dtype=dtype)
    pre_bias = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="conv3d_transpose", inputs={"Input": [input], "Filter": [weight]},
                     outputs={"Output": [pre_bias]},
                     attrs={"output_size": output_size, "strides": stride, "paddings": paddings,
                            "padding_algorithm": algo, "dilations": dilation, "groups": groups,
                            "use_cudnn": use_cudnn, "data_format": data_format})
    return _bias_and_act(helper, pre_bias, data_format)


def pool3d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
           use_cudnn=True, ceil_mode=False, name=None, exclusive=True, data_format="NCDHW"):
    """Max or average pooling over [N, C, D, H, W] (or NDHWC) windows of ``pool_size``; ``exclusive`` averages
    leave the padding out of the divisor; ``global_pooling`` pools each channel's whole volume."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"Unknown Attr(pool_type): '{pool_type}'. It can only be 'max' or 'avg'.")
    if global_pooling is False and pool_size == -1:
        raise ValueError(f"When Attr(global_pooling) is False, Attr(pool_size) must be passed and be a valid value. "
                         f"Received Attr(pool_size): {pool_size}.")
    if not isinstance(use_cudnn, bool):
        raise TypeError(f"Attr(use_cudnn) should be True or False. Received Attr(use_cudnn): {use_cudnn}. ")
    if data_format not in _FORMATS:
        raise ValueError(f"Attr(data_format) should be 'NCDHW' or 'NDHWC'. Received Attr(data_format): {data_format}")
    _channels(input, data_format, "pool3d")
    pool_size, pool_stride = _triple(pool_size, "pool_size"), _triple(pool_stride, "pool_stride")
    paddings, algo = _padding(pool_padding, data_format, what="pool_padding")
    if algo == "VALID" and ceil_mode:
        raise ValueError('When Attr(pool_padding) is "VALID", ceil_mode must be False. Received ceil_mode: True.')
    helper = LayerHelper("pool3d", input=input, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op(type="pool3d", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"pooling_type": pool_type, "ksize": pool_size, "global_pooling": global_pooling,
                            "strides": pool_stride, "paddings": paddings, "padding_algorithm": algo,
                            "use_cudnn": use_cudnn, "ceil_mode": ceil_mode, "use_mkldnn": False,
                            "exclusive": exclusive, "data_format": data_format})
    return out


def adaptive_pool3d(input, pool_size, pool_type="max", require_index=False, name=None):
    """Pool [N, C, D, H, W] down to ``pool_size`` (D', H', W'): output i of m along an axis of n covers
    [floor(i*n/m), ceil((i+1)*n/m)), as fluid does; max pooling runs fluid's max_pool3d_with_index, whose Mask (the
    flat D*H*W position of each max, int32) comes back too with ``require_index``."""
    if not isinstance(pool_type, str):
        raise TypeError(f"The type of 'pool_type' in adaptive_pool3d must be str, but received "
                        f"{type(pool_type).__name__}. ")
    if pool_type not in ("max", "avg"):
        raise ValueError(f"Unknown pool_type: '{pool_type}'. It can only be 'max' or 'avg'.")
    if pool_type == "avg" and require_index:
        raise ValueError("invalid setting 'require_index' true when 'pool_type' is 'avg'.")
    _channels(input, "NCDHW", "adaptive_pool3d")
    helper = LayerHelper("max_pool3d_with_index" if pool_type == "max" else "pool3d", input=input, name=name)
    dtype = helper.input_dtype()
    out = helper.create_variable_for_type_inference(dtype)
    attrs = {"pooling_type": pool_type, "ksize": _triple(pool_size, "pool_size"), "adaptive": True}
    if pool_type == "avg":
        helper.append_op(type="pool3d", inputs={"X": [input]}, outputs={"Out": [out]}, attrs=attrs)
        return out
    mask = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    del attrs["pooling_type"]
    helper.append_op(type="max_pool3d_with_index", inputs={"X": [input]}, outputs={"Out": [out], "Mask": [mask]},
                     attrs=attrs)
    return (out, mask) if require_index else out
