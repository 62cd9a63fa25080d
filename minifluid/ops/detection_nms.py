"""Non-maximum suppression: multiclass_nms / multiclass_nms2 (SSD's detection output), matrix_nms and
locality_aware_nms, each giving the detections of every image as one LoD sequence of rows
[label, score, xmin, ymin, xmax, ymax] (and, where fluid has it, their Index into the flattened input boxes).

Greedy NMS is sequential by nature (whether a box survives depends on which boxes survived before it, and with
nms_eta < 1 on how many), so it loops per kept box, but over every (image, class) row at once: each step keeps the
next survivor of every row and compares it with all candidates of its row in one vectorised IoU, so a batch costs
as many steps as the most boxes one class of one image keeps. Matrix NMS has no such chain: it runs every image
and class at once, in chunks of [rows, K, K] IoU matrices. The nms_top_k candidates come from one partition.
locality_aware_nms first merges runs of consecutive overlapping boxes, a chain over the boxes in input order
(each merge moves the box the next one is compared with), so that pass loops over the boxes of an image.
Rotated / polygon boxes (8 to 32 coordinates) are not supported: the ops say so.
"""
import numpy as np

from .registry import register_op
from .sequence import lod_offsets, row_segments

_CHUNK = 1 << 20  # matrix_nms: IoU entries per chunk of (image, class) rows


def box_area(x, normalized):
    """Areas of [..., 4] boxes as fluid's NMS counts them: 0 for xmax < xmin or ymax < ymin, pixels inclusive
    when not ``normalized``."""
    one = 0.0 if normalized else 1.0
    bad = (x[..., 2] < x[..., 0]) | (x[..., 3] < x[..., 1])
    return np.where(bad, 0.0, (x[..., 2] - x[..., 0] + one) * (x[..., 3] - x[..., 1] + one)).astype(x.dtype)


def overlap(a, b, normalized, area_a=None, area_b=None):
    """fluid's Jaccard overlap of [..., 4] boxes ``a`` and ``b`` (broadcast; their ``box_area`` may be given):
    0 for disjoint boxes."""
    one = 0.0 if normalized else 1.0
    area_a = box_area(a, normalized) if area_a is None else area_a
    area_b = box_area(b, normalized) if area_b is None else area_b
    disjoint = (b[..., 0] > a[..., 2]) | (b[..., 2] < a[..., 0]) | (b[..., 1] > a[..., 3]) | (b[..., 3] < a[..., 1])
    inter = ((np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + one)
             * (np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + one))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(disjoint, 0.0, inter / (area_a + area_b - inter)).astype(inter.dtype, copy=False)


def greedy_nms(boxes, valid, threshold, eta, normalized):
    """Greedy NMS of R independent rows of K candidates taken in order (best first), all rows at once: a candidate
    is kept when its overlap with every box kept before it in its row is at most the row's threshold, which
    shrinks by ``eta`` after each keep while above 0.5. ``boxes`` [R, K, 4], ``valid`` [R, K]; returns the kept
    mask [R, K]. Each step keeps the next survivor of every row, so the steps are as many as the most boxes one
    row keeps."""
    r, k = valid.shape
    dtype = boxes.dtype.type
    kept = np.zeros((r, k), bool)
    if not k:
        return kept
    worst = np.zeros((r, k), boxes.dtype)  # each candidate's largest overlap with the boxes kept in its row
    thresholds = np.full(r, threshold, boxes.dtype)
    nxt = np.zeros(r, np.int64)  # the first candidate of each row not yet decided
    areas = box_area(boxes, normalized)
    rows, positions = np.arange(r), np.arange(k)
    while len(rows):
        ok = valid[rows] & (worst[rows] <= thresholds[rows, None]) & (positions >= nxt[rows, None])
        j = ok.argmax(axis=1)
        found = ok[np.arange(len(rows)), j]
        rows, j = rows[found], j[found]  # a row with no survivor left is done
        kept[rows, j] = True
        nxt[rows] = j + 1
        ov = overlap(boxes[rows, j][:, None], boxes[rows], normalized, areas[rows, j][:, None], areas[rows])
        worst[rows] = np.maximum(worst[rows], ov)
        if eta < 1:
            t = thresholds[rows]
            thresholds[rows] = np.where(t > 0.5, t * dtype(eta), t)
    return kept


def best_first(scores, k):
    """Indices [..., min(k, M)] of the k best of ``scores`` [..., M] along the last axis, best first, ties in index
    order: the head of a stable descending sort, found by one partition (k < 0: all)."""
    m = scores.shape[-1]
    if k < 0 or k >= m:
        return np.argsort(-scores, axis=-1, kind="stable")
    neg = -scores
    kth = np.partition(neg, k - 1, axis=-1)[..., k - 1:k]
    better, tie = neg < kth, neg == kth
    take = better | (tie & (np.cumsum(tie, axis=-1) <= k - better.sum(-1, keepdims=True)))  # first ties by index
    idx = np.nonzero(take)[-1].reshape(scores.shape[:-1] + (k,))
    return np.take_along_axis(idx, np.argsort(np.take_along_axis(neg, idx, -1), axis=-1, kind="stable"), -1)


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


def _per_image(ctx, boxes, scores):
    """Scores [N, C, M'] and boxes [N, 1 or C, M', 4] per image (M' the most boxes of an image; the padding scores
    -inf), and each image's first row in the input: [N, M, 4] boxes shared by the classes of [N, C, M] scores, or
    LoD boxes [M, C, 4] per class with scores [M, C]."""
    if scores.ndim == 3:
        return scores, boxes[:, None], np.arange(scores.shape[0]) * scores.shape[2]
    lod = ctx.input_lod("BBoxes")
    if not lod:
        raise ValueError("multiclass_nms: Input(BBoxes) [M, C, 4] with 2-D Input(Scores) needs a LoD giving the "
                         "boxes of each image")
    lengths = np.asarray(lod[-1], np.int64)
    seq, pos, offsets = row_segments(lengths)
    n, c, width = len(lengths), scores.shape[1], int(lengths.max(initial=0))
    padded_scores = np.full((n, width, c), -np.inf, scores.dtype)
    padded_scores[seq, pos] = scores
    padded_boxes = np.zeros((n, width, c, 4), boxes.dtype)
    padded_boxes[seq, pos] = boxes
    return padded_scores.transpose(0, 2, 1), padded_boxes.transpose(0, 2, 1, 3), offsets[:-1]


def _multiclass_select(attrs, scores, boxes):
    """(image, label, box index) of the detections kept in [N, C, M] ``scores`` over ``boxes`` [N, 1 or C, M, 4],
    ordered by image, then label, then best first."""
    n, c, m = scores.shape
    order = best_first(scores, attrs["nms_top_k"])
    ranked = np.take_along_axis(scores, order, axis=2)
    valid = ranked > attrs["score_threshold"]
    if 0 <= attrs["background_label"] < c:
        valid[:, attrs["background_label"]] = False
    image = np.arange(n)[:, None, None]
    cand = boxes[image, np.arange(c)[:, None] if boxes.shape[1] > 1 else 0, order]  # [N, C, K, 4]
    kept = greedy_nms(cand.reshape(n * c, -1, 4), valid.reshape(n * c, -1), attrs["nms_threshold"],
                      attrs["nms_eta"], attrs["normalized"]).reshape(valid.shape)
    img, cls, rank = np.nonzero(kept)
    idx, score = order[img, cls, rank], ranked[img, cls, rank]
    if attrs["keep_top_k"] > -1:  # per image the best keep_top_k over all classes (ties: lower label first)
        best = np.lexsort((idx, cls, -score, img))
        place = np.empty(len(best), np.int64)
        place[best] = np.arange(len(best)) - lod_offsets(np.bincount(img, minlength=n))[img[best]]
        keep = place < attrs["keep_top_k"]
        img, cls, idx = img[keep], cls[keep], idx[keep]
    return img, cls, idx


def _multiclass_nms(ctx, attrs, boxes, scores, with_index):
    _nms_infer(attrs, boxes, scores)
    _check_box_size("multiclass_nms", boxes)
    per_image, per_image_boxes, starts = _per_image(ctx, boxes, scores)
    img, cls, idx = _multiclass_select(attrs, per_image, per_image_boxes)
    if scores.ndim == 2:  # fluid lists the detections of LoD boxes in box order within each label
        order = np.lexsort((idx, cls, img))
        img, cls, idx = img[order], cls[order], idx[order]
        index = (starts[img] + idx) * scores.shape[1] + cls
    else:
        index = starts[img] + idx
    counts = np.bincount(img, minlength=len(starts)).tolist()
    if sum(counts) == 0 and not with_index:  # fluid's "no detection" marker: one row holding -1
        ctx.set_output_lod("Out", [[1]])
        return np.full((1, 1), -1, boxes.dtype), None
    box = per_image_boxes[img, cls if per_image_boxes.shape[1] > 1 else 0, idx]
    out = np.concatenate([cls[:, None], per_image[img, cls, idx][:, None], box], 1).astype(boxes.dtype)
    ctx.set_output_lod("Out", [counts])
    if not with_index:
        return out, None
    ctx.set_output_lod("Index", [counts])
    return out, index.astype(np.int32).reshape(-1, 1)


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
    order = best_first(flat, attrs["nms_top_k"])
    k = order.shape[1]
    ranked = np.take_along_axis(flat, order, axis=1)
    valid = ranked > attrs["score_threshold"]
    image = np.repeat(np.arange(n), len(classes))
    decayed = np.zeros(ranked.shape, scores.dtype)
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
    boxes, scores = boxes.copy(), scores.copy()
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
    merged, merged_scores = np.empty_like(boxes), np.empty(scores.shape, scores.dtype)
    for i in range(scores.shape[0]):  # the merging pass is a chain per image (module docstring)
        merged[i], runs, ends = merge_runs(boxes[i], scores[i, 0], attrs["nms_threshold"], attrs["normalized"])
        merged_scores[i, 0] = np.where(ends, runs, -np.inf)  # only the box that ended a run is a candidate
    img, _, idx = _multiclass_select(attrs, merged_scores, merged[:, None])
    if not len(img):
        ctx.set_output_lod("Out", [[1]])
        return np.full((1, 1), -1, boxes.dtype)
    ctx.set_output_lod("Out", [np.bincount(img, minlength=scores.shape[0]).tolist()])
    return np.concatenate([np.zeros((len(img), 1)), merged_scores[img, 0, idx][:, None], merged[img, idx]],
                          1).astype(boxes.dtype)
