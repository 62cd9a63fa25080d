"""retinanet_detection_output, generate_mask_labels, detection_map and fluid.metrics.DetectionMAP through the
Executor: hand-computed cases, multi-image LoD cases against references written here, and the errors."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

from .test_detection_box import run_layers
from .test_detection_rpn import pixel_iou

L = fluid.layers
PLACE = fluid.CPUPlace()
E = inspect.Parameter.empty


def lod(values, lengths):
    return fluid.create_lod_tensor(np.asarray(values), lengths, PLACE)


def run(build, feed):
    return run_layers(build, feed, return_numpy=False)[1]


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_fluids():
    assert _signature(L.retinanet_detection_output) == [
        ("bboxes", E), ("scores", E), ("anchors", E), ("im_info", E), ("score_threshold", 0.05), ("nms_top_k", 1000),
        ("keep_top_k", 100), ("nms_threshold", 0.3), ("nms_eta", 1.0)]
    assert _signature(L.generate_mask_labels) == [
        ("im_info", E), ("gt_classes", E), ("is_crowd", E), ("gt_segms", E), ("rois", E), ("labels_int32", E),
        ("num_classes", E), ("resolution", E)]
    assert _signature(L.detection_map) == [
        ("detect_res", E), ("label", E), ("class_num", E), ("background_label", 0), ("overlap_threshold", 0.3),
        ("evaluate_difficult", True), ("has_state", None), ("input_states", None), ("out_states", None),
        ("ap_version", "integral")]
    assert _signature(fluid.metrics.DetectionMAP) == [
        ("input", E), ("gt_label", E), ("gt_box", E), ("gt_difficult", None), ("class_num", None),
        ("background_label", 0), ("overlap_threshold", 0.5), ("evaluate_difficult", True),
        ("ap_version", "integral")]
    for name in ("retinanet_detection_output", "generate_mask_labels", "detection_map"):
        assert getattr(L.detection, name) is getattr(L, name) and name in L.detection.__all__


# --- retinanet_detection_output ---------------------------------------------------------------------------
def retina_ref(boxes, scores, anchors, im_info, thr, top_k, keep, nms):
    out, counts = [], []
    for i in range(len(im_info)):
        h, w, s = im_info[i]
        oh, ow = round(h / s), round(w / s)
        per_class = {}
        for level, (b, sc, an) in enumerate(zip(boxes, scores, anchors)):
            t = thr if level < len(scores) - 1 else 0.0
            flat = [(sc[i, a, c], a * sc.shape[2] + c) for a in range(sc.shape[1]) for c in range(sc.shape[2])
                    if sc[i, a, c] > t]
            flat = sorted(flat, key=lambda p: -p[0])[:top_k]
            for score, idx in flat:
                a, c = divmod(idx, sc.shape[2])
                x0, y0, x1, y1 = an[a]
                aw, ah = x1 - x0 + 1, y1 - y0 + 1
                cx, cy = b[i, a, 0] * aw + x0 + aw / 2, b[i, a, 1] * ah + y0 + ah / 2
                bw, bh = np.exp(b[i, a, 2]) * aw, np.exp(b[i, a, 3]) * ah
                box = [(cx - bw / 2) / s, (cy - bh / 2) / s, (cx + bw / 2 - 1) / s, (cy + bh / 2 - 1) / s]
                box = [min(max(v, 0), (ow if k % 2 == 0 else oh) - 1) for k, v in enumerate(box)]
                per_class.setdefault(c, []).append((score, box))
        dets = []
        for c in sorted(per_class):
            kept = []
            for score, box in sorted(per_class[c], key=lambda p: -p[0]):
                if all(pixel_iou(box, k[1]) <= nms for k in kept):
                    kept.append((score, box))
            dets += [(score, c, box) for score, box in kept]
        dets = sorted(dets, key=lambda d: -d[0])[:keep]
        out += [[c + 1, score] + box for score, c, box in dets]
        counts.append(len(dets))
    return np.array(out).reshape(-1, 6), counts


@pytest.mark.parametrize("keep", [9, 100])
def test_retinanet_detection_output_against_reference(keep):
    rs = np.random.RandomState(0)
    n, c, levels = 2, 3, [10, 5, 2]
    anchors = []
    for m in levels:
        xy = rs.uniform(0, 50, (m, 2))
        anchors.append(np.concatenate([xy, xy + rs.uniform(8, 40, (m, 2))], 1).astype("float32"))
    boxes = [(rs.randn(n, m, 4) * 0.2).astype("float32") for m in levels]
    scores = [(rs.rand(n, m, c) ** 2).astype("float32") for m in levels]
    info = np.array([[80, 90, 1.0], [120, 100, 1.5]], "float32")

    def build():
        bs = [fluid.data(f"b{k}", [n, m, 4], "float32") for k, m in enumerate(levels)]
        ss = [fluid.data(f"s{k}", [n, m, c], "float32") for k, m in enumerate(levels)]
        ans = [fluid.data(f"a{k}", [m, 4], "float32") for k, m in enumerate(levels)]
        return L.retinanet_detection_output(bs, ss, ans, fluid.data("i", [n, 3], "float32"), score_threshold=0.2,
                                            nms_top_k=12, keep_top_k=keep, nms_threshold=0.4)
    feed = {"i": info, **{f"b{k}": v for k, v in enumerate(boxes)}, **{f"s{k}": v for k, v in enumerate(scores)},
            **{f"a{k}": v for k, v in enumerate(anchors)}}
    (out,) = run(build, feed)
    want, counts = retina_ref(boxes, scores, anchors, info, 0.2, 12, keep, 0.4)
    assert out.recursive_sequence_lengths() == [counts] and (counts == [9, 9] if keep == 9 else min(counts) > 9)
    assert (want[:, 1] < 0.2).any() == (keep > 9)  # the last level keeps scores under score_threshold
    np.testing.assert_allclose(np.array(out), want, rtol=1e-5, atol=1e-4)


def test_retinanet_detection_output_errors():
    with fluid.program_guard(fluid.Program()):
        b, s = fluid.data("b", [1, 4, 4], "float32"), fluid.data("s", [1, 4, 2], "float32")
        with pytest.raises(ValueError, match=r"level 0 has 4 boxes in Input\(BBoxes\), 4 in Input\(Scores\) and 3 "
                                             r"in Input\(Anchors\)"):
            L.retinanet_detection_output([b], [s], [fluid.data("a", [3, 4], "float32")],
                                         fluid.data("i", [1, 3], "float32"))
        with pytest.raises(TypeError, match="'bboxes' in retinanet_detection_output must be"):
            L.retinanet_detection_output(b, [s], [b], fluid.data("i2", [1, 3], "float32"))


# --- generate_mask_labels ---------------------------------------------------------------------------------
def _mask_layer(res, classes=3):
    def build():
        return L.generate_mask_labels(
            fluid.data("i", [None, 3], "float32"), fluid.data("gc", [None, 1], "int32", lod_level=1),
            fluid.data("c", [None, 1], "int32", lod_level=1), fluid.data("s", [None, 2], "float32", lod_level=3),
            fluid.data("r", [None, 4], "float32", lod_level=1), fluid.data("l", [None, 1], "int32", lod_level=1),
            num_classes=classes, resolution=res)
    return build


def test_generate_mask_labels_by_hand():
    # image 0 (scale 2): ground truth 0 (class 2) is the square (2, 2)-(8, 8) drawn as one polygon, ground truth 1
    # is crowd. RoI 0 is [0, 0, 10, 10] at the original scale (label 2); RoI 1 is background.
    # A 5 x 5 mask over the RoI has 2-pixel cells: the square covers cells 1..3 (their centres 3, 5, 7 are inside).
    # image 1: two RoIs, none foreground: fluid's placeholder, its first RoI with an all -1 target.
    square = [[2, 2], [8, 2], [8, 8], [2, 8]]
    crowd_poly = [[0, 0], [4, 0], [4, 4]]
    other = [[20, 20], [30, 20], [30, 30]]
    segs = np.array(square + crowd_poly + other, "float32")
    feed = {"i": np.array([[40, 40, 2.0], [50, 50, 1.0]], "float32"),
            "gc": lod(np.array([[2], [1], [1]], "int32"), [[2, 1]]),
            "c": lod(np.array([[0], [1], [0]], "int32"), [[2, 1]]),
            "s": lod(segs, [[2, 1], [1, 1, 1], [4, 3, 3]]),
            "r": lod(np.array([[0, 0, 20, 20], [4, 4, 30, 30], [1, 1, 5, 5], [2, 2, 9, 9]], "float32"), [[2, 2]]),
            "l": lod(np.array([[2], [0], [0], [0]], "int32"), [[2, 2]])}
    rois, has, masks = run(_mask_layer(5), feed)
    assert rois.recursive_sequence_lengths() == [[1, 1]] == masks.recursive_sequence_lengths()
    np.testing.assert_allclose(np.array(rois), [[0, 0, 20, 20], [1, 1, 5, 5]])
    assert np.array(has).ravel().tolist() == [0, 0]
    m = np.array(masks).reshape(2, 3, 5, 5)
    want = np.zeros((5, 5), int)
    want[1:4, 1:4] = 1
    np.testing.assert_array_equal(m[0, 2], want)
    assert (m[0, [0, 1]] == -1).all() and (m[1] == -1).all()


def test_generate_mask_labels_multi_polygon_union_and_best_ground_truth():
    # two ground truths; RoI 0 overlaps the second most, whose two triangles make the lower-left and upper-right
    # halves of (0, 0)-(10, 10) minus the diagonal band; the union covers every cell off the diagonal band
    left = [[10, 0], [20, 0], [10, 10]]
    right = [[20, 10], [20, 0], [10, 10]]
    far = [[50, 50], [60, 50], [60, 60], [50, 60]]
    segs = np.array(far + left + right, "float32")
    feed = {"i": np.array([[100, 100, 1.0]], "float32"), "gc": lod(np.array([[1], [2]], "int32"), [[2]]),
            "c": lod(np.array([[0], [0]], "int32"), [[2]]), "s": lod(segs, [[2], [1, 2], [4, 3, 3]]),
            "r": lod(np.array([[10, 0, 20, 10], [50, 50, 60, 60]], "float32"), [[2]]),
            "l": lod(np.array([[2], [1]], "int32"), [[2]])}
    _, has, masks = run(_mask_layer(10), feed)
    m = np.array(masks).reshape(2, 3, 10, 10)
    assert np.array(has).ravel().tolist() == [0, 1]
    assert m[0, 2].sum() == 100  # the two triangles tile the whole RoI
    assert m[1, 1].sum() == 100  # the square fills its own RoI
    assert (m[0, :2] == -1).all() and (m[1, [0, 2]] == -1).all()


def test_generate_mask_labels_needs_its_lods():
    feed = {"i": np.array([[40, 40, 1.0]], "float32"), "gc": lod(np.array([[1]], "int32"), [[1]]),
            "c": lod(np.array([[0]], "int32"), [[1]]), "s": lod(np.zeros((3, 2), "float32"), [[1], [3]]),
            "r": lod(np.zeros((1, 4), "float32"), [[1]]), "l": lod(np.array([[1]], "int32"), [[1]])}
    with pytest.raises(ValueError, match=r"Input\(GtSegms\) needs 3 levels of LoD, but received 2"):
        run(_mask_layer(4), feed)


# --- detection_map / DetectionMAP -------------------------------------------------------------------------
def _map(ap="integral", difficult=True, width=6, states=None):
    def build():
        det = fluid.data("det", [None, 6], "float32", lod_level=1)
        lab = fluid.data("lab", [None, width], "float32", lod_level=1)
        return L.detection_map(det, lab, 3, overlap_threshold=0.5, evaluate_difficult=difficult, ap_version=ap)
    return build


# class 1: two ground truths in image 0 (B difficult), one in image 1; class 2: one ground truth in image 1
LABELS = [[1, 0, 0.1, 0.1, 0.3, 0.3], [1, 1, 0.5, 0.5, 0.7, 0.7], [1, 0, 0.2, 0.6, 0.4, 0.8],
          [2, 0, 0.6, 0.1, 0.9, 0.4]]
DETS = [[1, 0.9, 0.1, 0.1, 0.3, 0.3],      # tp (A)
        [1, 0.8, 0.11, 0.1, 0.3, 0.3],     # fp: A already claimed
        [1, 0.7, 0.5, 0.5, 0.7, 0.7],      # matches difficult B
        [1, 0.6, 0.2, 0.6, 0.4, 0.8],      # tp (image 1)
        [2, 0.5, 0.0, 0.0, 0.1, 0.1]]      # fp (no overlap)


def test_detection_map_by_hand():
    feed = {"det": lod(np.array(DETS, "float32"), [[3, 2]]), "lab": lod(np.array(LABELS, "float32"), [[2, 2]])}
    # evaluating difficult boxes: class 1 ranks tp, fp, tp, tp over 3 positives -> recall 1/3, 1/3, 2/3, 1 at
    # precision 1, 1/2, 2/3, 3/4: integral AP = (1 + 2/3 + 3/4) / 3; class 2 has AP 0
    (m,) = run(_map(), feed)
    np.testing.assert_allclose(np.array(m), [((1 + 2 / 3 + 3 / 4) / 3 + 0) / 2], rtol=1e-6)
    # without them: B is no positive and the detection matching it is not counted: tp, fp, tp over 2 positives
    (m,) = run(_map(difficult=False), feed)
    np.testing.assert_allclose(np.array(m), [((1 + 2 / 3) / 2) / 2], rtol=1e-6)
    # 11 points: recall >= 0..0.5 reaches precision 1, above 0.5 (up to 1) precision 2/3
    (m,) = run(_map("11point", difficult=False), feed)
    np.testing.assert_allclose(np.array(m), [(6 * 1 + 5 * 2 / 3) / 11 / 2], rtol=1e-6)
    # rows without the difficult column: every ground truth counts
    feed["lab"] = lod(np.array([r[:1] + r[2:] for r in LABELS], "float32"), [[2, 2]])
    (m,) = run(_map(width=5, difficult=False), feed)
    np.testing.assert_allclose(np.array(m), [((1 + 2 / 3 + 3 / 4) / 3) / 2], rtol=1e-6)


def test_detection_map_metric_accumulates_and_resets():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        det = fluid.data("det", [None, 6], "float32", lod_level=1)
        gt_label = fluid.data("gl", [None, 1], "int32", lod_level=1)
        gt_box = fluid.data("gb", [None, 4], "float32", lod_level=1)
        gt_diff = fluid.data("gd", [None, 1], "int32", lod_level=1)
        metric = fluid.metrics.DetectionMAP(det, gt_label, gt_box, gt_diff, class_num=3, overlap_threshold=0.5)
        cur, accum = metric.get_map_var()
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    labels = np.array(LABELS, "float32")

    def feed(images):
        det_rows = {0: DETS[:3], 1: DETS[3:]}
        lab_rows = {0: labels[:2], 1: labels[2:]}
        dets = np.concatenate([np.array(det_rows[i], "float32") for i in images])
        labs = np.concatenate([lab_rows[i] for i in images])
        lens = [[len(det_rows[i]) for i in images]], [[len(lab_rows[i]) for i in images]]
        return {"det": lod(dets, lens[0]), "gl": lod(labs[:, :1].astype("int32"), lens[1]),
                "gb": lod(labs[:, 2:], lens[1]), "gd": lod(labs[:, 1:2].astype("int32"), lens[1])}
    whole = exe.run(main, feed=feed([0, 1]), fetch_list=[cur])[0]
    metric.reset(exe)
    first, acc1 = exe.run(main, feed=feed([0]), fetch_list=[cur, accum])
    second, acc2 = exe.run(main, feed=feed([1]), fetch_list=[cur, accum])
    np.testing.assert_allclose(acc1, first)
    np.testing.assert_allclose(acc2, whole, rtol=1e-6)  # two batches accumulate to the mAP of both at once
    assert not np.allclose(second, whole)
    metric.reset(exe)
    _, again = exe.run(main, feed=feed([1]), fetch_list=[cur, accum])
    np.testing.assert_allclose(again, second)


def test_detection_map_errors():
    with fluid.program_guard(fluid.Program()):
        det = fluid.data("det", [None, 5], "float32", lod_level=1)
        with pytest.raises(ValueError, match=r"Input\(DetectRes\) must be \[M, 6\]"):
            L.detection_map(det, fluid.data("lab", [None, 6], "float32", lod_level=1), 3)
        det6 = fluid.data("det6", [None, 6], "float32", lod_level=1)
        with pytest.raises(ValueError, match="ap_type must be 'integral' or '11point', but received 'area'"):
            L.detection_map(det6, fluid.data("lab2", [None, 6], "float32", lod_level=1), 3, ap_version="area")
