"""Box ops of SSD-style detection: prior_box, density_prior_box, anchor_generator (boxes laid over a feature
map), box_coder (center-size encode / decode), iou_similarity, box_clip, box_decoder_and_assign and
polygon_box_transform.

Every kernel is a few broadcasts: the generators build the per-cell box extents once from the attrs ([P, 2]
half sizes, in fluid's order) and lay them over the [H, W] grid of centres; box_coder and iou_similarity
broadcast [N, 1] against [1, M]. Boxes are [xmin, ymin, xmax, ymax]; a box that is not ``normalized`` counts
its pixels inclusively (width ``xmax - xmin + 1``). None of these ops has a gradient (fluid's have none).
"""
import numpy as np

from .registry import array_module, register_op
from .sequence import row_segments


def _known(d):
    return d >= 0


def _float_dtype(dtype):
    """The generators compute in the input's float type; integer feature maps give float32 boxes."""
    return dtype if str(dtype) in ("float32", "float64") else "float32"


def _nchw(op, slot, shape):
    if len(shape) != 4:
        raise ValueError(f"The Input({slot}) of Op({op}) should be a 4-D Tensor and data format is NCHW. But "
                         f"received {slot}'s dimensions = {len(shape)}, shape = {list(shape)}.")


def expand_aspect_ratios(ratios, flip):
    """1 first, then each new ratio (and its inverse when ``flip``); a ratio within 1e-6 of one kept is skipped."""
    out = [1.0]
    for ar in ratios:
        if all(abs(ar - kept) >= 1e-6 for kept in out):
            out += [ar, 1.0 / ar] if flip else [ar]
    return out


def _grid_boxes(feature_hw, image_wh, steps, offset, half, dtype, clip):
    """Boxes [H, W, P, 4]: cell centres ``(w + offset) * step_w`` (and h) +- the [P, 2] ``half`` extents,
    divided by the image size; clipped to [0, 1] when ``clip``."""
    fh, fw = feature_hw
    step_w, step_h = (np.float64(image_wh[0]) / fw, np.float64(image_wh[1]) / fh) if 0 in steps else steps
    cx = ((np.arange(fw, dtype=dtype) + dtype(offset)) * dtype(step_w))[None, :, None]
    cy = ((np.arange(fh, dtype=dtype) + dtype(offset)) * dtype(step_h))[:, None, None]
    hw, hh = half[:, 0].astype(dtype), half[:, 1].astype(dtype)
    img_w, img_h = dtype(image_wh[0]), dtype(image_wh[1])
    out = np.empty((fh, fw, len(half), 4), dtype)
    out[..., 0], out[..., 1] = (cx - hw) / img_w, (cy - hh) / img_h
    out[..., 2], out[..., 3] = (cx + hw) / img_w, (cy + hh) / img_h
    return np.clip(out, 0, 1, out=out) if clip else out


def _variances(boxes, variances):
    return np.broadcast_to(np.asarray(variances, boxes.dtype), boxes.shape).copy()


def _check_variances(op, variances):
    if len(variances) != 4:
        raise ValueError(f"{op}: The length of variance must be 4. But received: variances' length is "
                         f"{len(variances)}.")
    for i, v in enumerate(variances):
        if not v > 0:
            raise ValueError(f"{op}: variance[{i}] must be greater than 0. But received: variance[{i}] = {v}")


# --- prior_box: SSD's priors, per cell min sizes x aspect ratios (+ sqrt(min * max) squares) -------------
def _prior_half_sizes(attrs):
    """[P, 2] half widths / heights of one cell's priors in fluid's order."""
    mins, maxs = attrs["min_sizes"], attrs["max_sizes"]
    ratios = expand_aspect_ratios(attrs["aspect_ratios"], attrs["flip"])
    half = []
    for s, m in enumerate(mins):
        shaped = [(m * np.sqrt(ar) / 2, m / np.sqrt(ar) / 2) for ar in ratios]
        square = [(np.sqrt(m * maxs[s]) / 2,) * 2] if maxs else []
        if attrs["min_max_aspect_ratios_order"]:  # min square, max square, then the ratios other than 1
            half += [(m / 2, m / 2)] + square + [hs for ar, hs in zip(ratios, shaped) if abs(ar - 1) >= 1e-6]
        else:
            half += shaped + square
    return np.array(half, np.float64).reshape(-1, 2)


def _prior_box_infer(attrs, x, image):
    _nchw("PriorBoxOp", "Image", image.shape)
    _nchw("PriorBoxOp", "Input", x.shape)
    mins, maxs = attrs["min_sizes"], attrs["max_sizes"]
    if not mins:
        raise ValueError("prior_box: Size of min_sizes must be at least 1.")
    for i, m in enumerate(mins):
        if not m > 0:
            raise ValueError(f"prior_box: min_sizes[{i}] must be larger than 0. But received: min_sizes[{i}] is {m}.")
    _check_variances("prior_box", attrs["variances"])
    if maxs:
        if len(maxs) != len(mins):
            raise ValueError(f"The length of min_size and max_size must be equal. But received: min_size's length "
                             f"is {len(mins)}, max_size's length is {len(maxs)}.")
        for i, (lo, hi) in enumerate(zip(mins, maxs)):
            if not hi > lo:
                raise ValueError(f"max_size[{i}] must be greater than min_size[{i}]. But received: max_size[{i}] is "
                                 f"{hi}, min_size[{i}] is {lo}.")
    shape = (x.shape[2], x.shape[3], len(_prior_half_sizes(attrs)), 4)
    dtype = _float_dtype(x.dtype)
    return (shape, dtype), (shape, dtype)


@register_op("prior_box", inputs=("Input", "Image"), outputs=("Boxes", "Variances"),
             attrs={"min_sizes": [], "max_sizes": [], "aspect_ratios": [], "variances": [], "flip": True,
                    "clip": True, "step_w": 0.0, "step_h": 0.0, "offset": 0.5, "min_max_aspect_ratios_order": False},
             infer_shape=_prior_box_infer, no_gradient=True)
def _prior_box(attrs, x, image):
    _prior_box_infer(attrs, x, image)
    dtype = np.dtype(_float_dtype(x.dtype)).type
    boxes = _grid_boxes(x.shape[2:], (image.shape[3], image.shape[2]), (attrs["step_w"], attrs["step_h"]),
                        attrs["offset"], _prior_half_sizes(attrs), dtype, attrs["clip"])
    return boxes, _variances(boxes, attrs["variances"])


# --- density_prior_box: each fixed size's box repeated density x density times inside the cell ------------
def _density_infer(attrs, x, image):
    _nchw("density_prior_box", "Image", image.shape)
    _nchw("density_prior_box", "Input", x.shape)
    for axis, what in ((2, "height"), (3, "width")):
        if _known(x.shape[axis]) and _known(image.shape[axis]) and not x.shape[axis] < image.shape[axis]:
            raise ValueError(f"The input tensor Input's {what} of DensityPriorBoxOp should be smaller than input "
                             f"tensor Image's {what}. But received Input's {what} = {x.shape[axis]}, Image's "
                             f"{what} = {image.shape[axis]}")
    sizes, densities = attrs["fixed_sizes"], attrs["densities"]
    if len(sizes) != len(densities):
        raise ValueError(f"The length of fixed_sizes and densities must be equal. But received: fixed_sizes's length "
                         f"is {len(sizes)}, densities's length is {len(densities)}")
    _check_variances("density_prior_box", attrs["variances"])
    priors = len(attrs["fixed_ratios"]) * sum(d * d for d in densities)
    dtype = _float_dtype(x.dtype)
    if attrs["flatten_to_2d"]:
        rows = x.shape[2] * x.shape[3] * priors if _known(x.shape[2]) and _known(x.shape[3]) else -1
        return ((rows, 4), dtype), ((rows, 4), dtype)
    shape = (x.shape[2], x.shape[3], priors, 4)
    return (shape, dtype), (shape, dtype)


@register_op("density_prior_box", inputs=("Input", "Image"), outputs=("Boxes", "Variances"),
             attrs={"variances": [], "clip": True, "flatten_to_2d": False, "step_w": 0.0, "step_h": 0.0,
                    "offset": 0.5, "fixed_sizes": [], "fixed_ratios": [], "densities": []},
             infer_shape=_density_infer, no_gradient=True)
def _density_prior_box(attrs, x, image):
    _density_infer(attrs, x, image)
    dtype = np.dtype(_float_dtype(x.dtype)).type
    fh, fw = x.shape[2:]
    img_w, img_h = image.shape[3], image.shape[2]
    steps = (attrs["step_w"], attrs["step_h"])
    step_w, step_h = (np.float64(img_w) / fw, np.float64(img_h) / fh) if 0 in steps else steps
    average = int((dtype(step_w) + dtype(step_h)) * 0.5)  # fluid truncates the mean step to pixels
    shift, half = [], []  # per prior: the centre's shift inside the cell, and the half extents
    for size, density in zip(attrs["fixed_sizes"], attrs["densities"]):
        s = average // density
        grid = -average / 2.0 + s / 2.0 + np.arange(density) * s
        dy, dx = np.repeat(grid, density), np.tile(grid, density)
        for r in attrs["fixed_ratios"]:
            root = np.float32(np.sqrt(np.float32(r)))
            w, h = np.float32(size * root), np.float32(size / root)
            shift.append(np.stack([dx, dy], 1))
            half.append(np.broadcast_to([w / 2.0, h / 2.0], (density * density, 2)))
    shift = np.concatenate(shift).astype(np.float32) if shift else np.zeros((0, 2), np.float32)
    half = np.concatenate(half) if half else np.zeros((0, 2))
    cx = ((np.arange(fw, dtype=dtype) + dtype(attrs["offset"])) * dtype(step_w))[None, :, None] + shift[:, 0]
    cy = ((np.arange(fh, dtype=dtype) + dtype(attrs["offset"])) * dtype(step_h))[:, None, None] + shift[:, 1]
    cx, cy = cx.astype(np.float32), cy.astype(np.float32)  # fluid keeps these centres in float
    boxes = np.empty((fh, fw, len(half), 4), dtype)
    boxes[..., 0] = np.maximum((cx - half[:, 0]) / img_w, 0.0)
    boxes[..., 1] = np.maximum((cy - half[:, 1]) / img_h, 0.0)
    boxes[..., 2] = np.minimum((cx + half[:, 0]) / img_w, 1.0)
    boxes[..., 3] = np.minimum((cy + half[:, 1]) / img_h, 1.0)
    if attrs["clip"]:
        np.clip(boxes, 0, 1, out=boxes)
    if attrs["flatten_to_2d"]:
        boxes = boxes.reshape(-1, 4)
    return boxes, _variances(boxes, attrs["variances"])


# --- anchor_generator: Faster R-CNN's anchors, in pixels, per cell ratios x sizes --------------------------
def _anchor_infer(attrs, x):
    if len(x.shape) != 4:
        raise ValueError(f"anchor_generator: The layout of Input(Input) is NCHW (4-D), but received shape "
                         f"{list(x.shape)}.")
    if not attrs["anchor_sizes"]:
        raise ValueError("anchor_generator: Size of anchor_sizes must be at least 1.")
    if len(attrs["stride"]) != 2:
        raise ValueError("anchor_generator: Must provide 2 stride for width and height only.")
    _check_variances("anchor_generator", attrs["variances"])
    shape = (x.shape[2], x.shape[3], len(attrs["aspect_ratios"]) * len(attrs["anchor_sizes"]), 4)
    return (shape, x.dtype), (shape, x.dtype)


@register_op("anchor_generator", inputs=("Input",), outputs=("Anchors", "Variances"),
             attrs={"anchor_sizes": [], "aspect_ratios": [], "variances": [], "stride": [16.0, 16.0],
                    "offset": 0.5},
             infer_shape=_anchor_infer, no_gradient=True)
def _anchor_generator(attrs, x):
    _anchor_infer(attrs, x)
    dtype = np.dtype(x.dtype).type
    sw, sh = (dtype(s) for s in attrs["stride"])
    ratios = np.asarray(attrs["aspect_ratios"], np.float32)[:, None]
    sizes = np.asarray(attrs["anchor_sizes"], np.float32)[None, :]
    base_w = np.floor(np.sqrt(sw * sh / ratios) + 0.5)  # C's round: halves away from zero
    base_h = np.floor(base_w * ratios + 0.5)
    half = np.stack([np.broadcast_to(sizes / sw * base_w, (ratios.size, sizes.size)),
                     np.broadcast_to(sizes / sh * base_h, (ratios.size, sizes.size))], -1).reshape(-1, 2)
    half = (0.5 * (half - 1)).astype(dtype)
    offset = dtype(attrs["offset"])
    cx = (np.arange(x.shape[3], dtype=dtype) * sw + offset * (sw - 1))[None, :, None]
    cy = (np.arange(x.shape[2], dtype=dtype) * sh + offset * (sh - 1))[:, None, None]
    anchors = np.empty((x.shape[2], x.shape[3], len(half), 4), dtype)
    anchors[..., 0], anchors[..., 1] = cx - half[:, 0], cy - half[:, 1]
    anchors[..., 2], anchors[..., 3] = cx + half[:, 0], cy + half[:, 1]
    return anchors, _variances(anchors, attrs["variances"])


# --- box_coder ------------------------------------------------------------------------------------------
def center_size(boxes, normalized):
    """(centre x, centre y, width, height) of [..., 4] boxes; unnormalized widths count both ends (fluid's
    encoder still takes a target's centre as the plain midpoint)."""
    one = 0 if normalized else 1
    w = boxes[..., 2] - boxes[..., 0] + one
    h = boxes[..., 3] - boxes[..., 1] + one
    return boxes[..., 0] + w / 2, boxes[..., 1] + h / 2, w, h


def _coder_infer(attrs, prior, prior_var, target):
    code = attrs["code_type"]
    if code not in ("encode_center_size", "decode_center_size"):
        raise ValueError(f"The 'code_type' attribute in BoxCoder must be 'encode_center_size' or "
                         f"'decode_center_size'. But received 'code_type' is {code}")
    if len(prior.shape) != 2 or prior.shape[1] not in (4, -1):
        raise ValueError(f"box_coder: Input(PriorBox) must be a 2-D tensor [M, 4], but received shape "
                         f"{list(prior.shape)}.")
    if prior_var is not None:
        if len(prior_var.shape) != 2:
            raise ValueError(f"Input(PriorBoxVar) of BoxCoderOp should be 2-D, but received shape "
                             f"{list(prior_var.shape)}.")
        if all(_known(d) for d in tuple(prior.shape) + tuple(prior_var.shape)) and prior.shape != prior_var.shape:
            raise ValueError(f"The dimension of Input(PriorBoxVar) {list(prior_var.shape)} should be equal to the "
                             f"dimension of Input(PriorBox) {list(prior.shape)} when the rank is 2.")
        if attrs["variance"]:
            raise ValueError("Input 'PriorBoxVar' and attribute 'variance' of BoxCoder operator should not be used "
                             "at the same time.")
    if attrs["variance"] and len(attrs["variance"]) != 4:
        raise ValueError(f"Size of attribute 'variance' of BoxCoder operator should be 4. But received size = "
                         f"{len(attrs['variance'])}")
    if code == "encode_center_size":
        if len(target.shape) != 2 or target.shape[1] not in (4, -1):
            raise ValueError(f"box_coder: Input(TargetBox) must be a 2-D tensor [N, 4] to encode, but received "
                             f"shape {list(target.shape)}.")
        return (target.shape[0], prior.shape[0], 4), prior.dtype
    axis = attrs["axis"]
    if len(target.shape) != 3:
        raise ValueError(f"box_coder: Input(TargetBox) must be a 3-D tensor [N, M, 4] to decode, but received "
                         f"shape {list(target.shape)}.")
    if axis not in (0, 1):
        raise ValueError(f"box_coder: axis must be 0 or 1, but received {axis}.")
    along = target.shape[1 - axis]
    if _known(along) and _known(prior.shape[0]) and along != prior.shape[0]:
        raise ValueError(f"box_coder: Input(PriorBox) holds {prior.shape[0]} boxes but Input(TargetBox) "
                         f"{list(target.shape)} has {along} along dimension {1 - axis} (axis = {axis}).")
    return tuple(target.shape), prior.dtype


@register_op("box_coder", inputs=("PriorBox", "PriorBoxVar", "TargetBox"), outputs=("OutputBox",),
             optional=("PriorBoxVar",),
             attrs={"code_type": "encode_center_size", "box_normalized": True, "axis": 0, "variance": []},
             infer_shape=_coder_infer, context=True, no_gradient=True)
def _box_coder(ctx, attrs, prior, prior_var, target):
    _coder_infer(attrs, prior, prior_var, target)
    normalized, decode, axis = attrs["box_normalized"], attrs["code_type"] == "decode_center_size", attrs["axis"]
    lod_from = "PriorBox" if decode and axis == 1 else "TargetBox"
    ctx.set_output_lod("OutputBox", ctx.input_lod(lod_from))
    var = prior_var if prior_var is not None else np.asarray(attrs["variance"] or [1.0] * 4, prior.dtype)
    px, py, pw, ph = center_size(prior, normalized)
    if not decode:  # [N, 1] targets against [1, M] priors
        _, _, tw, th = (v[:, None] for v in center_size(target, normalized))
        tx, ty = (target[:, None, 0] + target[:, None, 2]) / 2, (target[:, None, 1] + target[:, None, 3]) / 2
        out = np.stack([(tx - px) / pw, (ty - py) / ph, np.log(np.abs(tw / pw)), np.log(np.abs(th / ph))], -1)
        return (out / var).astype(prior.dtype, copy=False)
    expand = (lambda v: v[None, :]) if axis == 0 else (lambda v: v[:, None])
    px, py, pw, ph = map(expand, (px, py, pw, ph))
    var = expand(var) if var.ndim == 2 else var
    d = target * var
    cx, cy = d[..., 0] * pw + px, d[..., 1] * ph + py
    w, h = np.exp(d[..., 2]) * pw, np.exp(d[..., 3]) * ph
    one = 0 if normalized else 1
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2 - one, cy + h / 2 - one], -1).astype(prior.dtype, copy=False)


# --- iou_similarity: [N, M] IoU of every pair ----------------------------------------------------------
def pairwise_iou(a, b, normalized=True, eps=1e-10):
    """IoU of every box in ``a`` [N, 4] with every box in ``b`` [M, 4] as [N, M] (fluid's eps in the union)."""
    xp = array_module(a)
    one = 0 if normalized else 1
    area_a = (a[:, 2] - a[:, 0] + one) * (a[:, 3] - a[:, 1] + one)
    area_b = (b[:, 2] - b[:, 0] + one) * (b[:, 3] - b[:, 1] + one)
    iw = xp.minimum(a[:, None, 2], b[None, :, 2]) - xp.maximum(a[:, None, 0], b[None, :, 0]) + one
    ih = xp.minimum(a[:, None, 3], b[None, :, 3]) - xp.maximum(a[:, None, 1], b[None, :, 1]) + one
    inter = xp.maximum(iw, 0) * xp.maximum(ih, 0)
    return inter / (area_a[:, None] + area_b[None, :] - inter + eps)


def _iou_infer(attrs, x, y):
    for slot, v, rows in (("X", x, "N"), ("Y", y, "M")):
        if len(v.shape) != 2:
            raise ValueError(f"The rank of Input({slot}) must be 2, but got dimension = {len(v.shape)}.")
        if v.shape[1] not in (4, -1):
            raise ValueError(f"The shape of {slot} is [{rows}, 4], but got dimension = {v.shape[1]}.")
    return (x.shape[0], y.shape[0]), x.dtype


@register_op("iou_similarity", inputs=("X", "Y"), outputs=("Out",), attrs={"box_normalized": True},
             infer_shape=_iou_infer, share_lod={"Out": "X"}, no_gradient=True)
def _iou_similarity(attrs, x, y):
    _iou_infer(attrs, x, y)
    return pairwise_iou(x, y, attrs["box_normalized"], x.dtype.type(1e-10)).astype(x.dtype, copy=False)


# --- box_clip: boxes into [0, im_w - 1] x [0, im_h - 1] of their image ----------------------------------
def _clip_infer(attrs, boxes, im_info):
    if boxes.shape[-1] not in (4, -1):
        raise ValueError(f"The last dimension of Input(Input) in BoxClipOp must be 4. But received last dimension "
                         f"= {boxes.shape[-1]}")
    if len(im_info.shape) != 2:
        raise ValueError(f"The rank of Input(ImInfo) in BoxClipOp must be 2. But received rank = "
                         f"{len(im_info.shape)}")
    if im_info.shape[1] not in (3, -1):
        raise ValueError(f"The last dimension of Input(ImInfo) of BoxClipOp must be 3. But received last dimension "
                         f"= {im_info.shape[1]}")
    return tuple(boxes.shape), boxes.dtype


def clip_to_images(boxes, im_info, image_of_row):
    """Clip [R, ..., 4] ``boxes`` to the image each row belongs to (``image_of_row`` [R] into im_info's rows,
    each (height, width, scale)); the image size is rounded from height / scale as fluid does."""
    size = np.floor(im_info[:, :2] / im_info[:, 2:3] + 0.5)[image_of_row]  # (h, w) per row
    hi = np.stack([size[:, 1], size[:, 0]] * 2, -1) - 1
    hi = hi.reshape((len(hi),) + (1,) * (boxes.ndim - 2) + (4,))
    return np.maximum(np.minimum(boxes, hi), 0).astype(boxes.dtype, copy=False)


@register_op("box_clip", inputs=("Input", "ImInfo"), outputs=("Output",), infer_shape=_clip_infer,
             share_lod={"Output": "Input"}, context=True, no_gradient=True)
def _box_clip(ctx, attrs, boxes, im_info):
    _clip_infer(attrs, boxes, im_info)
    lod = ctx.input_lod("Input")
    if len(lod) > 1:
        raise ValueError(f"Input(Input) of BoxClip only supports 1 level of LoD. But received the level = {len(lod)}")
    if lod:  # rows of image i: the i-th sequence
        image = row_segments(lod[0])[0]
        if len(lod[0]) != len(im_info):
            raise ValueError(f"box_clip: Input(Input) holds {len(lod[0])} images (its LoD) but Input(ImInfo) has "
                             f"{len(im_info)} rows")
        rows = boxes.reshape(len(image), -1, 4)
    elif boxes.ndim >= 3 and len(im_info) == boxes.shape[0]:  # [N, ..., 4]: image i is row i
        image, rows = np.arange(boxes.shape[0]), boxes.reshape(boxes.shape[0], -1, 4)
    elif len(im_info) == 1:  # one image: all boxes are its
        image, rows = np.zeros(1, np.int64), boxes.reshape(1, -1, 4)
    else:
        raise ValueError(f"box_clip: Input(Input) {list(boxes.shape)} has no LoD telling which of the "
                         f"{len(im_info)} images of Input(ImInfo) each box belongs to")
    return clip_to_images(rows, im_info, image).reshape(boxes.shape)
