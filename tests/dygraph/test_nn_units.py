"""fluid.dygraph's GRUUnit, NCE, BilinearTensorProduct and 1.8 losses against numpy references."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import to_variable

D = fluid.dygraph


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gru_reference(x, h, w, b, origin_mode):
    """fluid's gru_unit: the weight's memory holds the [D, 2D] gate weights, then the [D, D] candidate ones."""
    d = h.shape[1]
    w_gate, w_cand = w.reshape(-1)[:2 * d * d].reshape(d, 2 * d), w.reshape(-1)[2 * d * d:].reshape(d, d)
    g = x + b
    ur = _sigmoid(g[:, :2 * d] + h @ w_gate)
    u, r = ur[:, :d], ur[:, d:]
    c = np.tanh(g[:, 2 * d:] + (r * h) @ w_cand)
    new = u * h + (1 - u) * c if origin_mode else (1 - u) * h + u * c
    return new, r * h, np.concatenate([u, r, c], axis=1)


@pytest.mark.parametrize("origin_mode", [False, True])
def test_gru_unit_matches_the_gru_equations(origin_mode):
    rng = np.random.RandomState(1)
    x, h = rng.randn(4, 9).astype("float32"), rng.randn(4, 3).astype("float32")
    with fluid.dygraph.guard():
        gru = D.GRUUnit(9, bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-1, 1)),
                        origin_mode=origin_mode)
        assert gru.weight.shape == [3, 9] and gru.bias.shape == [1, 9]
        hidden = to_variable(h)
        hidden.stop_gradient = False
        new, reset, gate = gru(to_variable(x), hidden)
        want = _gru_reference(x, h, gru.weight.numpy(), gru.bias.numpy(), origin_mode)
        for got, ref in zip((new, reset, gate), want):
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)
        fluid.layers.reduce_sum(new).backward()
        assert gru.weight.gradient().shape == (3, 9) and np.abs(hidden.gradient()).sum() > 0
        with pytest.raises(ValueError, match="activation must be one of"):
            D.GRUUnit(9, activation="gelu")


def test_bilinear_tensor_product():
    rng = np.random.RandomState(2)
    x, y = rng.randn(5, 3).astype("float32"), rng.randn(5, 4).astype("float32")
    with fluid.dygraph.guard():
        btp = D.BilinearTensorProduct(3, 4, 2, act="tanh",
                                      bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5)))
        w = btp.weight.numpy()
        assert w.shape == (2, 3, 4) and btp.bias.shape == [1, 2]
        np.testing.assert_allclose(btp(to_variable(x), to_variable(y)).numpy(),
                                   np.tanh(np.einsum("ni,kij,nj->nk", x, w, y) + 0.5), rtol=1e-5, atol=1e-6)
        plain = D.BilinearTensorProduct(3, 4, 2, bias_attr=False)
        assert plain.bias is None and [n for n, _ in plain.named_parameters()] == ["weight"]
        np.testing.assert_allclose(plain(to_variable(x), to_variable(y)).numpy(),
                                   np.einsum("ni,kij,nj->nk", x, plain.weight.numpy(), y), rtol=1e-5, atol=1e-6)


def test_nce_with_all_noise_on_one_class():
    """custom_dist puts all noise on class 2, so every negative is class 2 with q = 1 and b = k * q = k; the true
    class is 2 as well: cost = (-log(o / (o + k)) + k * -log(k / (o + k))) / (k + 1), o = sigmoid(x . w2 + bias2)."""
    rng = np.random.RandomState(3)
    x = rng.randn(4, 5).astype("float32")
    label = np.full((4, 1), 2, "int64")
    k = 3
    with fluid.dygraph.guard():
        nce = D.NCE(4, 5, num_neg_samples=k, sampler="custom_dist", custom_dist=[0.0, 0.0, 1.0, 0.0],
                    bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.25)))
        assert nce.weight.shape == [4, 5] and nce.bias.shape == [4, 1]
        inp = to_variable(x)
        inp.stop_gradient = False
        cost = nce(inp, to_variable(label))
        o = _sigmoid(x @ nce.weight.numpy()[2] + 0.25)
        want = (-np.log(o / (o + k)) - k * np.log(k / (o + k))) / (k + 1)
        np.testing.assert_allclose(cost.numpy().reshape(-1), want, rtol=1e-5)
        fluid.layers.reduce_sum(cost).backward()
        assert np.abs(inp.gradient()).sum() > 0
        assert D.NCE(4, 5).bias is None  # fluid 1.8's dygraph NCE: a bias only when bias_attr asks
        with pytest.raises(ValueError, match="Unsupported sampler type 'gauss'"):
            D.NCE(4, 5, sampler="gauss")
        with pytest.raises(ValueError, match="one probability per class"):
            D.NCE(4, 5, sampler="custom_dist", custom_dist=[0.5, 0.5])


def test_nce_sample_weight_gives_its_first_values_to_the_rows():
    """As fluid's kernel: row i is weighted by the i-th value of SampleWeight, whatever its length (>= N)."""
    x, label = np.random.RandomState(4).randn(2, 5).astype("float32"), np.full((2, 1), 2, "int64")
    with fluid.dygraph.guard():
        nce = D.NCE(4, 5, num_neg_samples=2, sampler="custom_dist", custom_dist=[0.0, 0.0, 1.0, 0.0])
        plain = nce(to_variable(x), to_variable(label)).numpy()
        weights = to_variable(np.array([[2.0], [0.5], [9.0], [9.0]], "float32"))
        weighted = nce(to_variable(x), to_variable(label), sample_weight=weights).numpy()
        np.testing.assert_allclose(weighted, plain * [[2.0], [0.5]], rtol=1e-6)
        with pytest.raises(ValueError, match=r"Input\(SampleWeight\) has 1 values for 2 rows"):
            nce(to_variable(x), to_variable(label), sample_weight=to_variable(np.ones((1, 1), "float32")))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_l1_bce_losses(reduction):
    rng = np.random.RandomState(4)
    p = rng.uniform(0.05, 0.95, (3, 4)).astype("float32")
    y = rng.randint(0, 2, (3, 4)).astype("float32")
    w = rng.rand(4).astype("float32")
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction]
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    with fluid.dygraph.guard():
        got = [D.MSELoss(reduction)(to_variable(p), to_variable(y)), D.L1Loss(reduction)(to_variable(p), to_variable(y)),
               D.BCELoss(reduction=reduction)(to_variable(p), to_variable(y)),
               D.BCELoss(to_variable(w), reduction)(to_variable(p), to_variable(y))]
        for loss, ref in zip(got, [(p - y) ** 2, np.abs(p - y), bce, bce * w]):
            np.testing.assert_allclose(loss.numpy(), np.asarray(reduce(ref)).reshape(loss.shape), rtol=1e-5)
            assert loss.shape == ([1] if reduction != "none" else [3, 4])
    with pytest.raises(ValueError, match="'reduction' in MSELoss should be 'sum', 'mean' or 'none'"):
        D.MSELoss("avg")
    with pytest.raises(ValueError, match="The weight is not a Variable"), fluid.dygraph.guard():
        D.BCELoss(w)(to_variable(p), to_variable(y))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_weights_ignore_index_and_extra_axes(reduction):
    rng = np.random.RandomState(5)
    logp = np.log(rng.dirichlet(np.ones(4), size=(2, 3))).transpose(0, 2, 1).astype("float32")  # [N=2, C=4, 3]
    label = np.array([[0, 3, 1], [2, 1, 1]], "int64")
    weight = np.array([1.0, 2.0, 0.5, 3.0], "float32")
    picked = np.take_along_axis(logp, label[:, None, :], axis=1)[:, 0, :]
    kept = (label != 1).astype("float32")
    per = -picked * weight[label] * kept
    want = {"mean": per.sum() / (weight[label] * kept).sum(), "sum": per.sum(), "none": per}[reduction]
    with fluid.dygraph.guard():
        x = to_variable(logp)
        x.stop_gradient = False
        loss = D.NLLLoss(to_variable(weight), reduction, ignore_index=1)(x, to_variable(label))
        np.testing.assert_allclose(loss.numpy(), np.asarray(want).reshape(loss.shape), rtol=1e-5)
        assert loss.shape == ([2, 3] if reduction == "none" else [1])
        fluid.layers.reduce_sum(loss).backward()
        assert np.all(x.gradient()[:, 1, :][label == 1] == 0)  # an ignored label gets no gradient
        two_d = D.NLLLoss()(to_variable(logp[:, :, 0]), to_variable(label[:, 0]))
        np.testing.assert_allclose(two_d.numpy(), [-np.mean(logp[[0, 1], label[:, 0], 0])], rtol=1e-5)
        with pytest.raises(ValueError, match="'reduction' in nll_loss"):
            D.NLLLoss(reduction="avg")(x, to_variable(label))


def test_losses_build_static_graphs_too():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3], "float32")
        y = fluid.data("y", [None, 3], "float32")
        loss = D.MSELoss()(x, y)
        exe = fluid.Executor(fluid.CPUPlace())
        a, b = np.ones((2, 3), "float32"), np.zeros((2, 3), "float32")
        out, = exe.run(feed={"x": a * 3, "y": b}, fetch_list=[loss])
        np.testing.assert_allclose(out, [9.0])
