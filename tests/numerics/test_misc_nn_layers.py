"""The layers of layers/misc_nn.py through Program + Executor: fluid 1.8's signatures and defaults, values against
numpy written here, the state they update (center_loss's centres, random_crop's seed), cvm's gradient rule, and the
argument errors (the ops themselves are checked in tests/ops/misc_nn_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
rng = np.random.RandomState(23)
E = inspect.Parameter.empty


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def run(build, feed, runs=1):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    results = [[np.array(r) for r in exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)]
               for _ in range(runs)]
    return fetch, results if runs > 1 else results[0]


def test_signatures_are_fluids():
    assert _signature(L.center_loss) == [("input", E), ("label", E), ("num_classes", E), ("alpha", E),
                                         ("param_attr", E), ("update_center", True)]
    assert _signature(L.npair_loss) == [("anchor", E), ("positive", E), ("labels", E), ("l2_reg", 0.002)]
    assert _signature(L.teacher_student_sigmoid_loss) == [("input", E), ("label", E), ("soft_max_up_bound", 15.0),
                                                          ("soft_max_lower_bound", -15.0)]
    assert _signature(L.continuous_value_model) == [("input", E), ("cvm", E), ("use_cvm", True)]
    assert _signature(L.spectral_norm) == [("weight", E), ("dim", 0), ("power_iters", 1), ("eps", 1e-12),
                                           ("name", None)]
    assert _signature(L.similarity_focus) == [("input", E), ("axis", E), ("indexes", E), ("name", None)]
    assert _signature(L.random_crop) == [("x", E), ("shape", E), ("seed", None)]
    assert _signature(L.image_resize_short) == [("input", E), ("out_short_len", E), ("resample", "BILINEAR")]


def test_center_loss_values_and_the_centres_it_moves_run_after_run():
    x = rng.randn(6, 3).astype("float32")
    label = np.array([[0], [1], [0], [2], [1], [0]])
    centers = rng.randn(3, 3).astype("float32")

    def build():
        feat, lab = fluid.data("x", [None, 3]), fluid.data("label", [None, 1], "int64")
        init = fluid.initializer.NumpyArrayInitializer(centers)
        return [L.center_loss(feat, lab, 3, 0.5, fluid.ParamAttr(name="centres", initializer=init))]
    (loss,), results = run(build, {"x": x, "label": label}, runs=2)
    assert list(loss.shape) == [-1, 1]
    c = centers.astype(np.float64)
    for got, in results:
        diff = x - c[label[:, 0]]
        np.testing.assert_allclose(got, 0.5 * (diff ** 2).sum(1, keepdims=True), rtol=1e-5)
        for k in range(3):  # each centre moves by alpha * (its samples' summed difference) / (1 + their count)
            members = label[:, 0] == k
            c[k] += 0.5 * diff[members].sum(0) / (1 + members.sum())
    np.testing.assert_allclose(np.array(fluid.global_scope().find_var("centres").get_tensor()), c, rtol=1e-5)


def test_center_loss_without_update_and_the_gradient_reaching_the_features():
    x = rng.randn(4, 2).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        feat = fluid.data("x", [None, 2])
        feat.stop_gradient = False
        loss = L.reduce_sum(L.center_loss(feat, fluid.data("label", [None, 1], "int64"), 2, 0.1,
                                          fluid.ParamAttr(name="c2", initializer=fluid.initializer.Constant(1.0)),
                                          update_center=False))
        grad, = fluid.backward.gradients([loss], [feat])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    g, = exe.run(main, feed={"x": x, "label": np.array([[0], [1], [1], [0]])}, fetch_list=[grad])
    np.testing.assert_allclose(g, x - 1.0, rtol=1e-6)
    np.testing.assert_array_equal(np.array(fluid.global_scope().find_var("c2").get_tensor()), np.ones((2, 2)))


def npair_ref(anchor, positive, labels, l2_reg):
    same = (labels[:, None] == labels[None, :]).astype(np.float64)
    targets = same / same.sum(1, keepdims=True)
    logits = anchor @ positive.T
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    ce = -(targets * logp).sum(1)  # per row, the soft-label cross entropy
    celoss = (targets * ce[:, None]).sum(0).mean()
    l2 = ((anchor ** 2).sum(1).mean() + (positive ** 2).sum(1).mean()) * 0.25 * l2_reg
    return l2 + celoss


def test_npair_loss_against_numpy():
    a, p = rng.randn(5, 4).astype("float32"), rng.randn(5, 4).astype("float32")
    labels = np.array([1, 0, 1, 2, 0], "float32")

    def build():
        return [L.npair_loss(fluid.data("a", [5, 4]), fluid.data("p", [5, 4]), fluid.data("l", [5]), l2_reg=0.01)]
    (out,), (got,) = run(build, {"a": a, "p": p, "l": labels})
    assert list(out.shape) == [1]
    np.testing.assert_allclose(got, [npair_ref(a.astype(np.float64), p.astype(np.float64), labels, 0.01)], rtol=1e-5)


def test_teacher_student_loss_and_cvm_values():
    x = np.array([[0.3], [-1.2], [2.0], [0.7]], "float32")
    label = np.array([[-2.0], [-1.0], [0.25], [1.5]], "float32")
    emb = rng.uniform(0, 4, (3, 5)).astype("float32")

    def build():
        v, lab = fluid.data("x", [None, 1]), fluid.data("label", [None, 1])
        e, c = fluid.data("emb", [None, 5]), fluid.data("cvm", [None, 2])
        return [L.teacher_student_sigmoid_loss(v, lab), L.continuous_value_model(e, c),
                L.continuous_value_model(e, c, use_cvm=False)]
    outs, (ts, with_cvm, without) = run(build, {"x": x, "label": label, "emb": emb, "cvm": np.ones((3, 2), "float32")})
    sp = np.log1p(np.exp(x.astype(np.float64)))
    want = np.array([sp[0], sp[1] + 1.2, 2 * sp[2] - 2.0 * 0.25, 2 * sp[3] - 0.7 * 1.5])
    np.testing.assert_allclose(ts, want, rtol=1e-5)
    assert [list(o.shape) for o in outs] == [[-1, 1], [-1, 5], [-1, 3]]
    np.testing.assert_allclose(with_cvm[:, 0], np.log(emb[:, 0] + 1), rtol=1e-6)
    np.testing.assert_allclose(with_cvm[:, 1], np.log(emb[:, 1] + 1) - np.log(emb[:, 0] + 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(with_cvm[:, 2:], emb[:, 2:])
    np.testing.assert_array_equal(without, emb[:, 2:])


@pytest.mark.parametrize("use_cvm", [True, False])
def test_cvm_backward_hands_the_counts_to_the_show_and_click_columns(use_cvm):
    """fluid's rule: the embedding columns get the upstream gradient, the first two the CVM input's counts."""
    emb = rng.uniform(0, 4, (3, 5)).astype("float32")
    counts = np.array([[3, 1], [5, 0], [2, 2]], "float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        e = fluid.data("emb", [None, 5])
        e.stop_gradient = False
        y = L.continuous_value_model(e, fluid.data("cvm", [None, 2]), use_cvm=use_cvm)
        grad, = fluid.backward.gradients([L.reduce_sum(y * 2.0)], [e])
    g, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"emb": emb, "cvm": counts}, fetch_list=[grad])
    np.testing.assert_array_equal(g[:, :2], counts)
    np.testing.assert_array_equal(g[:, 2:], np.full((3, 3), 2.0))


def test_spectral_norm_converges_to_the_largest_singular_value_and_trains():
    w = rng.randn(6, 4, 3).astype("float64")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        weight = L.create_parameter([6, 4, 3], "float64", name="sn_w",
                                    default_initializer=fluid.initializer.NumpyArrayInitializer(w))
        out = L.spectral_norm(weight, dim=1, power_iters=60)
        loss = L.reduce_sum(L.square(out - 0.1))
        fluid.optimizer.SGD(0.1).minimize(loss)
    params = {p.name: list(p.shape) for p in main.global_block().all_parameters()}
    assert params == {"sn_w": [6, 4, 3], "spectral_norm_0.w_0": [4], "spectral_norm_0.w_1": [18]}
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    u0 = np.array(fluid.global_scope().find_var("spectral_norm_0.w_0").get_tensor()).copy()
    first, got = exe.run(main, fetch_list=[loss, out])
    sigma = np.linalg.svd(w.transpose(1, 0, 2).reshape(4, -1), compute_uv=False)[0]
    np.testing.assert_allclose(got, w / sigma, rtol=1e-6)
    losses = [float(exe.run(main, fetch_list=[loss])[0]) for _ in range(10)]
    assert losses[-1] < float(first)
    np.testing.assert_array_equal(np.array(fluid.global_scope().find_var("spectral_norm_0.w_0").get_tensor()), u0)


def test_random_crop_cuts_windows_of_the_input_and_moves_its_seed():
    x = np.arange(2 * 3 * 6 * 7, dtype="float32").reshape(2, 3, 6, 7)

    def build():
        return [L.random_crop(fluid.data("x", [2, 3, 6, 7]), [4, 5], seed=11)]
    (out,), runs = run(build, {"x": x}, runs=4)
    assert list(out.shape) == [2, 3, 4, 5]
    crops = [r[0] for r in runs]
    for crop in crops:
        for n in range(2):
            for c in range(3):  # a window: consecutive rows and columns of its own instance
                top, left = divmod(int(crop[n, c, 0, 0] - x[n, c, 0, 0]), 7)
                np.testing.assert_array_equal(crop[n, c], x[n, c, top:top + 4, left:left + 5])
    assert len({c.tobytes() for c in crops}) > 1  # the seed moves from run to run
    (_,), again = run(build, {"x": x}, runs=4)
    for a, b in zip(runs, again):  # the same start seed crops the same windows
        np.testing.assert_array_equal(a[0], b[0])


def test_image_resize_short_keeps_the_aspect_ratio():
    x = rng.rand(1, 2, 6, 9).astype("float32")

    def build():
        v = fluid.data("x", [1, 2, 6, 9])
        return [L.image_resize_short(v, 4), L.image_resize_short(v, 4, resample="NEAREST")]
    outs, (bilinear, nearest) = run(build, {"x": x})
    assert [list(o.shape) for o in outs] == [[1, 2, 4, 6], [1, 2, 4, 6]]
    assert bilinear.shape == nearest.shape == (1, 2, 4, 6)
    rows, cols = np.round(np.arange(4) * 5 / 3).astype(int), np.round(np.arange(6) * 8 / 5).astype(int)
    np.testing.assert_array_equal(nearest, x[:, :, rows][:, :, :, cols])  # align_corners: corners map to corners


def test_similarity_focus_marks_the_focused_positions():
    x = np.zeros((1, 2, 3, 3), "float32")
    x[0, 0] = [[9, 8, 1], [7, 6, 2], [0, 3, 5]]  # greedy: (0, 0), then (1, 1), then (2, 2)
    x[0, 1] = [[1, 1, 9], [1, 1, 1], [8, 1, 1]]  # channel 1 not in indexes

    def build():
        return [L.similarity_focus(fluid.data("x", [1, 2, 3, 3]), axis=1, indexes=[0])]
    _, (got,) = run(build, {"x": x})
    np.testing.assert_array_equal(got[0, 0], np.eye(3))
    np.testing.assert_array_equal(got[0, 1], np.eye(3))


def test_argument_errors_name_what_is_wrong():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3])
        with pytest.raises(TypeError, match="'label' in center_loss"):
            L.center_loss(x, fluid.data("lab", [None, 1], "float32"), 2, 0.1, None)
        with pytest.raises(TypeError, match="'input' in teacher_student_sigmoid_loss"):
            L.teacher_student_sigmoid_loss(fluid.data("i", [None, 1], "int64"), x)
        with pytest.raises(TypeError, match="'power_iters' in spectral_norm"):
            L.spectral_norm(fluid.data("w", [3, 4]), power_iters=1.0)
        with pytest.raises(ValueError, match="axis must be 1, 2 or 3"):
            L.similarity_focus(fluid.data("img", [1, 2, 3, 3]), 0, [0])
        with pytest.raises(ValueError, match="indexes can not be empty"):
            L.similarity_focus(fluid.data("img2", [1, 2, 3, 3]), 1, [])
        with pytest.raises(ValueError, match="The rank of input must be 4"):
            L.image_resize_short(x, 4)
        with pytest.raises(ValueError, match="'seed' must be a Variable or an int"):
            L.random_crop(fluid.data("r", [2, 5, 5]), [3, 3], seed=1.5)
        with pytest.raises(ValueError, match=r"Input\(X\) must be larger than Attr\(shape\)"):
            L.random_crop(fluid.data("r2", [2, 5, 5]), [6, 3])
        with pytest.raises(ValueError, match=r"Attr\(dim\) can only be 0 or 1"):
            L.spectral_norm(fluid.data("w3", [3, 4, 2]), dim=2)


def test_inplace_abn_equals_batch_norm_then_its_activation_forward_and_backward():
    x = rng.randn(4, 3, 5, 5).astype("float64")
    results = {}
    for kind in ("abn", "composite"):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            img = fluid.data("x", [None, 3, 5, 5], "float64")
            img.stop_gradient = False
            attr = fluid.ParamAttr(name=f"{kind}_scale", initializer=fluid.initializer.Constant(1.3))
            if kind == "abn":
                y = L.inplace_abn(img, act="elu", act_alpha=0.7, param_attr=attr)
            else:
                y = L.elu(L.batch_norm(img, param_attr=attr), alpha=0.7)
            loss = L.reduce_sum(y * y)
            grads = fluid.backward.gradients([loss], [img])
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        results[kind] = exe.run(main, feed={"x": x}, fetch_list=[y] + grads)
    for got, want in zip(results["abn"], results["composite"]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def _data_norm_program(slot_dim=-1, enable_scale_and_shift=False, train=False):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float64")
        x.stop_gradient = False
        y = L.data_norm(x, slot_dim=slot_dim, enable_scale_and_shift=enable_scale_and_shift,
                        param_attr={"batch_size": 10.0, "batch_sum": 2.0, "batch_square": 8.0})
        loss = L.reduce_sum(y * 3.0)
        if train:  # the statistics' learning rate is 0: only the backward pass moves them
            grad = None
            fluid.optimizer.SGD(0.5).minimize(loss)
        else:  # each backward pass built folds the batch in once
            grad, = fluid.backward.gradients([loss], [x])
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return main, exe, y, grad


def _stat(name):
    return np.array(fluid.global_scope().find_var(name).get_tensor())


def test_data_norm_normalises_by_its_statistics_and_folds_each_batch_into_them():
    x = rng.randn(6, 4)
    main, exe, y, grad = _data_norm_program()
    params = sorted(p.name for p in main.global_block().all_parameters())
    assert params == ["dn.batch_size", "dn.batch_square_sum", "dn.batch_sum"]
    size, total, square = np.full(4, 10.0), np.full(4, 2.0), np.full(4, 8.0)
    for _ in range(3):  # each run normalises by the statistics so far, then folds the batch in
        got, g = exe.run(main, feed={"x": x}, fetch_list=[y, grad])
        mean, scale = total / size, np.sqrt(size / square)
        np.testing.assert_allclose(got, (x - mean) * scale, rtol=1e-12)
        np.testing.assert_allclose(g, np.broadcast_to(3.0 * scale, x.shape), rtol=1e-12)
        decay = 0.9999999
        size, total, square = (size * decay + 6, total * decay + x.sum(0),
                               square * decay + ((x - mean) ** 2).sum(0) + 6 * 1e-5)
        for name, want in (("dn.batch_size", size), ("dn.batch_sum", total), ("dn.batch_square_sum", square)):
            np.testing.assert_allclose(_stat(name), want, rtol=1e-12)


def test_data_norm_slots_without_a_show_are_zero_and_count_for_nothing():
    x = rng.randn(3, 4)
    x[0, 0] = 0.0  # row 0, slot 0: no show
    x[1, 2] = x[2, 2] = 0.0  # slot 1 shown only in row 0
    main, exe, y, _ = _data_norm_program(slot_dim=2, enable_scale_and_shift=True, train=True)
    got, = exe.run(main, feed={"x": x}, fetch_list=[y])
    want = (x - 0.2) * np.sqrt(10 / 8)
    want[0, :2] = 0
    want[1:, 2:] = 0
    np.testing.assert_allclose(got, want, rtol=1e-12)
    shown = np.array([[0, 0, 1, 1], [1, 1, 0, 0], [1, 1, 0, 0]], bool)
    count = shown.sum(0)
    decay = 0.9999999
    np.testing.assert_allclose(_stat("dn.batch_size"), 10 * decay + 1, rtol=1e-12)
    np.testing.assert_allclose(_stat("dn.batch_sum"), 2 * decay + (x * shown).sum(0) / count, rtol=1e-12)
    dev = (((x - 0.2) * shown) ** 2).sum(0) / count + count * 1e-5
    np.testing.assert_allclose(_stat("dn.batch_square_sum"), 8 * decay + dev, rtol=1e-12)


def test_hash_and_filter_by_instag_signatures_shapes_and_the_empty_case():
    assert _signature(L.hash) == [("input", E), ("hash_size", E), ("num_hash", 1), ("name", None)]
    assert _signature(L.filter_by_instag) == [("ins", E), ("ins_tag", E), ("filter_tag", E), ("is_lod", E),
                                              ("out_val_if_empty", 0)]
    ids = np.array([[1, 2], [1, 2], [2, 1]], "int64")

    def build():
        ins = fluid.data("ins", [None, 2], "float32")
        tag = fluid.data("tag", [None, 1], "int64", lod_level=1)
        out, weight = L.filter_by_instag(ins, tag, fluid.data("want", [1], "int64"), False, out_val_if_empty=-3)
        return [L.hash(fluid.data("ids", [None, 2], "int64"), 50, num_hash=4), out, weight]
    tags = fluid.create_lod_tensor(np.array([[1], [2], [3]]), [[1, 1, 1]], fluid.CPUPlace())
    feed = {"ids": ids, "ins": np.ones((3, 2), "float32"), "tag": tags, "want": np.array([8])}
    outs, (hashed, out, weight) = run(build, feed)
    assert [list(o.shape) for o in outs] == [[-1, 4, 1], [-1, 2], [-1, 1]]
    assert hashed.shape == (3, 4, 1) and hashed.dtype == np.int64 and ((0 <= hashed) & (hashed < 50)).all()
    np.testing.assert_array_equal(hashed[0], hashed[1])  # equal rows, equal hashes
    assert len({tuple(hashed[0, :, 0]), tuple(hashed[2, :, 0])}) == 2 and len(set(hashed[0, :, 0])) > 1
    np.testing.assert_array_equal(out, [[-3, -3]])  # no instance has tag 8: one filler row, weight 0
    np.testing.assert_array_equal(weight, [[0]])
    feed["want"] = np.array([3])
    _, (_, out, weight) = run(build, feed)
    np.testing.assert_array_equal(out, [[1, 1]])
    np.testing.assert_array_equal(weight, [[1]])
