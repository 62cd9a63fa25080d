"""Channel-rearranging and cropping layers: pixel_shuffle, space_to_depth, shuffle_channel, maxout,
affine_channel, pad_constant_like, crop, crop_tensor (fluid 1.8 signatures, defaults and argument errors)."""
from ..framework.variable import Variable
from . import wiring
from .activation import check_variable_and_dtype
from .helper import LayerHelper
from .tensor import fill_constant

__all__ = ["affine_channel", "crop", "crop_tensor", "maxout", "pad_constant_like", "pixel_shuffle", "shuffle_channel",
           "space_to_depth"]

_FLOATS = ("float32", "float64")


def _check_type(value, name, types, op):
    if not isinstance(value, types):
        names = [t.__name__ for t in types]
        raise TypeError(f"The type of '{name}' in {op} must be {names}, but received {type(value).__name__}.")


def _one(op_type, x, attrs, name=None, inputs=None, helper=None):
    helper = helper or LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=op_type, inputs={"X": [x], **(inputs or {})}, outputs={"Out": [out]}, attrs=attrs)
    return out


def pixel_shuffle(x, upscale_factor):
    """[N, C * r * r, H, W] -> [N, C, H * r, W * r] with r = ``upscale_factor`` (sub-pixel convolution)."""
    if not isinstance(upscale_factor, int):
        raise TypeError("upscale factor must be int type")
    check_variable_and_dtype(x, "x", _FLOATS, "pixel_shuffle")
    return _one("pixel_shuffle", x, {"upscale_factor": upscale_factor})


def space_to_depth(x, blocksize, name=None):
    """[N, C, H, W] -> [N, C * b * b, H / b, W / b] with b = ``blocksize``, in fluid's element order."""
    if not isinstance(blocksize, int):
        raise ValueError("blocksize must be a python Int")
    check_variable_and_dtype(x, "x", ("float16", "float32", "float64", "int32", "int64"), "space_to_depth")
    return _one("space_to_depth", x, {"blocksize": blocksize}, name)


def shuffle_channel(x, group, name=None):
    """Split the C channels into ``group`` groups and interleave them (ShuffleNet's channel shuffle)."""
    if not isinstance(group, int):
        raise TypeError("group must be int type")
    check_variable_and_dtype(x, "x", _FLOATS, "shuffle_channel")
    return _one("shuffle_channel", x, {"group": group}, name)


def maxout(x, groups, name=None, axis=1):
    """The max over each group of ``groups`` adjacent channels: C channels become C / groups; ``axis`` is the
    channel axis, 1 (NCHW) or -1 / 3 (NHWC)."""
    check_variable_and_dtype(x, "x", _FLOATS, "maxout")
    if axis not in (1, -1, 3):
        raise ValueError("Attr(axis) should be 1 when data format is NCHW, -1 or 3 when data format is NHWC. "
                         f"Received Attr(axis): {axis}.")
    return _one("maxout", x, {"groups": groups, "axis": 3 if axis == -1 else axis}, name)


def affine_channel(x, scale=None, bias=None, data_layout="NCHW", name=None, act=None):
    """``x * scale[c] + bias[c]`` over the channel axis (1 for NCHW, the last for NHWC); ``scale`` and
    ``bias`` are 1-D Variables of size C (either may be None: no scaling / no shift)."""
    check_variable_and_dtype(x, "x", _FLOATS, "affine_channel")
    _check_type(scale, "scale", (Variable, type(None)), "affine_channel")
    _check_type(bias, "bias", (Variable, type(None)), "affine_channel")
    if data_layout not in ("NCHW", "NHWC", "AnyLayout"):
        raise ValueError(f"affine_channel: data_layout must be 'NCHW' or 'NHWC', but received {data_layout!r}")
    helper = LayerHelper("affine_channel", name=name)
    inputs = {slot: [v] for slot, v in (("Scale", scale), ("Bias", bias)) if v is not None}
    out = _one("affine_channel", x, {"data_layout": data_layout}, inputs=inputs, helper=helper)
    return wiring.StaticEmit(helper, x.dtype).act(out, act)


def pad_constant_like(x, y, pad_value=0., name=None):
    """``y`` padded with ``pad_value`` at the end of each dimension up to ``x``'s shape (no gradient to x)."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), "pad_constant_like")
    check_variable_and_dtype(y, "y", ("float32", "float64", "int32", "int64"), "pad_constant_like")
    helper = LayerHelper("pad_constant_like", name=name)
    out = helper.create_variable_for_type_inference(y.dtype)
    helper.append_op(type="pad_constant_like", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"pad_value": float(pad_value)})
    return out


def crop(x, shape=None, offsets=None, name=None):
    """``x[offsets : offsets + shape]``: ``shape`` is a list or a Variable whose shape is taken, ``offsets``
    a list (default zeros) or a 1-D int Variable."""
    check_variable_and_dtype(x, "x", ("float32",), "crop")
    _check_type(shape, "shape", (list, tuple, Variable), "crop")
    offsets = [0] * len(x.shape) if offsets is None else offsets
    inputs, attrs = {}, {}
    if isinstance(shape, Variable):
        inputs["Y"] = [shape]
    else:
        attrs["shape"] = list(shape)
    if isinstance(offsets, Variable):
        inputs["Offsets"] = [offsets]
    else:
        attrs["offsets"] = list(offsets)
    return _one("crop", x, attrs, name, inputs)


def _crop_tensor_entries(values, check, unknown):
    """(attr values, tensors) for a list that mixes ints and 1-element int Variables (fluid's form)."""
    attr, tensors = [], []
    for v in values:
        if isinstance(v, Variable):
            v.stop_gradient = True
            tensors.append(v)
            attr.append(unknown)
        else:
            check(v)
            tensors.append(fill_constant([1], "int32", v, force_cpu=True))
            attr.append(v)
    return attr, tensors


def _check_shape_entry(v):
    if not isinstance(v, int):
        raise TypeError(f"Attr(shape)'s dtype of Op(crop_tensor) should be int32, but received: {type(v)}.")
    if v == 0:
        raise ValueError(f"Attr(shape) of Op(crop_tensor) should not be zero, but received: {v}.")
    if v < -1:
        raise ValueError("When the element in Attr(shape) of Op(crop_tensor) is negative, only -1 is supported, "
                         f"but received: {v}.")


def _check_offset_entry(v):
    if not isinstance(v, int):
        raise TypeError(f"Attr(offsets)'s dtype of Op(crop_tensor) should be int32, but received: {type(v)}.")
    if v < 0:
        raise ValueError(f"Attr(offsets) of Op(crop_tensor) should be greater or equal to zero, but received: {v}.")


def crop_tensor(x, shape=None, offsets=None, name=None):
    """``x[offsets : offsets + shape]``; ``shape`` is a list (-1: to the end of that dim), a list mixing ints
    and 1-element Variables, or a 1-D int Variable; ``offsets`` likewise (default zeros)."""
    helper = LayerHelper("crop_tensor", name=name)
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), "crop_tensor")
    _check_type(shape, "shape", (list, tuple, Variable), "crop_tensor")
    _check_type(offsets, "offsets", (list, tuple, Variable, type(None)), "crop_tensor")
    offsets = [0] * len(x.shape) if offsets is None else offsets
    inputs, attrs = {}, {}
    for key, values, slot, check, unknown in (("offsets", offsets, "Offsets", _check_offset_entry, -1),
                                             ("shape", shape, "Shape", _check_shape_entry, 0)):
        if isinstance(values, Variable):
            values.stop_gradient = True
            inputs[slot] = [values]
            if key == "offsets":
                attrs[key] = [-1] * len(x.shape)
        elif any(isinstance(v, Variable) for v in values):
            attrs[key], inputs[slot + "Tensor"] = _crop_tensor_entries(values, check, unknown)
        else:
            for v in values:
                check(v)
            attrs[key] = list(values)
    return _one("crop_tensor", x, attrs, inputs=inputs, helper=helper)
