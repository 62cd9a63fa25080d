"""generate_proposals, distribute_fpn_proposals and collect_fpn_proposals through the Executor: hand-computed
cases, multi-image LoD cases against loop-by-loop references written here, and the errors."""
import inspect
import math

import numpy as np
import pytest

import minifluid as fluid

from .test_detection_box import run_layers

L = fluid.layers
PLACE = fluid.CPUPlace()
E = inspect.Parameter.empty


def run(build, feed):
    return run_layers(build, feed, return_numpy=False)


def lod(values, lengths):
    return fluid.create_lod_tensor(np.asarray(values), [lengths], PLACE)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_fluids():
    assert _signature(L.generate_proposals) == [
        ("scores", E), ("bbox_deltas", E), ("im_info", E), ("anchors", E), ("variances", E), ("pre_nms_top_n", 6000),
        ("post_nms_top_n", 1000), ("nms_thresh", 0.5), ("min_size", 0.1), ("eta", 1.0), ("name", None),
        ("return_rois_num", False)]
    assert _signature(L.distribute_fpn_proposals) == [
        ("fpn_rois", E), ("min_level", E), ("max_level", E), ("refer_level", E), ("refer_scale", E), ("name", None)]
    assert _signature(L.collect_fpn_proposals) == [
        ("multi_rois", E), ("multi_scores", E), ("min_level", E), ("max_level", E), ("post_nms_top_n", E),
        ("name", None)]
    for name in ("generate_proposals", "distribute_fpn_proposals", "collect_fpn_proposals"):
        assert getattr(L.detection, name) is getattr(L, name) and name in L.detection.__all__


# --- generate_proposals ---------------------------------------------------------------------------------
def pixel_iou(a, b):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    inter = (min(a[2], b[2]) - max(a[0], b[0]) + 1) * (min(a[3], b[3]) - max(a[1], b[1]) + 1)
    area = lambda r: (r[2] - r[0] + 1) * (r[3] - r[1] + 1)  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def proposals_ref(scores, deltas, im_info, anchors, variances, pre, post, thresh, min_size, eta):
    """One image and one box at a time, as the layer documents it."""
    n, a, h, w = scores.shape
    anchors, variances = anchors.reshape(-1, 4).astype(float), variances.reshape(-1, 4).astype(float)
    rois, probs, counts = [], [], []
    for i in range(n):
        s = scores[i].transpose(1, 2, 0).reshape(-1).astype(float)
        d = deltas[i].transpose(1, 2, 0).reshape(-1, 4).astype(float)
        order = sorted(range(len(s)), key=lambda j: -s[j])[:pre if pre > 0 else None]
        ih, iw, scale = im_info[i]
        cands = []
        for j in order:
            x0, y0, x1, y1 = anchors[j]
            aw, ah = x1 - x0 + 1, y1 - y0 + 1
            dx, dy, dw, dh = d[j] * variances[j]
            cx, cy = dx * aw + x0 + aw / 2, dy * ah + y0 + ah / 2
            bw, bh = math.exp(min(dw, math.log(1000 / 16))) * aw, math.exp(min(dh, math.log(1000 / 16))) * ah
            box = [cx - bw / 2, cy - bh / 2, cx + bw / 2 - 1, cy + bh / 2 - 1]
            box = [min(max(v, 0), (iw if k % 2 == 0 else ih) - 1) for k, v in enumerate(box)]
            bw, bh = box[2] - box[0], box[3] - box[1]
            ms = max(min_size, 1)
            if (bw / scale + 1 >= ms and bh / scale + 1 >= ms and box[0] + (bw + 1) / 2 <= iw
                    and box[1] + (bh + 1) / 2 <= ih):
                cands.append((box, s[j]))
        kept, t = [], thresh
        for box, sc in cands:
            if thresh <= 0 or all(pixel_iou(box, k[0]) <= t for k in kept):
                kept.append((box, sc))
                if eta < 1 and t > 0.5:
                    t *= eta
        if thresh > 0 and post > 0:
            kept = kept[:post]
        rois += [k[0] for k in kept]
        probs += [k[1] for k in kept]
        counts.append(len(kept))
    return np.array(rois).reshape(-1, 4), np.array(probs).reshape(-1, 1), counts


def _proposals(feed_shapes, **kw):
    def build():
        vs = [fluid.data(k, shape, "float32") for k, shape in feed_shapes]
        return L.generate_proposals(*vs, return_rois_num=True, **kw)
    return build


def test_generate_proposals_by_hand():
    # one image 20 x 30 (h x w), a 1 x 1 feature map with two anchors; anchor 1 scores higher
    scores = np.array([0.3, 0.9], "float32").reshape(1, 2, 1, 1)
    anchors = np.array([[0, 0, 9, 9], [10, 2, 29, 17]], "float32").reshape(1, 1, 2, 4)
    variances = np.ones_like(anchors)
    deltas = np.zeros((1, 8, 1, 1), "float32")
    deltas[0, 4:8, 0, 0] = [0.1, 0.0, math.log(2.0), 0.0]  # anchor 1: shift by 2 px, twice as wide
    info = np.array([[20, 30, 1]], "float32")
    feed = {"s": scores, "d": deltas, "i": info, "a": anchors, "v": variances}
    shapes = [("s", [1, 2, 1, 1]), ("d", [1, 8, 1, 1]), ("i", [1, 3]), ("a", [1, 1, 2, 4]), ("v", [1, 1, 2, 4])]
    _, (rois, probs, num) = run(_proposals(shapes, nms_thresh=0.7), feed)
    # anchor 1: centre x (20 + 2) = 22, width 40 -> [2, 2, 41, 17], clipped to x <= 29; anchor 0 as is
    np.testing.assert_allclose(np.array(rois), [[2, 2, 29, 17], [0, 0, 9, 9]])
    np.testing.assert_allclose(np.array(probs), [[0.9], [0.3]], rtol=1e-6)
    assert rois.recursive_sequence_lengths() == [[2]] and probs.recursive_sequence_lengths() == [[2]]
    assert np.array(num).tolist() == [2]
    _, (rois, _, _) = run(_proposals(shapes, nms_thresh=0.1), feed)
    assert np.array(rois).tolist() == [[2, 2, 29, 17]]  # IoU 8 * 8 / (28 * 16 + 100 - 64) > 0.1: 0 suppressed
    _, (rois, _, _) = run(_proposals(shapes, nms_thresh=0.7, min_size=12.0), feed)
    assert np.array(rois).tolist() == [[2, 2, 29, 17]]  # anchor 0 is 10 px wide: too small


def test_generate_proposals_caps_log_size_deltas():
    # a 16 px anchor centred at 8 with log-size deltas of 10: capped at log(1000 / 16), so 1000 px wide and high
    feed = {"s": np.ones((1, 1, 1, 1), "float32"), "d": np.array([0, 0, 10, 10], "float32").reshape(1, 4, 1, 1),
            "i": np.array([[2000, 2000, 1]], "float32"), "a": np.array([0, 0, 15, 15], "float32").reshape(1, 1, 1, 4),
            "v": np.ones((1, 1, 1, 4), "float32")}
    shapes = [("s", [1, 1, 1, 1]), ("d", [1, 4, 1, 1]), ("i", [1, 3]), ("a", [1, 1, 1, 4]), ("v", [1, 1, 1, 4])]
    _, (rois, _, _) = run(_proposals(shapes), feed)
    np.testing.assert_allclose(np.array(rois), [[0, 0, 507, 507]], rtol=1e-6)  # [8 - 500, 8 + 500 - 1], clipped


@pytest.mark.parametrize("kw", [dict(pre_nms_top_n=40, post_nms_top_n=7, nms_thresh=0.5, min_size=3.0, eta=1.0),
                                dict(pre_nms_top_n=-1, post_nms_top_n=-1, nms_thresh=0.8, min_size=0.1, eta=0.9),
                                dict(pre_nms_top_n=30, post_nms_top_n=5, nms_thresh=0.0, min_size=2.0, eta=1.0)])
def test_generate_proposals_against_reference(kw):
    rs = np.random.RandomState(3)
    n, a, h, w = 3, 3, 4, 5
    scores = rs.rand(n, a, h, w).astype("float32")
    deltas = (rs.randn(n, 4 * a, h, w) * 0.4).astype("float32")
    deltas[0, 2] = 30.0  # 30 * 0.2 is beyond the clip constant: log-size deltas are capped
    info = np.array([[40, 50, 1.0], [32, 40, 2.0], [64, 64, 0.5]], "float32")
    cy, cx = np.meshgrid(np.arange(h) * 8.0 + 4, np.arange(w) * 8.0 + 4, indexing="ij")
    sizes = np.array([6.0, 12.0, 20.0])
    anchors = np.stack([cx[..., None] - sizes, cy[..., None] - sizes / 2, cx[..., None] + sizes,
                        cy[..., None] + sizes / 2], -1).astype("float32")  # [H, W, A, 4]
    variances = np.broadcast_to(np.array([0.1, 0.1, 0.2, 0.2], "float32"), anchors.shape).copy()
    feed = {"s": scores, "d": deltas, "i": info, "a": anchors, "v": variances}
    shapes = [("s", [None, a, h, w]), ("d", [None, 4 * a, h, w]), ("i", [None, 3]), ("a", [h, w, a, 4]),
              ("v", [h, w, a, 4])]
    _, (rois, probs, num) = run(_proposals(shapes, **kw), feed)
    want_rois, want_probs, counts = proposals_ref(scores, deltas, info, anchors, variances, kw["pre_nms_top_n"],
                                                  kw["post_nms_top_n"], kw["nms_thresh"], kw["min_size"], kw["eta"])
    assert rois.recursive_sequence_lengths() == [counts] and min(counts) > 0
    np.testing.assert_allclose(np.array(rois), want_rois, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(np.array(probs), want_probs, rtol=1e-6)
    assert np.array(num).tolist() == np.cumsum(counts).tolist()


def test_generate_proposals_errors():
    with fluid.program_guard(fluid.Program()):
        s = fluid.data("s", [None, 3, 4, 5], "float32")
        bad = fluid.data("d", [None, 8, 4, 5], "float32")
        i = fluid.data("i", [None, 3], "float32")
        an = fluid.data("a", [4, 5, 3, 4], "float32")
        with pytest.raises(ValueError, match=r"Input\(BboxDeltas\) \[-1, 8, 4, 5\] must have 4 channels per anchor"):
            L.generate_proposals(s, bad, i, an, an)
        with pytest.raises(TypeError, match="'scores' in generate_proposals must be"):
            L.generate_proposals(fluid.data("s64", [None, 3, 4, 5], "float64"), bad, i, an, an)
        d = fluid.data("d2", [None, 12, 4, 5], "float32")
        with pytest.raises(ValueError, match=r"Input\(Variances\) \[4, 5, 2, 4\] must have the shape of "
                                             r"Input\(Anchors\)"):
            L.generate_proposals(s, d, i, an, fluid.data("v", [4, 5, 2, 4], "float32"))


# --- distribute_fpn_proposals / collect_fpn_proposals ----------------------------------------------------
def random_rois(rs, n, size=512):
    xy = rs.rand(n, 2) * 20
    return np.concatenate([xy, xy + rs.rand(n, 2) * (size - xy)], 1).astype("float32")


def test_distribute_fpn_proposals_by_hand():
    # sides 224 -> level 4 (refer), 111 -> sqrt(112^2)/224 = 0.5 -> level 3, 20 -> level 0 clipped to 2, 900 -> 5
    rois = np.array([[0, 0, 223, 223], [0, 0, 111, 111], [5, 5, 24, 24], [0, 0, 899, 899], [1, 1, 224, 224]],
                    "float32")

    def build():
        x = fluid.data("r", [None, 4], "float32", lod_level=1)
        multi, restore = L.distribute_fpn_proposals(x, 2, 5, 4, 224)
        return multi + [restore]
    _, outs = run(build, {"r": lod(rois, [3, 2])})
    levels = [np.array(o).tolist() for o in outs[:4]]
    assert levels == [[[5, 5, 24, 24]], [[0, 0, 111, 111]], [[0, 0, 223, 223], [1, 1, 224, 224]], [[0, 0, 899, 899]]]
    assert [o.recursive_sequence_lengths() for o in outs[:4]] == [[[1, 0]], [[1, 0]], [[1, 1]], [[0, 1]]]
    assert np.array(outs[4]).ravel().tolist() == [2, 1, 0, 4, 3]


def test_distribute_then_restore_multi_image():
    rs = np.random.RandomState(5)
    rois = random_rois(rs, 60)

    def build():
        x = fluid.data("r", [None, 4], "float32", lod_level=1)
        multi, restore = L.distribute_fpn_proposals(x, 2, 5, 4, 224)
        return [L.gather(L.concat(multi, axis=0), restore)] + multi
    _, outs = run(build, {"r": lod(rois, [25, 0, 35])})
    np.testing.assert_array_equal(np.array(outs[0]), rois)  # restore_ind undoes the shuffle
    area = (rois[:, 2] - rois[:, 0] + 1) * (rois[:, 3] - rois[:, 1] + 1)
    level = np.clip(np.floor(4 + np.log2(np.sqrt(area) / 224 + 1e-6)), 2, 5)
    image = np.repeat([0, 1, 2], [25, 0, 35])
    for k, out in enumerate(outs[1:]):
        np.testing.assert_array_equal(np.array(out).reshape(-1, 4), rois[level == k + 2])
        assert out.recursive_sequence_lengths() == [[int(((level == k + 2) & (image == i)).sum()) for i in range(3)]]


def test_distribute_needs_lod():
    with pytest.raises(ValueError, match=r"Input\(FpnRois\) needs 1 level of LoD"):
        run(lambda: L.distribute_fpn_proposals(fluid.data("r", [None, 4], "float32"), 2, 3, 4, 224)[1],
            {"r": np.zeros((2, 4), "float32")})


def _collect(levels, top):
    def build():
        rois = [fluid.data(f"r{i}", [None, 4], "float32", lod_level=1) for i in range(levels)]
        scores = [fluid.data(f"s{i}", [None, 1], "float32", lod_level=1) for i in range(levels)]
        return L.collect_fpn_proposals(rois, scores, 2, 2 + levels - 1, top)
    return build


def test_collect_fpn_proposals_against_reference():
    rs = np.random.RandomState(8)
    lengths = [[4, 6, 0], [5, 0, 2], [3, 3, 3]]
    feed, all_rois, all_scores, all_images = {}, [], [], []
    for i, lens in enumerate(lengths):
        r, s = random_rois(rs, sum(lens), 100), rs.rand(sum(lens), 1).astype("float32")
        feed[f"r{i}"], feed[f"s{i}"] = lod(r, lens), lod(s, lens)
        all_rois += list(r)
        all_scores += list(s[:, 0])
        all_images += [b for b, n in enumerate(lens) for _ in range(n)]
    _, (out,) = run(_collect(3, 9), feed)
    best = sorted(range(len(all_scores)), key=lambda j: -all_scores[j])[:9]
    want = [all_rois[j] for b in range(3) for j in best if all_images[j] == b]
    np.testing.assert_array_equal(np.array(out), np.array(want))
    assert out.recursive_sequence_lengths() == [[sum(all_images[j] == b for j in best) for b in range(3)]]
    _, (out,) = run(_collect(3, 100), feed)  # more than there are: every RoI, grouped by image
    assert np.array(out).shape == (26, 4) and out.recursive_sequence_lengths() == [[12, 9, 5]]


def test_collect_needs_matching_lods():
    feed = {"r0": lod(np.zeros((3, 4), "float32"), [1, 2]), "s0": lod(np.zeros((3, 1), "float32"), [2, 1])}
    with pytest.raises(ValueError, match="should have the same LoD"):
        run(_collect(1, 2), feed)
    with fluid.program_guard(fluid.Program()):
        with pytest.raises(ValueError, match=r"Second dimension of Input\(MultiLevelScores\) must be 1"):
            L.collect_fpn_proposals([fluid.data("r", [None, 4], "float32")], [fluid.data("s", [None, 2], "float32")],
                                    2, 2, 5)
