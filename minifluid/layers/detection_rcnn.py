"""Faster R-CNN / Mask R-CNN / FPN layers (fluid 1.8's signatures, defaults and argument errors):
generate_proposals, distribute_fpn_proposals, collect_fpn_proposals (ops in ops/detection_rpn.py)."""
from .activation import check_variable_and_dtype
from .creation import check_type
from .helper import LayerHelper

__all__ = ["collect_fpn_proposals", "distribute_fpn_proposals", "generate_proposals"]

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
