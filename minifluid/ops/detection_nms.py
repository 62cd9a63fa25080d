"""Non-maximum suppression: multiclass_nms / multiclass_nms2 (SSD's detection output), matrix_nms and
locality_aware_nms, each giving the detections of every image as one LoD sequence of rows
[label, score, xmin, ymin, xmax, ymax] (and, where fluid has it, their Index into the flattened input boxes).

Greedy NMS is sequential by nature (whether a box survives depends on which boxes survived before it, and with
nms_eta < 1 on how many), so multiclass_nms loops per image, per class and per kept box; each step compares the
kept box with every candidate of its class in one vectorised IoU and drops all it suppresses at once. Matrix NMS
has no such chain: it runs every image and class at once, in chunks of [rows, K, K] IoU matrices.
locality_aware_nms first merges runs of consecutive overlapping boxes, a chain over the boxes in input order
(each merge moves the box the next one is compared with), so that pass loops over the boxes of an image.
Rotated / polygon boxes (8 to 32 coordinates) are not supported: the ops say so.
"""
import numpy as np

from .registry import register_op
from .sequence import lod_offsets

_CHUNK = 1 << 20  # matrix_nms: IoU entries per chunk of (image, class) rows


def overlap(a, b, normalized):
    """fluid's Jaccard overlap of [..., 4] boxes ``a`` and ``b`` (broadcast): 0 for disjoint boxes, a box with
    xmax < xmin or ymax < ymin has no area, unnormalized boxes count their pixels inclusively."""
    one = 0.0 if normalized else 1.0

    def area(x):
        bad = (x[..., 2] < x[..., 0]) | (x[..., 3] < x[..., 1])
        return np.where(bad, 0.0, (x[..., 2] - x[..., 0] + one) * (x[..., 3] - x[..., 1] + one))
    disjoint = (b[..., 0] > a[..., 2]) | (b[..., 2] < a[..., 0]) | (b[..., 1] > a[..., 3]) | (b[..., 3] < a[..., 1])
    inter = ((np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + one)
             * (np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + one))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(disjoint, 0.0, inter / (area(a) + area(b) - inter))


def greedy_nms(boxes, threshold, eta, normalized):
    """Positions kept by greedy NMS of ``boxes`` [K, 4] taken in order (best first): a box survives when its
    overlap with every box kept before it is at most the threshold, which shrinks by ``eta`` after each keep
    while above 0.5."""
    alive, kept, pos = np.ones(len(boxes), bool), [], 0
    while pos < len(boxes):
        i = pos + int(alive[pos:].argmax())
        if not alive[i]:
            break
        row = overlap(boxes[i], boxes, normalized)
        pos = i + 1
        if eta < 1 and kept and not (row[kept] <= threshold).all():
            continue  # a lowered threshold: an earlier keep may now suppress it
        kept.append(i)
        alive &= row <= threshold
        if eta < 1 and threshold > 0.5:
            threshold *= eta
    return np.asarray(kept, np.int64)


def _check_box_size(op, boxes):
    if boxes.shape[-1] in (8, 16, 24, 32):
        raise NotImplementedError(f"{op}: polygon boxes ({boxes.shape[-1]} coordinates) are not supported by "
                                  f"minifluid; give [xmin, ymin, xmax, ymax] boxes")


# --- multiclass_nms / multiclass_nms2 -------------------------------------------------------------------
def _nms_infer(attrs, boxes, scores):
    if len(scores.shape) not in (2, 3):
        raise ValueError(f"The rank of Input(Scores) must be 2 or 3, but received shape {list(scores.shape)}.")
    if len(boxes.shape) != 3:
        raise ValueError(f"The rank of Input(BBoxes) must be 3, but received shape {list(boxes.shape)}.")
    if len(scores.shape) == 3:
        if boxes.shape[2] not in (4, 8, 16, 24, 32, -1):
            raise ValueError(f"The last dimension of Input(BBoxes) must be 4 or 8, represents the layout of "
                             f"coordinate [xmin, ymin, xmax, ymax] or 4 points: [x1, y1, x2, y2, x3, y3, x4, y4] or "
                             f"8, 12 or 16 points; but received shape {list(boxes.shape)}.")
        if -1 not in (boxes.shape[1], scores.shape[2]) and boxes.shape[1] != scores.shape[2]:
            raise ValueError(f"The 2nd dimension of Input(BBoxes) must be equal to last dimension of Input(Scores), "
                             f"which represents the predicted bboxes. But received box_dims[1]({boxes.shape[1]}) "
                             f"!= socre_dims[2]({scores.shape[2]})")
    else:
        if boxes.shape[2] not in (4, -1):
            raise ValueError(f"The last dimension of Input(BBoxes) must be 4, but received box_dims[2]"
                             f"({boxes.shape[2]}).")
        if -1 not in (boxes.shape[1], scores.shape[1]) and boxes.shape[1] != scores.shape[1]:
            raise ValueError(f"The 2nd dimension of Input(BBoxes) must be equal to the 2nd dimension of "
                             f"Input(Scores). But received box_dims[1]({boxes.shape[1]}) != "
                             f"score_dims[1]({scores.shape[1]})")
    width = boxes.shape[2] + 2 if boxes.shape[2] >= 0 else -1
    return ((-1, width), boxes.dtype), ((-1, 1), "int32")


def _multiclass_image(attrs, boxes, scores):
    """One image: boxes [C, M, 4] (per class), scores [C, M]. Returns (label, box index) of the kept detections
    in output order: by label, then best first (by box index for per-class boxes)."""
    c, m = scores.shape
    order = np.argsort(-scores, axis=1, kind="stable")
    ranked = np.take_along_axis(scores, order, axis=1)
    valid = ranked > attrs["score_threshold"]
    if attrs["nms_top_k"] > -1:
        valid[:, attrs["nms_top_k"]:] = False
    if 0 <= attrs["background_label"] < c:
        valid[attrs["background_label"]] = False
    cls, rank = np.nonzero(valid)  # row-major: by class, best first inside each
    idx = order[cls, rank]
    starts = lod_offsets(np.bincount(cls, minlength=c))
    kept = [s + greedy_nms(boxes[k, idx[s:e]], attrs["nms_threshold"], attrs["nms_eta"], attrs["normalized"])
            for k, (s, e) in enumerate(zip(starts[:-1], starts[1:])) if e > s]
    kept = np.concatenate(kept) if kept else np.zeros(0, np.int64)
    if -1 < attrs["keep_top_k"] < len(kept):  # the best keep_top_k over all classes (ties: lower label first)
        best = np.lexsort((idx[kept], cls[kept], -scores[cls[kept], idx[kept]]))
        kept = np.sort(kept[best[:attrs["keep_top_k"]]])
    return cls[kept], idx[kept]


def _multiclass_nms(ctx, attrs, boxes, scores, with_index):
    _nms_infer(attrs, boxes, scores)
    _check_box_size("multiclass_nms", boxes)
    if scores.ndim == 3:  # [N, M, 4] boxes shared by the classes of [N, C, M] scores
        images = [(boxes[i][None], scores[i], i * scores.shape[2]) for i in range(scores.shape[0])]
    else:  # LoD: image i is rows lod[i] of [M, C, 4] boxes and [M, C] scores
        lod = ctx.input_lod("BBoxes")
        if not lod:
            raise ValueError("multiclass_nms: Input(BBoxes) [M, C, 4] with 2-D Input(Scores) needs a LoD giving "
                             "the boxes of each image")
        offsets = lod_offsets(lod[-1])
        images = [(boxes[s:e].transpose(1, 0, 2), scores[s:e].T, s) for s, e in zip(offsets[:-1], offsets[1:])]
    rows, index, counts = [], [], []
    for per_class_boxes, image_scores, start in images:  # NMS is per image and class (module docstring)
        cls, idx = _multiclass_image(attrs, np.broadcast_to(per_class_boxes, image_scores.shape + (4,)),
                                     image_scores)
        if scores.ndim == 2:
            order = np.lexsort((idx, cls))
            cls, idx = cls[order], idx[order]
            index.append((start + idx) * scores.shape[1] + cls)
        else:
            index.append(start + idx)
        box = per_class_boxes[cls if per_class_boxes.shape[0] > 1 else 0, idx]
        rows.append(np.concatenate([cls[:, None], image_scores[cls, idx][:, None], box], 1).astype(boxes.dtype))
        counts.append(len(cls))
    if sum(counts) == 0 and not with_index:  # fluid's "no detection" marker: one row holding -1
        ctx.set_output_lod("Out", [[1]])
        return np.full((1, 1), -1, boxes.dtype), None
    ctx.set_output_lod("Out", [counts])
    out = np.concatenate(rows) if rows else np.zeros((0, boxes.shape[-1] + 2), boxes.dtype)
    if not with_index:
        return out, None
    ctx.set_output_lod("Index", [counts])
    return out, (np.concatenate(index) if index else np.zeros(0, np.int64)).astype(np.int32).reshape(-1, 1)


_NMS_ATTRS = {"background_label": 0, "score_threshold": 0.0, "nms_top_k": -1, "nms_threshold": 0.3, "nms_eta": 1.0,
              "keep_top_k": -1, "normalized": True}


@register_op("multiclass_nms", inputs=("BBoxes", "Scores"), outputs=("Out",), attrs=_NMS_ATTRS,
             infer_shape=lambda attrs, boxes, scores: _nms_infer(attrs, boxes, scores)[0], context=True,
             no_gradient=True)
def _multiclass_nms1(ctx, attrs, boxes, scores):
    return _multiclass_nms(ctx, attrs, boxes, scores, with_index=False)[0]


@register_op("multiclass_nms2", inputs=("BBoxes", "Scores"), outputs=("Out", "Index"), attrs=_NMS_ATTRS,
             infer_shape=_nms_infer, context=True, no_gradient=True)
def _multiclass_nms2(ctx, attrs, boxes, scores):
    return _multiclass_nms(ctx, attrs, boxes, scores, with_index=True)


# --- matrix_nms -----------------------------------------------------------------------------------------
def _matrix_infer(attrs, boxes, scores):
    if len(scores.shape) != 3 or len(boxes.shape) != 3:
        raise ValueError(f"matrix_nms: Input(BBoxes) must be [N, M, 4] and Input(Scores) [N, C, M], but received "
                         f"{list(boxes.shape)} and {list(scores.shape)}.")
    if boxes.shape[2] not in (4, -1):
        raise ValueError(f"The last dimension of Input(BBoxes) must be 4, but received {boxes.shape[2]}.")
    if -1 not in (boxes.shape[1], scores.shape[2]) and boxes.shape[1] != scores.shape[2]:
        raise ValueError(f"The 2nd dimension of Input(BBoxes) must be equal to last dimension of Input(Scores), "
                         f"which represents the predicted bboxes. But received box_dims[1]({boxes.shape[1]}) != "
                         f"score_dims[2]({scores.shape[2]})")
    return ((-1, 6), boxes.dtype), ((-1, 1), "int32")


def _matrix_decay(boxes, scores, valid, attrs):
    """Decayed scores [R, K] of R rows of K candidates (best first): each score times the least, over the better
    candidates j, of f(IoU with j, j's own largest IoU with a better one)."""
    iou = overlap(boxes[:, :, None], boxes[:, None, :], attrs["normalized"])  # [R, K, K]
    k = boxes.shape[1]
    iou = np.where(np.tril(np.ones((k, k), bool), -1) & valid[:, :, None] & valid[:, None, :], iou, 0.0)
    worst = iou.max(axis=2)  # each candidate's largest IoU with a better one
    if attrs["use_gaussian"]:
        decay = np.exp((worst[:, None, :] ** 2 - iou ** 2) * attrs["gaussian_sigma"])
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            decay = (1 - iou) / (1 - worst[:, None, :])
    decay = np.where(np.tril(np.ones((k, k), bool), -1), decay, 1.0)
    return np.minimum(np.fmin.reduce(decay, axis=2), 1.0) * scores  # fmin: a 0 / 0 decay counts as none


@register_op("matrix_nms", inputs=("BBoxes", "Scores"), outputs=("Out", "Index"),
             attrs={"background_label": 0, "score_threshold": 0.0, "post_threshold": 0.0, "nms_top_k": -1,
                    "keep_top_k": -1, "normalized": True, "use_gaussian": False, "gaussian_sigma": 2.0},
             infer_shape=_matrix_infer, context=True, no_gradient=True)
def _matrix_nms(ctx, attrs, boxes, scores):
    _matrix_infer(attrs, boxes, scores)
    n, c, m = scores.shape
    classes = np.array([k for k in range(c) if k != attrs["background_label"]], np.int64)
    flat = scores[:, classes].reshape(-1, m)  # one row per (image, class)
    order = np.argsort(-flat, axis=1, kind="stable")
    k = m if attrs["nms_top_k"] <= -1 else min(attrs["nms_top_k"], m)
    order = order[:, :k]
    ranked = np.take_along_axis(flat, order, axis=1)
    valid = ranked > attrs["score_threshold"]
    image = np.repeat(np.arange(n), len(classes))
    decayed = np.zeros(ranked.shape, np.float64)
    step = max(1, _CHUNK // max(k * k, 1))
    for s in range(0, len(flat), step):  # bounded memory: [step, K, K] IoUs at a time
        cand = boxes[image[s:s + step, None], order[s:s + step]]
        decayed[s:s + step] = _matrix_decay(cand, ranked[s:s + step], valid[s:s + step], attrs)
    keep = valid & (decayed > attrs["post_threshold"])
    row, rank = np.nonzero(keep)  # by image, class, then best first
    img, cls, idx, score = image[row], classes[row % len(classes)], order[row, rank], decayed[row, rank]
    pick = np.lexsort((np.arange(len(row)), -score, img))  # per image best first (ties: class order)
    pos = np.arange(len(pick)) - lod_offsets(np.bincount(img, minlength=n))[img[pick]]
    if attrs["keep_top_k"] > -1:
        pick = pick[pos < attrs["keep_top_k"]]
    img, cls, idx, score = img[pick], cls[pick], idx[pick], score[pick]
    counts = np.bincount(img, minlength=n).tolist()
    ctx.set_output_lod("Out", [counts])
    ctx.set_output_lod("Index", [counts])
    out = np.concatenate([cls[:, None], score[:, None], boxes[img, idx]], 1).astype(boxes.dtype)
    return out.reshape(-1, 6), (img * m + idx).astype(np.int32).reshape(-1, 1)


# --- locality_aware_nms ---------------------------------------------------------------------------------
def _locality_infer(attrs, boxes, scores):
    if len(scores.shape) != 3 or scores.shape[1] not in (1, -1):
        raise ValueError(f"locality_aware_nms only support one class, Tensor score shape must be [N, 1, M], but "
                         f"received Input(Scores) {list(scores.shape)}.")
    if len(boxes.shape) != 3:
        raise ValueError(f"The rank of Input(BBoxes) must be 3, but received shape {list(boxes.shape)}.")
    return _nms_infer(attrs, boxes, scores)[0]


def merge_runs(boxes, scores, threshold, normalized):
    """locality-aware merging, in input order: a box overlapping the current one by more than ``threshold`` is
    folded into it (coordinates weighted by score, scores summed); otherwise it becomes the current one.
    Returns (merged boxes, merged scores, mask of the boxes that ended a run)."""
    boxes, scores = boxes.astype(np.float64), scores.astype(np.float64)
    last = np.zeros(len(boxes), bool)
    cur = -1
    for i in range(len(boxes)):  # each comparison needs the box the previous merges made (module docstring)
        if cur > -1 and overlap(boxes[i], boxes[cur], normalized) > threshold:
            boxes[cur] = (boxes[i] * scores[i] + boxes[cur] * scores[cur]) / (scores[i] + scores[cur])
            scores[cur] += scores[i]
        else:
            if cur > -1:
                last[cur] = True
            cur = i
    if cur > -1:
        last[cur] = True
    return boxes, scores, last


@register_op("locality_aware_nms", inputs=("BBoxes", "Scores"), outputs=("Out",),
             attrs={**_NMS_ATTRS, "background_label": -1}, infer_shape=_locality_infer, context=True,
             no_gradient=True)
def _locality_aware_nms(ctx, attrs, boxes, scores):
    _locality_infer(attrs, boxes, scores)
    _check_box_size("locality_aware_nms", boxes)
    rows, counts = [], []
    for i in range(scores.shape[0]):  # the merging pass is a chain per image (module docstring)
        if attrs["background_label"] == 0:
            counts.append(0)
            continue
        merged, merged_scores, ends = merge_runs(boxes[i], scores[i, 0], attrs["nms_threshold"], attrs["normalized"])
        cand = np.flatnonzero(ends & (merged_scores > attrs["score_threshold"]))
        cand = cand[np.argsort(-merged_scores[cand], kind="stable")]
        if attrs["nms_top_k"] > -1:
            cand = cand[:attrs["nms_top_k"]]
        kept = cand[greedy_nms(merged[cand], attrs["nms_threshold"], attrs["nms_eta"], attrs["normalized"])]
        if attrs["keep_top_k"] > -1:
            kept = kept[:attrs["keep_top_k"]]
        rows.append(np.concatenate([np.zeros((len(kept), 1)), merged_scores[kept, None], merged[kept]], 1))
        counts.append(len(kept))
    if sum(counts) == 0:
        ctx.set_output_lod("Out", [[1]])
        return np.full((1, 1), -1, boxes.dtype)
    ctx.set_output_lod("Out", [counts])
    return np.concatenate(rows).astype(boxes.dtype)
