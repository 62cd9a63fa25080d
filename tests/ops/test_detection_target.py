"""rpn_target_assign, retinanet_target_assign and generate_proposal_labels through the Executor: hand-computed
cases, multi-image LoD cases against loop-by-loop references written here (use_random=False), random sampling
driven by the program's seed, and the errors."""
import inspect
import math

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
PLACE = fluid.CPUPlace()
E = inspect.Parameter.empty


def lod(values, lengths):
    return fluid.create_lod_tensor(np.asarray(values), [lengths], PLACE)


def run(build, feed, seed=0):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        outs = build()
    exe = fluid.Executor(PLACE)
    return exe.run(main, feed=feed, fetch_list=list(outs), return_numpy=False)


def iou(a, b):
    iw = min(a[2], b[2]) - max(a[0], b[0]) + 1
    ih = min(a[3], b[3]) - max(a[1], b[1]) + 1
    if iw <= 0 or ih <= 0:
        return 0.0
    area = lambda r: (r[2] - r[0] + 1) * (r[3] - r[1] + 1)  # noqa: E731
    return iw * ih / (area(a) + area(b) - iw * ih)


def delta(box, gt, w=(1, 1, 1, 1)):
    bw, bh, gw, gh = box[2] - box[0] + 1, box[3] - box[1] + 1, gt[2] - gt[0] + 1, gt[3] - gt[1] + 1
    return [((gt[0] + gw / 2) - (box[0] + bw / 2)) / bw / w[0], ((gt[1] + gh / 2) - (box[1] + bh / 2)) / bh / w[1],
            math.log(gw / bw) / w[2], math.log(gh / bh) / w[3]]


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_fluids():
    assert _signature(L.rpn_target_assign) == [
        ("bbox_pred", E), ("cls_logits", E), ("anchor_box", E), ("anchor_var", E), ("gt_boxes", E), ("is_crowd", E),
        ("im_info", E), ("rpn_batch_size_per_im", 256), ("rpn_straddle_thresh", 0.0), ("rpn_fg_fraction", 0.5),
        ("rpn_positive_overlap", 0.7), ("rpn_negative_overlap", 0.3), ("use_random", True)]
    assert _signature(L.retinanet_target_assign) == [
        ("bbox_pred", E), ("cls_logits", E), ("anchor_box", E), ("anchor_var", E), ("gt_boxes", E), ("gt_labels", E),
        ("is_crowd", E), ("im_info", E), ("num_classes", 1), ("positive_overlap", 0.5), ("negative_overlap", 0.4)]
    assert _signature(L.generate_proposal_labels) == [
        ("rpn_rois", E), ("gt_classes", E), ("is_crowd", E), ("gt_boxes", E), ("im_info", E),
        ("batch_size_per_im", 256), ("fg_fraction", 0.25), ("fg_thresh", 0.25), ("bg_thresh_hi", 0.5),
        ("bg_thresh_lo", 0.0), ("bbox_reg_weights", [0.1, 0.1, 0.2, 0.2]), ("class_nums", None), ("use_random", True),
        ("is_cls_agnostic", False), ("is_cascade_rcnn", False)]
    for name in ("rpn_target_assign", "retinanet_target_assign", "generate_proposal_labels"):
        assert getattr(L.detection, name) is getattr(L, name) and name in L.detection.__all__


# --- rpn_target_assign / retinanet_target_assign ---------------------------------------------------------
def anchors_ref(anchors, gts, crowd, labels, im_info, batch, straddle, fraction, pos, neg):
    """One image, anchor by anchor, as the layers document them (no random sampling)."""
    h, w, scale = im_info
    inside = [i for i, a in enumerate(anchors)
              if straddle < 0 or (a[0] >= -straddle and a[1] >= -straddle and a[2] < w + straddle
                                  and a[3] < h + straddle)]
    keep = [j for j in range(len(gts)) if crowd[j] == 0]
    g = [[v * scale for v in gts[j]] for j in keep]
    ov = [[iou(anchors[i], gt) for gt in g] for i in inside]
    best_of_gt = [max(ov[k][j] for k in range(len(inside))) for j in range(len(g))]
    best = [max(r) if r else -1.0 for r in ov]
    fg = [k for k in range(len(inside)) if best[k] >= pos or any(abs(ov[k][j] - best_of_gt[j]) < 1e-5
                                                                 for j in range(len(g)))]
    if fraction > 0 and batch > 0:
        fg = fg[:int(fraction * batch)]
    bg = [k for k in range(len(inside)) if best[k] < neg]
    if fraction > 0 and batch > 0:
        bg = bg[:batch - len(fg)]
    fake = [k for k in bg if k in fg]
    fg_rows = sorted(set(fg) - set(bg))
    loc = [fg[0]] * len(fake) + fg_rows
    gt_of = [max(range(len(g)), key=lambda j: (ov[k][j], -j)) for k in loc]
    cls = [labels[keep[gt_of[len(fake) + n]]] if labels is not None else 1 for n in range(len(fg_rows))]
    return ([inside[k] for k in loc], [inside[k] for k in fg_rows + sorted(bg)], cls + [0] * len(bg),
            [delta(anchors[inside[k]], g[j]) for k, j in zip(loc, gt_of)], [0] * len(fake) + [1] * len(fg_rows))


def _anchor_case(rs):
    cy, cx = np.meshgrid(np.arange(6) * 16.0 + 8, np.arange(8) * 16.0 + 8, indexing="ij")
    sizes = np.array([8.0, 16.0, 24.0])
    anchors = np.stack([cx[..., None] - sizes, cy[..., None] - sizes, cx[..., None] + sizes - 1,
                        cy[..., None] + sizes - 1], -1).reshape(-1, 4).astype("float32")
    xy = rs.rand(7, 2) * 80
    gts = np.concatenate([xy, xy + 10 + rs.rand(7, 2) * 40], 1).astype("float32")
    crowd = np.array([0, 0, 1, 0, 0, 0, 0], "int32")
    labels = rs.randint(1, 5, (7, 1)).astype("int32")
    info = np.array([[96, 128, 1.0], [80, 110, 0.5]], "float32")
    return anchors, gts, crowd, labels, info


def _rpn(n_anchors, **kw):
    def build():
        bbox_pred = fluid.data("bp", [2, n_anchors, 4], "float32")
        cls_logits = fluid.data("cl", [2, n_anchors, 1], "float32")
        anchor = fluid.data("a", [n_anchors, 4], "float32")
        gt = fluid.data("g", [None, 4], "float32", lod_level=1)
        crowd = fluid.data("c", [None, 1], "int32", lod_level=1)
        info = fluid.data("i", [2, 3], "float32")
        return L.rpn_target_assign(bbox_pred, cls_logits, anchor, anchor, gt, crowd, info, **kw)
    return build


@pytest.mark.parametrize("kw", [dict(rpn_batch_size_per_im=40, rpn_straddle_thresh=0.0, rpn_fg_fraction=0.25),
                                dict(rpn_batch_size_per_im=512, rpn_straddle_thresh=-1.0, rpn_fg_fraction=0.5,
                                     rpn_positive_overlap=0.5, rpn_negative_overlap=0.2)])
def test_rpn_target_assign_against_reference(kw):
    rs = np.random.RandomState(2)
    anchors, gts, crowd, _, info = _anchor_case(rs)
    bp, cl = rs.rand(2, len(anchors), 4).astype("float32"), rs.rand(2, len(anchors), 1).astype("float32")
    feed = {"bp": bp, "cl": cl, "a": anchors, "g": lod(gts, [3, 4]), "c": lod(crowd.reshape(-1, 1), [3, 4]),
            "i": info}
    logits, deltas, label, bbox, weight = run(_rpn(len(anchors), use_random=False, **kw), feed)
    full = {**dict(rpn_batch_size_per_im=256, rpn_straddle_thresh=0.0, rpn_fg_fraction=0.5,
                   rpn_positive_overlap=0.7, rpn_negative_overlap=0.3), **kw}
    want = [[], [], [], [], []]
    for img, (lo, hi) in enumerate([(0, 3), (3, 7)]):
        loc, score, lab, tb, wt = anchors_ref(anchors, gts[lo:hi], crowd[lo:hi], None, info[img],
                                              full["rpn_batch_size_per_im"], full["rpn_straddle_thresh"],
                                              full["rpn_fg_fraction"], full["rpn_positive_overlap"],
                                              full["rpn_negative_overlap"])
        for acc, part in zip(want, ([i + img * len(anchors) for i in loc], [i + img * len(anchors) for i in score],
                                    lab, tb, wt)):
            acc.append(part)
    assert label.recursive_sequence_lengths() == [[len(s) for s in want[1]]]
    assert bbox.recursive_sequence_lengths() == [[len(s) for s in want[0]]]
    loc, score = sum(want[0], []), sum(want[1], [])
    np.testing.assert_array_equal(np.array(logits).ravel(), cl.reshape(-1)[score])
    np.testing.assert_array_equal(np.array(deltas), bp.reshape(-1, 4)[loc])
    assert np.array(label).ravel().tolist() == sum(want[2], [])
    np.testing.assert_allclose(np.array(bbox), np.array(sum(want[3], [])).reshape(-1, 4), rtol=1e-5, atol=1e-5)
    assert np.array(weight)[:, 0].tolist() == sum(want[4], []) and (np.array(weight).min(1) == np.array(weight).max(1)).all()


def test_rpn_target_assign_by_hand():
    # anchors: A matches the gt exactly, B overlaps it by 1/2, C is far away, D straddles the 100 x 100 image
    anchors = np.array([[10, 10, 29, 29], [20, 10, 39, 29], [60, 60, 79, 79], [90, 90, 109, 109]], "float32")
    feed = {"bp": np.zeros((2, 4, 4), "float32"), "cl": np.arange(8, dtype="float32").reshape(2, 4, 1),
            "a": anchors, "g": lod(np.array([[10, 10, 29, 29], [5, 5, 14, 14]], "float32"), [1, 1]),
            "c": lod(np.array([[0], [1]], "int32"), [1, 1]), "i": np.array([[100, 100, 1], [100, 100, 1]], "float32")}
    logits, _, label, bbox, weight = run(_rpn(4, use_random=False), feed)
    # image 0: A is foreground (IoU 1); B's IoU 200 / 600 = 1/3 is neither; C background; D is outside
    # image 1: its only gt is crowd, so every inside anchor is background
    assert np.array(logits).ravel().tolist() == [0, 2, 4, 5, 6]
    assert np.array(label).ravel().tolist() == [1, 0, 0, 0, 0]
    assert label.recursive_sequence_lengths() == [[2, 3]] and bbox.recursive_sequence_lengths() == [[1, 0]]
    np.testing.assert_allclose(np.array(bbox), [[0, 0, 0, 0]], atol=1e-7)
    assert np.array(weight).tolist() == [[1, 1, 1, 1]]


def test_rpn_target_assign_samples_with_the_program_seed():
    rs = np.random.RandomState(4)
    anchors, gts, crowd, _, info = _anchor_case(rs)
    feed = {"bp": np.zeros((2, len(anchors), 4), "float32"), "cl": np.zeros((2, len(anchors), 1), "float32"),
            "a": anchors, "g": lod(gts, [3, 4]), "c": lod(crowd.reshape(-1, 1), [3, 4]), "i": info}
    build = _rpn(len(anchors), rpn_batch_size_per_im=20, rpn_fg_fraction=0.25, rpn_straddle_thresh=-1.0,
                 rpn_positive_overlap=0.3, rpn_negative_overlap=0.3)
    first = [np.array(v) for v in run(build, feed, seed=7)]
    again = [np.array(v) for v in run(build, feed, seed=7)]
    other = [np.array(v) for v in run(build, feed, seed=8)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert any(a.shape != b.shape or (a != b).any() for a, b in zip(first, other))
    label = first[2].ravel()
    assert len(label) == 40 and (label == 1).sum() <= 10  # 20 per image, at most a quarter foreground
    plain = run(_rpn(len(anchors), rpn_batch_size_per_im=20, rpn_fg_fraction=0.25, rpn_straddle_thresh=-1.0,
                     rpn_positive_overlap=0.3, rpn_negative_overlap=0.3, use_random=False), feed, seed=7)
    assert not all(np.array_equal(a, np.array(b)) for a, b in zip(first, plain))


def test_retinanet_target_assign_against_reference():
    rs = np.random.RandomState(6)
    anchors, gts, crowd, labels, info = _anchor_case(rs)
    n = len(anchors)
    bp, cl = rs.rand(2, n, 4).astype("float32"), rs.rand(2, n, 3).astype("float32")

    def build():
        return L.retinanet_target_assign(
            fluid.data("bp", [2, n, 4], "float32"), fluid.data("cl", [2, n, 3], "float32"),
            fluid.data("a", [n, 4], "float32"), fluid.data("v", [n, 4], "float32"),
            fluid.data("g", [None, 4], "float32", lod_level=1), fluid.data("l", [None, 1], "int32", lod_level=1),
            fluid.data("c", [None, 1], "int32", lod_level=1), fluid.data("i", [2, 3], "float32"), num_classes=3)
    feed = {"bp": bp, "cl": cl, "a": anchors, "v": anchors, "g": lod(gts, [3, 4]), "l": lod(labels, [3, 4]),
            "c": lod(crowd.reshape(-1, 1), [3, 4]), "i": info}
    logits, deltas, label, bbox, weight, fg_num = run(build, feed)
    want_score, want_label, want_bbox, counts = [], [], [], []
    for img, (lo, hi) in enumerate([(0, 3), (3, 7)]):
        loc, score, lab, tb, _ = anchors_ref(anchors, gts[lo:hi], crowd[lo:hi], labels[lo:hi, 0], info[img], -1, -1,
                                             -1, 0.5, 0.4)
        want_score += [i + img * n for i in score]
        want_label += lab
        want_bbox += tb
        counts.append(len(loc))
    np.testing.assert_array_equal(np.array(logits), cl.reshape(-1, 3)[want_score])
    assert np.array(label).ravel().tolist() == want_label and max(want_label) > 1
    np.testing.assert_allclose(np.array(bbox), np.array(want_bbox), rtol=1e-5, atol=1e-5)
    assert np.array(fg_num).ravel().tolist() == [c + 1 for c in counts]
    assert fg_num.recursive_sequence_lengths() == [[1, 1]]


def test_target_assign_errors():
    with pytest.raises(ValueError, match=r"Input\(GtBoxes\) needs 1 level of LoD"):
        feed = {"bp": np.zeros((2, 1, 4), "float32"), "cl": np.zeros((2, 1, 1), "float32"),
                "a": np.zeros((1, 4), "float32"), "g": np.zeros((2, 4), "float32"),
                "c": lod(np.zeros((2, 1), "int32"), [1, 1]), "i": np.ones((2, 3), "float32")}
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()):
            outs = L.rpn_target_assign(fluid.data("bp", [2, 1, 4], "float32"), fluid.data("cl", [2, 1, 1], "float32"),
                                       fluid.data("a", [1, 4], "float32"), fluid.data("a2", [1, 4], "float32"),
                                       fluid.data("g", [None, 4], "float32"),
                                       fluid.data("c", [None, 1], "int32", lod_level=1),
                                       fluid.data("i", [2, 3], "float32"))
        fluid.Executor(PLACE).run(main, feed={**feed, "a2": feed["a"]}, fetch_list=[outs[2]])
    with fluid.program_guard(fluid.Program()):
        with pytest.raises(ValueError, match=r"The dimensions size of Input\(Anchor\) must be 2"):
            L.rpn_target_assign(fluid.data("bp", [2, 1, 4], "float32"), fluid.data("cl", [2, 1, 1], "float32"),
                                fluid.data("a", [1, 1, 4], "float32"), fluid.data("a2", [1, 4], "float32"),
                                fluid.data("g", [None, 4], "float32"), fluid.data("c", [None, 1], "int32"),
                                fluid.data("i", [2, 3], "float32"))
        with pytest.raises(TypeError, match="'is_crowd' in rpn_target_assign must be"):
            L.rpn_target_assign(*[fluid.data(f"x{k}", [1, 4], "float32") for k in range(6)],
                                fluid.data("i2", [2, 3], "float32"))


# --- generate_proposal_labels ----------------------------------------------------------------------------
def proposal_labels_ref(rois, gts, classes, crowd, scale, per_im, fraction, fg_t, hi, lo, weights, class_nums,
                        agnostic):
    boxes = [list(g) for g in gts] + [[v / scale for v in r] for r in rois]
    best, gt_of = [], []
    for k, b in enumerate(boxes):
        ov = [iou(b, g) for g in gts]
        m = max(ov)
        best.append(-1.0 if k < len(crowd) and crowd[k] else m)
        gt_of.append(ov.index(m))
    fg = [k for k in range(len(boxes)) if best[k] >= fg_t][:int(per_im * fraction)]
    bg = [k for k in range(len(boxes)) if lo <= best[k] < hi][:per_im - len(fg)]
    out_rois, labels, targets, weights_out = [], [], [], []
    for k in fg + bg:
        out_rois.append([v * scale for v in boxes[k]])
        lab = classes[gt_of[k]] if k in fg else 0
        labels.append(lab)
        t, w = [0.0] * (4 * class_nums), [0.0] * (4 * class_nums)
        if lab > 0:
            col = 1 if agnostic else lab
            t[4 * col:4 * col + 4] = delta(boxes[k], gts[gt_of[k]], weights)
            w[4 * col:4 * col + 4] = [1.0] * 4
        targets.append(t)
        weights_out.append(w)
    return out_rois, labels, targets, weights_out


def _proposal_labels(**kw):
    def build():
        return L.generate_proposal_labels(
            fluid.data("r", [None, 4], "float32", lod_level=1), fluid.data("gc", [None, 1], "int32", lod_level=1),
            fluid.data("c", [None, 1], "int32", lod_level=1), fluid.data("g", [None, 4], "float32", lod_level=1),
            fluid.data("i", [None, 3], "float32"), **kw)
    return build


@pytest.mark.parametrize("agnostic", [False, True])
def test_generate_proposal_labels_against_reference(agnostic):
    rs = np.random.RandomState(9)
    gts = np.array([[10, 10, 60, 50], [40, 30, 90, 90], [5, 60, 30, 95], [50, 5, 95, 40], [20, 20, 80, 80]],
                   "float32")
    classes = np.array([[3], [1], [2], [4], [2]], "int32")
    crowd = np.array([[0], [0], [1], [0], [0]], "int32")
    scales = [2.0, 0.5]
    rois, lens = [], [30, 25]
    for n, s, (lo, hi) in zip(lens, scales, [(0, 3), (3, 5)]):
        base = gts[rs.randint(lo, hi, n)]
        rois.append((base + rs.randn(n, 4) * 8) * s)
    rois = np.concatenate(rois).astype("float32")
    kw = dict(batch_size_per_im=16, fg_fraction=0.5, fg_thresh=0.5, bg_thresh_hi=0.5, bg_thresh_lo=0.1,
              class_nums=5, use_random=False, is_cls_agnostic=agnostic)
    feed = {"r": lod(rois, lens), "gc": lod(classes, [3, 2]), "c": lod(crowd, [3, 2]), "g": lod(gts, [3, 2]),
            "i": np.array([[200, 200, 2.0], [60, 60, 0.5]], "float32")}
    out_rois, labels, targets, inside, outside = run(_proposal_labels(**kw), feed)
    want = [[], [], [], []]
    for img, (rlo, rhi, glo, ghi) in enumerate([(0, 30, 0, 3), (30, 55, 3, 5)]):
        parts = proposal_labels_ref(rois[rlo:rhi], gts[glo:ghi], classes[glo:ghi, 0], crowd[glo:ghi, 0], scales[img],
                                    16, 0.5, 0.5, 0.5, 0.1, [0.1, 0.1, 0.2, 0.2], 5, agnostic)
        for acc, part in zip(want, parts):
            acc.append(part)
    counts = [len(p) for p in want[1]]
    assert out_rois.recursive_sequence_lengths() == [counts] == labels.recursive_sequence_lengths()
    np.testing.assert_allclose(np.array(out_rois), np.array(sum(want[0], [])), rtol=1e-5)
    assert np.array(labels).ravel().tolist() == sum(want[1], []) and max(sum(want[1], [])) > 1
    np.testing.assert_allclose(np.array(targets), np.array(sum(want[2], [])), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.array(inside), np.array(sum(want[3], [])))
    np.testing.assert_array_equal(np.array(outside), np.array(inside))


def test_generate_proposal_labels_random_subsets_follow_the_seed():
    gts = np.array([[10, 10, 60, 60]], "float32")
    rois = (gts + np.random.RandomState(1).randn(40, 4) * 20).astype("float32")
    feed = {"r": lod(rois, [40]), "gc": lod(np.array([[1]], "int32"), [1]), "c": lod(np.array([[0]], "int32"), [1]),
            "g": lod(gts, [1]), "i": np.array([[100, 100, 1.0]], "float32")}
    build = _proposal_labels(batch_size_per_im=8, fg_fraction=0.5, fg_thresh=0.3, bg_thresh_lo=0.0, class_nums=2)
    a, b, c = (np.array(run(build, feed, seed=s)[0]) for s in (3, 3, 4))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (8, 4) and not np.array_equal(a, c)
    fixed = np.array(run(_proposal_labels(batch_size_per_im=8, fg_fraction=0.5, fg_thresh=0.3, class_nums=2,
                                          use_random=False), feed, seed=3)[0])
    np.testing.assert_array_equal(fixed[0], gts[0])  # without sampling the ground truth itself comes first
