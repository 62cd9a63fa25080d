"""check_op cases of yolo_box and yolov3_loss (ops/yolo.py): forward against references that walk every image,
anchor, cell and ground-truth box with plain loops, yolov3_loss's gradient against float64 central differences;
tests/ops/test_op_gradients.py runs them."""
import math

import numpy as np
import pytest

rng = np.random.default_rng(8642)
CASES = []
ANCHORS = [10, 13, 16, 30, 33, 23, 30, 61, 62, 45, 59, 119]


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def sig(v):
    return 1 / (1 + math.exp(-v))


# --- yolo_box -----------------------------------------------------------------------------------------------
def yolo_box_ref(x, img_size, anchors, class_num, conf_thresh, ratio, clip=True, scale=1.0):
    n, _, h, w = x.shape
    na = len(anchors) // 2
    boxes, scores = np.zeros((n, na * h * w, 4)), np.zeros((n, na * h * w, class_num))
    bias = -0.5 * (scale - 1)
    for i in range(n):
        ih, iw = img_size[i]
        for a in range(na):
            for k in range(h):
                for l in range(w):
                    v = x[i, a * (5 + class_num):(a + 1) * (5 + class_num), k, l]
                    conf = sig(v[4])
                    if conf < conf_thresh:
                        continue
                    cx = (l + sig(v[0]) * scale + bias) * iw / h
                    cy = (k + sig(v[1]) * scale + bias) * ih / h
                    bw = math.exp(v[2]) * anchors[2 * a] * iw / (ratio * h)
                    bh = math.exp(v[3]) * anchors[2 * a + 1] * ih / (ratio * h)
                    box = [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]
                    if clip:
                        box = [max(box[0], 0), max(box[1], 0), min(box[2], iw - 1), min(box[3], ih - 1)]
                    m = (a * h + k) * w + l
                    boxes[i, m] = box
                    scores[i, m] = [conf * sig(c) for c in v[5:]]
    return boxes, scores


IMG = np.array([[416, 416], [320, 480]], np.int32)
X_BOX = rng.standard_normal((2, 3 * 9, 5, 5)) * 2
case("yolo_box", "clip", inputs={"X": X_BOX, "ImgSize": IMG},
     attrs={"anchors": ANCHORS[:6], "class_num": 4, "conf_thresh": 0.3, "downsample_ratio": 32},
     reference=lambda X, ImgSize: yolo_box_ref(X, ImgSize, ANCHORS[:6], 4, 0.3, 32))
case("yolo_box", "noclip-scale_x_y", inputs={"X": X_BOX, "ImgSize": IMG},
     attrs={"anchors": ANCHORS[6:], "class_num": 4, "conf_thresh": 0.01, "downsample_ratio": 16,
            "clip_bbox": False, "scale_x_y": 1.2},
     reference=lambda X, ImgSize: yolo_box_ref(X, ImgSize, ANCHORS[6:], 4, 0.01, 16, False, 1.2))


# --- yolov3_loss ----------------------------------------------------------------------------------------------
def sce(v, label):
    return max(v, 0) - v * label + math.log(1 + math.exp(-abs(v)))


def iou(a, b):
    """IoU of two (centre x, centre y, width, height) boxes."""
    iw = min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2)
    ih = min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2)
    inter = 0.0 if iw < 0 or ih < 0 else iw * ih
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def yolov3_ref(x, gt_box, gt_label, gt_score, anchors, mask, class_num, ignore, ratio, smooth=True, scale=1.0):
    n, _, h, w = x.shape
    size, bias, na = ratio * h, -0.5 * (scale - 1), len(anchors) // 2
    pos, neg = (1 - min(1 / class_num, 1 / 40), min(1 / class_num, 1 / 40)) if smooth else (1.0, 0.0)
    loss, obj = np.zeros(n), np.zeros((n, len(mask), h, w))
    match = np.full(gt_box.shape[:2], -1, np.int32)
    for i in range(n):
        gts = [t for t in range(gt_box.shape[1]) if gt_box[i, t, 2] >= 1e-6 and gt_box[i, t, 3] >= 1e-6]
        for j, a in enumerate(mask):
            for k in range(h):
                for l in range(w):
                    v = x[i, j * (5 + class_num):, k, l]
                    pred = ((l + sig(v[0]) * scale + bias) / h, (k + sig(v[1]) * scale + bias) / h,
                            math.exp(v[2]) * anchors[2 * a] / size, math.exp(v[3]) * anchors[2 * a + 1] / size)
                    if max([0.0] + [iou(pred, gt_box[i, t]) for t in gts]) > ignore:
                        obj[i, j, k, l] = -1
        for t in gts:
            g = gt_box[i, t]
            ious = [iou((0, 0, anchors[2 * a] / size, anchors[2 * a + 1] / size), (0, 0, g[2], g[3]))
                    for a in range(na)]
            best = ious.index(max(ious))
            if best not in mask:
                continue
            j = mask.index(best)
            match[i, t] = j
            gi, gj = int(g[0] * w), int(g[1] * h)
            v = x[i, j * (5 + class_num):, gj, gi]
            score = 1.0 if gt_score is None else gt_score[i, t]
            weight = (2 - g[2] * g[3]) * score
            loss[i] += (sce(v[0], g[0] * h - gi) + sce(v[1], g[1] * h - gj)
                        + abs(v[2] - math.log(g[2] * size / anchors[2 * best]))
                        + abs(v[3] - math.log(g[3] * size / anchors[2 * best + 1]))) * weight
            loss[i] += sum(sce(v[5 + c], pos if c == gt_label[i, t] else neg) for c in range(class_num)) * score
            obj[i, j, gj, gi] = score
        for j in range(len(mask)):
            for k in range(h):
                for l in range(w):
                    v, o = x[i, j * (5 + class_num) + 4, k, l], obj[i, j, k, l]
                    loss[i] += sce(v, 1.0) * o if o > 1e-5 else sce(v, 0.0) if o > -0.5 else 0.0
    return loss, obj, match


def gt_boxes(n, b, real, lo=0.08, hi=0.9):
    box = np.zeros((n, b, 4))
    box[:, :real, :2] = rng.uniform(0.05, 0.95, (n, real, 2))
    box[:, :real, 2:] = rng.uniform(lo, hi, (n, real, 2))
    return box


BOX = gt_boxes(2, 5, 4)
BOX[1, :2] = [[0.3, 0.6, 0.5, 0.7], [0.32, 0.62, 0.5, 0.7]]  # one cell and anchor: the loss and gradient count both
LABEL = rng.integers(0, 3, (2, 5)).astype(np.int32)
SCORE = rng.uniform(0.4, 1.0, (2, 5))
X_LOSS = rng.standard_normal((2, 3 * 8, 4, 4))
case("yolov3_loss", "score-smooth", inputs={"X": X_LOSS, "GTBox": BOX, "GTLabel": LABEL, "GTScore": SCORE},
     attrs={"anchors": ANCHORS, "anchor_mask": [3, 4, 5], "class_num": 3, "ignore_thresh": 0.3,
            "downsample_ratio": 32}, grad_outputs=["Loss"],
     reference=lambda X, GTBox, GTLabel, GTScore: yolov3_ref(X, GTBox, GTLabel, GTScore, ANCHORS, [3, 4, 5], 3, 0.3,
                                                             32))
case("yolov3_loss", "no-score-no-smooth-scale_x_y",
     inputs={"X": X_LOSS, "GTBox": gt_boxes(2, 3, 3, 0.1, 0.5), "GTLabel": LABEL[:, :3]},
     attrs={"anchors": ANCHORS, "anchor_mask": [0, 1, 2], "class_num": 3, "ignore_thresh": 0.2,
            "downsample_ratio": 16, "use_label_smooth": False, "scale_x_y": 1.1}, grad_outputs=["Loss"],
     reference=lambda X, GTBox, GTLabel: yolov3_ref(X, GTBox, GTLabel, None, ANCHORS, [0, 1, 2], 3, 0.2, 16, False,
                                                    1.1))
