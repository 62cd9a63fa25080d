"""fluid.layers.hsigmoid, nce and sampled_softmax_with_cross_entropy through the Executor: parameters, shapes,
training, the layers' argument errors (kernels and gradients: tests/ops/sampled_loss_cases.py)."""
import numpy as np
import pytest

import minifluid as fluid

from .sampled_loss_cases import hsigmoid_ref


def _programs():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    return main, startup


def _train(main, startup, loss, feed, steps=30):
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe, scope, [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]) for _ in range(steps)]


def test_hsigmoid_default_tree_matches_the_reference_and_trains():
    main, startup = _programs()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 5])
        label = fluid.data("label", [None, 1], dtype="int64")
        cost = fluid.layers.hsigmoid(x, label, num_classes=6)
        loss = fluid.layers.mean(cost)
        fluid.optimizer.SGD(0.5).minimize(loss)
    assert cost.shape == (-1, 1)
    params = {p.name: p.shape for p in main.global_block().all_parameters()}
    assert params == {"hierarchical_sigmoid_0.w_0": (5, 5), "hierarchical_sigmoid_0.b_0": (5, 1)}
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((8, 5)).astype("float32"), "label": rng.integers(0, 6, (8, 1))}
    exe, scope, losses = _train(main, startup, loss, feed, steps=1)
    w, b = (np.array(scope.find_var(f"hierarchical_sigmoid_0.{n}").get_tensor()) for n in ("w_0", "b_0"))
    test = main.clone(for_test=True)
    got, = exe.run(test, feed=feed, fetch_list=[cost], scope=scope)
    expected, _ = hsigmoid_ref(feed["x"].astype("float64"), w, feed["label"], 6, b)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    losses += [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]


def test_hsigmoid_custom_tree_without_bias():
    main, startup = _programs()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        table = fluid.data("table", [None, 2], dtype="int64")
        code = fluid.data("code", [None, 2], dtype="int64")
        cost = fluid.layers.hsigmoid(x, label, num_classes=4, path_table=table, path_code=code, is_custom=True,
                                     bias_attr=False)
        loss = fluid.layers.mean(cost)
        fluid.optimizer.SGD(0.5).minimize(loss)
    assert [p.name for p in main.global_block().all_parameters()] == ["hierarchical_sigmoid_0.w_0"]
    assert main.global_block().var("hierarchical_sigmoid_0.w_0").shape == (4, 3)
    feed = {"x": np.eye(3, dtype="float32")[[0, 1, 2, 0]], "label": np.zeros((4, 1), "int64"),
            "table": np.array([[0, 1], [2, -1], [3, 0], [1, -1]]), "code": np.array([[1, 0], [1, 0], [0, 1], [0, 0]])}
    _, _, losses = _train(main, startup, loss, feed)
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("kwargs, message", [
    ({"num_classes": 1}, "num_classes must not be less than 2 with default tree"),
    ({"num_classes": 4, "path_table": "t"}, "only num_classes should be passed without custom tree"),
    ({"num_classes": 4, "is_custom": True, "path_table": "t"}, "path_code should not be None with custom tree"),
    ({"num_classes": 4, "is_custom": True, "path_code": "c"}, "path_table should not be None with custom tree"),
])
def test_hsigmoid_argument_errors(kwargs, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        with pytest.raises(ValueError, match=message):
            fluid.layers.hsigmoid(x, label, **kwargs)
        with pytest.raises(TypeError, match=r"The data type of 'label' in hsigmoid must be \['int64'\]"):
            fluid.layers.hsigmoid(x, fluid.data("l32", [None, 1], dtype="int32"), 4)


def test_hsigmoid_label_out_of_range_is_named():
    main, startup = _programs()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        cost = fluid.layers.hsigmoid(x, label, num_classes=4)
    exe = fluid.Executor()
    exe.run(startup)
    with pytest.raises(ValueError, match=r"Input\(Label\) holds 4, out of range \[0, num_classes=4\)"):
        exe.run(main, feed={"x": np.ones((2, 3), "float32"), "label": np.array([[1], [4]])}, fetch_list=[cost])


def test_hsigmoid_reads_the_first_n_labels_of_a_wider_label():
    """A [N, k] Label gives sample i the i-th value read flat, as fluid's kernel does; too few is an error."""
    main, startup = _programs()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 2], dtype="int64")
        cost = fluid.layers.hsigmoid(x, label, num_classes=4)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.arange(6, dtype="float32").reshape(2, 3) / 6, "label": np.array([[3, 1], [2, 0]])}
    got, = exe.run(main, feed=feed, fetch_list=[cost], scope=scope)
    w, b = (np.array(scope.find_var(f"hierarchical_sigmoid_0.{n}").get_tensor()) for n in ("w_0", "b_0"))
    expected, _ = hsigmoid_ref(feed["x"].astype("float64"), w, np.array([[3], [1]]), 4, b)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"Input\(Label\) has 2 values, fewer than the 3 rows of Input\(X\)"):
        exe.run(main, feed={"x": np.ones((3, 3), "float32"), "label": np.array([[1, 2]])}, fetch_list=[cost],
                scope=scope)


def _op_outputs(main, op_type, *slots):
    op = next(op for op in main.global_block().ops if op.type == op_type)
    return [op.output(s)[0] for s in slots]


def _nce_program(sampler="uniform", seed=0, custom_dist=None, classes=8, negs=4, random_seed=7):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = random_seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        cost = fluid.layers.nce(x, label, classes, num_neg_samples=negs, sampler=sampler, custom_dist=custom_dist,
                                seed=seed)
        loss = fluid.layers.mean(cost)
    return main, startup, x, label, cost, loss


def _nce_numpy(x, labels, w, b, samples, noise_prob, negs):
    """The per-sample cost from the drawn classes, as fluid defines it (divided by negs + 1 by the layer)."""
    logits = np.einsum("nkd,nd->nk", w[samples], x) + b[samples, 0]
    o = 1 / (1 + np.exp(-logits))
    q = noise_prob(samples) * negs
    cost = np.where(np.arange(samples.shape[1]) < labels.shape[1], -np.log(o / (o + q)), -np.log(q / (o + q)))
    return cost.sum(axis=1, keepdims=True) / (negs + 1)


@pytest.mark.parametrize("sampler, noise_prob", [
    ("uniform", lambda s: np.full(s.shape, 1 / 8)),
    ("log_uniform", lambda s: np.log((s + 2) / (s + 1)) / np.log(8)),
])
def test_nce_cost_matches_numpy_on_the_drawn_classes(sampler, noise_prob):
    main, startup, x, label, cost, _ = _nce_program(sampler)
    assert cost.shape == (-1, 1)
    sample_labels, sample_logits = _op_outputs(main, "nce", "SampleLabels", "SampleLogits")
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(2)
    feed = {"x": rng.standard_normal((5, 3)).astype("float32"), "label": rng.integers(0, 8, (5, 1))}
    got, samples, o = exe.run(main, feed=feed, fetch_list=[cost, sample_labels, sample_logits], scope=scope)
    assert samples.shape == (5, 5) and samples.dtype == np.int64 and o.shape == (5, 5)
    np.testing.assert_array_equal(samples[:, :1], feed["label"])
    assert ((samples >= 0) & (samples < 8)).all()
    w, b = (np.array(scope.find_var(f"nce_0.{n}").get_tensor()) for n in ("w_0", "b_0"))
    expected = _nce_numpy(feed["x"].astype("float64"), feed["label"], w, b, samples, noise_prob, 4)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _draws(main, startup, runs, feed):
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    samples, = _op_outputs(main, "nce", "SampleLabels")
    return [exe.run(main, feed=feed, fetch_list=[samples], scope=scope)[0][:, 1:] for _ in range(runs)]


def test_nce_draws_follow_the_program_seed_and_a_fixed_op_seed_repeats():
    feed = {"x": np.ones((6, 3), "float32"), "label": np.zeros((6, 1), "int64")}
    first = _draws(*_nce_program()[:2], 2, feed)
    again = _draws(*_nce_program()[:2], 2, feed)
    other = _draws(*_nce_program(random_seed=8)[:2], 1, feed)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)  # the same program seed: the same classes, run after run
    assert not np.array_equal(first[0], first[1])  # the program's generator advances between runs
    assert not np.array_equal(first[0], other[0])
    fixed = _draws(*_nce_program(seed=5)[:2], 2, feed)
    np.testing.assert_array_equal(fixed[0], fixed[1])  # an op seed draws the same classes every run, as in fluid


@pytest.mark.parametrize("sampler, dist", [
    ("custom_dist", [0.05, 0.3, 0.0, 0.15, 0.1, 0.2, 0.12, 0.08]),
    ("log_uniform", None),
    ("uniform", None),
])
def test_nce_samplers_draw_their_distribution(sampler, dist):
    main, startup = _nce_program(sampler, custom_dist=dist, negs=50)[:2]
    feed = {"x": np.ones((400, 3), "float32"), "label": np.zeros((400, 1), "int64")}
    drawn, = _draws(main, startup, 1, feed)
    freq = np.bincount(drawn.reshape(-1), minlength=8) / drawn.size
    k = np.arange(8)
    # log_uniform over range = 7 (fluid's num_total_classes - 1) draws 0..6 only
    expected = {"custom_dist": np.array(dist or [0]), "log_uniform": np.log((k + 2) / (k + 1)) / np.log(8) * (k < 7),
                "uniform": np.full(8, 1 / 8)}[sampler]
    np.testing.assert_allclose(freq, expected, atol=0.01)  # 20,000 draws: a standard error under 0.004
    if sampler == "custom_dist":
        assert freq[2] == 0


def test_nce_trains_the_true_classes_to_the_top():
    main, startup, x, label, cost, loss = _nce_program(negs=3)
    with fluid.program_guard(main, startup):
        fluid.optimizer.SGD(1.0).minimize(loss)
    feed = {"x": np.eye(3, dtype="float32")[[0, 1, 2] * 4]}
    feed["label"] = np.argmax(feed["x"], axis=1).reshape(-1, 1).astype("int64") * 2 + 1
    _, scope, losses = _train(main, startup, loss, feed, steps=60)
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])
    w, b = (np.array(scope.find_var(f"nce_0.{n}").get_tensor()) for n in ("w_0", "b_0"))
    scores = feed["x"] @ w.T + b[:, 0]
    np.testing.assert_array_equal(scores.argmax(axis=1), feed["label"][:, 0])


@pytest.mark.parametrize("kwargs, error, message", [
    ({"sampler": "gaussian"}, ValueError, "Unsupported sampler type 'gaussian'"),
    ({"sampler": "custom_dist"}, ValueError, r"sampler 'custom_dist' needs custom_dist, one probability per class "
                                             r"\(8\), got None"),
    ({"sampler": "custom_dist", "custom_dist": [0.5, 0.5]}, ValueError, r"per class \(8\), got 2"),
])
def test_nce_argument_errors(kwargs, error, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        with pytest.raises(error, match=message):
            fluid.layers.nce(x, label, 8, **kwargs)
        with pytest.raises(TypeError, match=r"The data type of 'label' in nce must be \['int64'\]"):
            fluid.layers.nce(x, fluid.data("l32", [None, 1], dtype="int32"), 8)


def _sampled_softmax_program(num_samples=4, classes=10, **kwargs):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        logits = fluid.layers.fc(x, classes)
        loss = fluid.layers.sampled_softmax_with_cross_entropy(logits, label, num_samples, **kwargs)
        avg = fluid.layers.mean(loss)
    return main, startup, logits, loss, avg


def test_sampled_softmax_matches_numpy_on_the_drawn_classes():
    main, startup, logits, loss, _ = _sampled_softmax_program()
    samples, probs = _op_outputs(main, "sample_logits", "Samples", "Probabilities")
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(6)
    feed = {"x": rng.standard_normal((6, 3)).astype("float32"), "label": rng.integers(0, 10, (6, 1))}
    lv, got, s, p = exe.run(main, feed=feed, fetch_list=[logits, loss, samples, probs], scope=scope)
    assert got.shape == (6, 1) and s.shape == p.shape == (6, 5)
    np.testing.assert_array_equal(s[:, 0], feed["label"][:, 0])
    assert (s[:, 1:] == s[0, 1:]).all() and len(set(s[0, 1:])) == 4  # distinct classes shared by the batch
    q = np.log((s + 2.0) / (s + 1.0)) / np.log(11)  # log-uniform over 10 classes
    tries = np.log1p(-p) / np.log1p(-q)  # the probability of a hit in that many tries
    assert np.allclose(tries, tries[0, 0], rtol=1e-4) and tries[0, 0] >= 4 - 1e-4
    z = np.take_along_axis(lv.astype("float64"), s, axis=1) - np.log(p)
    z[:, 1:] -= 1e20 * (s[:, 1:] == s[:, :1])
    expected = -(z[:, :1] - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True)) - z.max(1, keepdims=True))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_sampled_softmax_trains():
    main, startup, _, _, avg = _sampled_softmax_program(num_samples=3, classes=6)
    with fluid.program_guard(main, startup):
        fluid.optimizer.SGD(0.5).minimize(avg)
    x = np.eye(3, dtype="float32")[[0, 1, 2, 0, 1, 2]]
    _, _, losses = _train(main, startup, avg, {"x": x, "label": np.array([[0], [2], [4], [0], [2], [4]])}, steps=40)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def test_sampled_softmax_with_customized_samples_uses_them():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        logits = fluid.data("logits", [None, 5])
        label = fluid.data("label", [None, 1], dtype="int64")
        samples = fluid.data("samples", [None, 3], dtype="int64")
        probs = fluid.data("probs", [None, 3])
        loss = fluid.layers.sampled_softmax_with_cross_entropy(logits, label, 2, use_customized_samples=True,
                                                               customized_samples=samples,
                                                               customized_probabilities=probs)
    lv = np.arange(10, dtype="float32").reshape(2, 5) / 10
    s, p = np.array([[1, 0, 3], [4, 3, 2]]), np.full((2, 3), 0.5, "float32")
    got, = fluid.Executor().run(main, feed={"logits": lv, "label": s[:, :1], "samples": s, "probs": p},
                                fetch_list=[loss])
    z = np.take_along_axis(lv, s, 1) - np.log(0.5)
    np.testing.assert_allclose(got[:, 0], np.log(np.exp(z).sum(1)) - z[:, 0], rtol=1e-5)
