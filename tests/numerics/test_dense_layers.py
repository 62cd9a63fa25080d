"""Dense layers of fluid's everyday API through Program + Executor: values against numpy, signatures and
fluid's errors for bad arguments (the ops themselves are checked in tests/ops/dense_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
rng = np.random.RandomState(11)


def run(build, feed, fetch_startup=True):
    """Build with ``build()`` (returns the fetch list) in fresh programs, run startup then main."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=fetch)


# --- activations -----------------------------------------------------------------------------------------
def test_activation_layers_take_fluids_signatures():
    assert str(inspect.signature(L.leaky_relu)) == "(x, alpha=0.02, name=None)"
    assert str(inspect.signature(L.hard_swish)) == "(x, threshold=6.0, scale=6.0, offset=3.0, name=None)"
    assert str(inspect.signature(L.elu)) == "(x, alpha=1.0, name=None)"
    assert str(inspect.signature(L.exp)) == "(x, name=None)"


def test_activation_layers_compute_what_they_name():
    x = rng.uniform(-4, 4, (5, 6)).astype("float32")

    def build():
        v = fluid.data("x", [None, 6])
        return [L.leaky_relu(v, 0.1), L.relu6(v), L.elu(v, alpha=0.5), L.hard_sigmoid(v), L.swish(v),
                L.softplus(v), L.exp(v), L.abs(v), L.pow(v, 2.0), L.selu(v, scale=2.0), L.log_softmax(v, axis=1)]
    got = run(build, {"x": x})
    expected = [np.where(x > 0, x, 0.1 * x), np.clip(x, 0, 6), np.where(x > 0, x, 0.5 * (np.exp(x) - 1)),
                np.clip(0.2 * x + 0.5, 0, 1), x / (1 + np.exp(-x)), np.log1p(np.exp(x)), np.exp(x), np.abs(x),
                x ** 2, 2.0 * np.where(x > 0, x, 1.6732632 * (np.exp(x) - 1)),
                x - x.max(1, keepdims=True) - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True))]
    for g, e in zip(got, expected):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode, shape", [("all", (1,)), ("channel", (1, 3, 1, 1)), ("element", (1, 3, 4, 4))])
def test_prelu_learns_one_slope_per_mode(mode, shape):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3, 4, 4])
        out = L.prelu(x, mode, param_attr=fluid.ParamAttr(name="alpha"))
    alpha = main.global_block().var("alpha")
    assert tuple(alpha.shape) == shape
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    xv = rng.randn(2, 3, 4, 4).astype("float32")
    y, = exe.run(main, feed={"x": xv}, fetch_list=[out])
    np.testing.assert_allclose(y, np.where(xv > 0, xv, 0.25 * xv), rtol=1e-6)


def test_activation_errors_are_fluids():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3, 4, 4])
        with pytest.raises(ValueError, match="mode should be one of all, channel, element."):
            L.prelu(x, "row")
        with pytest.raises(TypeError, match=r"The type of 'x' in leaky_relu must be Variable, but received ndarray"):
            L.leaky_relu(np.ones(3))
        ids = fluid.data("ids", [None, 1], "int64")
        with pytest.raises(TypeError, match=r"The data type of 'x' in elu must be .*float32.*received int64"):
            L.elu(ids)


# --- comparisons and logical ops -------------------------------------------------------------------------
def test_compare_and_logical_layers_give_bool_tensors_without_gradient():
    a, b = rng.randint(0, 3, (4, 3)).astype("int64"), rng.randint(0, 3, (4, 3)).astype("int64")

    def build():
        x, y = fluid.data("a", [None, 3], "int64"), fluid.data("b", [None, 3], "int64")
        lt, eq = L.less_than(x, y), L.equal(x, y)
        assert lt.dtype == "bool" and lt.stop_gradient
        return [lt, L.less_equal(x, y), L.greater_than(x, y), L.greater_equal(x, y), eq, L.not_equal(x, y),
                L.logical_and(lt, eq), L.logical_or(lt, eq), L.logical_xor(lt, L.logical_not(eq)),
                L.logical_not(lt)]
    got = run(build, {"a": a, "b": b})
    lt, eq = a < b, a == b
    expected = [lt, a <= b, a > b, a >= b, eq, a != b, lt & eq, lt | eq, lt ^ ~eq, ~lt]
    for g, e in zip(got, expected):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, e)


def test_compare_errors_are_fluids():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3])
        flag = fluid.data("flag", [None, 3], "bool")
        with pytest.raises(TypeError, match="The data type of 'x' in logical_and must be"):
            L.logical_and(x, flag)
        with pytest.raises(TypeError, match="The type of 'force_cpu' in less_than must be bool"):
            L.less_than(x, x, force_cpu=1)
        with pytest.raises(ValueError, match="The size of dim_y should not be greater than dim_x's"):
            L.less_than(fluid.data("v", [3]), x)


# --- indexing and manipulation ---------------------------------------------------------------------------
def test_manipulation_layers_match_numpy():
    x = rng.randn(4, 3, 5).astype("float32")
    ids = np.array([[2], [0], [1], [2]], dtype="int64")

    def build():
        v, i = fluid.data("x", [None, 3, 5]), fluid.data("ids", [None, 1], "int64")
        values, idx = L.topk(v, 2)
        srt, order = L.argsort(v, axis=2, descending=True)
        parts = L.unstack(v, axis=1)
        assert len(parts) == 3
        return [L.argmax(v, axis=2), L.argmin(v, axis=1), values, idx, srt, order,
                L.slice(v, axes=[1, 2], starts=[-2, 1], ends=[10000, -1]), L.shape(v), L.one_hot(i, 3),
                L.gather(v, L.reshape(i, [-1])), L.expand(v, [1, 2, 1]), L.stack(parts, axis=2),
                L.clip(v, -0.5, 0.5), L.clip_by_norm(v, 1.0),
                L.fill_constant_batch_size_like(v, [-1, 2], "int64", 7)]
    got = run(build, {"x": x, "ids": ids})
    desc = np.argsort(-x, axis=2, kind="stable")
    expected = [x.argmax(2), x.argmin(1), -np.sort(-x, 2)[..., :2], desc[..., :2],
                np.take_along_axis(x, desc, 2), desc, x[:, 1:, 1:4], [4, 3, 5], np.eye(3)[ids[:, 0]],
                x[ids[:, 0]], np.tile(x, (1, 2, 1)), x.transpose(0, 2, 1), np.clip(x, -0.5, 0.5),
                x / np.sqrt((x.astype("float64") ** 2).sum()), np.full((4, 2), 7)]
    for k, (g, e) in enumerate(zip(got, expected)):
        np.testing.assert_allclose(g, e, rtol=1e-5, err_msg=f"output {k}")
    assert got[0].dtype == np.int64 and got[7].dtype == np.int32 and got[8].dtype == np.float32


def test_scatter_overwrites_or_adds_up_and_trains_both_inputs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [4, 2])
        upd = fluid.data("u", [3, 2])
        x.stop_gradient = upd.stop_gradient = False
        ids = fluid.data("ids", [3], "int64")
        out = L.scatter(x, ids, upd, overwrite=False)
        dx_var, du_var = fluid.backward.gradients(L.reduce_sum(out), [x, upd])
    xv, uv = np.zeros((4, 2), "float32") + 1, np.arange(6, dtype="float32").reshape(3, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    o, dx, du = exe.run(main, feed={"x": xv, "u": uv, "ids": np.array([1, 3, 1])},
                        fetch_list=[out, dx_var, du_var])
    np.testing.assert_allclose(o, [[1, 1], [4, 6], [1, 1], [2, 3]])
    np.testing.assert_allclose(dx, [[1, 1], [0, 0], [1, 1], [0, 0]])
    np.testing.assert_allclose(du, np.ones((3, 2)))


def test_random_layers_seed_semantics():
    def build():
        return [L.uniform_random([3, 4], min=2.0, max=3.0, seed=5), L.uniform_random([3, 4]),
                L.gaussian_random([2000], mean=1.0, std=2.0)]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    a1, b1, g = exe.run(main, fetch_list=fetch)
    a2, b2, _ = exe.run(main, fetch_list=fetch)
    assert a1.dtype == np.float32 and ((a1 >= 2) & (a1 < 3)).all()
    np.testing.assert_array_equal(a1, a2)  # a fixed seed draws the same numbers every run
    assert not np.array_equal(b1, b2)  # seed 0: fresh numbers every run
    assert abs(g.mean() - 1.0) < 0.2 and abs(g.std() - 2.0) < 0.2


def test_increment_counts_in_place():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        counter = L.create_global_var([1], 0, "int64", persistable=True, name="counter")
        same = L.increment(counter, 2)
        assert same is counter
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    for _ in range(3):
        got, = exe.run(main, fetch_list=[counter])
    assert got.tolist() == [6]


def test_create_global_var_takes_a_one_element_array():
    """float() of a [1] array is a TypeError on numpy 2.4; fluid's scripts pass np.random.randn(1)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        var = L.create_global_var([2], np.array([1.5]), "float32", persistable=True)
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    assert np.array(scope.find_var(var.name).get_tensor()).tolist() == [1.5, 1.5]
    var._set_info("note", [1])  # fluid's per-variable notes
    assert var._get_info("note") == [1] and var._get_info("other") is None


def test_manipulation_errors_are_fluids():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3, 5])
        ids = fluid.data("ids", [None, 1], "int64")
        with pytest.raises(ValueError, match="Input starts must be an Variable, python list or tuple."):
            L.slice(x, [1], 1, [2])
        with pytest.raises(ValueError, match="end should greater than start"):
            L.slice(x, [1], [2], [1])
        with pytest.raises(TypeError, match="The data type of 'input' in one_hot must be"):
            L.one_hot(x, 3)
        with pytest.raises(ValueError, match=r"The number of elements \(2\) of 'expand_times' for Op\(expand\)"):
            L.expand(x, [1, 2])
        with pytest.raises(TypeError, match="The data type of 'dtype' in uniform_random must be"):
            L.uniform_random([2], dtype="int64")
        bad = L.one_hot(ids, 3)
    with pytest.raises(Exception, match=r"Input\(input\) value should be less than Input\(depth\), but received "
                                        r"input \(3\) not less than depth \(3\)"):
        fluid.Executor(fluid.CPUPlace()).run(fetch_list=[bad], feed={"ids": np.array([[3]], "int64")},
                                             program=bad.block.program)


# --- losses and normalisation ------------------------------------------------------------------------------
def test_loss_layers_match_numpy():
    x = rng.randn(6, 3).astype("float32")
    y = rng.uniform(0, 1, (6, 3)).astype("float32")
    p = rng.uniform(0.05, 0.95, (6, 1)).astype("float32")
    t = rng.randint(0, 2, (6, 1)).astype("float32")

    def build():
        xv, yv = fluid.data("x", [None, 3]), fluid.data("y", [None, 3])
        pv, tv = fluid.data("p", [None, 1]), fluid.data("t", [None, 1])
        return [L.sigmoid_cross_entropy_with_logits(xv, yv), L.smooth_l1(xv, yv), L.log_loss(pv, tv),
                L.huber_loss(pv, tv, 0.3), L.label_smooth(yv, epsilon=0.3)]
    sce, sl1, ll, hub, ls = run(build, {"x": x, "y": y, "p": p, "t": t})
    np.testing.assert_allclose(sce, np.log1p(np.exp(-x)) + (1 - y) * x, rtol=1e-5, atol=1e-6)
    d = np.abs(x - y)
    np.testing.assert_allclose(sl1, np.where(d < 1, 0.5 * d * d, d - 0.5).sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(ll, -t * np.log(p + 1e-4) - (1 - t) * np.log(1 - p + 1e-4), rtol=1e-5)
    r = np.abs(t - p)
    np.testing.assert_allclose(hub, np.where(r <= 0.3, 0.5 * r * r, 0.3 * (r - 0.15)), rtol=1e-5)
    np.testing.assert_allclose(ls, 0.7 * y + 0.1, rtol=1e-6)
    assert sl1.shape == (6, 1)


def test_layer_norm_l2_normalize_and_lrn_match_numpy():
    x = rng.randn(2, 4, 3, 3).astype("float32")

    def build():
        v = fluid.data("x", [None, 4, 3, 3])
        return [L.layer_norm(v, begin_norm_axis=2), L.l2_normalize(v, axis=1), L.lrn(v, n=3, alpha=0.1)]
    ln, l2, lr = run(build, {"x": x})
    flat = x.reshape(8, 9)
    expected_ln = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln, expected_ln.reshape(x.shape), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(l2, x / np.sqrt((x * x).sum(1, keepdims=True) + 1e-12), rtol=1e-5)
    sq = np.pad(x * x, ((0, 0), (1, 1), (0, 0), (0, 0)))
    mid = 1.0 + 0.1 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])
    np.testing.assert_allclose(lr, x * mid ** -0.75, rtol=1e-5)


def test_layer_norm_parameters_and_training():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 6])
        y = L.layer_norm(L.fc(x, 5), scale=True, shift=False)
        loss = L.mean(L.square(y - 1.0))
        fluid.optimizer.SGD(0.5).minimize(loss)
    params = [p.name for p in main.global_block().all_parameters()]
    assert "layer_norm_0.w_0" in params and not any(n.startswith("layer_norm_0.b") for n in params)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    xv = rng.randn(16, 6).astype("float32")
    losses = [float(exe.run(main, feed={"x": xv}, fetch_list=[loss])[0]) for _ in range(20)]
    assert losses[-1] < losses[0] * 0.8


def test_loss_and_norm_errors_are_fluids():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3])
        with pytest.raises(ValueError, match="The value of epsilon must be between 0 and 1."):
            L.label_smooth(x, epsilon=1.5)
        with pytest.raises(ValueError, match=r"Input's dimension size of Op\(lrn\) must be 4, but received 2."):
            L.lrn(x)
        with pytest.raises(ValueError, match=r"'begin_norm_axis' in Op\(layer_norm\) should be less than input"):
            L.layer_norm(x, begin_norm_axis=0)
        with pytest.raises(TypeError, match="The data type of 'input' in log_loss must be"):
            L.log_loss(fluid.data("d", [None, 1], "float64"), x)


# --- image layers ------------------------------------------------------------------------------------------
def test_conv2d_transpose_layer_shapes_parameters_and_output_size():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3, 5, 5])
        a = L.conv2d_transpose(x, 4, filter_size=3, stride=2, padding=1)
        b = L.conv2d_transpose(x, 2, output_size=[12, 12], stride=2)  # filter size derived: 12 - 4 * 2 = 4
        c = L.conv2d_transpose(x, 6, output_size=10, filter_size=3, stride=2, padding=[0, 1, 0, 1], groups=3,
                               bias_attr=False, act="relu")
    assert a.shape == (-1, 4, 9, 9) and b.shape == (-1, 2, 12, 12) and c.shape == (-1, 6, 10, 10)
    shapes = {p.name: tuple(p.shape) for p in main.global_block().all_parameters()}
    assert shapes["conv2d_transpose_0.w_0"] == (3, 4, 3, 3) and shapes["conv2d_transpose_0.b_0"] == (4,)
    assert shapes["conv2d_transpose_1.w_0"] == (3, 2, 4, 4) and shapes["conv2d_transpose_2.w_0"] == (3, 2, 3, 3)
    assert "conv2d_transpose_2.b_0" not in shapes
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got = exe.run(main, feed={"x": rng.randn(2, 3, 5, 5).astype("float32")}, fetch_list=[a, b, c])
    assert [g.shape for g in got] == [(2, 4, 9, 9), (2, 2, 12, 12), (2, 6, 10, 10)]
    assert (got[2] >= 0).all()


def test_gan_style_generator_and_discriminator_train():
    """The ops of the fluid book's GAN (09.gan): conv2d_transpose up-sampling, sigmoid_cross_entropy_with_logits
    against fill_constant_batch_size_like labels, trained with Adam."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        noise = fluid.data("noise", [None, 8])
        h = L.reshape(L.fc(noise, 4 * 4 * 4, act="relu"), [-1, 4, 4, 4])
        img = L.conv2d_transpose(h, 1, filter_size=4, stride=2, padding=1, act="tanh")  # 8x8 images
        logit = L.fc(L.conv2d(img, 4, 3, act="leaky_relu"), 1)
        ones = L.fill_constant_batch_size_like(noise, [-1, 1], "float32", 1.0)
        loss = L.mean(L.sigmoid_cross_entropy_with_logits(logit, ones))
        fluid.optimizer.Adam(0.01).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    z = rng.randn(16, 8).astype("float32")
    losses = [float(exe.run(main, feed={"noise": z}, fetch_list=[loss])[0]) for _ in range(15)]
    assert img.shape == (-1, 1, 8, 8) and losses[-1] < losses[0] * 0.5


def test_resize_and_pad_layers():
    x = rng.randn(2, 3, 4, 4).astype("float32")

    def build():
        v = fluid.data("x", [None, 3, 4, 4])
        return [L.resize_bilinear(v, out_shape=[8, 6]), L.resize_nearest(v, scale=2.0),
                L.image_resize(v, [2, 2], resample="NEAREST", align_corners=False),
                L.pad(v, [0, 0, 0, 0, 1, 1, 0, 2], pad_value=9.0), L.pad2d(v, [1, 1, 2, 2], mode="reflect")]
    bil, near, small, padded, refl = run(build, {"x": x})
    assert bil.shape == (2, 3, 8, 6) and near.shape == (2, 3, 8, 8)
    np.testing.assert_allclose(bil[:, :, 0, 0], x[:, :, 0, 0], rtol=1e-6)  # align_corners keeps the corners
    np.testing.assert_allclose(bil[:, :, -1, -1], x[:, :, -1, -1], rtol=1e-6)
    np.testing.assert_array_equal(small, x[:, :, ::2, ::2])
    np.testing.assert_array_equal(padded, np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 2)), constant_values=9.0))
    np.testing.assert_array_equal(refl, np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), mode="reflect"))


def test_image_layer_errors_are_fluids():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3, 5, 5])
        with pytest.raises(ValueError, match="output_size must be set when filter_size is None"):
            L.conv2d_transpose(x, 2)
        with pytest.raises(ValueError, match="Unknown padding: 'FULL'. It can only be 'SAME' or 'VALID'."):
            L.conv2d_transpose(x, 2, filter_size=3, padding="full")
        with pytest.raises(ValueError, match=r"output_size of Op\(ConvTransposeOp\) should be less than infered "
                                             r"size \+ stride"):
            L.conv2d_transpose(x, 2, output_size=[13, 13], filter_size=3, stride=2)
        with pytest.raises(ValueError, match="One of out_shape and scale must not be None."):
            L.resize_bilinear(x)
        with pytest.raises(ValueError, match="align_mode can only be 0 or 1"):
            L.image_resize(x, [3, 3], align_mode=2)
        with pytest.raises(ValueError, match="The 'resample' of image_resize can only be"):
            L.image_resize(x, [3, 3], resample="BICUBIC")


# --- metric layers -----------------------------------------------------------------------------------------
def _pair_auc(scores, labels):
    pos, neg = scores[labels > 0], scores[labels == 0]
    return ((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def test_auc_keeps_global_and_sliding_batch_statistics_across_runs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        prob = fluid.data("prob", [None, 2])
        label = fluid.data("label", [None, 1], "int64")
        global_auc, batch_auc, stats = L.auc(prob, label, num_thresholds=9999, slide_steps=2)
    assert [tuple(s.shape) for s in stats] == [(30001,), (30001,), (1, 10000), (1, 10000)]
    assert all(s.persistable for s in stats)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    batches = []
    for k in range(4):
        p1 = rng.uniform(0, 1, 32)
        y = (rng.uniform(0, 1, 32) < p1).astype("int64")  # informative scores
        batches.append((p1, y))
        g, b = exe.run(main, feed={"prob": np.stack([1 - p1, p1], 1).astype("float32"), "label": y[:, None]},
                       fetch_list=[global_auc, batch_auc])
        seen = batches[: k + 1]
        window = batches[max(0, k - 1): k + 1]
        np.testing.assert_allclose(g, [_pair_auc(*map(np.concatenate, zip(*seen)))], atol=2e-3)
        np.testing.assert_allclose(b, [_pair_auc(*map(np.concatenate, zip(*window)))], atol=2e-3)
    assert g.dtype == np.float64
    pos = fluid.global_scope().find_var(stats[2].name).get_tensor()
    assert int(np.asarray(pos).sum()) == sum(int(y.sum()) for _, y in batches)


def test_mean_iou_layer():
    def build():
        p, t = fluid.data("p", [None, 4], "int32"), fluid.data("t", [None, 4], "int32")
        return list(L.mean_iou(p, t, 3))
    p = np.array([[0, 1, 1, 2], [2, 2, 0, 0]], "int32")
    t = np.array([[0, 1, 2, 2], [2, 1, 0, 1]], "int32")
    iou, wrong, correct = run(build, {"p": p, "t": t})
    np.testing.assert_array_equal(correct, [2, 1, 2])
    np.testing.assert_array_equal(wrong, [1, 3, 2])
    np.testing.assert_allclose(iou, [(2 / 3 + 1 / 4 + 2 / 4) / 3], rtol=1e-6)


def test_auc_refuses_probabilities_outside_0_1():
    def build():
        return list(L.auc(fluid.data("prob", [None, 2]), fluid.data("label", [None, 1], "int64"))[:2])
    with pytest.raises(Exception, match="The predict data must less or equal 1."):
        run(build, {"prob": np.array([[0.0, 1.5]], "float32"), "label": np.array([[1]], "int64")})


def test_comparison_operators_on_variables_append_compare_ops():
    x = np.array([[0.0, 1.0, 0.6]], "float32")

    def build():
        v = fluid.data("v", [None, 3])
        w = L.scale(v, 2.0)
        assert (v == w) is False and v == v  # between Variables: identity, as the graph code needs
        return [v > 0.5, v >= 1.0, v < w, w <= v, v == 0.0, v != 1.0]  # with a number: fluid's ops
    got = run(build, {"v": x})
    expected = [x > 0.5, x >= 1.0, x < 2 * x, 2 * x <= x, x == 0.0, x != 1.0]
    for g, e in zip(got, expected):
        assert g.dtype == np.bool_
        np.testing.assert_array_equal(g, e)
