"""Cropping and padding to another tensor's shape: crop, crop_tensor, pad_constant_like.

crop and crop_tensor take one box ``x[offsets : offsets + shape]``; their gradient scatters the upstream
gradient back into zeros of x's shape. pad_constant_like pads Y at the end of each dim up to X's shape.
"""
import numpy as np

from .registry import register_grad, register_op


def _ints(v):
    return [int(a) for a in np.asarray(v).reshape(-1)]


def _box(op, x_shape, shape, offsets):
    """The slices of the crop box, checked against ``x_shape`` (-1 in ``shape``: up to the end)."""
    if len(shape) != len(x_shape) or len(offsets) != len(x_shape):
        raise ValueError(f"Op({op}): the shape ({list(shape)}) and offsets ({list(offsets)}) must have one entry per "
                         f"dimension of X (shape {list(x_shape)})")
    box = []
    for axis, (d, s, o) in enumerate(zip(x_shape, shape, offsets)):
        s = d - o if s == -1 else s
        if o < 0 or s <= 0 or o + s > d:
            raise ValueError(f"Op({op}): the crop box (offset {o}, size {s}) must lie inside X's dimension {axis} "
                             f"of size {d} (X's shape {list(x_shape)})")
        box.append(slice(o, o + s))
    return tuple(box)


def _crop_grad(box, x, dout):
    dx = np.zeros(x.shape, dtype=dout.dtype)
    dx[box] = dout
    return dx


# --- crop: the box's shape from Y's shape or the shape attr, its corner from Offsets or the offsets attr ----
def _crop_infer(attrs, x, y, offsets):
    shape = list(y.shape) if y is not None else list(attrs["shape"])
    if len(shape) != len(x.shape):
        raise ValueError(f"Op(crop): the shape to crop to ({shape}) must have as many dims as X ({list(x.shape)})")
    return tuple(shape), x.dtype


def _crop_box(attrs, x, y, offsets):
    shape = list(y.shape) if y is not None else list(attrs["shape"])
    corner = _ints(offsets) if offsets is not None else list(attrs["offsets"]) or [0] * x.ndim
    return _box("crop", x.shape, shape, corner)


@register_op("crop", inputs=("X", "Y", "Offsets"), outputs=("Out",), attrs={"offsets": [], "shape": []},
             optional=("Y", "Offsets"), no_grad_inputs=("Y", "Offsets"), infer_shape=_crop_infer)
def _crop_forward(attrs, x, y, offsets):
    return x[_crop_box(attrs, x, y, offsets)].copy()


@register_grad("crop", reads=("X", "Y", "Offsets"))
def _crop_backward(attrs, ins, outs, douts, need):
    x, y, offsets = ins
    return _crop_grad(_crop_box(attrs, x, y, offsets), x, douts[0]), None, None


# --- crop_tensor: shape and offsets from attrs, 1-D tensors (Shape / Offsets) or one tensor per dim ----------
def _ct_values(attr, whole, parts):
    if whole is not None:
        return _ints(whole)
    if parts:
        return [int(np.asarray(p).reshape(-1)[0]) for p in parts]
    return list(attr)


def _ct_box(attrs, x, shape, offsets, shape_list, offsets_list):
    corner = _ct_values(attrs["offsets"], offsets, offsets_list) or [0] * x.ndim
    return _box("crop_tensor", x.shape, _ct_values(attrs["shape"], shape, shape_list), corner)


def _ct_infer(attrs, x, shape, offsets, shape_list, offsets_list):
    if shape is not None:
        return (-1,) * len(x.shape), x.dtype
    dims = list(attrs["shape"])
    if len(dims) != len(x.shape):
        raise ValueError(f"The number of elements ({len(dims)}) of attribute 'shape' for CropTensor must be equal to "
                         f"the number of dimensions ({len(x.shape)}) of the input.")
    corner = [-1] * len(dims) if offsets is not None else (list(attrs["offsets"]) or [0] * len(dims))
    return tuple(s if s > 0 else (d - o if s == -1 and o >= 0 and d >= 0 else -1)
                 for d, s, o in zip(x.shape, dims, corner)), x.dtype


@register_op("crop_tensor", inputs=("X", "Shape", "Offsets", "ShapeTensor", "OffsetsTensor"), outputs=("Out",),
             attrs={"offsets": [], "shape": []}, duplicable=("ShapeTensor", "OffsetsTensor"),
             optional=("Shape", "Offsets", "ShapeTensor", "OffsetsTensor"),
             no_grad_inputs=("Shape", "Offsets", "ShapeTensor", "OffsetsTensor"), infer_shape=_ct_infer)
def _crop_tensor_forward(attrs, x, shape, offsets, shape_list, offsets_list):
    return x[_ct_box(attrs, x, shape, offsets, shape_list, offsets_list)].copy()


@register_grad("crop_tensor", reads=("X", "Shape", "Offsets", "ShapeTensor", "OffsetsTensor"))
def _crop_tensor_backward(attrs, ins, outs, douts, need):
    return (_crop_grad(_ct_box(attrs, *ins), ins[0], douts[0]),) + (None,) * 4


# --- pad_constant_like: Y padded with pad_value at the end of each dim up to X's shape ----------------------
def _pcl_infer(attrs, x, y):
    if len(x.shape) != len(y.shape):
        raise ValueError(f"The dimension of X({len(x.shape)}) should be equal to the dimension of Y({len(y.shape)}).")
    for axis, (dx, dy) in enumerate(zip(x.shape, y.shape)):
        if dx >= 0 and dy >= 0 and dx < dy:
            raise ValueError(f"The size of X[{axis}]({dx}) should be greater than or equal to the size of "
                             f"Y[{axis}]({dy}) (X's shape {list(x.shape)}, Y's shape {list(y.shape)}).")
    return x.shape, y.dtype


@register_op("pad_constant_like", inputs=("X", "Y"), outputs=("Out",), attrs={"pad_value": 0.0},
             no_grad_inputs=("X",), infer_shape=_pcl_infer, share_lod={"Out": "X"})
def _pad_constant_like_forward(attrs, x, y):
    _pcl_infer(attrs, x, y)
    return np.pad(y, [(0, a - b) for a, b in zip(x.shape, y.shape)], constant_values=attrs["pad_value"])


@register_grad("pad_constant_like", reads=("Y",))
def _pad_constant_like_backward(attrs, ins, outs, douts, need):
    y = ins[1]
    return None, douts[0][tuple(slice(0, d) for d in y.shape)].copy()
