"""Faster R-CNN / Mask R-CNN / RetinaNet / FPN layers (fluid 1.8's signatures, defaults and argument errors):
generate_proposals, distribute_fpn_proposals, collect_fpn_proposals (ops in ops/detection_rpn.py), rpn_target_assign,
retinanet_target_assign, generate_proposal_labels (ops/detection_target.py), retinanet_detection_output
(ops/detection_retina.py) and generate_mask_labels (ops/detection_mask.py)."""
from .activation import check_variable_and_dtype
from .creation import check_type
from .helper import LayerHelper
from .manip import gather
from .tensor import reshape

__all__ = ["collect_fpn_proposals", "distribute_fpn_proposals", "generate_mask_labels", "generate_proposal_labels",
           "generate_proposals", "retinanet_detection_output", "retinanet_target_assign", "rpn_target_assign"]

_FLOATS = ("float32", "float64")


def _outputs(helper, dtypes, lod_level=0):
    """New outputs of ``dtypes`` that no gradient flows through (these ops have none)."""
    outs = [helper.create_variable_for_type_inference(d, stop_gradient=True) for d in dtypes]
    for v in outs if lod_level else ():
        v.lod_level = lod_level
    return outs


def generate_proposals(scores, bbox_deltas, im_info, anchors, variances, pre_nms_top_n=6000, post_nms_top_n=1000,
                       nms_thresh=0.5, min_size=0.1, eta=1.0, name=None, return_rois_num=False):
    """Faster R-CNN's RPN proposals: per image, the ``pre_nms_top_n`` best anchors of ``scores`` [N, A, H, W]
    decoded by ``bbox_deltas`` [N, 4A, H, W] on ``anchors`` / ``variances`` [H, W, A, 4], clipped to the image
    (``im_info`` [N, 3]: height, width, scale), those smaller than ``min_size`` (at the original scale) dropped,
    then greedy NMS at ``nms_thresh`` (adaptive with ``eta`` < 1) keeping ``post_nms_top_n``. Returns
    (rois [R, 4], probs [R, 1]), LoD: the proposals of each image; with ``return_rois_num`` also the running
    totals of proposals per image ([N] int32, fluid's RpnRoisLod)."""
    check_variable_and_dtype(scores, "scores", ("float32",), "generate_proposals")
    check_variable_and_dtype(bbox_deltas, "bbox_deltas", ("float32",), "generate_proposals")
    check_variable_and_dtype(im_info, "im_info", _FLOATS, "generate_proposals")
    check_variable_and_dtype(anchors, "anchors", ("float32",), "generate_proposals")
    check_variable_and_dtype(variances, "variances", ("float32",), "generate_proposals")
    helper = LayerHelper("generate_proposals", name=name)
    rois, probs = _outputs(helper, (bbox_deltas.dtype, scores.dtype), lod_level=1)
    (rois_lod,) = _outputs(helper, ("int32",))
    helper.append_op(type="generate_proposals",
                     inputs={"Scores": [scores], "BboxDeltas": [bbox_deltas], "ImInfo": [im_info],
                             "Anchors": [anchors], "Variances": [variances]},
                     outputs={"RpnRois": [rois], "RpnRoiProbs": [probs], "RpnRoisLod": [rois_lod]},
                     attrs={"pre_nms_topN": pre_nms_top_n, "post_nms_topN": post_nms_top_n,
                            "nms_thresh": nms_thresh, "min_size": min_size, "eta": eta})
    return (rois, probs, rois_lod) if return_rois_num else (rois, probs)


def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale, name=None):
    """Send each RoI of ``fpn_rois`` [R, 4] (LoD: per image) to pyramid level
    floor(refer_level + log2(sqrt(area) / refer_scale)), clipped to [min_level, max_level]. Returns (one
    LoD tensor of RoIs per level, restore_ind [R, 1] int32: each RoI's row in the levels' concatenation)."""
    check_variable_and_dtype(fpn_rois, "fpn_rois", _FLOATS, "distribute_fpn_proposals")
    helper = LayerHelper("distribute_fpn_proposals", name=name)
    multi_rois = _outputs(helper, [fpn_rois.dtype] * (max_level - min_level + 1), lod_level=1)
    (restore_ind,) = _outputs(helper, ("int32",))
    helper.append_op(type="distribute_fpn_proposals", inputs={"FpnRois": [fpn_rois]},
                     outputs={"MultiFpnRois": multi_rois, "RestoreIndex": [restore_ind]},
                     attrs={"min_level": min_level, "max_level": max_level, "refer_level": refer_level,
                            "refer_scale": refer_scale})
    return multi_rois, restore_ind


def collect_fpn_proposals(multi_rois, multi_scores, min_level, max_level, post_nms_top_n, name=None):
    """The ``post_nms_top_n`` best-scoring RoIs over the levels ``min_level``..``max_level`` of ``multi_rois``
    ([N_l, 4] each, LoD per image) and ``multi_scores`` ([N_l, 1]), grouped by image (best first within each):
    [post_nms_top_n, 4] with LoD."""
    check_type(multi_rois, "multi_rois", (list, tuple), "collect_fpn_proposals")
    check_type(multi_scores, "multi_scores", (list, tuple), "collect_fpn_proposals")
    levels = max_level - min_level + 1
    rois, scores = list(multi_rois[:levels]), list(multi_scores[:levels])
    helper = LayerHelper("collect_fpn_proposals", name=name)
    (out,) = _outputs(helper, (rois[0].dtype,), lod_level=1)
    helper.append_op(type="collect_fpn_proposals", inputs={"MultiLevelRois": rois, "MultiLevelScores": scores},
                     outputs={"FpnRois": [out]}, attrs={"post_nms_topN": post_nms_top_n})
    return out


def _targets(op_type, inputs, attrs, anchor_dtype, extra=()):
    helper = LayerHelper(op_type)
    outs = _outputs(helper, ("int32", "int32", "int32", anchor_dtype, anchor_dtype) + extra)
    slots = ("LocationIndex", "ScoreIndex", "TargetLabel", "TargetBBox", "BBoxInsideWeight", "ForegroundNumber")
    helper.append_op(type=op_type, inputs=inputs, outputs={s: [v] for s, v in zip(slots, outs)}, attrs=attrs)
    return outs


def rpn_target_assign(bbox_pred, cls_logits, anchor_box, anchor_var, gt_boxes, is_crowd, im_info,
                      rpn_batch_size_per_im=256, rpn_straddle_thresh=0.0, rpn_fg_fraction=0.5, rpn_positive_overlap=0.7,
                      rpn_negative_overlap=0.3, use_random=True):
    """RPN training examples per image: anchors ``anchor_box`` [M, 4] inside the image (by
    ``rpn_straddle_thresh``) that best match a ground truth ``gt_boxes`` (LoD per image; crowd boxes skipped) or
    overlap one by ``rpn_positive_overlap`` are foreground, those under ``rpn_negative_overlap`` background,
    ``rpn_batch_size_per_im`` examples of which at most ``rpn_fg_fraction`` foreground (a random subset with
    ``use_random``, from the program's seed). Returns (the sampled logits of ``cls_logits``, the regressed rows of
    ``bbox_pred``, target labels [S, 1] int32, target deltas [F, 4], their inside weights [F, 4])."""
    for name, value in (("bbox_pred", bbox_pred), ("cls_logits", cls_logits), ("anchor_box", anchor_box),
                        ("anchor_var", anchor_var), ("gt_boxes", gt_boxes), ("im_info", im_info)):
        check_variable_and_dtype(value, name, _FLOATS, "rpn_target_assign")
    check_variable_and_dtype(is_crowd, "is_crowd", ("int32",), "rpn_target_assign")
    loc, score, label, bbox, weight = _targets(
        "rpn_target_assign", {"Anchor": [anchor_box], "GtBoxes": [gt_boxes], "IsCrowd": [is_crowd],
                              "ImInfo": [im_info]},
        {"rpn_batch_size_per_im": rpn_batch_size_per_im, "rpn_straddle_thresh": rpn_straddle_thresh,
         "rpn_positive_overlap": rpn_positive_overlap, "rpn_negative_overlap": rpn_negative_overlap,
         "rpn_fg_fraction": rpn_fg_fraction, "use_random": use_random}, anchor_box.dtype)
    logits = gather(reshape(cls_logits, shape=(-1, 1)), score)
    deltas = gather(reshape(bbox_pred, shape=(-1, 4)), loc)
    return logits, deltas, label, bbox, weight


def retinanet_target_assign(bbox_pred, cls_logits, anchor_box, anchor_var, gt_boxes, gt_labels, is_crowd, im_info,
                            num_classes=1, positive_overlap=0.5, negative_overlap=0.4):
    """RetinaNet's targets: every anchor that best matches a ground truth or overlaps one by ``positive_overlap``
    is foreground with its ground truth's class (``gt_labels``), those under ``negative_overlap`` background (no
    sampling). Returns (the scored rows of ``cls_logits`` [S, num_classes], the regressed rows of ``bbox_pred``,
    target labels [S, 1], target deltas [F, 4], inside weights [F, 4], foreground count + 1 per image [N, 1])."""
    for name, value in (("bbox_pred", bbox_pred), ("cls_logits", cls_logits), ("anchor_box", anchor_box),
                        ("anchor_var", anchor_var), ("gt_boxes", gt_boxes), ("im_info", im_info)):
        check_variable_and_dtype(value, name, _FLOATS, "retinanet_target_assign")
    check_variable_and_dtype(gt_labels, "gt_labels", ("int32",), "retinanet_target_assign")
    check_variable_and_dtype(is_crowd, "is_crowd", ("int32",), "retinanet_target_assign")
    loc, score, label, bbox, weight, fg_num = _targets(
        "retinanet_target_assign", {"Anchor": [anchor_box], "GtBoxes": [gt_boxes], "GtLabels": [gt_labels],
                                    "IsCrowd": [is_crowd], "ImInfo": [im_info]},
        {"positive_overlap": positive_overlap, "negative_overlap": negative_overlap}, anchor_box.dtype, ("int32",))
    logits = gather(reshape(cls_logits, shape=(-1, num_classes)), score)
    deltas = gather(reshape(bbox_pred, shape=(-1, 4)), loc)
    return logits, deltas, label, bbox, weight, fg_num


def generate_proposal_labels(rpn_rois, gt_classes, is_crowd, gt_boxes, im_info, batch_size_per_im=256,
                             fg_fraction=0.25, fg_thresh=0.25, bg_thresh_hi=0.5, bg_thresh_lo=0.0,
                             bbox_reg_weights=[0.1, 0.1, 0.2, 0.2], class_nums=None, use_random=True,
                             is_cls_agnostic=False, is_cascade_rcnn=False):
    """Fast R-CNN's RoI examples per image: the ground truth and ``rpn_rois`` (LoD per image, at the input scale
    ``im_info[:, 2]``) with IoU >= ``fg_thresh`` to a ground truth are foreground (its class), those in
    [``bg_thresh_lo``, ``bg_thresh_hi``) background; ``batch_size_per_im`` of them, at most ``fg_fraction``
    foreground (random subsets with ``use_random``). Returns (rois, labels [R, 1] int32, bbox_targets,
    bbox_inside_weights, bbox_outside_weights [R, 4 * class_nums], the deltas in the label's 4 columns)."""
    check_variable_and_dtype(rpn_rois, "rpn_rois", _FLOATS, "generate_proposal_labels")
    check_variable_and_dtype(gt_classes, "gt_classes", ("int32",), "generate_proposal_labels")
    check_variable_and_dtype(is_crowd, "is_crowd", ("int32",), "generate_proposal_labels")
    helper = LayerHelper("generate_proposal_labels")
    dtype = rpn_rois.dtype
    outs = _outputs(helper, (dtype, gt_classes.dtype, dtype, dtype, dtype), lod_level=1)
    slots = ("Rois", "LabelsInt32", "BboxTargets", "BboxInsideWeights", "BboxOutsideWeights")
    helper.append_op(type="generate_proposal_labels",
                     inputs={"RpnRois": [rpn_rois], "GtClasses": [gt_classes], "IsCrowd": [is_crowd],
                             "GtBoxes": [gt_boxes], "ImInfo": [im_info]},
                     outputs={s: [v] for s, v in zip(slots, outs)},
                     attrs={"batch_size_per_im": batch_size_per_im, "fg_fraction": fg_fraction,
                            "fg_thresh": fg_thresh, "bg_thresh_hi": bg_thresh_hi, "bg_thresh_lo": bg_thresh_lo,
                            "bbox_reg_weights": [float(w) for w in bbox_reg_weights], "class_nums": class_nums or 0,
                            "use_random": use_random, "is_cls_agnostic": is_cls_agnostic,
                            "is_cascade_rcnn": is_cascade_rcnn})
    return tuple(outs)


def retinanet_detection_output(bboxes, scores, anchors, im_info, score_threshold=0.05, nms_top_k=1000, keep_top_k=100,
                               nms_threshold=0.3, nms_eta=1.0):
    """RetinaNet's detections from every FPN level's ``bboxes`` [N, M_l, 4] deltas, ``scores`` [N, M_l, C] and
    ``anchors`` [M_l, 4] (lists, one entry per level): each level's ``nms_top_k`` best (anchor, class) scores above
    ``score_threshold`` (the last level: above 0), decoded and clipped to the original image (``im_info``), greedy
    NMS per class and the best ``keep_top_k`` per image. Returns [D, 6] rows [label, score, xmin, ymin, xmax,
    ymax] (labels from 1), LoD per image. fluid 1.8 always ran the NMS with eta 1 (``nms_eta`` is kept as then)."""
    check_type(bboxes, "bboxes", (list,), "retinanet_detection_output")
    for i, bbox in enumerate(bboxes):
        check_variable_and_dtype(bbox, f"bbox{i}", _FLOATS, "retinanet_detection_output")
    check_type(scores, "scores", (list,), "retinanet_detection_output")
    for i, score in enumerate(scores):
        check_variable_and_dtype(score, f"score{i}", _FLOATS, "retinanet_detection_output")
    check_type(anchors, "anchors", (list,), "retinanet_detection_output")
    for i, anchor in enumerate(anchors):
        check_variable_and_dtype(anchor, f"anchor{i}", _FLOATS, "retinanet_detection_output")
    check_variable_and_dtype(im_info, "im_info", _FLOATS, "retinanet_detection_output")
    helper = LayerHelper("retinanet_detection_output")
    (out,) = _outputs(helper, (scores[0].dtype,), lod_level=1)
    helper.append_op(type="retinanet_detection_output",
                     inputs={"BBoxes": bboxes, "Scores": scores, "Anchors": anchors, "ImInfo": [im_info]},
                     outputs={"Out": [out]},
                     attrs={"score_threshold": score_threshold, "nms_top_k": nms_top_k, "nms_threshold": nms_threshold,
                            "keep_top_k": keep_top_k, "nms_eta": 1.0})
    return out


def generate_mask_labels(im_info, gt_classes, is_crowd, gt_segms, rois, labels_int32, num_classes, resolution):
    """Mask R-CNN's mask targets: each foreground RoI of ``rois`` (``labels_int32`` > 0, LoD per image) gets the
    polygons of the ground truth (``gt_segms``: (x, y) points with a 3-level LoD image -> object -> polygon ->
    points) whose box overlaps it most, rasterised into ``resolution`` x ``resolution`` over the RoI. Returns
    (mask_rois [R, 4], roi_has_mask_int32 [R, 1]: each RoI's row in its image, mask_int32 [R, num_classes *
    resolution ** 2]: the mask in its class's columns, -1 elsewhere)."""
    helper = LayerHelper("generate_mask_labels")
    outs = _outputs(helper, (rois.dtype, gt_classes.dtype, gt_classes.dtype), lod_level=1)
    helper.append_op(type="generate_mask_labels",
                     inputs={"ImInfo": [im_info], "GtClasses": [gt_classes], "IsCrowd": [is_crowd],
                             "GtSegms": [gt_segms], "Rois": [rois], "LabelsInt32": [labels_int32]},
                     outputs={"MaskRois": [outs[0]], "RoiHasMaskInt32": [outs[1]], "MaskInt32": [outs[2]]},
                     attrs={"num_classes": num_classes, "resolution": resolution})
    return tuple(outs)
