"""Assorted vision layers: mish, unfold, temporal_shift, fsp_matrix, bilinear_tensor_product,
sigmoid_focal_loss, affine_grid, grid_sampler (fluid 1.8 signatures, defaults and argument errors; the ops
are in ops/vision_misc.py and ops/grid_sample.py)."""
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .creation import check_type
from .helper import LayerHelper

__all__ = ["affine_grid", "bilinear_tensor_product", "fsp_matrix", "grid_sampler", "mish", "sigmoid_focal_loss",
           "temporal_shift", "unfold"]

_FLOATS = ("float32", "float64")


def _append(op_type, inputs, attrs=None, out_slot="Out", name=None, layer=None):
    helper = LayerHelper(layer or op_type, name=name)
    out = helper.create_variable_for_type_inference(next(iter(inputs.values()))[0].dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


def mish(x, threshold=20, name=None):
    """``x * tanh(softplus(x))``; softplus(x) is taken as x above ``threshold`` and exp(x) below -threshold."""
    check_variable_and_dtype(x, "x", _FLOATS, "mish")
    check_type(threshold, "threshold", (float, int), "mish")
    if not threshold > 0:
        raise AssertionError(f"threshold of mish should be greater than 0, but got {threshold}")
    return _append("mish", {"X": [x]}, {"threshold": float(threshold)}, name=name)


def _two(value, name):
    if isinstance(value, int):
        return [value, value]
    if not (isinstance(value, list) and len(value) == 2):
        raise AssertionError(f"{name} should either be an integer or a list of two integers")
    return list(value)


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: every ``kernel_sizes`` window of the [N, C, H, W] input ``x`` as a column of the
    [N, C * kh * kw, L] output, L the number of windows; ``paddings`` is an int, [h, w] or
    [top, left, bottom, right]."""
    check_variable_and_dtype(x, "x", _FLOATS, "unfold")
    if len(x.shape) != 4:
        raise AssertionError("input should be the format of [N, C, H, W]")
    kernel_sizes, strides = _two(kernel_sizes, "kernel_sizes"), _two(strides, "strides")
    dilations = _two(dilations, "dilations")
    if isinstance(paddings, int):
        paddings = [paddings] * 4
    elif isinstance(paddings, list):
        if len(paddings) not in (2, 4):
            raise ValueError("paddings should either be an integer or a list of 2 or 4 integers")
        paddings = paddings * 2 if len(paddings) == 2 else list(paddings)
    else:
        raise ValueError("Unexpected type of paddings, it should be either an integer or a listof 2 or 4 integers")
    return _append("unfold", {"X": [x]}, {"kernel_sizes": kernel_sizes, "strides": strides, "paddings": paddings,
                                          "dilations": dilations}, out_slot="Y", name=name)


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None):
    """TSM's temporal shift of [N * seg_num, C, H, W]: the first ``shift_ratio`` of the channels take the
    previous segment's values, the next ``shift_ratio`` the following segment's (zeros past the clip's ends)."""
    check_variable_and_dtype(x, "x", _FLOATS, "temporal_shift")
    check_type(seg_num, "seg_num", (int,), "temporal_shift")
    check_type(shift_ratio, "shift_ratio", (float,), "temporal_shift")
    return _append("temporal_shift", {"X": [x]}, {"seg_num": seg_num, "shift_ratio": shift_ratio}, name=name)


def fsp_matrix(x, y):
    """The FSP matrix of two feature maps [N, C1, H, W] and [N, C2, H, W]: ``x y^T / (H * W)`` per sample
    over the flattened positions, [N, C1, C2]."""
    check_variable_and_dtype(x, "x", _FLOATS, "fsp_matrix")
    check_variable_and_dtype(y, "y", _FLOATS, "fsp_matrix")
    return _append("fsp", {"X": [x], "Y": [y]}, layer="fsp_matrix")


def bilinear_tensor_product(x, y, size, act=None, name=None, param_attr=None, bias_attr=None):
    """``out[n, k] = x[n] W[k] y[n]^T + b[k]`` for [N, M] ``x`` and [N, P] ``y``: weight
    ``bilinear_tensor_product_<n>.w_0`` is [size, M, P], bias ``.b_0`` [1, size] (none when ``bias_attr``
    is False)."""
    helper = LayerHelper("bilinear_tensor_product", name=name, param_attr=param_attr, bias_attr=bias_attr, act=act)
    dtype = x.dtype
    weight = helper.create_parameter(attr=helper.param_attr, shape=[size, x.shape[1], y.shape[1]], dtype=dtype)
    inputs = {"X": [x], "Y": [y], "Weight": [weight]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[1, size], dtype=dtype, is_bias=True)]
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="bilinear_tensor_product", inputs=inputs, outputs={"Out": [out]})
    return helper.append_activation(out)


def sigmoid_focal_loss(x, label, fg_num, gamma=2.0, alpha=0.25):
    """RetinaNet's focal loss per class of [N, C] logits ``x``: ``label`` [N, 1] int32 holds the positive class
    as 1..C (0: background, -1: ignored), ``fg_num`` [1] int32 the number of foreground samples that
    normalises it; the output is [N, C]."""
    check_variable_and_dtype(x, "x", _FLOATS, "sigmoid_focal_loss")
    check_variable_and_dtype(label, "label", ("int32",), "sigmoid_focal_loss")
    check_variable_and_dtype(fg_num, "fg_num", ("int32",), "sigmoid_focal_loss")
    return _append("sigmoid_focal_loss", {"X": [x], "Label": [label], "FgNum": [fg_num]},
                   {"gamma": float(gamma), "alpha": float(alpha)})


def affine_grid(theta, out_shape, name=None):
    """The sampling grid [N, H, W, 2] of the affine maps ``theta`` [N, 2, 3] for an output of ``out_shape``
    [N, C, H, W] (a list, or a 1-D int32 Variable): each pixel's normalised (x, y) in [-1, 1] times theta."""
    check_variable_and_dtype(theta, "theta", _FLOATS, "affine_grid")
    if not isinstance(out_shape, (list, tuple, Variable)):
        raise ValueError("The out_shape should be a list, tuple or Variable.")
    if isinstance(out_shape, Variable):
        check_variable_and_dtype(out_shape, "out_shape", ("int32",), "affine_grid")
        return _append("affine_grid", {"Theta": [theta], "OutputShape": [out_shape]}, out_slot="Output", name=name)
    return _append("affine_grid", {"Theta": [theta]}, {"output_shape": [int(v) for v in out_shape]},
                   out_slot="Output", name=name)


def grid_sampler(x, grid, name=None):
    """Sample ``x`` [N, C, H, W] bilinearly at ``grid`` [N, H, W, 2] (x, y) in [-1, 1], the corner pixels'
    centres at -1 and 1; neighbours outside the image count as zeros."""
    check_variable_and_dtype(x, "x", _FLOATS, "grid_sampler")
    check_variable_and_dtype(grid, "grid", _FLOATS, "grid_sampler")
    return _append("grid_sampler", {"X": [x], "Grid": [grid]}, out_slot="Output", name=name)
