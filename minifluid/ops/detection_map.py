"""detection_map: mean average precision of detections (rows [label, score, xmin, ymin, xmax, ymax], LoD per
image) against the ground truth (rows [label, xmin, ymin, xmax, ymax] or [label, difficult, xmin, ...], LoD per
image), with the state that lets fluid.metrics.DetectionMAP accumulate over batches: the positives per class
(PosCount [C, 1]) and every detection's (score, true positive) and (score, false positive) flags (TruePos /
FalsePos [K, 2], LoD per class).

Matching is vectorised: every detection's best ground truth of its image and label is one masked IoU matrix, and
"the best-scored detection claims a ground truth first" is a first-occurrence test after one lexsort. The
precision / recall curve of each class is a cumulative sum; the classes (at most ``class_num``) are walked for
the AP. The op has no gradient (fluid's has none).
"""
import numpy as np

from .registry import register_op
from .sequence import lod_offsets, row_segments


def _map_infer(attrs, label, detect, has_state, pos_count, true_pos, false_pos):
    if len(detect.shape) != 2 or detect.shape[1] not in (6, 1, -1):
        raise ValueError(f"detection_map: Input(DetectRes) must be [M, 6] rows [label, score, xmin, ymin, xmax, "
                         f"ymax], but received shape {list(detect.shape)}.")
    if len(label.shape) != 2 or label.shape[1] not in (5, 6, -1):
        raise ValueError(f"detection_map: Input(Label) must be [N, 5] rows [label, xmin, ymin, xmax, ymax] or "
                         f"[N, 6] with the difficult flag second, but received shape {list(label.shape)}.")
    if attrs["ap_type"] not in ("integral", "11point"):
        raise ValueError(f"detection_map: ap_type must be 'integral' or '11point', but received "
                         f"'{attrs['ap_type']}'.")
    if attrs["class_num"] <= 0:
        raise ValueError(f"detection_map: class_num must be positive, but received {attrs['class_num']}.")
    c = attrs["class_num"]
    return ((1,), "float32"), ((c, 1), "int32"), ((-1, 2), detect.dtype), ((-1, 2), detect.dtype)


def _iou(a, b):
    """Normalized IoU [D, G] (fluid's detection_map counts no pixel ends)."""
    iw = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    ih = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    inter = iw * ih
    with np.errstate(divide="ignore", invalid="ignore"):
        out = inter / (area_a[:, None] + area_b[None, :] - inter)
    return np.where((iw < 0) | (ih < 0), 0.0, out)


def match_detections(gt, gt_image, det, det_image, overlap_threshold, evaluate_difficult):
    """(order of the recorded detections, their true-positive flags): per image and label, detections best
    first claim their best ground truth when the IoU exceeds the threshold; one that finds its ground truth
    already claimed, or none, is a false positive; one matching a difficult ground truth is not recorded unless
    ``evaluate_difficult``."""
    d_label, g_label = det[:, 0].astype(np.int64), gt[:, 0].astype(np.int64)
    same = (det_image[:, None] == gt_image[None, :]) & (d_label[:, None] == g_label[None, :])
    boxes = np.clip(det[:, 2:6], 0, 1)
    ov = np.where(same, _iou(boxes, gt[:, -4:]), -1.0)
    has_gt = same.any(axis=1)
    best = ov.argmax(axis=1) if gt.shape[0] else np.zeros(len(det), np.int64)
    best_ov = ov.max(axis=1, initial=-1.0)
    difficult = (np.abs(gt[:, 1]) >= 1e-6) if gt.shape[1] == 6 else np.zeros(len(gt), bool)
    hit = has_gt & (best_ov > overlap_threshold)
    counted = ~hit | evaluate_difficult | ~difficult[best] if len(gt) else np.ones(len(det), bool)
    # within an (image, label) that has ground truth fluid ranks the detections best first; otherwise input order
    order = np.lexsort((np.where(has_gt, -det[:, 1], 0), d_label, det_image))
    order = order[counted[order]]
    claim = np.where(hit[order], (det_image[order] * (len(gt) + 1) + best[order]), -1 - np.arange(len(order)))
    first = np.zeros(len(order), bool)
    _, where = np.unique(claim, return_index=True)
    first[where] = True
    return order, hit[order] & first


def average_precision(scores, tp, positives, ap_type):
    """One class's AP from its detections' scores and true-positive flags (fluid's integral / 11-point rules)."""
    order = np.argsort(-scores, kind="stable")
    tp_sum = np.cumsum(tp[order])
    fp_sum = np.cumsum(1 - tp[order])
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tp_sum / (tp_sum + fp_sum)
    recall = tp_sum / positives
    if ap_type == "integral":
        step = np.abs(recall - np.concatenate([[0.0], recall[:-1]]))
        return float(np.sum(np.where(step > 1e-6, precision * step, 0.0)))
    best, start = np.zeros(11), len(recall) - 1
    for j in range(10, -1, -1):  # fluid's scan: recall only grows along the detections
        below = np.flatnonzero(recall[:start + 1] < j / 10.0)
        stop = below[-1] if len(below) else -1
        if start > stop:
            best[j] = max(best[j], precision[stop + 1:start + 1].max())
        if len(below):
            start = stop
            if j > 0:
                best[j - 1] = best[j]
    return float(np.sum(best / 11))


@register_op("detection_map", inputs=("Label", "DetectRes", "HasState", "PosCount", "TruePos", "FalsePos"),
             outputs=("MAP", "AccumPosCount", "AccumTruePos", "AccumFalsePos"),
             attrs={"overlap_threshold": 0.5, "evaluate_difficult": True, "ap_type": "integral", "class_num": 0,
                    "background_label": 0},
             optional=("HasState", "PosCount", "TruePos", "FalsePos"), infer_shape=_map_infer, context=True,
             no_gradient=True)
def _detection_map(ctx, attrs, label, detect, has_state, pos_count, true_pos, false_pos):
    _map_infer(attrs, label, detect, has_state, pos_count, true_pos, false_pos)
    classes = attrs["class_num"]
    label_lod, det_lod = ctx.input_lod("Label"), ctx.input_lod("DetectRes")
    if not label_lod or not det_lod:
        raise ValueError(f"detection_map: Input(Label) and Input(DetectRes) need a LoD giving each image's rows, "
                         f"but received {label_lod} and {det_lod}.")
    if len(label_lod[0]) != len(det_lod[0]):
        raise ValueError(f"detection_map: Input(Label) holds {len(label_lod[0])} images but Input(DetectRes) "
                         f"{len(det_lod[0])}.")
    if detect.shape[1] == 1:  # multiclass_nms's "no detection" row
        detect, det_lod = np.zeros((0, 6), detect.dtype), [[0] * len(label_lod[0])]
    gt_image, det_image = row_segments(label_lod[0])[0], row_segments(det_lod[0])[0]
    g_label = label[:, 0].astype(np.int64)
    counted_gt = np.ones(len(label), bool) if attrs["evaluate_difficult"] or label.shape[1] != 6 else \
        np.abs(label[:, 1]) < 1e-6
    positives = {int(k): int(v) for k, v in zip(*np.unique(g_label[counted_gt], return_counts=True))}
    old_tp, old_fp = np.zeros((0, 2)), np.zeros((0, 2))
    old_tp_class, old_fp_class = np.zeros(0, np.int64), np.zeros(0, np.int64)
    if pos_count is not None and has_state is not None and int(np.asarray(has_state).reshape(-1)[0]):
        for k in range(classes):  # fluid lists every class of the state, with 0 positives too
            positives[k] = positives.get(k, 0) + int(pos_count.reshape(-1)[k])
        old_tp, old_fp = true_pos.reshape(-1, 2), false_pos.reshape(-1, 2)
        old_tp_class = row_segments(ctx.input_lod("TruePos")[0])[0]
        old_fp_class = row_segments(ctx.input_lod("FalsePos")[0])[0]
    order, tp = match_detections(label, gt_image, detect, det_image, attrs["overlap_threshold"],
                                 attrs["evaluate_difficult"])
    d_label = detect[order, 0].astype(np.int64)
    scores = detect[order, 1]
    new_tp = np.stack([scores, tp], 1)
    new_fp = np.stack([scores, ~tp], 1)
    # each class's state: the earlier batches' rows, then this batch's (image, then rank order)
    tp_rows = np.concatenate([old_tp, new_tp]).astype(detect.dtype)
    fp_rows = np.concatenate([old_fp, new_fp]).astype(detect.dtype)
    tp_class = np.concatenate([old_tp_class, d_label])
    fp_class = np.concatenate([old_fp_class, d_label])
    mean, counted = 0.0, 0
    for k, n_pos in sorted(positives.items()):
        if n_pos == attrs["background_label"]:  # fluid compares the positives' count here, not the label
            continue
        mine = tp_class == k
        if mine.any():
            mean += average_precision(tp_rows[mine, 0].astype(np.float64), tp_rows[mine, 1].astype(np.int64), n_pos,
                                      attrs["ap_type"])
        counted += 1
    tp_order = np.argsort(tp_class, kind="stable")
    fp_order = np.argsort(fp_class, kind="stable")
    keep_tp, keep_fp = tp_order[tp_class[tp_order] < classes], fp_order[fp_class[fp_order] < classes]
    ctx.set_output_lod("AccumTruePos", [np.bincount(tp_class[keep_tp], minlength=classes)[:classes].tolist()])
    ctx.set_output_lod("AccumFalsePos", [np.bincount(fp_class[keep_fp], minlength=classes)[:classes].tolist()])
    out_pos = np.array([positives.get(k, 0) for k in range(classes)], np.int32).reshape(-1, 1)
    return (np.array([mean / counted if counted else 0.0], np.float32), out_pos, tp_rows[keep_tp].reshape(-1, 2),
            fp_rows[keep_fp].reshape(-1, 2))
