"""yolo_box and yolov3_loss through the Executor: fluid 1.8 signatures, shapes known while building, a YOLO head
that trains on yolov3_loss, and the errors naming the input or attribute at fault (values and gradients of the
ops: tests/ops/yolo_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

from .yolo_cases import ANCHORS, yolo_box_ref, yolov3_ref

PLACE = fluid.CPUPlace()
L = fluid.layers
rng = np.random.RandomState(21)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_layers_take_fluids_signatures():
    e = inspect.Parameter.empty
    assert _signature(L.yolo_box) == [("x", e), ("img_size", e), ("anchors", e), ("class_num", e),
                                      ("conf_thresh", e), ("downsample_ratio", e), ("clip_bbox", True),
                                      ("name", None), ("scale_x_y", 1.0)]
    assert _signature(L.yolov3_loss) == [("x", e), ("gt_box", e), ("gt_label", e), ("anchors", e),
                                         ("anchor_mask", e), ("class_num", e), ("ignore_thresh", e),
                                         ("downsample_ratio", e), ("gt_score", None), ("use_label_smooth", True),
                                         ("name", None), ("scale_x_y", 1.0)]


def test_yolo_box_layer():
    x = (rng.randn(2, 3 * 7, 4, 4) * 2).astype("float32")
    img = np.array([[320, 320], [200, 300]], "int32")
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        xv = fluid.data("x", [None, 21, 4, 4], "float32")
        iv = fluid.data("img", [None, 2], "int32")
        boxes, scores = L.yolo_box(xv, iv, ANCHORS[:6], 2, 0.2, 32)
    assert boxes.shape == (-1, 48, 4) and scores.shape == (-1, 48, 2)
    got_boxes, got_scores = fluid.Executor(PLACE).run(main, feed={"x": x, "img": img}, fetch_list=[boxes, scores])
    want_boxes, want_scores = yolo_box_ref(x.astype(np.float64), img, ANCHORS[:6], 2, 0.2, 32)
    np.testing.assert_allclose(got_boxes, want_boxes, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(got_scores, want_scores, rtol=1e-5, atol=1e-6)
    assert (got_scores == 0).all(axis=2).any() and (got_scores > 0).any()  # some boxes under conf_thresh, some not


def _head_program(gt_score=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup):
        feat = fluid.data("feat", [None, 4, 4, 4], "float32")
        box = fluid.data("box", [None, 3, 4], "float32")
        label = fluid.data("label", [None, 3], "int32")
        score = fluid.data("score", [None, 3], "float32") if gt_score else None
        head = L.conv2d(feat, 3 * (5 + 2), 1)
        loss = L.yolov3_loss(head, box, label, ANCHORS, [3, 4, 5], 2, 0.5, 32, gt_score=score)
        fluid.optimizer.SGD(0.02).minimize(L.mean(loss))
    return main, startup, head, loss


def test_a_yolo_head_trains_on_yolov3_loss():
    main, startup, head, loss = _head_program()
    assert loss.shape == (-1,)
    n = 4
    feed = {"feat": rng.randn(n, 4, 4, 4).astype("float32"),
            "box": np.tile(np.array([[0.3, 0.3, 0.4, 0.5], [0.7, 0.6, 0.6, 0.4], [0, 0, 0, 0]], "float32"), (n, 1, 1)),
            "label": np.tile(np.array([0, 1, 0], "int32"), (n, 1))}
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    first, x = exe.run(main, feed=feed, fetch_list=[loss, head])
    want, _, _ = yolov3_ref(x.astype(np.float64), feed["box"].astype(np.float64), feed["label"], None, ANCHORS,
                            [3, 4, 5], 2, 0.5, 32)
    np.testing.assert_allclose(first, want, rtol=1e-4)
    for _ in range(30):
        last, = exe.run(main, feed=feed, fetch_list=[loss])
    assert last.mean() < 0.5 * first.mean()


def _build(fn):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        fn()


def test_errors_name_the_input_or_attribute():
    def loss_on(x_shape, box_shape=(None, 3, 4), **kw):
        args = dict(anchors=ANCHORS, anchor_mask=[0, 1], class_num=2, ignore_thresh=0.7, downsample_ratio=32)
        args.update(kw)
        return lambda: L.yolov3_loss(fluid.data("x", x_shape, "float32"), fluid.data("b", box_shape, "float32"),
                                     fluid.data("l", [None, 3], "int32"), **args)
    with pytest.raises(ValueError, match=r"Input\(X\) dim\[1\] of Yolov3LossOp.*received dim\[1\]\(15\) != .*\(14\)"):
        _build(loss_on([None, 15, 4, 4]))
    with pytest.raises(ValueError, match=r"Input\(X\) dim\[2\] and dim\[3\].*dim\[2\]\(4\) != dim\[3\]\(5\)"):
        _build(loss_on([None, 14, 4, 5]))
    with pytest.raises(ValueError, match=r"Input\(GTBox\) of Yolov3LossOp.*\[-1, 3, 5\]"):
        _build(loss_on([None, 14, 4, 4], (None, 3, 5)))
    with pytest.raises(ValueError, match=r"anchor_mask.*\[0, 6\] for 6 anchors"):
        _build(loss_on([None, 14, 4, 4], anchor_mask=[0, 6]))
    with pytest.raises(TypeError, match="Attr ignore_thresh of yolov3_loss must be a float number"):
        _build(loss_on([None, 14, 4, 4], ignore_thresh=1))
    with pytest.raises(TypeError, match="Attr use_label_smooth of yolov3_loss must be a bool value"):
        _build(loss_on([None, 14, 4, 4], use_label_smooth=1))
    with pytest.raises(ValueError, match=r"Input\(ImgSize\) of YoloBoxOp.*\[-1, 3\]"):
        _build(lambda: L.yolo_box(fluid.data("x", [None, 14, 4, 4], "float32"), fluid.data("i", [None, 3], "int32"),
                                  ANCHORS[:4], 2, 0.1, 32))
    with pytest.raises(TypeError, match="Attr class_num of yolo_box must be an integer"):
        _build(lambda: L.yolo_box(fluid.data("x", [None, 14, 4, 4], "float32"), fluid.data("i", [None, 2], "int32"),
                                  ANCHORS[:4], 2.0, 0.1, 32))
