"""bipartite_match, target_assign and the NMS layers (multiclass_nms, multiclass_nms2 / return_index, matrix_nms,
locality_aware_nms, detection_output) through the Executor: values against plain loop-by-loop references written
here and hand-checked cases, the LoD of their outputs (fluid's [[-1]] when nothing is detected), and errors."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

from .test_detection_box import random_boxes, run_layers

L = fluid.layers
PLACE = fluid.CPUPlace()
E = inspect.Parameter.empty
rng = np.random.RandomState(11)


def run(build, feed):
    return run_layers(build, feed, return_numpy=False)


def lod(values, lengths):
    return fluid.create_lod_tensor(np.asarray(values), [lengths], PLACE)


def rand_boxes(*shape, scale=1.0):
    return random_boxes(rng, shape, scale)


def iou(a, b, normalized=True):
    """One pair, as the layers document it."""
    one = 0 if normalized else 1
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    inter = (min(a[2], b[2]) - max(a[0], b[0]) + one) * (min(a[3], b[3]) - max(a[1], b[1]) + one)
    area = lambda r: (r[2] - r[0] + one) * (r[3] - r[1] + one)  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_fluids():
    assert _signature(L.bipartite_match) == [("dist_matrix", E), ("match_type", None), ("dist_threshold", None),
                                             ("name", None)]
    assert _signature(L.target_assign) == [("input", E), ("matched_indices", E), ("negative_indices", None),
                                           ("mismatch_value", None), ("name", None)]
    nms = [("bboxes", E), ("scores", E), ("score_threshold", E), ("nms_top_k", E), ("keep_top_k", E),
           ("nms_threshold", 0.3), ("normalized", True), ("nms_eta", 1.0)]
    assert _signature(L.multiclass_nms) == nms + [("background_label", 0), ("name", None)]
    assert _signature(L.locality_aware_nms) == nms + [("background_label", -1), ("name", None)]
    assert _signature(fluid.contrib.multiclass_nms2) == nms + [("background_label", 0), ("return_index", False),
                                                               ("name", None)]
    assert _signature(L.matrix_nms) == [
        ("bboxes", E), ("scores", E), ("score_threshold", E), ("post_threshold", E), ("nms_top_k", E),
        ("keep_top_k", E), ("use_gaussian", False), ("gaussian_sigma", 2.0), ("background_label", 0),
        ("normalized", True), ("return_index", False), ("name", None)]
    assert _signature(L.detection_output) == [
        ("loc", E), ("scores", E), ("prior_box", E), ("prior_box_var", E), ("background_label", 0),
        ("nms_threshold", 0.3), ("nms_top_k", 400), ("keep_top_k", 200), ("score_threshold", 0.01), ("nms_eta", 1.0),
        ("return_index", False)]
    for name in ("bipartite_match", "target_assign", "multiclass_nms", "matrix_nms", "locality_aware_nms",
                 "detection_output"):
        assert getattr(L.detection, name) is getattr(L, name) and name in L.__all__


# --- bipartite_match ------------------------------------------------------------------------------------
def bipartite_ref(dist, lengths, match_type, threshold):
    out_idx, out_dist, start = [], [], 0
    for n in lengths:
        block = dist[start:start + n]
        start += n
        idx, best = [-1] * dist.shape[1], [0.0] * dist.shape[1]
        rows = list(range(n))
        while rows:
            cand = [(block[r, c], -c, -r) for c in range(dist.shape[1]) if idx[c] == -1 for r in rows
                    if block[r, c] >= 1e-6]
            if not cand:
                break
            d, c, r = max(cand)
            idx[-c], best[-c] = -r, d
            rows.remove(-r)
        if match_type == "per_prediction":
            for c in range(dist.shape[1]):
                ok = [(block[r, c], -r) for r in range(n) if idx[c] == -1 and block[r, c] >= max(threshold, 1e-6)]
                if ok:
                    best[c], idx[c] = max(ok)[0], -max(ok)[1]
        out_idx.append(idx)
        out_dist.append(best)
    return np.array(out_idx), np.array(out_dist)


def test_bipartite_match_by_hand():
    dist = np.array([[0.9, 0.8, 0.1, 0.0], [0.85, 0.2, 0.6, 0.4]], "float32")

    def build():
        d = fluid.data("d", [None, 4])
        return [*L.bipartite_match(d), *L.bipartite_match(d, "per_prediction", 0.3)]
    outs, (idx, best, idx_pp, best_pp) = run(build, {"d": dist})
    # 0.9 pairs row 0 with column 0; of what is left, 0.6 pairs row 1 with column 2
    np.testing.assert_array_equal(np.asarray(idx), [[0, -1, 1, -1]])
    np.testing.assert_allclose(np.asarray(best), [[0.9, 0, 0.6, 0]])
    # per_prediction: column 1 takes row 0 (0.8), column 3 row 1 (0.4 >= 0.3)
    np.testing.assert_array_equal(np.asarray(idx_pp), [[0, 0, 1, 1]])
    np.testing.assert_allclose(np.asarray(best_pp), [[0.9, 0.8, 0.6, 0.4]])
    assert outs[0].dtype == "int32" and list(outs[0].shape) == [-1, 4]


@pytest.mark.parametrize("match_type", ["bipartite", "per_prediction"])
def test_bipartite_match_per_image_of_the_lod_against_the_reference(match_type):
    lengths = [3, 0, 5, 2]
    dist = rng.rand(10, 9).astype("float32")
    dist[dist < 0.25] = 0

    def build():
        return L.bipartite_match(fluid.data("d", [None, 9], lod_level=1), match_type, 0.5)
    _, (idx, best) = run(build, {"d": lod(dist, lengths)})
    want_idx, want_best = bipartite_ref(dist, lengths, match_type, 0.5)
    np.testing.assert_array_equal(np.asarray(idx), want_idx)
    np.testing.assert_allclose(np.asarray(best), want_best, rtol=1e-6)


# --- target_assign --------------------------------------------------------------------------------------
def test_target_assign_gathers_matched_rows_and_weights_negatives():
    x = np.arange(5 * 3 * 2, dtype="float32").reshape(5, 3, 2)  # image 0: rows 0-1, image 1: rows 2-4
    match = np.array([[1, -1, 0], [-1, 2, 0]], "int32")
    neg = np.array([[1], [0]], "int32")  # image 0: column 1; image 1: column 0

    def build():
        xv = fluid.data("x", [None, 3, 2], lod_level=1)
        mv = fluid.data("m", [None, 3], "int32")
        nv = fluid.data("neg", [None, 1], "int32", lod_level=1)
        return [*L.target_assign(xv, mv, mismatch_value=-5), *L.target_assign(xv, mv, nv, mismatch_value=9)]
    outs, (out, weight, out_n, weight_n) = run(build, {"x": lod(x, [2, 3]), "m": match, "neg": lod(neg, [1, 1])})
    want = np.full((2, 3, 2), -5.0)
    want[0, 0], want[0, 2] = x[1, 0], x[0, 2]  # X[lod[i] + id][j % P]
    want[1, 1], want[1, 2] = x[2 + 2, 1], x[2 + 0, 2]
    np.testing.assert_array_equal(np.asarray(out), want)
    np.testing.assert_array_equal(np.asarray(weight)[..., 0], [[1, 0, 1], [0, 1, 1]])
    want[want == -5] = 9
    np.testing.assert_array_equal(np.asarray(out_n), want)
    np.testing.assert_array_equal(np.asarray(weight_n)[..., 0], [[1, 1, 1], [1, 1, 1]])
    assert [list(o.shape) for o in outs[:2]] == [[-1, 3, 2], [-1, 3, 1]] and outs[1].dtype == "float32"


def test_target_assign_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match=r"The rank of Input\(X\) must be 3"):
            L.target_assign(fluid.data("x", [None, 2]), fluid.data("m", [None, 3], "int32"))
    _, feed = None, {"x": np.zeros((2, 1, 1), "float32"), "m": np.zeros((1, 3), "int32")}
    with pytest.raises(ValueError, match=r"TargetAssignOp input\(X\) needs 1 level of LoD"):
        run(lambda: L.target_assign(fluid.data("x", [None, 1, 1]), fluid.data("m", [None, 3], "int32")), feed)


# --- multiclass_nms -------------------------------------------------------------------------------------
def candidates(scores, score_threshold, nms_top_k, background):
    """(class, its boxes scoring above the threshold, best first, at most nms_top_k) for each non-background class."""
    for c in range(scores.shape[0]):
        if c != background:
            cand = sorted([i for i in range(scores.shape[1]) if scores[c, i] > score_threshold],
                          key=lambda i: -scores[c, i])
            yield c, cand[:nms_top_k if nms_top_k > -1 else None]


def nms_ref(boxes, scores, score_threshold, nms_top_k, keep_top_k, nms_threshold, normalized, eta, background):
    """One image: boxes [M, 4] shared by the classes, scores [C, M]; the rows fluid documents."""
    dets = []
    for c, cand in candidates(scores, score_threshold, nms_top_k, background):
        kept, thr = [], nms_threshold
        for i in cand:
            if all(iou(boxes[i], boxes[k], normalized) <= thr for k in kept):
                kept.append(i)
                if eta < 1 and thr > 0.5:
                    thr *= eta
        dets += [(c, i) for i in kept]
    if -1 < keep_top_k < len(dets):
        best = sorted(range(len(dets)), key=lambda j: -scores[dets[j][0], dets[j][1]])[:keep_top_k]
        dets = [dets[j] for j in sorted(best)]
    return [[c, scores[c, i], *boxes[i]] for c, i in dets], [i for _, i in dets]


@pytest.mark.parametrize("kw", [dict(), dict(nms_eta=0.7, nms_threshold=0.8), dict(keep_top_k=-1, nms_top_k=-1),
                                dict(normalized=False, nms_threshold=0.1), dict(background_label=-1)])
def test_multiclass_nms_against_the_reference(kw):
    full = dict(score_threshold=0.3, nms_top_k=20, keep_top_k=12, nms_threshold=0.3, normalized=True, nms_eta=1.0,
                background_label=0)
    full.update(kw)
    n, m, c = 3, 30, 4
    boxes, scores = rand_boxes(n, m), rng.rand(n, c, m).astype("float32")

    def build():
        b, s = fluid.data("b", [None, m, 4]), fluid.data("s", [None, c, m])
        return [L.multiclass_nms(b, s, **full), *fluid.contrib.multiclass_nms2(b, s, **full, return_index=True)]
    outs, (out, out2, index) = run(build, {"b": boxes, "s": scores})
    assert [o.lod_level for o in outs] == [1, 1, 1] and list(outs[0].shape) == [-1, 6]
    refs = [nms_ref(boxes[i], scores[i], *(full[k] for k in ("score_threshold", "nms_top_k", "keep_top_k",
                                                             "nms_threshold", "normalized", "nms_eta",
                                                             "background_label"))) for i in range(n)]
    want = np.array([row for rows, _ in refs for row in rows])
    assert out.recursive_sequence_lengths() == [[len(rows) for rows, _ in refs]] == index.recursive_sequence_lengths()
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out2), np.asarray(out))
    np.testing.assert_array_equal(np.asarray(index)[:, 0], [i * m + k for i, (_, ks) in enumerate(refs) for k in ks])


def test_multiclass_nms_by_hand_with_lod_boxes_and_no_detection():
    # one image, 3 boxes per class; class 1: boxes 0 and 1 overlap (IoU 0.6) so the weaker 1 goes
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 6], [20, 20, 30, 30]], "float32")
    per_class = np.stack([boxes, boxes], 1)  # [M, C, 4]
    scores = np.array([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7]], "float32")  # [M, C]

    def build():
        b, s = fluid.data("b", [None, 2, 4], lod_level=1), fluid.data("s", [None, 2], lod_level=1)
        return [L.multiclass_nms(b, s, 0.5, 10, 10, normalized=False),
                L.multiclass_nms(b, s, 0.95, 10, 10, normalized=False),
                *fluid.contrib.multiclass_nms2(b, s, 0.95, 10, 10, return_index=True)]
    _, (out, none, none2, none_index) = run(build, {"b": lod(per_class, [3]), "s": lod(scores, [3])})
    np.testing.assert_allclose(np.asarray(out), [[1, 0.9, 0, 0, 10, 10], [1, 0.7, 20, 20, 30, 30]], rtol=1e-6)
    assert out.recursive_sequence_lengths() == [[2]]
    # nothing above 0.95: multiclass_nms gives fluid's single -1 row, multiclass_nms2 an empty result
    np.testing.assert_array_equal(np.asarray(none), [[-1]])
    assert none.recursive_sequence_lengths() == [[1]]
    assert np.asarray(none2).shape == (0, 6) and np.asarray(none_index).shape == (0, 1)


def test_multiclass_nms_errors_name_the_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        b, s = fluid.data("b", [None, 8, 4]), fluid.data("s", [None, 3, 7])
        with pytest.raises(ValueError, match=r"The 2nd dimension of Input\(BBoxes\) must be equal to last "
                                             r"dimension of Input\(Scores\)"):
            L.multiclass_nms(b, s, 0.1, 10, 10)
        with pytest.raises(TypeError, match="'score_threshold' in multiclass_nms"):
            L.multiclass_nms(b, fluid.data("s2", [None, 3, 8]), 1, 10, 10)
        with pytest.raises(ValueError, match=r"The rank of Input\(BBoxes\) must be 3"):
            L.multiclass_nms(fluid.data("b2", [None, 4]), s, 0.1, 10, 10)


# --- matrix_nms -----------------------------------------------------------------------------------------
def matrix_ref(boxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k, gaussian, sigma, background):
    dets = []
    for c, cand in candidates(scores, score_threshold, nms_top_k, background):
        worst = [max([iou(boxes[cand[j]], boxes[cand[k]]) for k in range(j)], default=0.0) for j in range(len(cand))]
        for j, i in enumerate(cand):
            decay = 1.0
            for k in range(j):
                o = iou(boxes[i], boxes[cand[k]])
                decay = min(decay, np.exp((worst[k] ** 2 - o ** 2) * sigma) if gaussian else (1 - o) / (1 - worst[k]))
            if scores[c, i] * decay > post_threshold:
                dets.append((scores[c, i] * decay, c, i))
    dets = sorted(dets, key=lambda d: -d[0])[:keep_top_k if keep_top_k > -1 else None]
    return [[c, s, *boxes[i]] for s, c, i in dets], [i for _, _, i in dets]


@pytest.mark.parametrize("gaussian", [False, True])
def test_matrix_nms_against_the_reference(gaussian):
    n, m, c = 2, 25, 3
    boxes, scores = rand_boxes(n, m), rng.rand(n, c, m).astype("float32")

    def build():
        return L.matrix_nms(fluid.data("b", [None, m, 4]), fluid.data("s", [None, c, m]), 0.2, 0.3, 15, 10,
                            use_gaussian=gaussian, return_index=True)
    _, (out, index) = run(build, {"b": boxes, "s": scores})
    refs = [matrix_ref(boxes[i], scores[i], 0.2, 0.3, 15, 10, gaussian, 2.0, 0) for i in range(n)]
    assert out.recursive_sequence_lengths() == [[len(r) for r, _ in refs]]
    np.testing.assert_allclose(np.asarray(out), np.array([row for r, _ in refs for row in r]), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(index)[:, 0], [i * m + k for i, (_, ks) in enumerate(refs) for k in ks])


# --- locality_aware_nms ---------------------------------------------------------------------------------
def test_locality_aware_nms_merges_consecutive_overlapping_boxes():
    boxes = np.array([[[0, 0, 10, 10], [1, 0, 11, 10], [40, 40, 50, 50], [0, 0, 10, 10]]], "float32")
    scores = np.array([[[0.6, 0.2, 0.5, 0.4]]], "float32")

    def build():
        b, s = fluid.data("b", [None, 4, 4]), fluid.data("s", [None, 1, 4])
        return [L.locality_aware_nms(b, s, 0.1, 10, 10, nms_threshold=0.5, normalized=False),
                L.locality_aware_nms(b, s, 0.1, 10, 10, nms_threshold=0.5, background_label=0)]
    outs, (out, none) = run(build, {"b": boxes, "s": scores})
    # boxes 0 and 1 merge (weights 0.6 / 0.2, score 0.8); box 3 follows box 2, which it does not overlap, so it
    # stays on its own and the NMS drops it under the merged box
    np.testing.assert_allclose(np.asarray(out), [[0, 0.8, 0.25, 0, 10.25, 10], [0, 0.5, 40, 40, 50, 50]], rtol=1e-6)
    assert out.recursive_sequence_lengths() == [[2]] and outs[0].lod_level == 1
    np.testing.assert_array_equal(np.asarray(none), [[-1]])  # its only class is the background
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(AssertionError, match="locality_aware_nms only support one class"):
            L.locality_aware_nms(fluid.data("b", [None, 4, 4]), fluid.data("s", [None, 2, 4]), 0.1, 10, 10)
