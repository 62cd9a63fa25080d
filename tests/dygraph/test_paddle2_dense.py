"""paddle 2.x names beyond the seed programs: paddle.optimizer.lr, paddle.metric.Accuracy, more paddle.nn layers
and functions, and the paddle.* tensor functions (values against numpy; gradients come from the ops, checked in
tests/ops)."""
import math

import numpy as np
import pytest

rng = np.random.RandomState(3)


def t(paddle, a, **kw):
    return paddle.to_tensor(np.asarray(a), **kw)


# --- paddle.optimizer.lr ----------------------------------------------------------------------------------------
def _trace(sched, n):
    values = []
    for _ in range(n):
        values.append(sched())
        sched.step()
    return values


def test_lr_schedulers_follow_paddle_2_formulas(paddle):
    lr = paddle.optimizer.lr
    assert _trace(lr.StepDecay(1.0, step_size=2, gamma=0.5), 5) == [1.0, 1.0, 0.5, 0.5, 0.25]
    assert _trace(lr.MultiStepDecay(1.0, [1, 3], gamma=0.1), 4) == pytest.approx([1.0, 0.1, 0.1, 0.01])
    assert _trace(lr.PiecewiseDecay([2, 4], [0.3, 0.2, 0.1]), 6) == [0.3, 0.3, 0.2, 0.2, 0.1, 0.1]
    assert _trace(lr.ExponentialDecay(2.0, 0.5), 3) == [2.0, 1.0, 0.5]
    assert _trace(lr.NaturalExpDecay(1.0, 0.5), 2) == pytest.approx([1.0, math.exp(-0.5)])
    assert _trace(lr.InverseTimeDecay(1.0, 0.5), 3) == pytest.approx([1.0, 1 / 1.5, 0.5])
    assert _trace(lr.PolynomialDecay(1.0, 4, end_lr=0.0, power=1.0), 6) == pytest.approx([1, .75, .5, .25, 0, 0])
    assert _trace(lr.LinearWarmup(0.5, 4, 0.0, 0.5), 6) == pytest.approx([0, .125, .25, .375, .5, .5])
    warm = _trace(lr.LinearWarmup(lr.StepDecay(1.0, 1, 0.5), 2, 0.0, 1.0), 5)
    assert warm == pytest.approx([0.0, 0.5, 1.0, 0.5, 0.25])
    assert _trace(lr.LambdaDecay(2.0, lambda e: 0.9 ** e), 3) == pytest.approx([2.0, 1.8, 1.62])
    noam = _trace(lr.NoamDecay(64, 4), 3)
    assert noam == pytest.approx([64 ** -0.5 * 0, 64 ** -0.5 * 4 ** -1.5, 64 ** -0.5 * 2 * 4 ** -1.5])


def test_cosine_annealing_recursive_steps_match_the_closed_form(paddle):
    sched = paddle.optimizer.lr.CosineAnnealingDecay(1.0, T_max=5, eta_min=0.1)
    got = _trace(sched, 6)
    closed = [0.1 + 0.9 * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(6)]
    assert got == pytest.approx(closed)
    sched.step(3)
    assert sched() == pytest.approx(closed[3])


def test_reduce_on_plateau_waits_patience_then_cuts_and_cools_down(paddle):
    sched = paddle.optimizer.lr.ReduceOnPlateau(1.0, factor=0.5, patience=1, cooldown=1)
    rates = []
    for loss in [5.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]:
        sched.step(t(paddle, [loss], dtype="float32"))
        rates.append(sched())
    assert rates == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25]
    with pytest.raises(ValueError, match="mode: up is unknown!"):
        paddle.optimizer.lr.ReduceOnPlateau(1.0, mode="up")


def test_lr_scheduler_errors_and_state(paddle):
    lr = paddle.optimizer.lr
    with pytest.raises(TypeError, match="The type of 'step_size' must be 'int'"):
        lr.StepDecay(0.1, 2.5)
    with pytest.raises(ValueError, match="gamma should be < 1.0."):
        lr.StepDecay(0.1, 2, gamma=1.5)
    sched = lr.StepDecay(1.0, 1, 0.5)
    sched.step()
    state = sched.state_dict()
    other = lr.StepDecay(1.0, 1, 0.5)
    other.set_state_dict(state)
    assert other() == sched() == 0.5 and other.last_epoch == 1


def test_optimizers_read_their_scheduler_at_each_update(paddle):
    sched = paddle.optimizer.lr.PiecewiseDecay([1], [0.5, 0.05])
    layer = paddle.nn.Linear(2, 1, bias_attr=False)
    opt = paddle.optimizer.Momentum(learning_rate=sched, momentum=0.0, parameters=layer.parameters())
    x = t(paddle, np.ones((3, 2), "float32"))
    steps = []
    for _ in range(2):
        before = layer.weight.numpy().copy()
        paddle.mean(layer(x)).backward()
        assert opt.get_lr() == sched()
        opt.step()
        opt.clear_grad()
        steps.append(float((before - layer.weight.numpy())[0, 0]))
        sched.step()
    assert steps == pytest.approx([0.5, 0.05], rel=1e-5)  # the gradient of the mean is 1 per weight


# --- paddle.metric ---------------------------------------------------------------------------------------------
def test_accuracy_metric_compute_update_accumulate_reset(paddle):
    m = paddle.metric.Accuracy(topk=(1, 2))
    assert m.name() == ["acc_top1", "acc_top2"]
    pred = t(paddle, [[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype="float32")
    label = t(paddle, [[2], [0], [1], [1]], dtype="int64")
    correct = m.compute(pred, label)
    np.testing.assert_array_equal(correct.numpy(), [[0, 1], [1, 0], [0, 1], [0, 0]])
    assert m.update(correct) == [0.25, 0.75]
    m.update(np.array([[1, 0], [1, 0]], "float32"))  # a second batch: 2 of 2 at top-1
    assert m.accumulate() == [3 / 6, 5 / 6]
    m.reset()
    assert m.accumulate() == [0.0, 0.0]
    single = paddle.metric.Accuracy()
    assert single.name() == ["acc"]
    single.update(single.compute(pred, t(paddle, [1, 0, 2, 0], dtype="int64")))
    single.update(single.compute(pred, t(paddle, np.eye(3)[[0, 0, 0, 0]], dtype="float32")))  # one-hot labels
    assert single.accumulate() == pytest.approx(6 / 8)


# --- paddle.nn layers and functions ------------------------------------------------------------------------------
def test_activation_layers_and_functions(paddle):
    import paddle.nn.functional as F
    nn = paddle.nn
    x = rng.uniform(-3, 3, (4, 5)).astype("float32")
    xt = t(paddle, x)
    cases = [(nn.LeakyReLU(0.1), np.where(x > 0, x, 0.1 * x)), (nn.ELU(0.5), np.where(x > 0, x, 0.5 * np.expm1(x))),
             (nn.ReLU6(), np.clip(x, 0, 6)), (nn.Hardswish(), x * np.clip(x + 3, 0, 6) / 6),
             (nn.Hardsigmoid(), np.clip(x / 6 + 0.5, 0, 1)), (nn.Softplus(beta=2), np.log1p(np.exp(2 * x)) / 2),
             (nn.LogSoftmax(), x - np.log(np.exp(x).sum(1, keepdims=True))), (nn.Tanhshrink(), x - np.tanh(x)),
             (nn.SELU(), 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
             (nn.GELU(approximate=True), 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))))]
    for layer, expected in cases:
        np.testing.assert_allclose(layer(xt).numpy(), expected, rtol=1e-5, atol=1e-6, err_msg=type(layer).__name__)
    np.testing.assert_allclose(F.normalize(xt).numpy(), x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(F.one_hot(t(paddle, [2, 0]), 3).numpy(), np.eye(3)[[2, 0]])


def test_losses(paddle):
    nn = paddle.nn
    logit = rng.randn(6, 1).astype("float32")
    y = rng.randint(0, 2, (6, 1)).astype("float32")
    p = 1 / (1 + np.exp(-logit))
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    np.testing.assert_allclose(nn.BCEWithLogitsLoss()(t(paddle, logit), t(paddle, y)).numpy(), [bce.mean()], rtol=1e-5)
    np.testing.assert_allclose(nn.BCELoss(reduction="sum")(t(paddle, p), t(paddle, y)).numpy(), [bce.sum()], rtol=1e-5)
    np.testing.assert_allclose(nn.L1Loss()(t(paddle, p), t(paddle, y)).numpy(), [np.abs(p - y).mean()], rtol=1e-5)
    r = np.abs(p - y)
    huber = np.where(r <= 0.5, 0.5 * r * r, 0.5 * (r - 0.25))
    np.testing.assert_allclose(nn.SmoothL1Loss(delta=0.5)(t(paddle, p), t(paddle, y)).numpy(), [huber.mean()],
                               rtol=1e-5)
    logp = np.log(np.full((4, 3), 1 / 3, "float32")) + rng.randn(4, 3).astype("float32") * 0.1
    label = np.array([0, 2, -100, 1])
    nll = -logp[[0, 1, 3], label[[0, 1, 3]]].mean()
    np.testing.assert_allclose(nn.NLLLoss()(t(paddle, logp), t(paddle, label)).numpy(), [nll], rtol=1e-5)


def test_parameter_layers(paddle):
    nn = paddle.nn
    emb = nn.Embedding(6, 3, padding_idx=0)
    ids = np.array([[0, 2], [5, 2]])
    out = emb(t(paddle, ids)).numpy()
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out[0, 0], 0)
    np.testing.assert_allclose(out[1, 1], emb.weight.numpy()[2])
    x = rng.randn(8, 4).astype("float32")
    bn = nn.BatchNorm1D(4)
    np.testing.assert_allclose(bn(t(paddle, x)).numpy(), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4,
                               atol=1e-5)
    ln = nn.LayerNorm(4)
    np.testing.assert_allclose(ln(t(paddle, x)).numpy(), (x - x.mean(1, keepdims=True)) /
                               np.sqrt(x.var(1, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-5)
    assert [tuple(p.shape) for p in ln.parameters()] == [(4,), (4,)]
    up = nn.Conv2DTranspose(3, 2, 3, stride=2, padding=1, output_padding=1)
    assert up(t(paddle, rng.randn(2, 3, 4, 4).astype("float32"))).shape == [2, 2, 8, 8]
    assert tuple(up.weight.shape) == (3, 2, 3, 3)
    pool = nn.AdaptiveAvgPool2D(2)
    img = rng.randn(1, 2, 4, 4).astype("float32")
    np.testing.assert_allclose(pool(t(paddle, img)).numpy(), img.reshape(1, 2, 2, 2, 2, 2).mean((3, 5)), rtol=1e-5)
    drop = nn.Dropout2D(0.5)
    kept = drop(t(paddle, np.ones((8, 16, 2, 2), "float32"))).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and (kept == kept[:, :, :1, :1]).all()  # whole channels
    drop.eval()
    np.testing.assert_array_equal(drop(t(paddle, np.ones((1, 2, 1, 1), "float32"))).numpy(), 1.0)


def test_a_small_conv_net_with_2x_layers_trains(paddle):
    nn = paddle.nn

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2D(1, 4, 3, padding=1), nn.BatchNorm2D(4), nn.LeakyReLU(0.1),
                                      nn.Conv2DTranspose(4, 2, 2, stride=2), nn.AdaptiveAvgPool2D(1), nn.Flatten(),
                                      nn.Linear(2, 3))

        def forward(self, x):
            return self.body(x)
    net = Net()
    sched = paddle.optimizer.lr.CosineAnnealingDecay(0.1, T_max=20)
    opt = paddle.optimizer.Adam(learning_rate=sched, parameters=net.parameters())
    x = t(paddle, rng.randn(16, 1, 4, 4).astype("float32"))
    y = t(paddle, rng.randint(0, 3, (16, 1)).astype("int64"))
    acc = paddle.metric.Accuracy()
    losses = []
    for _ in range(20):
        logits = net(x)
        loss = paddle.nn.functional.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        sched.step()
        losses.append(float(loss))
        acc.update(acc.compute(logits, y))
    assert losses[-1] < losses[0] and 0 <= acc.accumulate() <= 1


# --- paddle.* tensor functions ------------------------------------------------------------------------------------
def test_tensor_functions_match_numpy(paddle):
    a = rng.randn(3, 4).astype("float32")
    x = t(paddle, a)
    checks = [
        (paddle.zeros([2, 3]), np.zeros((2, 3))), (paddle.ones([2], "int64"), np.ones(2)),
        (paddle.full([2], 1.5), [1.5, 1.5]), (paddle.ones_like(x), np.ones_like(a)),
        (paddle.arange(1, 7, 2), [1, 3, 5]), (paddle.linspace(0, 1, 3), [0, 0.5, 1]), (paddle.eye(2), np.eye(2)),
        (paddle.concat([x, x], axis=0), np.concatenate([a, a])), (paddle.stack([x, x], axis=1), np.stack([a, a], 1)),
        (paddle.transpose(x, [1, 0]), a.T), (paddle.flatten(paddle.unsqueeze(x, 0)), a.ravel()),
        (paddle.tile(x, [2, 1]), np.tile(a, (2, 1))), (paddle.expand(paddle.ones([1, 4]), [3, 4]), np.ones((3, 4))),
        (paddle.argmax(x, axis=1), a.argmax(1)), (paddle.argmin(x), [a.argmin()]), (paddle.sort(x), np.sort(a, 1)),
        (paddle.argsort(x, descending=True), np.argsort(-a, 1)), (paddle.sum(x, axis=1), a.sum(1)),
        (paddle.max(x, axis=0, keepdim=True), a.max(0, keepdims=True)), (paddle.min(x), [a.min()]),
        (paddle.matmul(x, x, transpose_y=True), a @ a.T), (paddle.clip(x, -0.5, 0.5), np.clip(a, -0.5, 0.5)),
        (paddle.multiply(x, x), a * a), (paddle.maximum(x, paddle.zeros_like(x)), np.maximum(a, 0)),
        (paddle.pow(paddle.abs(x), 2), a * a), (paddle.gather(x, t(paddle, [2, 0])), a[[2, 0]]),
        (paddle.where(paddle.greater_than(x, paddle.zeros_like(x)), x, paddle.zeros_like(x)), np.maximum(a, 0)),
        (paddle.cast(x, "int32"), a.astype("int32")), (paddle.numel(x), [12]), (paddle.shape(x), [3, 4]),
    ]
    for k, (got, expected) in enumerate(checks):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6, err_msg=f"check {k}")
    values, indices = paddle.topk(x, 2)
    np.testing.assert_allclose(values.numpy(), -np.sort(-a, 1)[:, :2], rtol=1e-6)
    assert [p.shape for p in paddle.split(x, 2, axis=1)] == [[3, 2], [3, 2]]
    r = paddle.randint(0, 3, [100])
    assert r.numpy().dtype == np.int64 and set(np.unique(r.numpy())) <= {0, 1, 2}
    assert paddle.rand([2, 2]).numpy().dtype == np.float32


def test_ordering_operators_on_eager_tensors(paddle):
    a = np.array([0.0, 1.0, 2.0], "float32")
    x = t(paddle, a)
    np.testing.assert_array_equal((x > 1).numpy(), a > 1)
    np.testing.assert_array_equal((x <= 1.0).numpy(), a <= 1)
    np.testing.assert_array_equal((x < x * 2).numpy(), a < 2 * a)
    np.testing.assert_array_equal((x >= x).numpy(), [True, True, True])


def test_fluid_1_8_dygraph_layers():
    import minifluid as fluid
    with fluid.dygraph.guard():
        emb = fluid.dygraph.Embedding([10, 4], padding_idx=-1)
        out = emb(fluid.dygraph.to_variable(np.array([[9, 3]], "int64")))
        assert out.shape == [1, 2, 4] and not out.numpy()[0, 0].any()
        ln = fluid.dygraph.LayerNorm([3, 4], shift=False, act="relu")
        x = rng.randn(2, 3, 4).astype("float32")
        flat = x.reshape(2, -1)
        expected = np.maximum((flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5), 0)
        np.testing.assert_allclose(ln(fluid.dygraph.to_variable(x)).numpy().reshape(2, -1), expected, rtol=1e-4,
                                   atol=1e-5)
        assert ln.bias is None and tuple(ln.weight.shape) == (12,)
        prelu = fluid.dygraph.PRelu("element", input_shape=[-1, 3, 2])
        assert tuple(prelu.weight.shape) == (1, 3, 2)
        np.testing.assert_allclose(prelu(fluid.dygraph.to_variable(-np.ones((2, 3, 2), "float32"))).numpy(), -1.0)
        with pytest.raises(AssertionError, match="channel argument is required when mode is 'channel'."):
            fluid.dygraph.PRelu("channel")
        up = fluid.dygraph.Conv2DTranspose(3, 4, 3, stride=2, padding=1, act="tanh")
        y = up(fluid.dygraph.to_variable(rng.randn(2, 3, 5, 5).astype("float32")))
        assert y.shape == [2, 4, 9, 9] and np.abs(y.numpy()).max() <= 1
        fluid.layers.mean(y).backward()
        assert up.weight.gradient().shape == (3, 4, 3, 3) and up.bias.gradient().shape == (4,)
