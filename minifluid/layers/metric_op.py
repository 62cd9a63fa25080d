"""Metric layers: auc (with its persistable statistics) and mean_iou, as fluid 1.8 builds them."""
from ..initializer import Constant
from .activation import check_variable_and_dtype
from .helper import LayerHelper

__all__ = ["auc", "mean_iou"]


def auc(input, label, curve="ROC", num_thresholds=2 ** 12 - 1, topk=1, slide_steps=1):
    """Area under the ROC curve of the positive-class probability ``input[:, -1]`` against ``label``.

    Returns ``(global_auc, batch_auc, [batch_stat_pos, batch_stat_neg, stat_pos, stat_neg])``: the AUC of every
    batch run so far, the AUC of the last ``slide_steps`` batches, and the four persistable int64 count
    variables (zeroed by the startup program; updated by each run; reset them to start over).
    """
    check_variable_and_dtype(input, "input", ("float32", "float64"), "auc")
    check_variable_and_dtype(label, "label", ("int32", "int64"), "auc")
    helper = LayerHelper("auc")
    auc_out = helper.create_variable_for_type_inference("float64", stop_gradient=True)
    batch_auc_out = helper.create_variable_for_type_inference("float64", stop_gradient=True)
    buckets = num_thresholds + 1
    batch_shape, global_shape = [(1 + slide_steps) * buckets + 1], [1, buckets]
    stats = [helper.create_global_variable(persistable=True, dtype="int64", shape=shape, stop_gradient=True)
             for shape in (batch_shape, batch_shape, global_shape, global_shape)]
    for var in stats:
        helper.set_variable_initializer(var, Constant(value=0.0, force_cpu=False))
    batch_pos, batch_neg, stat_pos, stat_neg = stats
    for out, pos, neg, steps in ((batch_auc_out, batch_pos, batch_neg, slide_steps), (auc_out, stat_pos, stat_neg, 0)):
        helper.append_op(type="auc", inputs={"Predict": [input], "Label": [label], "StatPos": [pos], "StatNeg": [neg]},
                         outputs={"AUC": [out], "StatPosOut": [pos], "StatNegOut": [neg]},
                         attrs={"curve": curve, "num_thresholds": num_thresholds, "slide_steps": steps})
    return auc_out, batch_auc_out, stats


def mean_iou(input, label, num_classes):
    """Mean intersection-over-union of int32/int64 class maps ``input`` and ``label``: returns
    ``(mean_iou [1] float32, out_wrong [num_classes] int32, out_correct [num_classes] int32)``."""
    check_variable_and_dtype(input, "Predictions", ("int32", "int64"), "mean_iou")
    check_variable_and_dtype(label, "Labels", ("int32", "int64"), "mean_iou")
    helper = LayerHelper("mean_iou")
    outs = [helper.create_variable_for_type_inference(d, stop_gradient=True) for d in ("float32", "int32", "int32")]
    helper.append_op(type="mean_iou", inputs={"Predictions": [input], "Labels": [label]},
                     outputs=dict(zip(("OutMeanIou", "OutWrong", "OutCorrect"), ([o] for o in outs))),
                     attrs={"num_classes": num_classes})
    return tuple(outs)
