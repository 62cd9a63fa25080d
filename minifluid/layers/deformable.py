"""deformable_conv and deformable_roi_pooling (fluid 1.8's signatures, defaults and argument errors; the ops,
deformable_conv, deformable_conv_v1 and deformable_psroi_pooling, are in ops/deformable.py)."""
from ..framework.variable import Variable
from ..initializer import Normal
from .activation import check_variable_and_dtype
from .creation import check_type
from .helper import LayerHelper
from .wiring import pair

__all__ = ["deformable_conv", "deformable_roi_pooling"]


def deformable_conv(input, offset, mask, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
                    deformable_groups=None, im2col_step=None, param_attr=None, bias_attr=None, modulated=True,
                    name=None):
    """Deformable convolution of ``input`` [N, C, H, W]: every kernel tap samples the input at its place
    moved by ``offset`` [N, 2 * deformable_groups * kh * kw, Ho, Wo] (bilinear), times ``mask`` [N,
    deformable_groups * kh * kw, Ho, Wo] when ``modulated`` (v2; v1 takes ``mask=None``). The filter is
    [num_filters, C / groups, kh, kw], Normal(0, sqrt(2 / (kh * kw * C))) by default, plus a bias."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "deformable_conv")
    check_variable_and_dtype(offset, "offset", ("float32", "float64"), "deformable_conv")
    check_type(mask, "mask", (Variable, type(None)), "deformable_conv")
    if param_attr is False:
        raise AssertionError("param_attr should not be False here.")
    helper = LayerHelper("deformable_conv", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    channels = input.shape[1]
    if groups is not None and channels % groups:
        raise ValueError("num_channels must be divisible by groups.")
    filter_size = pair(filter_size, "filter_size")
    std = (2.0 / (filter_size[0] * filter_size[1] * channels)) ** 0.5
    weight = helper.create_parameter(helper.param_attr, [num_filters, channels // (groups or 1)] + filter_size,
                                     input.dtype, default_initializer=Normal(0.0, std, 0))
    inputs = {"Input": [input], "Filter": [weight], "Offset": [offset]}
    if modulated:
        inputs["Mask"] = [mask]
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="deformable_conv" if modulated else "deformable_conv_v1", inputs=inputs,
                     outputs={"Output": [out]},
                     attrs={"strides": pair(stride, "stride"), "paddings": pair(padding, "padding"),
                            "dilations": pair(dilation, "dilation"), "groups": groups or 1,
                            "deformable_groups": deformable_groups or 1, "im2col_step": im2col_step or 64})
    return helper.append_bias_op(out, dim_start=1, dim_end=2)


def _pair_list(value, name):
    check_type(value, name, (list, tuple), "deformable_roi_pooling")
    return pair(list(value), name)


def deformable_roi_pooling(input, rois, trans, no_trans=False, spatial_scale=1.0, group_size=[1, 1], pooled_height=1,
                           pooled_width=1, part_size=None, sample_per_part=1, trans_std=0.1, position_sensitive=False,
                           name=None):
    """Deformable (PS)ROI pooling: each pooled_height x pooled_width bin of every ROI (LoD ``rois`` [R, 4]) moves
    by its part's offset in ``trans`` [R, 2 * classes, part_h, part_w] (times ``trans_std`` and the ROI's size)
    and averages sample_per_part^2 bilinear samples of ``input``; ``position_sensitive`` reads a channel per bin
    group (output channels C / (pooled_height * pooled_width)). Returns [R, output channels, pooled_height,
    pooled_width]."""
    for value, arg in ((input, "input"), (rois, "rois"), (trans, "trans")):
        check_variable_and_dtype(value, arg, ("float32", "float64"), "deformable_roi_pooling")
    group_size = _pair_list(group_size, "group_size")
    part_size = [pooled_height, pooled_width] if part_size is None else _pair_list(part_size, "part_size")
    channels = input.shape[1]
    dim = channels // (pooled_height * pooled_width) if position_sensitive else channels
    helper = LayerHelper("deformable_psroi_pooling", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    count = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="deformable_psroi_pooling", inputs={"Input": [input], "ROIs": [rois], "Trans": [trans]},
                     outputs={"Output": [out], "TopCount": [count]},
                     attrs={"no_trans": no_trans, "spatial_scale": spatial_scale, "output_dim": dim,
                            "group_size": group_size, "pooled_height": pooled_height, "pooled_width": pooled_width,
                            "part_size": part_size, "sample_per_part": sample_per_part, "trans_std": trans_std})
    return out
