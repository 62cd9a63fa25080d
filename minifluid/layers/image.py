"""Image layers: conv2d_transpose, image_resize / interpolate / resize_bilinear / resize_nearest /
resize_trilinear, pad, pad2d (fluid 1.8 signatures, defaults and argument errors)."""
import warnings

from ..framework.variable import Variable
from . import wiring
from .activation import check_variable_and_dtype
from .helper import LayerHelper

__all__ = ["conv2d_transpose", "image_resize", "interpolate", "pad", "pad2d", "resize_bilinear", "resize_nearest",
           "resize_trilinear"]


def _conv_transpose_padding(padding, data_format):
    """(paddings attr [t, b, l, r], padding_algorithm) from fluid's padding forms (wiring.spatial_padding)."""
    paddings, algorithm = wiring.spatial_padding(padding, data_format)
    return (paddings if len(paddings) == 4 else [paddings[0], paddings[0], paddings[1], paddings[1]]), algorithm


def conv2d_transpose(input, num_filters, output_size=None, filter_size=None, padding=0, stride=1, dilation=1,
                     groups=None, param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
                     data_format="NCHW"):
    """Transposed 2-D convolution (the adjoint of conv2d); filter ``conv2d_transpose_<n>.w_0`` is
    [C_in, num_filters / groups, kh, kw]. The output size is (in - 1) * stride - pad_0 - pad_1 +
    dilation * (k - 1) + 1, or ``output_size`` (which must lie below that + stride); without
    ``filter_size`` the filter size is derived from ``output_size``."""
    if param_attr is False:
        raise AssertionError("param_attr should not be False in conv2d_transpose.")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"Attr(data_format) of Op(fluid.layers.conv2d_transpose) got wrong value: received "
                         f"{data_format} but only NCHW or NHWC supported.")
    if not isinstance(input, Variable):
        raise TypeError("Input of conv2d_transpose must be Variable")
    if not isinstance(use_cudnn, bool):
        raise ValueError("use_cudnn should be True or False")
    channels = input.shape[1] if data_format == "NCHW" else input.shape[-1]
    groups = 1 if groups is None else int(groups)
    op_type = "depthwise_conv2d_transpose" if channels == groups == num_filters and not use_cudnn else \
        "conv2d_transpose"
    helper = LayerHelper(op_type, input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    stride, dilation = wiring.pair(stride, "stride"), wiring.pair(dilation, "dilation")
    paddings, algo = _conv_transpose_padding(padding, data_format)
    if filter_size is None:
        if output_size is None:
            raise ValueError("output_size must be set when filter_size is None")
        output_size = wiring.pair(output_size, "output_size")
        hw = input.shape[2:4] if data_format == "NCHW" else input.shape[1:3]
        filter_size = [(output_size[i] - (hw[i] - 1) * stride[i] + paddings[2 * i] + paddings[2 * i + 1] - 1)
                       // dilation[i] + 1 for i in range(2)]
    else:
        filter_size = wiring.pair(filter_size, "conv2d_transpose.filter_size")
    if output_size is None:
        output_size = []
    elif isinstance(output_size, (list, tuple, int)):
        output_size = wiring.pair(output_size, "output_size")
    else:
        raise ValueError("output_size should be int, list[int] or tuple[int]")
    dtype = helper.input_dtype()
    weight = helper.create_parameter(attr=helper.param_attr, shape=[channels, num_filters // groups] + filter_size,
                                     dtype=dtype)
    pre_bias = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type=op_type, inputs={"Input": [input], "Filter": [weight]}, outputs={"Output": [pre_bias]},
                     attrs={"output_size": output_size, "strides": stride, "paddings": paddings,
                            "padding_algorithm": algo, "dilations": dilation, "groups": groups,
                            "use_cudnn": use_cudnn, "data_format": data_format})
    start = 1 if data_format == "NCHW" else 3
    return helper.append_activation(helper.append_bias_op(pre_bias, dim_start=start, dim_end=start + 1))


_RESAMPLE = {"BILINEAR": "bilinear", "NEAREST": "nearest", "TRILINEAR": "trilinear"}


def _resize_checks(input, resample, align_corners, align_mode, data_format, bicubic):
    """fluid's argument checks of image_resize (``bicubic``: interpolate's, which also names BICUBIC)."""
    if resample not in _RESAMPLE and not (bicubic and resample == "BICUBIC"):
        raise ValueError("The 'resample' of image_resize can only be 'BILINEAR', 'TRILINEAR', " +
                         (" 'BICUBIC' or 'NEAREST' currently." if bicubic else "or 'NEAREST' currently."))
    if resample != "TRILINEAR" and len(input.shape) != 4:
        raise ValueError("'BILINEAR', 'BICUBIC' and 'NEAREST' only support 4-D tensor." if bicubic else
                         "'BILINEAR' and 'NEAREST' only support 4-D tensor.")
    if resample == "TRILINEAR" and len(input.shape) != 5:
        raise ValueError("'TRILINEAR'only support 5-D tensor.")
    if not isinstance(align_corners, bool):
        raise TypeError("Attr align_corners should be a bool value")
    if align_mode not in (0, 1):
        raise ValueError("align_mode can only be 0 or 1")
    formats = ("NCHW", "NHWC") if len(input.shape) == 4 else ("NCDHW", "NDHWC")
    if data_format not in formats:
        raise ValueError(f"Got wrong value for param `data_format`: {data_format} received but only `{formats[0]}` or "
                         f"`{formats[1]}` supported for {len(input.shape)}-D input.")


def _size_tensor(helper, dim):
    """One SizeTensor entry: the Variable itself (no gradient flows into it), or an int as an int32 [1] constant."""
    if isinstance(dim, Variable):
        dim.stop_gradient = True
        return dim
    out = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op(type="fill_constant", outputs={"Out": [out]},
                     attrs={"shape": [1], "dtype": out.dtype, "value": float(int(dim)), "force_cpu": True})
    return out


def _resize(input, out_shape, scale, name, resample, actual_shape, align_corners, align_mode, data_format,
            bicubic=False):
    _resize_checks(input, resample, align_corners, align_mode, data_format, bicubic)
    if out_shape is None and scale is None:
        raise ValueError("One of out_shape and scale must not be None.")
    method = _RESAMPLE.get(resample, "bicubic")
    helper = LayerHelper(f"{method}_interp", name=name)
    inputs = {"X": [input]}
    attrs = {"out_d": -1, "out_h": -1, "out_w": -1, "interp_method": method, "align_corners": align_corners,
             "align_mode": align_mode, "data_layout": "NCHW" if data_format in ("NCHW", "NCDHW") else "NHWC"}
    spatial = len(input.shape) - 2
    if out_shape is not None:
        if isinstance(out_shape, Variable):
            out_shape.stop_gradient = True
            inputs["OutSize"] = [out_shape]
        elif not isinstance(out_shape, (list, tuple)):
            raise TypeError("out_shape should be a list or tuple or Variable.")
        else:
            if any(not isinstance(d, Variable) and int(d) <= 0 for d in out_shape):
                raise AssertionError("Each dimension size given in out_shape must be greater than 0.")
            if len(out_shape) != spatial:
                raise ValueError(f"out_shape length should be {spatial} for input {spatial + 2}-D tensor.")
            if any(isinstance(d, Variable) for d in out_shape):  # fluid's SizeTensor: one int32 [1] per axis
                inputs["SizeTensor"] = [_size_tensor(helper, d) for d in out_shape]
            attrs.update(zip(("out_d", "out_h", "out_w")[-spatial:],
                             (-1 if isinstance(d, Variable) else int(d) for d in out_shape)))
    else:
        if isinstance(scale, Variable):
            scale.stop_gradient = True
            inputs["Scale"] = [scale]
        elif not isinstance(scale, (int, float)):
            raise TypeError("Attr(scale)'s type should be float, int or Variable.")
        elif scale <= 0:
            raise ValueError("Attr(scale) should be greater than zero.")
        else:
            attrs["scale"] = float(scale)
    if isinstance(actual_shape, Variable):
        warnings.warn("actual_shape will be deprecated, it is recommended to use out_shape instead of actual_shape "
                      "to specify output shape dynamically.")
        actual_shape.stop_gradient = True
        inputs["OutSize"] = [actual_shape]
    elif actual_shape is not None:
        raise TypeError("actual_shape should either be Variable or None.")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type=f"{method}_interp", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def image_resize(input, out_shape=None, scale=None, name=None, resample="BILINEAR", actual_shape=None,
                 align_corners=True, align_mode=1, data_format="NCHW"):
    """Resize the H and W of a 4-D ``input`` (BILINEAR, NEAREST) or the D, H and W of a 5-D one (TRILINEAR)
    to ``out_shape`` (or by ``scale``); ``align_corners`` / ``align_mode`` pick fluid's source-position rule."""
    return _resize(input, out_shape, scale, name, resample, actual_shape, align_corners, align_mode, data_format)


def interpolate(input, out_shape=None, scale=None, name=None, resample="BILINEAR", actual_shape=None,
                align_corners=True, align_mode=1, data_format="NCHW"):
    """fluid 1.8's other name of image_resize, which also takes resample='BICUBIC' (4-D input: the cubic
    convolution of 4 x 4 neighbours; align_mode does not apply)."""
    return _resize(input, out_shape, scale, name, resample, actual_shape, align_corners, align_mode, data_format,
                   bicubic=True)


def resize_trilinear(input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True,
                     align_mode=1, data_format="NCDHW"):
    """Trilinear resize of the D, H and W of a 5-D input (image_resize with resample='TRILINEAR')."""
    return image_resize(input, out_shape, scale, name, "TRILINEAR", actual_shape, align_corners, align_mode,
                        data_format)


def resize_bilinear(input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True,
                    align_mode=1, data_format="NCHW"):
    """Bilinear resize (image_resize with resample='BILINEAR')."""
    return image_resize(input, out_shape, scale, name, "BILINEAR", actual_shape, align_corners, align_mode,
                        data_format)


def resize_nearest(input, out_shape=None, scale=None, name=None, actual_shape=None, align_corners=True,
                   data_format="NCHW"):
    """Nearest-neighbour resize (image_resize with resample='NEAREST')."""
    return image_resize(input, out_shape, scale, name, "NEAREST", actual_shape, align_corners, 1, data_format)


_PADDABLE = ("float16", "float32", "float64", "int32", "int64")


def pad(x, paddings, pad_value=0.0, name=None):
    """Constant padding: ``paddings`` = [before_0, after_0, before_1, after_1, ...] for every dimension."""
    check_variable_and_dtype(x, "x", _PADDABLE, "pad")
    helper = LayerHelper("pad", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="pad", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"paddings": [int(p) for p in paddings], "pad_value": float(pad_value)})
    return out


def pad2d(input, paddings=[0, 0, 0, 0], mode="constant", pad_value=0.0, data_format="NCHW", name=None):  # noqa: B006
    """Pad H and W by [top, bottom, left, right] with ``pad_value`` (``mode='constant'``), the mirrored
    interior (``'reflect'``) or the border value (``'edge'``); ``paddings`` may be a Variable."""
    check_variable_and_dtype(input, "input", _PADDABLE, "pad2d")
    helper = LayerHelper("pad2d", name=name)
    inputs = {"X": [input]}
    attrs = {"mode": mode, "pad_value": float(pad_value), "data_format": data_format}
    if isinstance(paddings, Variable):
        inputs["Paddings"] = [paddings]
        attrs["paddings"] = [0, 0, 0, 0]
    else:
        attrs["paddings"] = [int(p) for p in paddings]
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="pad2d", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out
