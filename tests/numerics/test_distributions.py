"""fluid.layers.distributions through Program + Executor: entropies, log-probabilities and KL divergences
against closed forms computed here in numpy, sample moments within bounds derived from the number of draws,
shapes for every kind of parameter, the program's seed, gradients reaching parameters, and the argument
errors."""
import inspect
import math

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
D = fluid.layers.distributions
E = inspect.Parameter.empty
Z = 5.0  # a sample mean may stray this many of its standard errors (a chance of about 6e-7 per check)


def run(build, feed=None, seed=0):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = seed
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return fetch, exe.run(main, feed=feed or {}, fetch_list=fetch)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_names_and_signatures_are_fluids():
    assert L.Uniform is D.Uniform and L.Normal is D.Normal and L.Categorical is D.Categorical
    assert L.MultivariateNormalDiag is D.MultivariateNormalDiag
    assert sorted(D.__all__) == ["Categorical", "MultivariateNormalDiag", "Normal", "Uniform"]
    assert _signature(D.Uniform) == [("low", E), ("high", E)]
    assert _signature(D.Normal) == [("loc", E), ("scale", E)]
    assert _signature(D.Categorical) == [("logits", E)]
    assert _signature(D.MultivariateNormalDiag) == [("loc", E), ("scale", E)]
    assert _signature(D.Uniform.sample) == _signature(D.Normal.sample) == [("self", E), ("shape", E), ("seed", 0)]
    with pytest.raises(NotImplementedError):
        D.Uniform(0.0, 1.0).kl_divergence(D.Uniform(0.0, 2.0))


def normal_logpdf(x, mu, sigma):
    return -((x - mu) ** 2) / (2 * sigma ** 2) - np.log(sigma) - 0.5 * np.log(2 * np.pi)


@pytest.mark.filterwarnings("ignore:divide by zero")  # log(0) = -inf outside [low, high), as in fluid
def test_uniform_closed_forms_and_sample_moments():
    low, high = np.array([0.0, -1.0, 2.0], "float32"), np.array([1.0, 3.0, 2.5], "float32")
    value = np.array([0.5, 3.5, 2.1], "float32")
    n = 4000

    def build():
        u = D.Uniform(low, high)
        return [u.sample([n]), u.entropy(), u.log_prob(fluid.data("v", [3])), D.Uniform(1.0, 4.0).sample([2, 3])]
    outs, (s, ent, lp, scalar) = run(build, {"v": value}, seed=7)
    assert s.shape == (n, 3) and s.dtype == np.float32 and scalar.shape == (2, 3) and list(outs[3].shape) == [2, 3]
    assert (s >= low).all() and (s < high).all() and ((scalar >= 1) & (scalar < 4)).all()
    width = (high - low).astype(np.float64)
    assert np.all(np.abs(s.mean(0) - (low + high) / 2) < Z * width / math.sqrt(12 * n))
    np.testing.assert_allclose(ent, np.log(width), rtol=1e-6)
    inside = (value > low) & (value < high)
    np.testing.assert_allclose(lp, np.where(inside, -np.log(width), -np.inf), rtol=1e-6)


def test_normal_closed_forms_and_sample_moments():
    mu, sigma = np.array([[0.0, 1.0], [-2.0, 0.5]], "float32"), np.array([[1.0, 2.0], [0.5, 3.0]], "float32")
    mu2, sigma2 = np.array([[0.5, 0.0], [1.0, 1.5]], "float32"), np.array([[2.0, 1.0], [1.5, 0.7]], "float32")
    value = np.array([[0.3, -1.0], [2.0, 0.0]], "float32")
    n = 5000

    def build():
        a, b = D.Normal(mu, sigma), D.Normal(mu2, sigma2)
        return [a.sample([n]), a.entropy(), a.log_prob(fluid.data("v", [2, 2])), a.kl_divergence(b),
                D.Normal(0.0, 2.0).sample([3])]
    _, (s, ent, lp, kl, scalar) = run(build, {"v": value}, seed=3)
    assert s.shape == (n, 2, 2) and scalar.shape == (3,)
    assert np.all(np.abs(s.mean(0) - mu) < Z * sigma / math.sqrt(n))
    assert np.all(np.abs(s.var(0) / sigma ** 2 - 1) < Z * math.sqrt(2 / n))
    np.testing.assert_allclose(ent, 0.5 * np.log(2 * np.pi * np.e * sigma.astype(np.float64) ** 2), rtol=1e-5)
    np.testing.assert_allclose(lp, normal_logpdf(value, mu, sigma), rtol=1e-5)
    s1, s2 = sigma.astype(np.float64), sigma2.astype(np.float64)
    want = np.log(s2 / s1) + (s1 ** 2 + (mu - mu2) ** 2) / (2 * s2 ** 2) - 0.5
    np.testing.assert_allclose(kl, want, rtol=1e-5, atol=1e-6)


def test_variable_parameters_with_a_runtime_batch_draw_per_row():
    loc = np.array([[0.0, 10.0], [-5.0, 2.0], [3.0, 3.0]], "float32")
    scale = np.array([[1.0, 0.5], [2.0, 0.1], [0.3, 4.0]], "float32")
    n = 3000

    def build():
        a, b = fluid.data("loc", [None, 2]), fluid.data("scale", [None, 2])
        return [D.Normal(a, b).sample([n]), D.Uniform(a, a + b).sample([n]), D.Normal(a, b).entropy()]
    outs, (ns, us, ent) = run(build, {"loc": loc, "scale": scale}, seed=11)
    assert [list(o.shape) for o in outs] == [[n, -1, 2], [n, -1, 2], [-1, 2]]
    assert ns.shape == us.shape == (n, 3, 2)
    assert np.all(np.abs(ns.mean(0) - loc) < Z * scale / math.sqrt(n))
    assert np.all(np.abs(ns.std(0) / scale - 1) < Z * math.sqrt(0.5 / n))
    assert (us >= loc).all() and (us < loc + scale).all()
    assert np.all(np.abs(us.mean(0) - (loc + scale / 2)) < Z * scale / math.sqrt(12 * n))
    np.testing.assert_allclose(ent, 0.5 * np.log(2 * np.pi * np.e * scale.astype(np.float64) ** 2), rtol=1e-5)


def test_categorical_closed_forms_and_sample_frequencies():
    logits = np.array([[0.1, 0.2, 0.7], [1.0, -2.0, 3.0]], "float32")
    other = np.array([[0.3, 0.2, 0.1], [0.0, 0.0, 0.0]], "float32")
    n = 4000

    def build():
        a, b = D.Categorical(logits), D.Categorical(other)
        return [a.entropy(), a.kl_divergence(b), a.sample([n]), a.log_prob(fluid.data("ids", [2, 1], "int64"))]
    _, (ent, kl, s, lp) = run(build, {"ids": np.array([[2], [1]])}, seed=5)
    p = np.exp(logits - logits.max(1, keepdims=True)).astype(np.float64)
    p /= p.sum(1, keepdims=True)
    q = np.exp(other.astype(np.float64))
    q /= q.sum(1, keepdims=True)
    np.testing.assert_allclose(ent, -(p * np.log(p)).sum(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(kl, (p * np.log(p / q)).sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(lp, np.log([[p[0, 2]], [p[1, 1]]]), rtol=1e-5)
    assert s.shape == (n, 2) and s.dtype == np.int64
    freq = np.stack([(s == k).mean(0) for k in range(3)], axis=1)
    assert np.all(np.abs(freq - p) < Z * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_multivariate_normal_diag_closed_forms_and_samples():
    mu, cov = np.array([0.3, 0.5, -1.0], "float32"), np.diag([0.4, 0.5, 2.0]).astype("float32")
    mu2, cov2 = np.array([0.2, 0.4, 0.0], "float32"), np.diag([0.3, 0.4, 1.0]).astype("float32")
    value = np.array([0.1, 0.9, -2.0], "float32")
    n = 5000

    def build():
        a, b = D.MultivariateNormalDiag(mu, cov), D.MultivariateNormalDiag(mu2, cov2)
        return [a.entropy(), a.kl_divergence(b), a.sample([n]), a.log_prob(fluid.data("v", [3]))]
    _, (ent, kl, s, lp) = run(build, {"v": value}, seed=9)
    c1, c2 = cov.astype(np.float64), cov2.astype(np.float64)
    np.testing.assert_allclose(ent, [0.5 * np.log(np.linalg.det(2 * np.pi * np.e * c1))], rtol=1e-5)
    d = mu2 - mu
    inv2 = np.linalg.inv(c2)
    want = 0.5 * (np.trace(inv2 @ c1) + d @ inv2 @ d - 3 + np.log(np.linalg.det(c2) / np.linalg.det(c1)))
    np.testing.assert_allclose(kl, [want], rtol=1e-5)
    r = value - mu
    want_lp = -0.5 * (r @ np.linalg.inv(c1) @ r) - 0.5 * np.log(np.linalg.det(2 * np.pi * c1))
    np.testing.assert_allclose(lp, [want_lp], rtol=1e-5)
    std = np.sqrt(np.diag(c1))
    assert s.shape == (n, 3)
    assert np.all(np.abs(s.mean(0) - mu) < Z * std / math.sqrt(n))
    assert np.all(np.abs(s.var(0) / std ** 2 - 1) < Z * math.sqrt(2 / n))


def test_program_seed_and_sample_seed_make_draws_repeat():
    def draws(program_seed, sample_seed=0):
        _, (s,) = run(lambda: [D.Normal([0.0, 1.0], [1.0, 1.0]).sample([4], seed=sample_seed)], seed=program_seed)
        return s
    np.testing.assert_array_equal(draws(5), draws(5))
    np.testing.assert_array_equal(draws(0, 17), draws(3, 17))
    assert not np.array_equal(draws(5), draws(6))


def test_fitting_a_normal_by_maximum_likelihood_moves_its_parameters_to_the_data():
    data = np.random.RandomState(0).normal(2.0, 0.5, size=(256, 1)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1])
        loc = L.create_parameter([1], "float32", default_initializer=fluid.initializer.Constant(0.0))
        log_scale = L.create_parameter([1], "float32", default_initializer=fluid.initializer.Constant(0.0))
        loss = L.reduce_mean(-1.0 * D.Normal(loc, L.exp(log_scale)).log_prob(x))
        fluid.optimizer.Adam(0.05).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    losses = [float(exe.run(main, feed={"x": data}, fetch_list=[loss])[0]) for _ in range(300)]
    got_loc, got_log_scale = (np.array(fluid.global_scope().find_var(p.name).get_tensor()) for p in (loc, log_scale))
    assert losses[-1] < losses[0] - 1.0
    np.testing.assert_allclose(got_loc, data.mean(), atol=0.02)
    np.testing.assert_allclose(np.exp(got_log_scale), data.std(), atol=0.02)


def test_argument_errors_name_the_argument():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="'low' in Uniform"):
            D.Uniform(1, 2.0)
        with pytest.raises(ValueError, match="all arguments should be Variable"):
            D.Normal(fluid.data("a", [1]), 1.0)
        with pytest.raises(TypeError, match="'value' in log_prob"):
            D.Normal(0.0, 1.0).log_prob(fluid.data("i", [1], "int32"))
        with pytest.raises(TypeError, match="'other' in kl_divergence"):
            D.Normal(0.0, 1.0).kl_divergence(D.Uniform(0.0, 1.0))
        with pytest.raises(TypeError, match="'logits' in Categorical"):
            D.Categorical(1.0)
        with pytest.raises(TypeError, match="'shape' in sample"):
            D.Uniform(0.0, 1.0).sample((2,))
        with pytest.raises(TypeError, match="'seed' in sample"):
            D.Normal(0.0, 1.0).sample([2], seed=1.5)
        with pytest.warns(UserWarning, match="convert to float32"):
            D.Normal(np.zeros(2), np.ones(2))
