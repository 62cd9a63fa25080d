"""Region-proposal ops of Faster R-CNN and FPN: generate_proposals (RPN outputs into per-image RoIs),
distribute_fpn_proposals (RoIs onto pyramid levels by scale) and collect_fpn_proposals (the best RoIs of all
levels back into one LoD tensor).

generate_proposals runs every image at once: one partition picks each image's ``pre_nms_topN`` best anchors,
decoding, clipping and the size filter are broadcasts over [N, K, 4], and the greedy NMS of
ops/detection_nms.py runs every image's row together (its steps are as many as the most proposals one image
keeps). Boxes are in pixels and count both ends (width ``xmax - xmin + 1``). None of these ops has a gradient
(fluid's have none).
"""
import numpy as np

from .detection_nms import best_first, greedy_nms
from .registry import register_op
from .sequence import lod_offsets, row_segments

BBOX_CLIP = np.log(1000.0 / 16.0)  # the largest log-size delta a decoded box may take (fluid's default)


def _known(*dims):
    return all(d >= 0 for d in dims)


def decode_deltas(anchors, deltas, variances=None, clip=BBOX_CLIP):
    """Boxes [..., 4] from ``deltas`` [..., 4] on ``anchors`` [..., 4] (pixel boxes; ``variances`` scale the
    deltas; the log-size deltas are capped at ``clip``)."""
    dtype = anchors.dtype.type
    if variances is not None:
        deltas = deltas * variances
    w = anchors[..., 2] - anchors[..., 0] + 1
    h = anchors[..., 3] - anchors[..., 1] + 1
    cx = deltas[..., 0] * w + (anchors[..., 0] + dtype(0.5) * w)
    cy = deltas[..., 1] * h + (anchors[..., 1] + dtype(0.5) * h)
    bw = np.exp(np.minimum(deltas[..., 2], dtype(clip))) * w
    bh = np.exp(np.minimum(deltas[..., 3], dtype(clip))) * h
    return np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2 - 1, cy + bh / 2 - 1], -1).astype(anchors.dtype, copy=False)


def clip_boxes(boxes, height, width):
    """Clip [..., 4] pixel boxes into [0, width - 1] x [0, height - 1] (``height``/``width`` broadcast against
    the box rows)."""
    hi = np.stack([width - 1, height - 1, width - 1, height - 1], -1).astype(boxes.dtype)
    return np.maximum(np.minimum(boxes, hi), 0).astype(boxes.dtype, copy=False)


# --- generate_proposals ---------------------------------------------------------------------------------
def _proposals_infer(attrs, scores, deltas, im_info, anchors, variances):
    for slot, v in (("Scores", scores), ("BboxDeltas", deltas)):
        if len(v.shape) != 4:
            raise ValueError(f"generate_proposals: Input({slot}) must be a 4-D tensor [N, {'A' if slot == 'Scores' else '4 * A'}, "
                             f"H, W], but received shape {list(v.shape)}.")
    if _known(scores.shape[1], deltas.shape[1]) and deltas.shape[1] != 4 * scores.shape[1]:
        raise ValueError(f"generate_proposals: Input(BboxDeltas) {list(deltas.shape)} must have 4 channels per anchor "
                         f"of Input(Scores) {list(scores.shape)}.")
    if len(im_info.shape) != 2 or im_info.shape[1] not in (3, -1):
        raise ValueError(f"generate_proposals: Input(ImInfo) must be [N, 3] (height, width, scale), but received "
                         f"shape {list(im_info.shape)}.")
    if anchors.shape[-1] not in (4, -1) or variances.shape[-1] not in (4, -1):
        raise ValueError(f"generate_proposals: Input(Anchors) and Input(Variances) must end in 4 coordinates, but "
                         f"received shapes {list(anchors.shape)} and {list(variances.shape)}.")
    if _known(*anchors.shape, *variances.shape) and tuple(anchors.shape) != tuple(variances.shape):
        raise ValueError(f"generate_proposals: Input(Variances) {list(variances.shape)} must have the shape of "
                         f"Input(Anchors) {list(anchors.shape)}.")
    return ((-1, 4), deltas.dtype), ((-1, 1), scores.dtype), ((scores.shape[0],), "int32")


@register_op("generate_proposals", inputs=("Scores", "BboxDeltas", "ImInfo", "Anchors", "Variances"),
             outputs=("RpnRois", "RpnRoiProbs", "RpnRoisLod"),
             attrs={"pre_nms_topN": 6000, "post_nms_topN": 1000, "nms_thresh": 0.5, "min_size": 0.1, "eta": 1.0},
             infer_shape=_proposals_infer, context=True, no_gradient=True)
def _generate_proposals(ctx, attrs, scores, deltas, im_info, anchors, variances):
    _proposals_infer(attrs, scores, deltas, im_info, anchors, variances)
    n = scores.shape[0]
    flat_scores = scores.transpose(0, 2, 3, 1).reshape(n, -1)  # [N, H * W * A], anchors' order
    flat_deltas = deltas.transpose(0, 2, 3, 1).reshape(n, -1, 4)
    anchors, variances = anchors.reshape(-1, 4), variances.reshape(-1, 4)
    if len(anchors) != flat_scores.shape[1]:
        raise ValueError(f"generate_proposals: Input(Anchors) holds {len(anchors)} anchors but Input(Scores) "
                         f"{list(scores.shape)} scores {flat_scores.shape[1]} per image.")
    if len(im_info) != n:
        raise ValueError(f"generate_proposals: Input(ImInfo) has {len(im_info)} rows for {n} images in "
                         f"Input(Scores).")
    top = attrs["pre_nms_topN"]
    order = best_first(flat_scores, top if top > 0 else -1)  # [N, K]
    ranked = np.take_along_axis(flat_scores, order, 1)
    boxes = decode_deltas(anchors[order], np.take_along_axis(flat_deltas, order[..., None], 1), variances[order])
    info = im_info.astype(boxes.dtype, copy=False)
    height, width, scale = (info[:, i:i + 1] for i in range(3))
    boxes = clip_boxes(boxes, height, width)
    min_size = max(attrs["min_size"], 1.0)  # fluid never keeps a box under one pixel
    ws, hs = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    valid = ((ws / scale + 1 >= min_size) & (hs / scale + 1 >= min_size)
             & (boxes[..., 0] + (ws + 1) / 2 <= width) & (boxes[..., 1] + (hs + 1) / 2 <= height))
    if attrs["nms_thresh"] > 0:
        kept = greedy_nms(boxes, valid, attrs["nms_thresh"], attrs["eta"], normalized=False)
        if attrs["post_nms_topN"] > 0:
            kept &= np.cumsum(kept, axis=1) <= attrs["post_nms_topN"]
    else:
        kept = valid
    image, rank = np.nonzero(kept)  # by image, then best first
    counts = np.bincount(image, minlength=n)
    ctx.set_output_lod("RpnRois", [counts.tolist()])
    ctx.set_output_lod("RpnRoiProbs", [counts.tolist()])
    return (boxes[image, rank].reshape(-1, 4), ranked[image, rank].reshape(-1, 1).astype(scores.dtype, copy=False),
            lod_offsets(counts)[1:].astype(np.int32))


# --- distribute_fpn_proposals -----------------------------------------------------------------------------
def _distribute_infer(attrs, rois):
    lo, hi = attrs["min_level"], attrs["max_level"]
    if hi < lo:
        raise ValueError(f"distribute_fpn_proposals: max_level ({hi}) must not be lower than min_level ({lo}).")
    if len(rois.shape) != 2 or rois.shape[1] not in (4, -1):
        raise ValueError(f"distribute_fpn_proposals: Input(FpnRois) must be [R, 4], but received shape "
                         f"{list(rois.shape)}.")
    return [((-1, 4), rois.dtype)] * (hi - lo + 1), ((-1, 1), "int32")


def fpn_levels(rois, attrs):
    """The pyramid level of each pixel roi: floor(refer_level + log2(sqrt(area) / refer_scale)), clipped."""
    w, h = rois[:, 2] - rois[:, 0], rois[:, 3] - rois[:, 1]
    area = np.where((w < 0) | (h < 0), 0, (w + 1) * (h + 1)).astype(rois.dtype)
    with np.errstate(divide="ignore"):
        level = np.floor(np.log2(np.sqrt(area) / attrs["refer_scale"] + rois.dtype.type(1e-6)) + attrs["refer_level"])
    return np.clip(level, attrs["min_level"], attrs["max_level"]).astype(np.int64)


@register_op("distribute_fpn_proposals", inputs=("FpnRois",), outputs=("MultiFpnRois", "RestoreIndex"),
             attrs={"min_level": 0, "max_level": 0, "refer_level": 0, "refer_scale": 0},
             duplicable=("MultiFpnRois",), infer_shape=_distribute_infer, context=True, no_gradient=True)
def _distribute_fpn_proposals(ctx, attrs, rois):
    _distribute_infer(attrs, rois)
    lod = ctx.input_lod("FpnRois")
    if len(lod) != 1:
        raise ValueError(f"distribute_fpn_proposals: Input(FpnRois) needs 1 level of LoD (the RoIs of each image), "
                         f"but it has {len(lod)}.")
    image = row_segments(lod[0])[0]
    level = fpn_levels(rois, attrs) - attrs["min_level"]
    order = np.argsort(level, kind="stable")  # by level, then image (rows come by image), then position
    levels = attrs["max_level"] - attrs["min_level"] + 1
    counts = np.bincount(level * len(lod[0]) + image, minlength=levels * len(lod[0])).reshape(levels, -1)
    bounds = lod_offsets(counts.sum(1))
    outs = []
    for i in range(levels):
        ctx.set_output_lod("MultiFpnRois", [counts[i].tolist()], index=i)
        outs.append(rois[order[bounds[i]:bounds[i + 1]]])
    restore = np.empty(len(rois), np.int32)
    restore[order] = np.arange(len(rois), dtype=np.int32)
    return outs, restore.reshape(-1, 1)


# --- collect_fpn_proposals --------------------------------------------------------------------------------
def _collect_infer(attrs, rois, scores):
    if len(rois) != len(scores):
        raise ValueError(f"collect_fpn_proposals: Input(MultiLevelRois) has {len(rois)} levels but "
                         f"Input(MultiLevelScores) {len(scores)}.")
    for i, (r, s) in enumerate(zip(rois, scores)):
        if len(r.shape) != 2 or r.shape[1] not in (4, -1):
            raise ValueError(f"collect_fpn_proposals: Second dimension of Input(MultiLevelRois) must be 4, but level "
                             f"{i} has shape {list(r.shape)}.")
        if len(s.shape) != 2 or s.shape[1] not in (1, -1):
            raise ValueError(f"collect_fpn_proposals: Second dimension of Input(MultiLevelScores) must be 1, but "
                             f"level {i} has shape {list(s.shape)}.")
    if attrs["post_nms_topN"] < 0:
        raise ValueError(f"collect_fpn_proposals: post_nms_topN must be a positive integer, but received "
                         f"{attrs['post_nms_topN']}.")
    return (attrs["post_nms_topN"], 4), rois[0].dtype


@register_op("collect_fpn_proposals", inputs=("MultiLevelRois", "MultiLevelScores"), outputs=("FpnRois",),
             attrs={"post_nms_topN": 100}, duplicable=("MultiLevelRois", "MultiLevelScores"),
             infer_shape=_collect_infer, context=True, no_gradient=True)
def _collect_fpn_proposals(ctx, attrs, rois, scores):
    _collect_infer(attrs, rois, scores)
    images = []
    for i in range(len(rois)):
        lod, score_lod = ctx.input_lod("MultiLevelRois", i), ctx.input_lod("MultiLevelScores", i)
        if not lod or list(lod[-1]) != list(score_lod[-1] if score_lod else []):
            raise ValueError(f"collect_fpn_proposals: Inputs(MultiLevelRois) and Inputs(MultiLevelScores) should "
                             f"have the same LoD (the RoIs of each image); level {i} has {lod} and {score_lod}.")
        images.append(row_segments(lod[-1])[0])
    n_images = len(ctx.input_lod("MultiLevelRois", 0)[-1])
    all_rois, all_scores = np.concatenate(rois), np.concatenate([s.reshape(-1) for s in scores])
    image = np.concatenate(images)
    best = np.argsort(-all_scores, kind="stable")[:attrs["post_nms_topN"]]
    best = best[np.argsort(image[best], kind="stable")]  # by image, best first within it
    ctx.set_output_lod("FpnRois", [np.bincount(image[best], minlength=n_images).tolist()])
    return all_rois[best]
