"""ssd_loss and multi_box_head (layers/detection_ssd.py): fluid 1.8 signatures, a hand-computed loss (matching, hard
negative mining, both loss terms, normalisation), multi_box_head's shapes, and a tiny SSD program (conv features ->
multi_box_head -> ssd_loss) whose loss falls under Momentum on synthetic boxes, then detection_output giving one LoD
sequence of detections per image."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
PLACE = fluid.CPUPlace()
E = inspect.Parameter.empty


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_fluids():
    assert _signature(L.ssd_loss) == [
        ("location", E), ("confidence", E), ("gt_box", E), ("gt_label", E), ("prior_box", E), ("prior_box_var", None),
        ("background_label", 0), ("overlap_threshold", 0.5), ("neg_pos_ratio", 3.0), ("neg_overlap", 0.5),
        ("loc_loss_weight", 1.0), ("conf_loss_weight", 1.0), ("match_type", "per_prediction"),
        ("mining_type", "max_negative"), ("normalize", True), ("sample_size", None)]
    assert _signature(L.multi_box_head) == [
        ("inputs", E), ("image", E), ("base_size", E), ("num_classes", E), ("aspect_ratios", E), ("min_ratio", None),
        ("max_ratio", None), ("min_sizes", None), ("max_sizes", None), ("steps", None), ("step_w", None),
        ("step_h", None), ("offset", 0.5), ("variance", [0.1, 0.1, 0.2, 0.2]), ("flip", True), ("clip", False),
        ("kernel_size", 1), ("pad", 0), ("stride", 1), ("name", None), ("min_max_aspect_ratios_order", False)]
    assert L.detection.ssd_loss is L.ssd_loss and L.detection.multi_box_head is L.multi_box_head


def _ce(logits, label):
    return float(np.log(np.exp(logits).sum()) - logits[label])


def _smooth_l1(d):
    d = np.abs(d)
    return float(np.where(d < 1, 0.5 * d * d, d - 0.5).sum())


@pytest.mark.parametrize("neg_pos_ratio", [3.0, 1.0])
def test_ssd_loss_by_hand(neg_pos_ratio):
    priors = np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1], [0, 0.5, 0.5, 1]], "float32")
    gt = np.array([[0, 0, 0.5, 0.5]], "float32")  # IoU 1 with prior 0, 0 with the others
    conf = np.array([[[0.2, 0.1], [0.3, 1.5], [0.9, 0.4]]], "float32")  # [N=1, Np=3, C=2]
    loc = np.array([[[0.5, -0.2, 2.0, 0.1], [1, 1, 1, 1], [3, 3, 3, 3]]], "float32")

    def build():
        p = fluid.data("p", [3, 4])
        lv, cv = fluid.data("loc", [None, 3, 4]), fluid.data("conf", [None, 3, 2])
        g, lab = fluid.data("g", [None, 4], lod_level=1), fluid.data("lab", [None, 1], "int32", lod_level=1)
        return L.ssd_loss(lv, cv, g, lab, p, [0.1, 0.1, 0.2, 0.2], neg_pos_ratio=neg_pos_ratio)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        loss = build()
    feed = {"p": priors, "loc": loc, "conf": conf, "g": fluid.create_lod_tensor(gt, [[1]], PLACE),
            "lab": fluid.create_lod_tensor(np.array([[1]], "int32"), [[1]], PLACE)}
    got, = fluid.Executor(PLACE).run(main, feed=feed, fetch_list=[loss])
    # prior 0 is the positive (label 1; its encoded target is 0, so the location loss is smooth_l1(loc[0]));
    # priors 1 and 2 overlap nothing: with 3 negatives per positive both are mined, with 1 only prior 1, whose
    # background loss is the larger
    want = _ce(conf[0, 0], 1) + _smooth_l1(loc[0, 0]) + _ce(conf[0, 1], 0)
    if neg_pos_ratio == 3.0:
        want += _ce(conf[0, 2], 0)
    assert got.shape == (1, 1)
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-5)


def test_multi_box_head_shapes_with_one_and_several_maps():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        img = fluid.data("img", [None, 3, 32, 32])
        f1, f2 = fluid.data("f1", [None, 4, 8, 8]), fluid.data("f2", [None, 4, 4, 4])
        f3 = fluid.data("f3", [None, 4, 2, 2])
        loc, conf, box, var = L.multi_box_head([f1, f2, f3], img, base_size=32, num_classes=5,
                                               aspect_ratios=[[2.], [2., 3.], [2.]], min_ratio=20, max_ratio=90)
        # 4 priors per cell with ratios (1, 2, 1/2) and a max size, 6 with (1, 2, 1/2, 3, 1/3)
        priors = 64 * 4 + 16 * 6 + 4 * 4
        assert list(loc.shape) == [-1, priors, 4] and list(conf.shape) == [-1, priors, 5]
        assert list(box.shape) == [priors, 4] == list(var.shape) and box.stop_gradient
        one = L.multi_box_head([f1], img, 32, 2, [[2.]], min_sizes=[4.], max_sizes=[8.])
        assert [list(v.shape) for v in one] == [[-1, 64 * 4 * 4], [-1, 64 * 4 * 2], [8, 8, 4, 4], [8, 8, 4, 4]]
        with pytest.raises(ValueError, match="aspect_ratios should be list or tuple, and the length of inputs"):
            L.multi_box_head([f1, f2, f3], img, 32, 5, [[2.]], min_ratio=20, max_ratio=90)
        with pytest.raises(ValueError, match="inputs should be a list or tuple"):
            L.multi_box_head(f1, img, 32, 5, [[2.]], min_sizes=[4.], max_sizes=[8.])


def test_tiny_ssd_learns_and_detects():
    rng = np.random.RandomState(0)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup):
        img = fluid.data("img", [None, 3, 16, 16])
        gt_box = fluid.data("gt_box", [None, 4], lod_level=1)
        gt_label = fluid.data("gt_label", [None, 1], "int32", lod_level=1)
        f1 = L.conv2d(img, 8, 3, stride=2, padding=1, act="relu")
        f2 = L.conv2d(f1, 8, 3, stride=2, padding=1, act="relu")
        loc, conf, box, var = L.multi_box_head([f1, f2], img, base_size=16, num_classes=3, aspect_ratios=[[2.], [2.]],
                                               min_sizes=[4., 8.], max_sizes=[8., 12.])
        loss = L.mean(L.ssd_loss(loc, conf, gt_box, gt_label, box, var))
        test = main.clone(for_test=True)
        fluid.optimizer.Momentum(0.05, 0.9).minimize(loss)
    with fluid.program_guard(test, fluid.Program()):
        dets = L.detection_output(loc, conf, box, var, keep_top_k=5)
        dets_index = L.detection_output(loc, conf, box, var, keep_top_k=5, return_index=True)
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    x = rng.rand(2, 3, 16, 16).astype("float32")
    x[0, :, 1:8, 1:6] += 1
    x[0, 0, 8:13, 8:14] += 1
    x[1, 1, 5:14, 3:11] += 1
    boxes = np.array([[0.1, 0.1, 0.4, 0.5], [0.5, 0.5, 0.9, 0.8], [0.2, 0.3, 0.7, 0.9]], "float32")
    feed = {"img": x, "gt_box": fluid.create_lod_tensor(boxes, [[2, 1]], PLACE),
            "gt_label": fluid.create_lod_tensor(np.array([[1], [2], [1]], "int32"), [[2, 1]], PLACE)}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0]) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(b < a for a, b in zip(losses[5::5], losses[10::5])), losses  # still falling, step after step
    got, (got2, index) = exe.run(test, feed={"img": x}, fetch_list=[dets], return_numpy=False), \
        exe.run(test, feed={"img": x}, fetch_list=list(dets_index), return_numpy=False)
    (got,) = got
    rows = np.asarray(got)
    lengths = got.recursive_sequence_lengths()
    assert dets.lod_level == 1 and len(lengths) == 1 and len(lengths[0]) == 2 and sum(lengths[0]) == len(rows)
    assert rows.shape[1] == 6 and set(rows[:, 0]) <= {1.0, 2.0} and (rows[:, 1] > 0.01).all()
    assert max(lengths[0]) <= 5
    np.testing.assert_array_equal(np.asarray(got2), rows)
    assert index.recursive_sequence_lengths() == lengths and np.asarray(index).shape == (len(rows), 1)
    priors = box.shape[0]
    assert (np.asarray(index)[:lengths[0][0]] < priors).all() and (np.asarray(index)[lengths[0][0]:] >= priors).all()
