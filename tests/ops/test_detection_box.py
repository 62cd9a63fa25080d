"""The box layers of layers/detection.py through the Executor (prior_box, density_prior_box, anchor_generator,
box_coder, iou_similarity, box_clip): fluid 1.8 signatures, output shapes, values against loop-by-loop references
written here and hand-computed boxes, the LoD they keep, and errors naming the input at fault."""
import inspect
import math

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
PLACE = fluid.CPUPlace()
E = inspect.Parameter.empty
rng = np.random.RandomState(7)


def run_layers(build, feed, return_numpy=True):
    """(the variables ``build`` returns, their values after one run of a fresh program on ``feed``)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        outs = build()
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    return outs, exe.run(main, feed=feed, fetch_list=outs, return_numpy=return_numpy)


run = run_layers


def random_boxes(rs, shape, scale=1.0):
    """Boxes [*shape, 4] with corners in [0, scale) and sides of 1% to 51% of scale."""
    xy = rs.rand(*shape, 2) * scale
    return np.concatenate([xy, xy + rs.rand(*shape, 2) * scale * 0.5 + 0.01 * scale], -1).astype("float32")


def rand_boxes(n, scale=1.0):
    return random_boxes(rng, (n,), scale)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_fluids_and_both_namespaces_have_them():
    assert _signature(L.prior_box) == [
        ("input", E), ("image", E), ("min_sizes", E), ("max_sizes", None), ("aspect_ratios", [1.0]),
        ("variance", [0.1, 0.1, 0.2, 0.2]), ("flip", False), ("clip", False), ("steps", [0.0, 0.0]),
        ("offset", 0.5), ("name", None), ("min_max_aspect_ratios_order", False)]
    assert _signature(L.density_prior_box) == [
        ("input", E), ("image", E), ("densities", None), ("fixed_sizes", None), ("fixed_ratios", None),
        ("variance", [0.1, 0.1, 0.2, 0.2]), ("clip", False), ("steps", [0.0, 0.0]), ("offset", 0.5),
        ("flatten_to_2d", False), ("name", None)]
    assert _signature(L.anchor_generator) == [
        ("input", E), ("anchor_sizes", None), ("aspect_ratios", None), ("variance", [0.1, 0.1, 0.2, 0.2]),
        ("stride", None), ("offset", 0.5), ("name", None)]
    assert _signature(L.box_coder) == [
        ("prior_box", E), ("prior_box_var", E), ("target_box", E), ("code_type", "encode_center_size"),
        ("box_normalized", True), ("name", None), ("axis", 0)]
    assert _signature(L.iou_similarity) == [("x", E), ("y", E), ("box_normalized", True), ("name", None)]
    assert _signature(L.box_clip) == [("input", E), ("im_info", E), ("name", None)]
    for name in ("prior_box", "density_prior_box", "anchor_generator", "box_coder", "iou_similarity", "box_clip"):
        assert getattr(L.detection, name) is getattr(L, name) and name in L.__all__


# --- prior_box ------------------------------------------------------------------------------------------
def prior_box_ref(fh, fw, ih, iw, mins, maxs, ratios, flip, clip, steps, offset, minmax_order):
    """Cell by cell, prior by prior, as the layer's documentation states it."""
    ars = [1.0]
    for ar in ratios:
        if all(abs(ar - a) >= 1e-6 for a in ars):
            ars += [ar, 1 / ar] if flip else [ar]
    sw, sh = steps if steps[0] and steps[1] else (iw / fw, ih / fh)
    out = []
    for h in range(fh):
        for w in range(fw):
            cx, cy, cell = (w + offset) * sw, (h + offset) * sh, []
            for s, m in enumerate(mins):
                sizes = [(m * math.sqrt(a), m / math.sqrt(a)) for a in ars]
                big = [(math.sqrt(m * maxs[s]),) * 2] if maxs else []
                cell += ([(m, m)] + big + [wh for a, wh in zip(ars, sizes) if a != 1.0]) if minmax_order \
                    else sizes + big
            out.append([[(cx - bw / 2) / iw, (cy - bh / 2) / ih, (cx + bw / 2) / iw, (cy + bh / 2) / ih]
                        for bw, bh in cell])
    out = np.array(out).reshape(fh, fw, -1, 4)
    return np.clip(out, 0, 1) if clip else out


@pytest.mark.parametrize("kw", [
    dict(),
    dict(max_sizes=[20.0, 40.0], aspect_ratios=[2.0, 3.0], flip=True, clip=True),
    dict(max_sizes=[20.0, 40.0], aspect_ratios=[2.0, 1.0, 2.0], flip=True, min_max_aspect_ratios_order=True),
    dict(aspect_ratios=[0.5], steps=[4.0, 6.0], offset=0.25),
])
def test_prior_box_against_the_reference(kw):
    full = dict(max_sizes=None, aspect_ratios=[1.0], flip=False, clip=False, steps=[0.0, 0.0], offset=0.5,
                min_max_aspect_ratios_order=False)
    full.update(kw)

    def build():
        x, img = fluid.data("x", [None, 8, 3, 5]), fluid.data("img", [None, 3, 30, 40])
        return L.prior_box(x, img, [10.0, 16.0], **kw)
    (boxes, var), (got, got_var) = run(build, {"x": np.zeros((2, 8, 3, 5), "float32"),
                                               "img": np.zeros((2, 3, 30, 40), "float32")})
    want = prior_box_ref(3, 5, 30, 40, [10.0, 16.0], full["max_sizes"], full["aspect_ratios"], full["flip"],
                         full["clip"], full["steps"], full["offset"], full["min_max_aspect_ratios_order"])
    assert tuple(boxes.shape) == want.shape == got.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_var, np.broadcast_to([0.1, 0.1, 0.2, 0.2], want.shape).astype("float32"))
    assert boxes.stop_gradient and var.stop_gradient


def test_prior_box_by_hand_and_its_errors():
    def build():  # one 2x2 cell grid over a 4x4 image: centres at 1 and 3
        return L.prior_box(fluid.data("x", [1, 1, 2, 2]), fluid.data("img", [1, 1, 4, 4]), 2.0, max_sizes=[8.0],
                           aspect_ratios=[4.0])
    _, (got, _) = run(build, {"x": np.zeros((1, 1, 2, 2), "float32"), "img": np.zeros((1, 1, 4, 4), "float32")})
    # cell (0, 1): centre (3, 1); square 2, 4:1 box 4 x 1, square sqrt(16) = 4
    np.testing.assert_allclose(got[0, 1], [[0.5, 0, 1, 0.5], [0.25, 0.125, 1.25, 0.375], [0.25, -0.25, 1.25, 0.75]])
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x, img = fluid.data("x", [1, 1, 2, 2]), fluid.data("img", [1, 4, 4])
        with pytest.raises(ValueError, match=r"Input\(Image\) of Op\(PriorBoxOp\) should be a 4-D Tensor"):
            L.prior_box(x, img, 2.0)
        img = fluid.data("img4", [1, 1, 4, 4])
        with pytest.raises(ValueError, match=r"max_size\[0\] must be greater than min_size\[0\]"):
            L.prior_box(x, img, [2.0], max_sizes=[1.0])
        with pytest.raises(ValueError, match="steps should be a list or tuple with length 2"):
            L.prior_box(x, img, [2.0], steps=[1.0])
        with pytest.raises(TypeError, match="'input' in prior_box"):
            L.prior_box(fluid.data("i", [1, 1, 2, 2], "int64"), img, [2.0])


# --- density_prior_box ----------------------------------------------------------------------------------
def test_density_prior_box_by_hand_and_flattened():
    def build():
        x, img = fluid.data("x", [None, 2, 2, 3]), fluid.data("img", [None, 3, 16, 24])
        return [*L.density_prior_box(x, img, [2, 1], [4.0, 8.0], [1.0, 4.0], clip=True),
                L.density_prior_box(x, img, [2, 1], [4.0, 8.0], [1.0, 4.0], flatten_to_2d=True)[0]]
    (boxes, _, flat), (got, var, got_flat) = run(build, {"x": np.zeros((1, 2, 2, 3), "float32"),
                                                         "img": np.zeros((1, 3, 16, 24), "float32")})
    assert list(boxes.shape) == [2, 3, 10, 4] and got.shape == (2, 3, 10, 4) and list(flat.shape) == [60, 4]
    np.testing.assert_array_equal(got_flat, got.reshape(-1, 4))
    # cell (1, 2): step 8, centre (20, 12); density 2: shift 4, sub-centres 18 / 22 and 10 / 14
    # box 4 x 4: the last sub-box (22, 14) -> [20, 12, 24, 16] / [24, 16]; ratio 4: 8 x 2 boxes
    np.testing.assert_allclose(got[1, 2, 3], [20 / 24, 12 / 16, 1, 1], rtol=1e-6)
    np.testing.assert_allclose(got[1, 2, 4], [14 / 24, 9 / 16, 22 / 24, 11 / 16], rtol=1e-6)
    # size 8, density 1: centred on the cell; ratio 4 -> 16 x 4, xmax clipped to the image
    np.testing.assert_allclose(got[1, 2, 9], [12 / 24, 10 / 16, 1, 14 / 16], rtol=1e-6)
    assert var.shape == got.shape and (var[..., 2] == np.float32(0.2)).all()


def test_density_prior_box_errors():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x, img = fluid.data("x", [1, 2, 2, 3]), fluid.data("img", [1, 3, 16, 24])
        with pytest.raises(ValueError, match="densities and fixed_sizes length should be euqal"):
            L.density_prior_box(x, img, [2], [4.0, 8.0], [1.0])
        with pytest.raises(TypeError, match="'densities' in density_prior_box"):
            L.density_prior_box(x, img, None, [4.0], [1.0])
        with pytest.raises(ValueError, match="Input's height of DensityPriorBoxOp should be smaller"):
            L.density_prior_box(x, fluid.data("small", [1, 3, 2, 24]), [1], [4.0], [1.0])


# --- anchor_generator -----------------------------------------------------------------------------------
def test_anchor_generator_by_hand():
    def build():
        return L.anchor_generator(fluid.data("x", [None, 4, 2, 3]), [32, 64], [0.5, 1.0], stride=[8.0, 8.0])
    (anchors, _), (got, var) = run(build, {"x": np.zeros((1, 4, 2, 3), "float32")})
    assert list(anchors.shape) == [2, 3, 4, 4] == list(got.shape)
    # ratio 0.5: base width round(sqrt(64 / 0.5)) = 11, height round(5.5) = 6 (C rounds halves up), scaled by
    # size / 8; centre of cell (h, w) at (8w + 3.5, 8h + 3.5)
    np.testing.assert_allclose(got[0, 0], [[-18, -8, 25, 15], [-40, -20, 47, 27], [-12, -12, 19, 19],
                                           [-28, -28, 35, 35]])
    np.testing.assert_allclose(got[1, 2] - got[0, 0], np.tile([16, 8, 16, 8], (4, 1)))
    assert var.shape == got.shape
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match="stride should be a list or tuple with length 2"):
            L.anchor_generator(fluid.data("x", [None, 4, 2, 3]), [32], [1.0])


# --- box_coder ------------------------------------------------------------------------------------------
def encode_ref(prior, var, target, normalized):
    one = 0 if normalized else 1
    out = np.zeros((len(target), len(prior), 4))
    for i, t in enumerate(target):
        for j, p in enumerate(prior):
            pw, ph = p[2] - p[0] + one, p[3] - p[1] + one
            tw, th = t[2] - t[0] + one, t[3] - t[1] + one
            px, py = p[0] + pw / 2, p[1] + ph / 2
            tx, ty = (t[0] + t[2]) / 2, (t[1] + t[3]) / 2
            v = var[j] if np.ndim(var) == 2 else var
            out[i, j] = [(tx - px) / pw / v[0], (ty - py) / ph / v[1], math.log(tw / pw) / v[2],
                         math.log(th / ph) / v[3]]
    return out


def decode_ref(prior, var, deltas, normalized, axis):
    one = 0 if normalized else 1
    out = np.zeros(deltas.shape)
    for i in range(deltas.shape[0]):
        for j in range(deltas.shape[1]):
            k = j if axis == 0 else i
            p, d = prior[k], deltas[i, j]
            v = var[k] if np.ndim(var) == 2 else var
            pw, ph = p[2] - p[0] + one, p[3] - p[1] + one
            cx, cy = v[0] * d[0] * pw + p[0] + pw / 2, v[1] * d[1] * ph + p[1] + ph / 2
            w, h = math.exp(v[2] * d[2]) * pw, math.exp(v[3] * d[3]) * ph
            out[i, j] = [cx - w / 2, cy - h / 2, cx + w / 2 - one, cy + h / 2 - one]
    return out


def test_box_coder_encode_and_decode_against_the_reference():
    prior, target = rand_boxes(6), rand_boxes(5)
    prior_var = (rng.rand(6, 4) * 0.3 + 0.1).astype("float32")
    deltas, deltas1 = (rng.randn(5, 6, 4) * 0.5).astype("float32"), (rng.randn(6, 5, 4) * 0.5).astype("float32")

    def build():
        p, pv, t = fluid.data("p", [None, 4]), fluid.data("pv", [None, 4]), fluid.data("t", [None, 4])
        d, d1 = fluid.data("d", [None, None, 4]), fluid.data("d1", [None, None, 4])
        return [L.box_coder(p, pv, t), L.box_coder(p, [0.1, 0.1, 0.2, 0.2], t, box_normalized=False),
                L.box_coder(p, None, t), L.box_coder(p, pv, d, "decode_center_size"),
                L.box_coder(p, [0.1, 0.2, 0.3, 0.4], d1, "decode_center_size", False, axis=1)]
    outs, got = run(build, {"p": prior, "pv": prior_var, "t": target, "d": deltas, "d1": deltas1})
    assert [list(o.shape) for o in outs] == [[-1, -1, 4]] * 3 + [[-1, -1, 4]] * 2
    want = [encode_ref(prior, prior_var, target, True), encode_ref(prior, [0.1, 0.1, 0.2, 0.2], target, False),
            encode_ref(prior, [1, 1, 1, 1], target, True), decode_ref(prior, prior_var, deltas, True, 0),
            decode_ref(prior, [0.1, 0.2, 0.3, 0.4], deltas1, False, 1)]
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def test_box_coder_decode_after_encode_and_the_lod_it_keeps():
    prior, target = rand_boxes(4, 50), rand_boxes(3, 50)

    def build():
        p, t = fluid.data("p", [None, 4], lod_level=1), fluid.data("t", [None, 4], lod_level=1)
        enc = L.box_coder(p, [0.1, 0.1, 0.2, 0.2], t, box_normalized=False)
        dec = L.box_coder(p, [0.1, 0.1, 0.2, 0.2], enc, "decode_center_size", box_normalized=False)
        by_rows = L.box_coder(p, None, L.transpose(enc, [1, 0, 2]), "decode_center_size", False, axis=1)
        return [enc, dec, by_rows]
    feed = {"p": fluid.create_lod_tensor(prior, [[1, 3]], PLACE), "t": fluid.create_lod_tensor(target, [[2, 1]], PLACE)}
    _, (enc, dec, by_rows) = run(build, feed, return_numpy=False)
    # fluid encodes a pixel box's centre as the midpoint but decodes it as xmin + (w + 1) / 2: half a pixel off
    np.testing.assert_allclose(np.asarray(dec), np.broadcast_to(target[:, None] - 0.5, (3, 4, 4)), rtol=1e-4,
                               atol=1e-3)
    assert enc.recursive_sequence_lengths() == [[2, 1]] == dec.recursive_sequence_lengths()
    assert by_rows.recursive_sequence_lengths() == [[1, 3]]  # decoding along axis 1 keeps the priors' LoD


def test_box_coder_errors_name_the_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        p, t = fluid.data("p", [None, 4]), fluid.data("t", [None, 4])
        with pytest.raises(ValueError, match=r"Input\(TargetBox\) must be a 3-D tensor \[N, M, 4\] to decode"):
            L.box_coder(p, None, t, "decode_center_size")
        with pytest.raises(ValueError, match=r"Input\(PriorBox\) must be a 2-D tensor \[M, 4\]"):
            L.box_coder(fluid.data("p3", [None, 3]), None, t)
        with pytest.raises(ValueError, match="'code_type' attribute in BoxCoder must be"):
            L.box_coder(p, None, t, "corner")
        with pytest.raises(TypeError, match="Input variance of box_coder must be Variable or list"):
            L.box_coder(p, 0.1, t)
        with pytest.raises(ValueError, match=r"Input\(PriorBox\) holds 6 boxes but Input\(TargetBox\)"):
            L.box_coder(fluid.data("p6", [6, 4]), None, fluid.data("d", [2, 5, 4]), "decode_center_size")


# --- iou_similarity -------------------------------------------------------------------------------------
def test_iou_similarity_fluids_example_reference_and_lod():
    def build():
        x, y = fluid.data("x", [None, 4], lod_level=1), fluid.data("y", [None, 4])
        return [L.iou_similarity(x, y), L.iou_similarity(x, y, box_normalized=False)]
    x = np.array([[0.5, 0.5, 2.0, 2.0], [0.0, 0.0, 1.0, 1.0]], "float32")
    y = np.array([[1.0, 1.0, 2.5, 2.5]], "float32")
    outs, (iou, iou_px) = run(build, {"x": fluid.create_lod_tensor(x, [[2]], PLACE), "y": y}, return_numpy=False)
    np.testing.assert_allclose(np.asarray(iou), [[0.2857143], [0.0]], rtol=1e-6)
    # pixels counted inclusively: 2.5 x 2.5 and 2.5 x 2.5 boxes overlapping 2 x 2; 2 x 2 and 1 x 1 corner
    np.testing.assert_allclose(np.asarray(iou_px), [[4 / (6.25 + 6.25 - 4)], [1 / (4 + 6.25 - 1)]], rtol=1e-6)
    assert iou.recursive_sequence_lengths() == [[2]] and outs[0].lod_level == 1
    a, b = rand_boxes(7), rand_boxes(5)
    _, (got,) = run(lambda: L.iou_similarity(fluid.data("a", [None, 4]), fluid.data("b", [None, 4])), {"a": a, "b": b})
    want = [[max(0, min(p[2], q[2]) - max(p[0], q[0])) * max(0, min(p[3], q[3]) - max(p[1], q[1])) for q in b]
            for p in a]
    area = lambda r: (r[:, 2] - r[:, 0]) * (r[:, 3] - r[:, 1])  # noqa: E731
    want = np.array(want) / (area(a)[:, None] + area(b)[None, :] - np.array(want))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match=r"The shape of Y is \[M, 4\], but got dimension = 5"):
            L.iou_similarity(fluid.data("a", [None, 4]), fluid.data("b", [None, 5]))


# --- box_clip -------------------------------------------------------------------------------------------
def test_box_clip_per_image_of_the_lod_and_batched():
    boxes = np.array([[-3, 2, 30, 50], [5, -1, 9, 8], [12, 14, 90, 70]], "float32")
    im_info = np.array([[40, 20, 1.0], [60, 80, 2.0]], "float32")  # images 20 x 40 and 40 x 30 (w x h)

    def build():
        b = fluid.data("b", [None, 4], lod_level=1)
        info = fluid.data("info", [None, 3])
        return [L.box_clip(b, info), L.box_clip(fluid.data("bb", [None, 3, 4]), info)]
    batched = np.stack([boxes, boxes + 1])
    _, (got, got_batched) = run(build, {"b": fluid.create_lod_tensor(boxes, [[1, 2]], PLACE), "info": im_info,
                                        "bb": batched}, return_numpy=False)
    np.testing.assert_array_equal(np.asarray(got), [[0, 2, 19, 39], [5, 0, 9, 8], [12, 14, 39, 29]])
    assert got.recursive_sequence_lengths() == [[1, 2]]
    np.testing.assert_array_equal(np.asarray(got_batched)[1], [[0, 3, 31, 29], [6, 0, 10, 9], [13, 15, 39, 29]])
    np.testing.assert_array_equal(np.asarray(got_batched)[0, 2], [12, 14, 19, 39])
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match=r"last dimension of Input\(ImInfo\) of BoxClipOp must be 3"):
            L.box_clip(fluid.data("b", [None, 4]), fluid.data("info", [None, 2]))
