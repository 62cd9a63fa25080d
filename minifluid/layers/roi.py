"""Region-of-interest layers: roi_pool, roi_align, psroi_pool, prroi_pool and roi_perspective_transform (fluid 1.8
signatures, defaults and argument errors; the ops are in ops/roi.py and ops/roi_perspective.py).

``rois`` is a [num_rois, 4] float tensor of [x1, y1, x2, y2] boxes in input-image coordinates (times
``spatial_scale`` on the feature map). Which image each ROI belongs to comes from its LoD (a LoDTensor fed
to a ``lod_level=1`` variable), from ``rois_lod`` (offsets [0, n1, n1 + n2, ...], roi_pool and roi_align)
or from ``batch_roi_nums`` (ROIs per image, prroi_pool).
"""
from .activation import check_variable_and_dtype
from .creation import check_type
from .helper import LayerHelper

__all__ = ["prroi_pool", "psroi_pool", "roi_align", "roi_perspective_transform", "roi_pool"]

_FLOATS = ("float32", "float64")


def _pool(op_type, input, inputs, attrs, name=None, argmax=False):
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    outputs = {"Out": [out]}
    if argmax:
        outputs["Argmax"] = [helper.create_variable_for_type_inference("int64", stop_gradient=True)]
    helper.append_op(type=op_type, inputs={k: [v] for k, v in inputs.items() if v is not None}, outputs=outputs,
                     attrs=attrs)
    return out


def roi_pool(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, rois_lod=None):
    """Max pooling of every ROI of ``rois`` over ``input`` [N, C, H, W] into [num_rois, C, pooled_height,
    pooled_width]: each bin takes the largest value of its pixel range (0 for an empty bin)."""
    check_variable_and_dtype(input, "input", _FLOATS, "roi_pool")
    check_variable_and_dtype(rois, "rois", _FLOATS, "roi_pool")
    return _pool("roi_pool", input, {"X": input, "ROIs": rois, "RoisLod": rois_lod},
                 {"pooled_height": pooled_height, "pooled_width": pooled_width, "spatial_scale": spatial_scale},
                 argmax=True)


def roi_align(input, rois, pooled_height=1, pooled_width=1, spatial_scale=1.0, sampling_ratio=-1, name=None,
              rois_lod=None):
    """RoIAlign: each of the pooled_height x pooled_width bins of every ROI is the mean of a grid of bilinear
    samples of ``input``, ``sampling_ratio`` per axis (<= 0: ceil(roi size / bins), per ROI); returns
    [num_rois, C, pooled_height, pooled_width]."""
    check_variable_and_dtype(input, "input", _FLOATS, "roi_align")
    check_variable_and_dtype(rois, "rois", _FLOATS, "roi_align")
    return _pool("roi_align", input, {"X": input, "ROIs": rois, "RoisLod": rois_lod},
                 {"pooled_height": pooled_height, "pooled_width": pooled_width, "spatial_scale": spatial_scale,
                  "sampling_ratio": sampling_ratio}, name)


def _check_attrs(**values):
    for arg, (value, types) in values.items():
        if not isinstance(value, types) or isinstance(value, bool):
            raise TypeError(f"{arg} must be {types.__name__} type")


def psroi_pool(input, rois, output_channels, spatial_scale, pooled_height, pooled_width, name=None):
    """Position-sensitive ROI pooling (R-FCN): bin (ph, pw) of output channel c is the mean of input channel
    (c * pooled_height + ph) * pooled_width + pw over the bin; ``input`` has output_channels * pooled_height *
    pooled_width channels. Returns [num_rois, output_channels, pooled_height, pooled_width]."""
    _check_attrs(output_channels=(output_channels, int), spatial_scale=(spatial_scale, float),
                 pooled_height=(pooled_height, int), pooled_width=(pooled_width, int))
    return _pool("psroi_pool", input, {"X": input, "ROIs": rois},
                 {"output_channels": output_channels, "spatial_scale": spatial_scale,
                  "pooled_height": pooled_height, "pooled_width": pooled_width}, name)


def prroi_pool(input, rois, spatial_scale=1.0, pooled_height=1, pooled_width=1, batch_roi_nums=None, name=None):
    """Precise ROI pooling: each bin is the integral of the bilinear interpolation of ``input`` over the bin,
    divided by its area (differentiable in ``rois`` too). ``batch_roi_nums`` (int64 [N]) gives the number of
    ROIs of each image when ``rois`` has no LoD. Returns [num_rois, C, pooled_height, pooled_width]."""
    _check_attrs(spatial_scale=(spatial_scale, float), pooled_height=(pooled_height, int),
                 pooled_width=(pooled_width, int))
    if batch_roi_nums is not None:
        check_type(batch_roi_nums, "batch_roi_nums", (type(input),), "prroi_pool")
    return _pool("prroi_pool", input, {"X": input, "ROIs": rois, "BatchRoINums": batch_roi_nums},
                 {"spatial_scale": spatial_scale, "pooled_height": pooled_height, "pooled_width": pooled_width},
                 name)


def roi_perspective_transform(input, rois, transformed_height, transformed_width, spatial_scale=1.0, name=None):
    """Warp each quadrilateral ROI (LoD ``rois`` [R, 8]: x0, y0 .. x3, y3, clockwise from the top left) of
    ``input`` onto a transformed_height x transformed_width grid by its perspective transform. Returns (out
    [R, C, transformed_height, transformed_width] with the ROIs' LoD, mask int32 [R, 1, transformed_height,
    transformed_width]: 1 where the point lies in the quad and the image, transform_matrix [R, 9])."""
    check_variable_and_dtype(input, "input", _FLOATS, "roi_perspective_transform")
    check_variable_and_dtype(rois, "rois", _FLOATS, "roi_perspective_transform")
    check_type(transformed_height, "transformed_height", (int,), "roi_perspective_transform")
    check_type(transformed_width, "transformed_width", (int,), "roi_perspective_transform")
    check_type(spatial_scale, "spatial_scale", (float,), "roi_perspective_transform")
    helper = LayerHelper("roi_perspective_transform", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    mask = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    matrix = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    out2in_idx = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    out2in_w = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="roi_perspective_transform", inputs={"X": [input], "ROIs": [rois]},
                     outputs={"Out": [out], "Out2InIdx": [out2in_idx], "Out2InWeights": [out2in_w], "Mask": [mask],
                              "TransformMatrix": [matrix]},
                     attrs={"transformed_height": transformed_height, "transformed_width": transformed_width,
                            "spatial_scale": spatial_scale})
    return out, mask, matrix
