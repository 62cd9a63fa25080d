"""Metric ops: auc (thresholded positive/negative counts kept in persistable state, batch or sliding
window) and mean_iou. Counting is ``np.bincount`` over the batch; no gradients.
"""
import numpy as np

from .registry import register_op


def _auc_from_stats(pos, neg):
    """Area under the ROC curve from per-bucket counts, walking the thresholds from the top (trapezoids)."""
    tot_pos = np.cumsum(pos[::-1], dtype=np.float64)
    tot_neg = np.cumsum(neg[::-1], dtype=np.float64)
    prev_pos = np.concatenate(([0.0], tot_pos[:-1]))
    prev_neg = np.concatenate(([0.0], tot_neg[:-1]))
    area = float((np.abs(tot_neg - prev_neg) * (tot_pos + prev_pos) / 2.0).sum())
    if tot_pos[-1] > 0 and tot_neg[-1] > 0:
        area /= tot_pos[-1] * tot_neg[-1]
    return area


def _bucket_counts(predict, label, buckets):
    p = predict[:, -1]
    if p.size and p.max() > 1:
        raise ValueError("The predict data must less or equal 1.")
    if p.size and p.min() < 0:
        raise ValueError("The predict data must gather or equal 0.")
    bins = (p * (buckets - 1)).astype(np.int64)  # in the input's precision, as fluid bins it
    label = label.reshape(-1)
    return (np.bincount(bins[label > 0], minlength=buckets), np.bincount(bins[label == 0], minlength=buckets))


def _auc_infer(attrs, predict, label, stat_pos, stat_neg):
    return ((1,), "float64"), (stat_pos.shape, "int64"), (stat_neg.shape, "int64")


@register_op("auc", inputs=("Predict", "Label", "StatPos", "StatNeg"), outputs=("AUC", "StatPosOut", "StatNegOut"),
             attrs={"curve": "ROC", "num_thresholds": 2 ** 12 - 1, "slide_steps": 1}, infer_shape=_auc_infer,
             no_gradient=True)
def _auc_forward(attrs, predict, label, stat_pos, stat_neg):
    """With ``slide_steps`` 0 the stats ([1, T+1]) accumulate over every batch; otherwise they are a flat ring
    of ``slide_steps`` per-batch rows, their running sum and a batch counter (fluid's layout), and the AUC
    is that of the last ``slide_steps`` batches."""
    buckets, steps = attrs["num_thresholds"] + 1, attrs["slide_steps"]
    pos_new, neg_new = _bucket_counts(predict, label, buckets)
    if steps == 0:
        pos, neg = stat_pos.reshape(-1) + pos_new, stat_neg.reshape(-1) + neg_new
        return np.array([_auc_from_stats(pos, neg)]), pos.reshape(stat_pos.shape), neg.reshape(stat_neg.shape)
    outs = []
    for stat, new in ((stat_pos, pos_new), (stat_neg, neg_new)):
        flat = stat.reshape(-1).astype(np.int64, copy=True)
        ring = flat[:(steps + 1) * buckets].reshape(steps + 1, buckets)  # a view: edits land in flat
        row = int(flat[-1]) % steps
        ring[steps] += new - ring[row]
        ring[row] = new
        flat[-1] += 1
        outs.append(flat)
    pos_sum = outs[0][steps * buckets:(steps + 1) * buckets]
    neg_sum = outs[1][steps * buckets:(steps + 1) * buckets]
    return (np.array([_auc_from_stats(pos_sum, neg_sum)]), outs[0].reshape(stat_pos.shape),
            outs[1].reshape(stat_neg.shape))


def _mean_iou_infer(attrs, pred, label, in_iou, in_wrong, in_correct):
    n = attrs["num_classes"]
    return ((1,), "float32"), ((n,), "int32"), ((n,), "int32")


@register_op("mean_iou", inputs=("Predictions", "Labels", "InMeanIou", "InWrongs", "InCorrects"),
             outputs=("OutMeanIou", "OutWrong", "OutCorrect"), attrs={"num_classes": 2},
             duplicable=("InMeanIou", "InWrongs", "InCorrects"), optional=("InMeanIou", "InWrongs", "InCorrects"),
             infer_shape=_mean_iou_infer, no_gradient=True)
def _mean_iou_forward(attrs, pred, label, in_iou, in_wrong, in_correct):
    """Per class: correct = pixels where prediction and label agree on it, wrong = pixels where either (but not
    both) names it; mean IoU over the classes that occur (plus the InMeanIou values, as fluid adds them)."""
    n = attrs["num_classes"]
    pred, label = pred.reshape(-1).astype(np.int64), label.reshape(-1).astype(np.int64)
    hit = pred == label
    correct = np.bincount(pred[hit], minlength=n)[:n]
    wrong = np.bincount(label[~hit], minlength=n)[:n] + np.bincount(pred[~hit], minlength=n)[:n]
    correct = correct + sum((c.reshape(-1) for c in in_correct or ()), np.zeros(n, np.int64))
    wrong = wrong + sum((w.reshape(-1) for w in in_wrong or ()), np.zeros(n, np.int64))
    denominator = wrong + correct
    valid = int((denominator > 0).sum())
    iou = float((correct / np.maximum(denominator, 1)).sum()) / valid if valid else 0.0
    iou += sum(float(v.reshape(-1)[0]) for v in in_iou or ())
    return np.array([iou], np.float32), wrong.astype(np.int32), correct.astype(np.int32)
