"""YOLOv3 heads: yolo_box (decode predictions into boxes and scores) and yolov3_loss with its gradient.

The input X [N, A * (5 + class_num), H, W] holds, per anchor a and cell (k, l), the box offsets tx, ty, tw, th,
the objectness logit and class_num class logits. A cell's box is centred at ((l + sigmoid(tx) * s + b) / H,
(k + sigmoid(ty) * s + b) / H) of the image, s = scale_x_y and b = -(s - 1) / 2, with the anchor's size times
exp(tw), exp(th) over the network input size downsample_ratio * H (fluid divides both axes by H).

yolov3_loss, per image: every ground-truth box (GTBox [N, B, 4] centre x, y, width, height in [0, 1]; a box of
width or height under 1e-6 is padding) is matched to the anchor of best IoU when both are centred at 0; when
that anchor is one of ``anchor_mask``, the cell holding the box's centre pays sigmoid cross-entropy on tx, ty
and L1 on tw, th (times (2 - w * h) * GTScore) and sigmoid cross-entropy on each class (label smoothing:
targets 1 - d and d, d = min(1 / class_num, 1 / 40)). Objectness: positive cells (the GT's score) pay sigmoid
cross-entropy against 1 times that score, predictions whose best IoU with any GT exceeds ignore_thresh pay
nothing, the rest pay it against 0. Everything is computed for all images, anchors, cells and GTs at once
(IoU as one broadcast [N, A, H, W, B]). ObjectnessMask (1 positive score, -1 ignored, 0 negative) and
GTMatchMask (the mask index of each GT, -1 unmatched) are outputs, as in fluid. Where two GTs of an image
fall on the same cell and anchor, the gradient adds both GTs' terms (the loss counts both); fluid's grad
kernel keeps only the last one's.
"""
import numpy as np

from .registry import register_grad, register_op


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _sce(x, label):
    """Sigmoid cross-entropy of logits ``x`` against ``label`` (numerically stable)."""
    return np.maximum(x, 0) - x * label + np.log1p(np.exp(-np.abs(x)))


def _anchor_sizes(attrs, indices=None):
    anchors = np.asarray(attrs["anchors"], np.float64).reshape(-1, 2)
    return anchors if indices is None else anchors[np.asarray(indices, np.int64)]


def _check_anchors(op, attrs, x, groups):
    anchors, class_num = attrs["anchors"], attrs["class_num"]
    if len(x.shape) != 4:
        raise ValueError(f"Input(X) of {op} should be a 4-D tensor. But received X dimension size({len(x.shape)}), "
                         f"shape {list(x.shape)}")
    if not anchors or len(anchors) % 2:
        raise ValueError(f"Attr(anchors) of {op} length should be a positive even integer. But received anchors "
                         f"length({len(anchors)})")
    if not class_num > 0:
        raise ValueError(f"Attr(class_num) of {op} should be an integer greater than 0. But received class_num "
                         f"({class_num})")
    if x.shape[1] >= 0 and x.shape[1] != groups * (5 + class_num):
        raise ValueError(f"Input(X) dim[1] of {op} should be equal to (anchor_mask_number * (5 + class_num)). But "
                         f"received dim[1]({x.shape[1]}) != (anchor_mask_number * (5+class_num)("
                         f"{groups * (5 + class_num)}).")


def _grid_boxes(x, attrs, anchors):
    """Per image, anchor and cell: the predicted box centre and size in image fractions, [N, A, H, W] each."""
    n, _, h, w = x.shape
    p = x.reshape(n, len(anchors), -1, h, w)
    scale = attrs["scale_x_y"]
    bias, size = -0.5 * (scale - 1.0), attrs["downsample_ratio"] * h
    cx = (np.arange(w) + _sigmoid(p[:, :, 0]) * scale + bias) / h
    cy = (np.arange(h)[:, None] + _sigmoid(p[:, :, 1]) * scale + bias) / h
    bw = np.exp(p[:, :, 2]) * (anchors[:, 0] / size)[:, None, None]
    bh = np.exp(p[:, :, 3]) * (anchors[:, 1] / size)[:, None, None]
    return p, cx, cy, bw, bh


# --- yolo_box ------------------------------------------------------------------------------------------------
def _yolo_box_infer(attrs, x, img_size):
    groups = len(attrs["anchors"]) // 2
    _check_anchors("YoloBoxOp", attrs, x, groups)
    if len(img_size.shape) != 2 or (img_size.shape[1] >= 0 and img_size.shape[1] != 2):
        raise ValueError(f"Input(ImgSize) of YoloBoxOp should be a 2-D tensor [N, 2] (height, width). But received "
                         f"shape {list(img_size.shape)}")
    if x.shape[0] >= 0 and img_size.shape[0] >= 0 and x.shape[0] != img_size.shape[0]:
        raise ValueError(f"Input(ImgSize) dim[0] ({img_size.shape[0]}) and Input(X) dim[0] ({x.shape[0]}) should be "
                         f"same.")
    boxes = -1 if x.shape[2] < 0 or x.shape[3] < 0 else x.shape[2] * x.shape[3] * groups
    return ((x.shape[0], boxes, 4), x.dtype), ((x.shape[0], boxes, attrs["class_num"]), x.dtype)


@register_op("yolo_box", inputs=("X", "ImgSize"), outputs=("Boxes", "Scores"), no_gradient=True,
             infer_shape=_yolo_box_infer,
             attrs={"class_num": 1, "anchors": [], "downsample_ratio": 32, "conf_thresh": 0.01, "clip_bbox": True,
                    "scale_x_y": 1.0})
def _yolo_box_forward(attrs, x, img_size):
    _yolo_box_infer(attrs, x, img_size)
    n = x.shape[0]
    p, cx, cy, bw, bh = _grid_boxes(x, attrs, _anchor_sizes(attrs))
    img_h = img_size[:, 0].astype(x.dtype).reshape(n, 1, 1, 1)
    img_w = img_size[:, 1].astype(x.dtype).reshape(n, 1, 1, 1)
    cx, cy, bw, bh = cx * img_w, cy * img_h, bw * img_w, bh * img_h
    boxes = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], axis=-1)  # [N, A, H, W, 4]
    if attrs["clip_bbox"]:
        boxes[..., :2] = np.maximum(boxes[..., :2], 0)
        boxes[..., 2] = np.minimum(boxes[..., 2], img_w - 1)
        boxes[..., 3] = np.minimum(boxes[..., 3], img_h - 1)
    conf = _sigmoid(p[:, :, 4])
    keep = (conf >= attrs["conf_thresh"])[..., None]
    scores = np.moveaxis(_sigmoid(p[:, :, 5:]), 2, -1) * conf[..., None]
    return ((boxes * keep).reshape(n, -1, 4).astype(x.dtype, copy=False),
            (scores * keep).reshape(n, -1, attrs["class_num"]).astype(x.dtype, copy=False))


# --- yolov3_loss ---------------------------------------------------------------------------------------------
def _yolov3_infer(attrs, x, gt_box, gt_label, gt_score):
    mask, anchors = attrs["anchor_mask"], attrs["anchors"]
    _check_anchors("Yolov3LossOp", attrs, x, len(mask))
    if x.shape[2] >= 0 and x.shape[3] >= 0 and x.shape[2] != x.shape[3]:
        raise ValueError(f"Input(X) dim[2] and dim[3] of Yolov3LossOp should be equal. But received dim[2]"
                         f"({x.shape[2]}) != dim[3]({x.shape[3]})")
    if len(gt_box.shape) != 3 or (gt_box.shape[2] >= 0 and gt_box.shape[2] != 4):
        raise ValueError(f"Input(GTBox) of Yolov3LossOp should be a 3-D tensor [N, B, 4]. But received shape "
                         f"{list(gt_box.shape)}")
    for name, value in (("GTLabel", gt_label), ("GTScore", gt_score)):
        if value is not None and (len(value.shape) != 2 or any(
                a >= 0 and b >= 0 and a != b for a, b in zip(value.shape, gt_box.shape[:2]))):
            raise ValueError(f"Input({name}) of Yolov3LossOp should be a 2-D tensor of GTBox's first two dimensions "
                             f"{list(gt_box.shape[:2])}. But received shape {list(value.shape)}")
    if any(not 0 <= m < len(anchors) // 2 for m in mask):
        raise ValueError(f"Attr(anchor_mask) of Yolov3LossOp should not crossover Attr(anchors). But received "
                         f"anchor_mask {list(mask)} for {len(anchors) // 2} anchors")
    return (((x.shape[0],), x.dtype), ((x.shape[0], len(mask), x.shape[2], x.shape[3]), x.dtype),
            (tuple(gt_box.shape[:2]), "int32"))


def _iou_centred(cx1, cy1, w1, h1, cx2, cy2, w2, h2):
    iw = np.minimum(cx1 + w1 / 2, cx2 + w2 / 2) - np.maximum(cx1 - w1 / 2, cx2 - w2 / 2)
    ih = np.minimum(cy1 + h1 / 2, cy2 + h2 / 2) - np.maximum(cy1 - h1 / 2, cy2 - h2 / 2)
    inter = np.where((iw < 0) | (ih < 0), 0.0, iw * ih)
    return inter / (w1 * h1 + w2 * h2 - inter)


def _label_targets(attrs):
    if not attrs["use_label_smooth"]:
        return 1.0, 0.0
    smooth = min(1.0 / attrs["class_num"], 1.0 / 40)
    return 1.0 - smooth, smooth


def _matches(attrs, x, gt_box, gt_label, gt_score):
    """The matched GTs: (image, mask index, cell row, cell column, best anchor, GT box [P, 4], label, score) of
    each, and GTMatchMask [N, B]."""
    n, _, h, w = x.shape
    anchors, size = _anchor_sizes(attrs), attrs["downsample_ratio"] * h
    valid = (gt_box[..., 2] >= 1e-6) & (gt_box[..., 3] >= 1e-6)
    iou = _iou_centred(0, 0, gt_box[..., 2:3], gt_box[..., 3:4], 0, 0, anchors[:, 0] / size, anchors[:, 1] / size)
    best = np.argmax(iou, axis=-1)  # [N, B]: the first anchor of best IoU (anchor 0 when none overlaps)
    mask_of = np.full(len(anchors), -1, np.int64)
    for m in reversed(range(len(attrs["anchor_mask"]))):  # an anchor listed twice: its first position
        mask_of[attrs["anchor_mask"][m]] = m
    match = np.where(valid, mask_of[best], -1)
    img, t = np.nonzero(match >= 0)
    box = gt_box[img, t].astype(np.float64)
    gi = np.clip((box[:, 0] * w).astype(np.int64), 0, w - 1)
    gj = np.clip((box[:, 1] * h).astype(np.int64), 0, h - 1)
    score = np.ones(len(img)) if gt_score is None else gt_score[img, t].astype(np.float64)
    return (img, match[img, t], gj, gi, best[img, t], box, gt_label[img, t].astype(np.int64), score), \
        match.astype(np.int32)


def _targets(attrs, h, matched):
    """Location targets tx, ty, tw, th [P, 4] and the location weight (2 - w * h) * score [P]."""
    _, _, gj, gi, best, box, _, score = matched
    anchors, size = _anchor_sizes(attrs), attrs["downsample_ratio"] * h
    target = np.stack([box[:, 0] * h - gi, box[:, 1] * h - gj, np.log(box[:, 2] * size / anchors[best, 0]),
                       np.log(box[:, 3] * size / anchors[best, 1])], axis=1)
    return target, (2.0 - box[:, 2] * box[:, 3]) * score


@register_op("yolov3_loss", inputs=("X", "GTBox", "GTLabel", "GTScore"),
             outputs=("Loss", "ObjectnessMask", "GTMatchMask"), optional=("GTScore",),
             no_grad_inputs=("GTBox", "GTLabel", "GTScore"), infer_shape=_yolov3_infer,
             attrs={"class_num": 1, "anchors": [], "anchor_mask": [], "downsample_ratio": 32, "ignore_thresh": 0.7,
                    "use_label_smooth": True, "scale_x_y": 1.0})
def _yolov3_loss_forward(attrs, x, gt_box, gt_label, gt_score):
    _yolov3_infer(attrs, x, gt_box, gt_label, gt_score)
    n, _, h, w = x.shape
    mask = attrs["anchor_mask"]
    p, cx, cy, bw, bh = _grid_boxes(x, attrs, _anchor_sizes(attrs, mask))
    g = gt_box.astype(np.float64)[:, None, None, None]  # [N, 1, 1, 1, B, 4]
    valid = (gt_box[..., 2] >= 1e-6) & (gt_box[..., 3] >= 1e-6)
    iou = _iou_centred(cx[..., None], cy[..., None], bw[..., None], bh[..., None], g[..., 0], g[..., 1], g[..., 2],
                       g[..., 3])
    best_iou = np.where(valid[:, None, None, None], iou, 0.0).max(axis=-1, initial=0.0)
    obj = np.where(best_iou > attrs["ignore_thresh"], -1.0, 0.0)
    matched, match_mask = _matches(attrs, x, gt_box, gt_label, gt_score)
    img, m, gj, gi, _, _, label, score = matched
    cell = ((img * len(mask) + m) * h + gj) * w + gi
    last = len(cell) - 1 - np.unique(cell[::-1], return_index=True)[1]  # a cell's last GT sets its mask, as fluid's
    np.put(obj, cell[last], score[last])  # flat C-order indices, whatever obj's memory layout
    target, weight = _targets(attrs, h, matched)
    at = p[img, m, :, gj, gi]  # [P, 5 + class_num]
    pos, neg = _label_targets(attrs)
    onehot = np.where(np.arange(attrs["class_num"]) == label[:, None], pos, neg)
    per_gt = ((_sce(at[:, 0], target[:, 0]) + _sce(at[:, 1], target[:, 1]) + np.abs(at[:, 2] - target[:, 2])
               + np.abs(at[:, 3] - target[:, 3])) * weight + _sce(at[:, 5:], onehot).sum(axis=1) * score)
    xo = p[:, :, 4]
    objness = np.where(obj > 1e-5, _sce(xo, 1.0) * obj, np.where(obj > -0.5, _sce(xo, 0.0), 0.0))
    loss = objness.reshape(n, -1).sum(axis=1) + np.bincount(img, weights=per_gt, minlength=n)
    return loss.astype(x.dtype), obj.astype(x.dtype), match_mask


@register_grad("yolov3_loss", reads=("X", "GTBox", "GTLabel", "GTScore", "ObjectnessMask"))
def _yolov3_loss_backward(attrs, ins, outs, douts, need):
    (x, gt_box, gt_label, gt_score), obj, dloss = ins, outs[1].astype(np.float64), douts[0]
    n, _, h, w = x.shape
    p = x.reshape(n, len(attrs["anchor_mask"]), -1, h, w)
    matched, _ = _matches(attrs, x, gt_box, gt_label, gt_score)
    img, m, gj, gi, _, _, label, score = matched
    target, weight = _targets(attrs, h, matched)
    at = p[img, m, :, gj, gi]
    pos, neg = _label_targets(attrs)
    onehot = np.where(np.arange(attrs["class_num"]) == label[:, None], pos, neg)
    scale = dloss[img][:, None]
    share = np.concatenate([(_sigmoid(at[:, :2]) - target[:, :2]) * (weight[:, None] * scale),
                            np.where(at[:, 2:4] > target[:, 2:4], 1.0, -1.0) * (weight[:, None] * scale),
                            np.zeros((len(img), 1)), (_sigmoid(at[:, 5:]) - onehot) * (score[:, None] * scale)], axis=1)
    entry = np.arange(p.shape[2])
    index = (((img[:, None] * p.shape[1] + m[:, None]) * p.shape[2] + entry) * h + gj[:, None]) * w + gi[:, None]
    dx = np.bincount(index.reshape(-1), weights=share.reshape(-1), minlength=x.size).reshape(p.shape)
    xo = p[:, :, 4]
    dx[:, :, 4] += np.where(obj > 1e-5, (_sigmoid(xo) - 1.0) * obj, np.where(obj > -0.5, _sigmoid(xo), 0.0)) * \
        dloss.reshape(n, 1, 1, 1)
    return dx.reshape(x.shape).astype(x.dtype), None, None, None
