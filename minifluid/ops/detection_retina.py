"""RetinaNet's detection output: retinanet_detection_output decodes the anchors of every FPN level, keeps each
level's best ``nms_top_k`` (class, anchor) scores above ``score_threshold`` (any positive score on the last
level), runs greedy NMS per image and class and keeps the best ``keep_top_k`` detections of each image, as one
LoD sequence of rows [label + 1, score, xmin, ymin, xmax, ymax] per image (in the original image's pixels).

Every image and class runs at once: the candidates of all levels are ranked per (image, class) row by one stable
sort, and the greedy NMS of ops/detection_nms.py runs all rows together. The op has no gradient (fluid's has
none).
"""
import numpy as np

from .detection_nms import best_first, greedy_nms
from .registry import register_op
from .sequence import lod_offsets


def _retina_infer(attrs, boxes, scores, anchors, im_info):
    op = "retinanet_detection_output"
    if not (len(boxes) == len(scores) == len(anchors)) or not boxes:
        raise ValueError(f"{op}: Input(BBoxes), Input(Scores) and Input(Anchors) must hold one tensor per FPN level "
                         f"each, but received {len(boxes)}, {len(scores)} and {len(anchors)}.")
    for level, (b, s, a) in enumerate(zip(boxes, scores, anchors)):
        if len(b.shape) != 3 or b.shape[2] not in (4, -1):
            raise ValueError(f"{op}: Input(BBoxes) of level {level} must be [N, M, 4], but received "
                             f"{list(b.shape)}.")
        if len(s.shape) != 3:
            raise ValueError(f"{op}: Input(Scores) of level {level} must be [N, M, C], but received "
                             f"{list(s.shape)}.")
        if len(a.shape) != 2 or a.shape[1] not in (4, -1):
            raise ValueError(f"{op}: Input(Anchors) of level {level} must be [M, 4], but received {list(a.shape)}.")
        dims = (b.shape[1], s.shape[1], a.shape[0])
        if all(d >= 0 for d in dims) and len(set(dims)) != 1:
            raise ValueError(f"{op}: level {level} has {b.shape[1]} boxes in Input(BBoxes), {s.shape[1]} in "
                             f"Input(Scores) and {a.shape[0]} in Input(Anchors); they must be equal.")
    if len(im_info.shape) != 2 or im_info.shape[1] not in (3, -1):
        raise ValueError(f"{op}: Input(ImInfo) must be [N, 3], but received {list(im_info.shape)}.")
    return (-1, 6), scores[0].dtype


def _level_candidates(boxes, scores, anchors, threshold, top_k, im_info):
    """One level's best ``top_k`` (anchor, class) pairs per image above ``threshold``: (decoded boxes [N, K, 4]
    in original pixels, scores [N, K], classes [N, K], valid [N, K]), best first."""
    n, m, c = scores.shape
    flat = scores.reshape(n, m * c)
    order = best_first(np.where(flat > threshold, flat, -np.inf), top_k)
    ranked = np.take_along_axis(flat, order, 1)
    anchor, cls = order // c, order % c
    a = anchors[anchor]
    d = np.take_along_axis(boxes, anchor[..., None], 1)
    dtype = a.dtype.type
    w, h = a[..., 2] - a[..., 0] + 1, a[..., 3] - a[..., 1] + 1
    cx, cy = d[..., 0] * w + a[..., 0] + w / dtype(2), d[..., 1] * h + a[..., 1] + h / dtype(2)
    bw, bh = np.exp(d[..., 2]) * w, np.exp(d[..., 3]) * h
    out = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2 - 1, cy + bh / 2 - 1], -1)
    scale = im_info[:, 2, None, None].astype(out.dtype)
    out = out / scale
    size = np.round(im_info[:, :2] / im_info[:, 2:3]).astype(out.dtype)  # original (h, w)
    hi = np.stack([size[:, 1], size[:, 0], size[:, 1], size[:, 0]], -1)[:, None, :] - 1
    out = np.maximum(np.minimum(out, hi), 0).astype(scores.dtype, copy=False)
    return out, ranked, cls, ranked > threshold


@register_op("retinanet_detection_output", inputs=("BBoxes", "Scores", "Anchors", "ImInfo"), outputs=("Out",),
             attrs={"score_threshold": 0.05, "nms_top_k": 1000, "keep_top_k": 100, "nms_threshold": 0.3,
                    "nms_eta": 1.0},
             duplicable=("BBoxes", "Scores", "Anchors"), infer_shape=_retina_infer, context=True, no_gradient=True)
def _retinanet_detection_output(ctx, attrs, boxes, scores, anchors, im_info):
    _retina_infer(attrs, boxes, scores, anchors, im_info)
    n, c = scores[0].shape[0], scores[0].shape[2]
    last = len(scores) - 1
    parts = [_level_candidates(b, s, a, attrs["score_threshold"] if level < last else 0.0, attrs["nms_top_k"],
                               im_info)
             for level, (b, s, a) in enumerate(zip(boxes, scores, anchors))]
    cand_boxes, cand_scores, cand_cls, cand_valid = (np.concatenate(p, 1) for p in zip(*parts))
    # per (image, class) row: that class's valid candidates, best first (ties: lower level, then better rank)
    per_class = np.where(cand_valid[:, None, :] & (cand_cls[:, None, :] == np.arange(c)[None, :, None]),
                         cand_scores[:, None, :], -np.inf)  # [N, C, K]
    order = np.argsort(-per_class, axis=2, kind="stable")
    ranked = np.take_along_axis(per_class, order, 2)
    width = int((ranked > -np.inf).sum(2).max(initial=0))
    order, ranked = order[..., :width], ranked[..., :width]
    rows_boxes = cand_boxes[np.arange(n)[:, None, None], order]  # [N, C, W, 4]
    kept = greedy_nms(rows_boxes.reshape(n * c, width, 4), (ranked > -np.inf).reshape(n * c, width),
                      attrs["nms_threshold"], attrs["nms_eta"], normalized=False).reshape(n, c, width)
    img, cls, rank = np.nonzero(kept)
    score = ranked[img, cls, rank]
    best = np.lexsort((rank, cls, -score, img))  # per image best first (ties: lower class, then NMS order)
    img, cls, rank, score = img[best], cls[best], rank[best], score[best]
    if attrs["keep_top_k"] > -1:
        place = np.arange(len(img)) - lod_offsets(np.bincount(img, minlength=n))[img]
        keep = place < attrs["keep_top_k"]
        img, cls, rank, score = img[keep], cls[keep], rank[keep], score[keep]
    ctx.set_output_lod("Out", [np.bincount(img, minlength=n).tolist()])
    out = np.concatenate([(cls + 1)[:, None], score[:, None], rows_boxes[img, cls, rank]], 1)
    return out.astype(scores[0].dtype, copy=False).reshape(-1, 6)
