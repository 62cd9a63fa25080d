"""YOLOv3 layers: yolo_box and yolov3_loss (fluid 1.8's ``fluid.layers`` / ``fluid.layers.detection``
signatures, defaults and argument errors; the ops are in ops/yolo.py)."""
from ..framework.variable import Variable
from .helper import LayerHelper

__all__ = ["yolo_box", "yolov3_loss"]


def _need(value, types, message):
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise TypeError(message)


def yolov3_loss(x, gt_box, gt_label, anchors, anchor_mask, class_num, ignore_thresh, downsample_ratio, gt_score=None,
                use_label_smooth=True, name=None, scale_x_y=1.):
    """The YOLOv3 loss of the head ``x`` [N, len(anchor_mask) * (5 + class_num), H, H] against ``gt_box``
    [N, B, 4] (centre x, y, width, height as image fractions; zero-size boxes are padding), ``gt_label`` int32
    [N, B] and optional ``gt_score`` [N, B] (mixup weights): one loss per image, [N]."""
    _need(x, Variable, "Input x of yolov3_loss must be Variable")
    _need(gt_box, Variable, "Input gtbox of yolov3_loss must be Variable")
    _need(gt_label, Variable, "Input gtlabel of yolov3_loss must be Variable")
    if gt_score is not None:
        _need(gt_score, Variable, "Input gtscore of yolov3_loss must be Variable")
    _need(anchors, (list, tuple), "Attr anchors of yolov3_loss must be list or tuple")
    _need(anchor_mask, (list, tuple), "Attr anchor_mask of yolov3_loss must be list or tuple")
    _need(class_num, int, "Attr class_num of yolov3_loss must be an integer")
    _need(ignore_thresh, float, "Attr ignore_thresh of yolov3_loss must be a float number")
    _need(use_label_smooth, bool, "Attr use_label_smooth of yolov3_loss must be a bool value")
    helper = LayerHelper("yolov3_loss", name=name)
    loss = helper.create_variable_for_type_inference(x.dtype)
    objectness_mask = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    gt_match_mask = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    inputs = {"X": [x], "GTBox": [gt_box], "GTLabel": [gt_label]}
    if gt_score is not None:
        inputs["GTScore"] = [gt_score]
    helper.append_op(type="yolov3_loss", inputs=inputs,
                     outputs={"Loss": [loss], "ObjectnessMask": [objectness_mask], "GTMatchMask": [gt_match_mask]},
                     attrs={"anchors": list(anchors), "anchor_mask": list(anchor_mask), "class_num": class_num,
                            "ignore_thresh": ignore_thresh, "downsample_ratio": downsample_ratio,
                            "use_label_smooth": use_label_smooth, "scale_x_y": scale_x_y})
    return loss


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True, name=None, scale_x_y=1.):
    """Decode the YOLOv3 head ``x`` into boxes [N, M, 4] (x1, y1, x2, y2 in the pixels of ``img_size`` int32
    [N, 2] (height, width), clipped to the image unless ``clip_bbox`` is False) and scores [N, M, class_num]
    (objectness times class probability); boxes whose objectness is under ``conf_thresh`` are all zero."""
    _need(x, Variable, "Input x of yolo_box must be Variable")
    _need(img_size, Variable, "Input img_size of yolo_box must be Variable")
    _need(anchors, (list, tuple), "Attr anchors of yolo_box must be list or tuple")
    _need(class_num, int, "Attr class_num of yolo_box must be an integer")
    _need(conf_thresh, float, "Attr ignore_thresh of yolo_box must be a float number")
    helper = LayerHelper("yolo_box", name=name)
    boxes = helper.create_variable_for_type_inference(x.dtype)
    scores = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="yolo_box", inputs={"X": [x], "ImgSize": [img_size]},
                     outputs={"Boxes": [boxes], "Scores": [scores]},
                     attrs={"anchors": list(anchors), "class_num": class_num, "conf_thresh": conf_thresh,
                            "downsample_ratio": downsample_ratio, "clip_bbox": clip_bbox, "scale_x_y": scale_x_y})
    return boxes, scores
