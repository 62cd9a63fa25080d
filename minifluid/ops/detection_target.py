"""Training targets of two-stage and RetinaNet detectors: rpn_target_assign (anchors into sampled foreground /
background RPN examples), retinanet_target_assign (every anchor, labelled with its ground truth's class) and
generate_proposal_labels (RoIs sampled against the ground truth, with per-class regression targets).

These ops are per image by nature: each image has its own number of ground-truth boxes, its own overlap matrix
and its own random draw of examples, and its outputs are that image's variable-length LoD sequence, so the kernels
loop over the images and are vectorised over the anchors / RoIs and ground-truth boxes inside each.

Sampling: with ``use_random`` the foreground and background examples are a uniformly random subset of the
candidates (what fluid's reservoir sampling draws), from the program's generator (ExecutionContext.random: seeded
by ``Program.random_seed``); without it, the first candidates in index order, so results are exact. Boxes are in
pixels and count both ends. None of these ops has a gradient (fluid's have none).
"""
import numpy as np

from .registry import register_op
from .sequence import lod_offsets

_EPS = 1e-5  # fluid's tolerance for "this overlap is the best one"


def pixel_overlaps(a, b):
    """IoU [N, M] of pixel boxes ``a`` [N, 4] and ``b`` [M, 4] (inclusive widths; 0 where they do not meet)."""
    area_a = (a[:, 2] - a[:, 0] + 1) * (a[:, 3] - a[:, 1] + 1)
    area_b = (b[:, 2] - b[:, 0] + 1) * (b[:, 3] - b[:, 1] + 1)
    iw = np.maximum(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]) + 1, 0)
    ih = np.maximum(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]) + 1, 0)
    inter = iw * ih
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(inter == 0, 0, inter / (area_a[:, None] + area_b[None, :] - inter)).astype(a.dtype)


def box_to_delta(boxes, gts, weights=None):
    """Regression targets [N, 4] taking pixel ``boxes`` onto ``gts`` (centre offsets over the box size, log size
    ratios), divided by ``weights``."""
    bw, bh = boxes[:, 2] - boxes[:, 0] + 1, boxes[:, 3] - boxes[:, 1] + 1
    gw, gh = gts[:, 2] - gts[:, 0] + 1, gts[:, 3] - gts[:, 1] + 1
    out = np.stack([(gts[:, 0] + 0.5 * gw - boxes[:, 0] - 0.5 * bw) / bw,
                    (gts[:, 1] + 0.5 * gh - boxes[:, 1] - 0.5 * bh) / bh, np.log(gw / bw), np.log(gh / bh)], 1)
    if weights is not None:
        out = out / np.asarray(weights, out.dtype)
    return out.astype(boxes.dtype, copy=False)


def sample(candidates, num, rng, use_random):
    """At most ``num`` of ``candidates`` (an index array): a uniformly random subset when ``use_random``, else the
    first ones."""
    if len(candidates) <= num:
        return candidates
    if use_random:
        return candidates[rng.choice(len(candidates), num, replace=False)]
    return candidates[:num]


def _lod1(ctx, slot, op):
    lod = ctx.input_lod(slot)
    if len(lod) != 1:
        raise ValueError(f"{op}: Input({slot}) needs 1 level of LoD (the boxes of each image), but received "
                         f"{len(lod)} levels, LoD {lod}.")
    return lod_offsets(lod[0])


def _check_rank2(op, **slots):
    for slot, v in slots.items():
        if len(v.shape) != 2:
            raise ValueError(f"{op}: The dimensions size of Input({slot}) must be 2. But received dimensions size="
                             f"[{len(v.shape)}], dimensions={list(v.shape)}.")


# --- rpn_target_assign / retinanet_target_assign ---------------------------------------------------------
def assign_anchors(overlaps, attrs, rng, use_random):
    """One image's anchor labels from ``overlaps`` [A, G]: (rows of the anchors whose box is regressed, the
    ground truth of each, their inside weights [L, 4], the scored rows (foreground first, then background), how
    many of those are foreground). Foreground: the best anchor(s) of each ground truth and anchors with
    IoU >= positive_overlap; background: best IoU < negative_overlap; a sampled background anchor that was
    foreground turns background, and its regression row (fluid keeps it) points at the first foreground anchor
    with zero weights."""
    a, g = overlaps.shape
    best = overlaps.max(axis=1) if g else np.full(a, -np.inf, overlaps.dtype)
    argbest = overlaps.argmax(axis=1) if g else np.zeros(a, np.int64)
    best_of_gt = overlaps.max(axis=0) if a else np.zeros(g, overlaps.dtype)
    is_best = (np.abs(overlaps - best_of_gt) < _EPS).any(axis=1)
    fg = np.flatnonzero(is_best | (best >= attrs["positive_overlap"]))
    batch, fraction = attrs["batch_size"], attrs["fg_fraction"]
    sampling = fraction > 0 and batch > 0
    if sampling:
        fg = sample(fg, int(fraction * batch), rng, use_random)
    label = np.full(a, -1, np.int64)
    label[fg] = 1
    bg = np.flatnonzero(best < attrs["negative_overlap"])
    if sampling:
        bg = sample(bg, batch - len(fg), rng, use_random)
    fake = int((label[bg] == 1).sum())
    label[bg] = 0
    fg_rows, bg_rows = np.flatnonzero(label == 1), np.flatnonzero(label == 0)
    loc = np.concatenate([np.repeat(fg[:1], fake), fg_rows]).astype(np.int64)
    weights = np.repeat(np.array([0, 1], overlaps.dtype), [fake, len(fg_rows)])[:, None].repeat(4, 1)
    return loc, argbest[loc], weights, np.concatenate([fg_rows, bg_rows]), len(fg_rows)


def _target_infer(op, anchor, gt_boxes, im_info, *extra):
    _check_rank2(op, Anchor=anchor, GtBoxes=gt_boxes, ImInfo=im_info, **dict(extra))
    return [((-1,), "int32"), ((-1,), "int32"), ((-1, 1), "int32"), ((-1, 4), anchor.dtype),
            ((-1, 4), anchor.dtype)]


def _assign_images(ctx, op, anchor, gt_boxes, is_crowd, im_info, attrs, straddle, use_random, gt_labels=None):
    """Run assign_anchors over the images (see the module docstring for why per image); returns the outputs of
    rpn_target_assign and the per-image foreground counts (retinanet's ForegroundNumber minus one)."""
    box_off = _lod1(ctx, "GtBoxes", op)
    crowd_off = _lod1(ctx, "IsCrowd", op)
    label_off = _lod1(ctx, "GtLabels", op) if gt_labels is not None else None
    n, num_anchors = len(box_off) - 1, len(anchor)
    if len(im_info) < n:
        raise ValueError(f"{op}: Input(ImInfo) has {len(im_info)} rows for the {n} images of Input(GtBoxes)'s LoD.")
    rng = ctx.random
    parts = {k: [] for k in ("loc", "score", "label", "bbox", "weight")}
    loc_counts, score_counts, fg_counts = [], [], []
    for i in range(n):
        h, w, scale = im_info[i, 0], im_info[i, 1], im_info[i, 2]
        if straddle >= 0:
            inside = np.flatnonzero((anchor[:, 0] >= -straddle) & (anchor[:, 1] >= -straddle)
                                    & (anchor[:, 2] < w + straddle) & (anchor[:, 3] < h + straddle))
        else:
            inside = np.arange(num_anchors)
        keep = is_crowd[crowd_off[i]:crowd_off[i + 1]].reshape(-1) == 0
        gts = gt_boxes[box_off[i]:box_off[i + 1]][keep] * scale
        loc, gt_idx, weights, score, n_fg = assign_anchors(pixel_overlaps(anchor[inside], gts), attrs, rng,
                                                           use_random)
        labels = np.concatenate([np.ones(n_fg, np.int32), np.zeros(len(score) - n_fg, np.int32)])
        if gt_labels is not None:
            classes = gt_labels[label_off[i]:label_off[i + 1]].reshape(-1)[keep]
            labels[:n_fg] = classes[gt_idx[len(loc) - n_fg:]] if n_fg else labels[:0]
        parts["loc"].append(inside[loc] + i * num_anchors)
        parts["score"].append(inside[score] + i * num_anchors)
        parts["label"].append(labels)
        parts["bbox"].append(box_to_delta(anchor[inside[loc]], gts[gt_idx]) if len(loc) else
                             np.zeros((0, 4), anchor.dtype))
        parts["weight"].append(weights)
        loc_counts.append(len(loc))
        score_counts.append(len(score))
        fg_counts.append(len(loc))
    for slot, counts in (("LocationIndex", loc_counts), ("TargetBBox", loc_counts), ("BBoxInsideWeight", loc_counts),
                         ("ScoreIndex", score_counts), ("TargetLabel", score_counts)):
        ctx.set_output_lod(slot, [counts])
    outs = (np.concatenate(parts["loc"]).astype(np.int32), np.concatenate(parts["score"]).astype(np.int32),
            np.concatenate(parts["label"]).reshape(-1, 1).astype(np.int32),
            np.concatenate(parts["bbox"]).reshape(-1, 4).astype(anchor.dtype, copy=False),
            np.concatenate(parts["weight"]).reshape(-1, 4).astype(anchor.dtype, copy=False))
    return outs, fg_counts


_TARGET_OUTS = ("LocationIndex", "ScoreIndex", "TargetLabel", "TargetBBox", "BBoxInsideWeight")


@register_op("rpn_target_assign", inputs=("Anchor", "GtBoxes", "IsCrowd", "ImInfo"), outputs=_TARGET_OUTS,
             attrs={"rpn_batch_size_per_im": 256, "rpn_straddle_thresh": 0.0, "rpn_positive_overlap": 0.7,
                    "rpn_negative_overlap": 0.3, "rpn_fg_fraction": 0.25, "use_random": True},
             infer_shape=lambda attrs, anchor, gt, crowd, info: _target_infer("rpn_target_assign", anchor, gt, info),
             context=True, no_gradient=True)
def _rpn_target_assign(ctx, attrs, anchor, gt_boxes, is_crowd, im_info):
    _target_infer("rpn_target_assign", anchor, gt_boxes, im_info)
    plan = {"batch_size": attrs["rpn_batch_size_per_im"], "fg_fraction": attrs["rpn_fg_fraction"],
            "positive_overlap": attrs["rpn_positive_overlap"], "negative_overlap": attrs["rpn_negative_overlap"]}
    return _assign_images(ctx, "rpn_target_assign", anchor, gt_boxes, is_crowd, im_info, plan,
                          attrs["rpn_straddle_thresh"], attrs["use_random"])[0]


def _retina_infer(attrs, anchor, gt_boxes, gt_labels, is_crowd, im_info):
    return _target_infer("retinanet_target_assign", anchor, gt_boxes, im_info, ("GtLabels", gt_labels)) + [
        ((-1, 1), "int32")]


@register_op("retinanet_target_assign", inputs=("Anchor", "GtBoxes", "GtLabels", "IsCrowd", "ImInfo"),
             outputs=_TARGET_OUTS + ("ForegroundNumber",), attrs={"positive_overlap": 0.5, "negative_overlap": 0.4},
             infer_shape=_retina_infer, context=True, no_gradient=True)
def _retinanet_target_assign(ctx, attrs, anchor, gt_boxes, gt_labels, is_crowd, im_info):
    _retina_infer(attrs, anchor, gt_boxes, gt_labels, is_crowd, im_info)
    plan = {"batch_size": -1, "fg_fraction": -1.0, "positive_overlap": attrs["positive_overlap"],
            "negative_overlap": attrs["negative_overlap"]}
    outs, fg_counts = _assign_images(ctx, "retinanet_target_assign", anchor, gt_boxes, is_crowd, im_info, plan, -1,
                                     False, gt_labels=gt_labels)
    ctx.set_output_lod("ForegroundNumber", [[1] * len(fg_counts)])
    return outs + (np.asarray(fg_counts, np.int32).reshape(-1, 1) + 1,)  # + 1: fluid's guard against dividing by 0


# --- generate_proposal_labels ----------------------------------------------------------------------------
def _labels_infer(attrs, rois, gt_classes, is_crowd, gt_boxes, im_info):
    _check_rank2("generate_proposal_labels", RpnRois=rois, GtBoxes=gt_boxes, ImInfo=im_info)
    width = 4 * attrs["class_nums"]
    return (((-1, 4), rois.dtype), ((-1, 1), "int32"), ((-1, width), rois.dtype), ((-1, width), rois.dtype),
            ((-1, width), rois.dtype))


def sample_rois(rois, gts, crowd, attrs, rng):
    """One image's (sampled rows of ``rois``, their ground truth or -1 for background). ``rois`` are at the
    original scale, the ground-truth boxes first unless ``is_cascade_rcnn``."""
    overlaps = pixel_overlaps(rois, gts)
    best = overlaps.max(axis=1) if len(gts) else np.zeros(len(rois), rois.dtype)
    best[:len(crowd)][crowd[:len(best)] != 0] = -1  # a crowd ground truth is never an example
    first = (np.abs(overlaps - best[:, None]) < _EPS).argmax(axis=1) if len(gts) else np.zeros(len(rois), np.int64)
    ok = np.ones(len(rois), bool)
    if attrs["is_cascade_rcnn"]:  # an empty box takes no part
        ok = (rois[:, 2] - rois[:, 0] + 1 > 0) & (rois[:, 3] - rois[:, 1] + 1 > 0)
    fg = np.flatnonzero(ok & (best >= attrs["fg_thresh"]))
    bg = np.flatnonzero(ok & (best < attrs["fg_thresh"]) & (best >= attrs["bg_thresh_lo"])
                        & (best < attrs["bg_thresh_hi"]))
    if not attrs["is_cascade_rcnn"]:
        per_im = attrs["batch_size_per_im"]
        fg = sample(fg, int(np.floor(per_im * attrs["fg_fraction"])), rng, attrs["use_random"])
        bg = sample(bg, per_im - len(fg), rng, attrs["use_random"])
    return np.concatenate([fg, bg]), np.concatenate([first[fg], np.full(len(bg), -1, np.int64)])


@register_op("generate_proposal_labels", inputs=("RpnRois", "GtClasses", "IsCrowd", "GtBoxes", "ImInfo"),
             outputs=("Rois", "LabelsInt32", "BboxTargets", "BboxInsideWeights", "BboxOutsideWeights"),
             attrs={"batch_size_per_im": 256, "fg_fraction": 0.25, "fg_thresh": 0.25, "bg_thresh_hi": 0.5,
                    "bg_thresh_lo": 0.0, "bbox_reg_weights": [0.1, 0.1, 0.2, 0.2], "class_nums": 0,
                    "use_random": True, "is_cls_agnostic": False, "is_cascade_rcnn": False},
             infer_shape=_labels_infer, context=True, no_gradient=True)
def _generate_proposal_labels(ctx, attrs, rpn_rois, gt_classes, is_crowd, gt_boxes, im_info):
    _labels_infer(attrs, rpn_rois, gt_classes, is_crowd, gt_boxes, im_info)
    op = "generate_proposal_labels"
    roi_off, cls_off, crowd_off, box_off = (_lod1(ctx, s, op) for s in ("RpnRois", "GtClasses", "IsCrowd", "GtBoxes"))
    width, dtype = 4 * attrs["class_nums"], rpn_rois.dtype
    outs, counts, rng = [[] for _ in range(5)], [], ctx.random
    for i in range(len(roi_off) - 1):  # per image: see the module docstring
        rois = rpn_rois[roi_off[i]:roi_off[i + 1]]
        if not len(rois):
            counts.append(0)
            continue
        rois, scale = rois.astype(np.float64), np.float64(im_info[i, 2])  # float64 inside: no rounding drift
        gts = gt_boxes[box_off[i]:box_off[i + 1]].astype(np.float64)
        classes = gt_classes[cls_off[i]:cls_off[i + 1]].reshape(-1)
        crowd = is_crowd[crowd_off[i]:crowd_off[i + 1]].reshape(-1)
        if attrs["is_cascade_rcnn"]:  # fluid leaves the first len(gts) rows at their scale
            boxes = np.concatenate([rois[:len(gts)], rois[len(gts):] / scale])
        else:
            boxes = np.concatenate([gts, rois / scale])
        rows, gt_idx = sample_rois(boxes, gts, crowd, attrs, rng)
        fg = gt_idx >= 0
        labels = np.where(fg, classes[np.maximum(gt_idx, 0)] if len(classes) else 0, 0).astype(np.int32)
        targets = np.zeros((len(rows), width), dtype)
        weights = np.zeros((len(rows), width), dtype)
        deltas = box_to_delta(boxes[rows[fg]], gts[gt_idx[fg]], attrs["bbox_reg_weights"]).astype(dtype)
        column = np.where(labels[fg] > 0, 1 if attrs["is_cls_agnostic"] else labels[fg], -1)
        has = column > 0
        cols = 4 * column[has, None] + np.arange(4)
        targets[np.flatnonzero(fg)[has, None], cols] = deltas[has]
        weights[np.flatnonzero(fg)[has, None], cols] = 1
        for out, value in zip(outs, (boxes[rows] * scale, labels.reshape(-1, 1), targets, weights, weights.copy())):
            out.append(value)
        counts.append(len(rows))
    for slot in ("Rois", "LabelsInt32", "BboxTargets", "BboxInsideWeights", "BboxOutsideWeights"):
        ctx.set_output_lod(slot, [counts])
    empty = (np.zeros((0, 4), dtype), np.zeros((0, 1), np.int32)) + (np.zeros((0, width), dtype),) * 3
    return tuple(np.concatenate(o).astype(e.dtype, copy=False) if o else e for o, e in zip(outs, empty))
