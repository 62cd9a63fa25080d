"""Box layers of SSD-style detection (fluid 1.8's signatures, defaults and argument errors): the prior and anchor
generators, box_coder, iou_similarity and box_clip (ops in ops/detection_box.py)."""
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .creation import check_type
from .helper import LayerHelper

__all__ = ["anchor_generator", "box_clip", "box_coder", "density_prior_box", "iou_similarity", "prior_box"]

_FLOATS = ("float32", "float64")


def _is_list_or_tuple(value):
    return isinstance(value, (list, tuple))


def _append(op_type, inputs, outputs, attrs, name=None, dtype=None, stop_gradient=False):
    """Append ``op_type`` with new outputs (one per slot in ``outputs``, of ``dtype`` or the first input's);
    returns them in slot order."""
    helper = LayerHelper(op_type, name=name)
    dtype = dtype or next(v for vs in inputs.values() for v in vs).dtype
    outs = [helper.create_variable_for_type_inference(dtype, stop_gradient=stop_gradient) for _ in outputs]
    helper.append_op(type=op_type, inputs=inputs, outputs={s: [v] for s, v in zip(outputs, outs)}, attrs=attrs)
    return outs


def _two_floats(value, what, unit):
    if not (_is_list_or_tuple(value) and len(value) == 2):
        raise ValueError(f"{what} should be a list or tuple with length 2, ({unit}_width, {unit}_height).")
    return [float(v) for v in value]


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.], variance=[0.1, 0.1, 0.2, 0.2],
              flip=False, clip=False, steps=[0.0, 0.0], offset=0.5, name=None, min_max_aspect_ratios_order=False):
    """SSD's prior boxes over the [N, C, H, W] feature map ``input`` for the [N, C, H', W'] ``image``: per cell,
    each min size at every aspect ratio (1, the given ones and with ``flip`` their inverses) plus, with
    ``max_sizes``, a square of side sqrt(min * max); normalized to the image. Returns (boxes, variances), both
    [H, W, num_priors, 4]. ``steps`` (w, h) of 0 take image size / feature size; ``min_max_aspect_ratios_order``
    puts the min square and the max square first (Caffe's order)."""
    check_variable_and_dtype(input, "input", ("uint8", "int8", "float32", "float64"), "prior_box")
    min_sizes = list(min_sizes) if _is_list_or_tuple(min_sizes) else [min_sizes]
    aspect_ratios = list(aspect_ratios) if _is_list_or_tuple(aspect_ratios) else [aspect_ratios]
    steps = _two_floats(steps, "steps", "step")
    attrs = {"min_sizes": [float(m) for m in min_sizes], "aspect_ratios": [float(a) for a in aspect_ratios],
             "variances": [float(v) for v in variance], "flip": flip, "clip": clip, "step_w": steps[0],
             "step_h": steps[1], "offset": float(offset), "min_max_aspect_ratios_order": min_max_aspect_ratios_order}
    if max_sizes is not None and not _is_list_or_tuple(max_sizes):
        max_sizes = [max_sizes]
    if max_sizes and max_sizes[0] > 0:
        attrs["max_sizes"] = [float(m) for m in max_sizes]
    return tuple(_append("prior_box", {"Input": [input], "Image": [image]}, ("Boxes", "Variances"), attrs, name,
                         stop_gradient=True))


def density_prior_box(input, image, densities=None, fixed_sizes=None, fixed_ratios=None,
                      variance=[0.1, 0.1, 0.2, 0.2], clip=False, steps=[0.0, 0.0], offset=0.5, flatten_to_2d=False,
                      name=None):
    """Density prior boxes: per cell, each ``fixed_sizes[i]`` box at every ``fixed_ratios`` ratio, repeated on a
    ``densities[i]`` x ``densities[i]`` grid of centres inside the cell. Returns (boxes, variances),
    [H, W, num_priors, 4], or [H * W * num_priors, 4] with ``flatten_to_2d``."""
    check_variable_and_dtype(input, "input", _FLOATS, "density_prior_box")
    check_type(densities, "densities", (list, tuple), "density_prior_box")
    check_type(fixed_sizes, "fixed_sizes", (list, tuple), "density_prior_box")
    check_type(fixed_ratios, "fixed_ratios", (list, tuple), "density_prior_box")
    if len(densities) != len(fixed_sizes):
        raise ValueError("densities and fixed_sizes length should be euqal.")
    steps = _two_floats(steps, "steps", "step")
    attrs = {"variances": [float(v) for v in variance], "clip": clip, "step_w": steps[0], "step_h": steps[1],
             "offset": float(offset), "densities": [int(d) for d in densities],
             "fixed_sizes": [float(s) for s in fixed_sizes], "fixed_ratios": [float(r) for r in fixed_ratios],
             "flatten_to_2d": flatten_to_2d}
    return tuple(_append("density_prior_box", {"Input": [input], "Image": [image]}, ("Boxes", "Variances"), attrs,
                         name, stop_gradient=True))


def anchor_generator(input, anchor_sizes=None, aspect_ratios=None, variance=[0.1, 0.1, 0.2, 0.2], stride=None,
                     offset=0.5, name=None):
    """Faster R-CNN anchors over the [N, C, H, W] feature map ``input``, in pixels: per cell, every aspect ratio
    (height / width) at every anchor size (the side of a square of equal area), centred at
    ``cell * stride + offset * (stride - 1)``. Returns (anchors, variances), both [H, W, num_anchors, 4]."""
    anchor_sizes = list(anchor_sizes) if _is_list_or_tuple(anchor_sizes) else [anchor_sizes]
    aspect_ratios = list(aspect_ratios) if _is_list_or_tuple(aspect_ratios) else [aspect_ratios]
    stride = _two_floats(stride, "stride", "stride")
    attrs = {"anchor_sizes": [float(s) for s in anchor_sizes], "aspect_ratios": [float(a) for a in aspect_ratios],
             "variances": [float(v) for v in variance], "stride": stride, "offset": float(offset)}
    return tuple(_append("anchor_generator", {"Input": [input]}, ("Anchors", "Variances"), attrs, name,
                         stop_gradient=True))


def iou_similarity(x, y, box_normalized=True, name=None):
    """IoU of every box of ``x`` [N, 4] (may carry LoD, which the output keeps) with every box of ``y`` [M, 4]:
    [N, M]. Unnormalized boxes (``box_normalized=False``) count their pixels inclusively."""
    check_variable_and_dtype(x, "x", _FLOATS, "iou_similarity")
    check_variable_and_dtype(y, "y", _FLOATS, "iou_similarity")
    return _append("iou_similarity", {"X": [x], "Y": [y]}, ("Out",), {"box_normalized": box_normalized}, name)[0]


def box_coder(prior_box, prior_box_var, target_box, code_type="encode_center_size", box_normalized=True,
              name=None, axis=0):
    """Encode ``target_box`` [N, 4] against every prior [M, 4] into [N, M, 4] offsets
    ((t - p) / p_size / var for the centre, log(t_size / p_size) / var for the size), or decode
    [N, M, 4] offsets back into boxes (the priors broadcast along ``axis``: [M, 4] for axis 0, [N, 4] for
    axis 1). ``prior_box_var``: a Variable [M, 4], a list of 4 floats shared by all boxes, or None (1s)."""
    check_variable_and_dtype(prior_box, "prior_box", _FLOATS, "box_coder")
    check_variable_and_dtype(target_box, "target_box", _FLOATS, "box_coder")
    inputs = {"PriorBox": [prior_box], "TargetBox": [target_box]}
    attrs = {"code_type": code_type, "box_normalized": box_normalized, "axis": axis}
    if isinstance(prior_box_var, Variable):
        inputs["PriorBoxVar"] = [prior_box_var]
    elif isinstance(prior_box_var, (list, tuple)):
        attrs["variance"] = [float(v) for v in prior_box_var]
    elif prior_box_var is not None:
        raise TypeError(f"Input variance of box_coder must be Variable or list, but received "
                        f"{type(prior_box_var).__name__}")
    return _append("box_coder", inputs, ("OutputBox",), attrs, name, dtype=prior_box.dtype)[0]


def box_clip(input, im_info, name=None):
    """Clip boxes ``input`` [R, 4] (LoD: the boxes of each image) or [N, ..., 4] into their image: x into
    [0, w - 1], y into [0, h - 1], where (h, w) is ``im_info``'s (height, width) / scale, rounded."""
    check_variable_and_dtype(input, "input", _FLOATS, "box_clip")
    check_variable_and_dtype(im_info, "im_info", _FLOATS, "box_clip")
    return _append("box_clip", {"Input": [input], "ImInfo": [im_info]}, ("Output",), {}, name)[0]


