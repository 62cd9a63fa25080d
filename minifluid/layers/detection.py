"""``fluid.layers.detection``: fluid 1.8's detection layers, gathered from layers/detection_box.py (prior_box,
density_prior_box, anchor_generator, box_coder, iou_similarity, box_clip, box_decoder_and_assign,
polygon_box_transform), layers/detection_nms.py (bipartite_match, target_assign, multiclass_nms, matrix_nms,
locality_aware_nms, detection_output), layers/detection_rcnn.py (generate_proposals, distribute_fpn_proposals,
collect_fpn_proposals, rpn_target_assign, retinanet_target_assign, generate_proposal_labels,
retinanet_detection_output, generate_mask_labels), layers/detection_eval.py (detection_map), layers/detection_ssd.py
(ssd_loss, multi_box_head), layers/yolo.py (yolo_box, yolov3_loss) and layers/roi.py (roi_perspective_transform)."""
from .detection_box import (anchor_generator, box_clip, box_coder, box_decoder_and_assign, density_prior_box,
                            iou_similarity, polygon_box_transform, prior_box)
from .detection_eval import detection_map
from .detection_nms import (bipartite_match, detection_output, locality_aware_nms, matrix_nms, multiclass_nms,
                            multiclass_nms2, target_assign)
from .detection_rcnn import (collect_fpn_proposals, distribute_fpn_proposals, generate_mask_labels,
                             generate_proposal_labels, generate_proposals, retinanet_detection_output,
                             retinanet_target_assign, rpn_target_assign)
from .detection_ssd import multi_box_head, ssd_loss
from .roi import roi_perspective_transform
from .yolo import yolo_box, yolov3_loss

__all__ = ["anchor_generator", "bipartite_match", "box_clip", "box_coder", "box_decoder_and_assign",
           "collect_fpn_proposals", "density_prior_box", "detection_map", "detection_output",
           "distribute_fpn_proposals", "generate_mask_labels", "generate_proposal_labels", "generate_proposals",
           "iou_similarity", "locality_aware_nms", "matrix_nms", "multi_box_head", "multiclass_nms",
           "polygon_box_transform", "prior_box", "retinanet_detection_output", "retinanet_target_assign",
           "roi_perspective_transform", "rpn_target_assign", "ssd_loss", "target_assign", "yolo_box", "yolov3_loss"]
