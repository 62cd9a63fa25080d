"""fluid.dygraph's learning-rate decays: each rate against its closed form, as an optimizer steps them,
current_step_lr, the optimizer's state dict, and the fluid.layers decays in dygraph mode."""
import math

import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Layer, Linear, Sequential, to_variable

D = fluid.dygraph


def _closed(name, n):
    """The closed forms, written out from the decays' definitions, at step ``n``."""
    forms = {
        "piecewise": lambda: [1.0, 0.5, 0.1][(n >= 3) + (n >= 6)],
        "natural_exp": lambda: 0.1 * math.exp(-0.5 * n / 4),
        "natural_exp_stair": lambda: 0.1 * math.exp(-0.5 * (n // 4)),
        "exponential": lambda: 0.1 * 0.5 ** (n / 4),
        "exponential_stair": lambda: 0.1 * 0.5 ** (n // 4),
        "inverse_time": lambda: 0.1 / (1 + 0.5 * n / 4),
        "polynomial": lambda: (0.1 - 0.01) * (1 - min(n, 5) / 5) ** 2 + 0.01,
        "polynomial_cycle": lambda: (0.1 - 0.01) * (1 - n / (5 * max(math.ceil(n / 5), 1))) ** 2 + 0.01,
        "cosine": lambda: 0.1 * 0.5 * (math.cos(math.floor(n / 3) * math.pi / 4) + 1),
        "noam": lambda: 2.0 * 64 ** -0.5 * min(n ** -0.5, n * 4 ** -1.5),
    }
    return forms[name]()


def _decays():
    return {
        "piecewise": (D.PiecewiseDecay([3, 6], [1.0, 0.5, 0.1], 0), 0),
        "natural_exp": (D.NaturalExpDecay(0.1, 4, 0.5), 0),
        "natural_exp_stair": (D.NaturalExpDecay(0.1, 4, 0.5, staircase=True), 0),
        "exponential": (D.ExponentialDecay(0.1, 4, 0.5), 0),
        "exponential_stair": (D.ExponentialDecay(0.1, 4, 0.5, staircase=True), 0),
        "inverse_time": (D.InverseTimeDecay(0.1, 4, 0.5), 0),
        "polynomial": (D.PolynomialDecay(0.1, 5, 0.01, power=2.0), 0),
        "polynomial_cycle": (D.PolynomialDecay(0.1, 5, 0.01, power=2.0, cycle=True), 0),
        "cosine": (D.CosineDecay(0.1, 3, 4), 0),
        "noam": (D.NoamDecay(64, 4, learning_rate=2.0), 1),
    }


STEP_DECAYS = ["piecewise", "natural_exp", "natural_exp_stair", "exponential", "exponential_stair", "inverse_time",
               "polynomial", "polynomial_cycle", "cosine", "noam"]


@pytest.mark.parametrize("name", STEP_DECAYS)
def test_step_decay_calls_follow_the_closed_form(name):
    with fluid.dygraph.guard():
        decay, first = _decays()[name]
        assert decay.step_num == first
        got = [float(decay().numpy()[0]) for _ in range(14)]
        np.testing.assert_allclose(got, [_closed(name, first + n) for n in range(14)], rtol=1e-6)
        assert decay.step_num == first + 14


def test_begin_and_step_size_move_the_step():
    with fluid.dygraph.guard():
        decay = D.ExponentialDecay(0.1, 4, 0.5, begin=3, step=2, dtype="float64")
        rates = [decay() for _ in range(4)]
        assert rates[0].dtype == "float64"
        np.testing.assert_allclose([r.numpy()[0] for r in rates], [0.1 * 0.5 ** (n / 4) for n in (3, 5, 7, 9)],
                                   rtol=1e-12)


class _Probe(Layer):
    """``loss = sum(w * x)``: its gradient is ``x``, so one SGD update moves ``w`` by ``lr * x`` exactly."""

    def __init__(self):
        super().__init__()
        self.w = self.create_parameter([3], default_initializer=fluid.initializer.Constant(1.0))

    def forward(self, x):
        return fluid.layers.reduce_sum(self.w * x)


def _rates_used(optimizer, probe, updates):
    x = np.array([1.0, 2.0, 4.0], "float32")
    rates, reported = [], []
    for _ in range(updates):
        before = probe.w.numpy().copy()
        loss = probe(to_variable(x))
        loss.backward()
        optimizer.minimize(loss)
        probe.clear_gradients()
        rates.append(float(np.mean((before - probe.w.numpy()) / x)))
        reported.append(optimizer.current_step_lr())
    return rates, reported


@pytest.mark.parametrize("name", ["piecewise", "exponential_stair", "polynomial", "cosine", "noam"])
def test_each_minimize_uses_the_next_step_of_the_decay(name):
    with fluid.dygraph.guard():
        decay, first = _decays()[name]
        probe = _Probe()
        sgd = fluid.optimizer.SGD(decay, parameter_list=probe.parameters())
        assert sgd.current_step_lr() == pytest.approx(_closed(name, first))  # before any update: the first rate
        rates, reported = _rates_used(sgd, probe, 8)
        expected = [_closed(name, first + n) for n in range(8)]
        np.testing.assert_allclose(rates, expected, rtol=1e-5)
        np.testing.assert_allclose(reported, expected, rtol=1e-6)  # the rate the last update used


def test_epoch_decays_change_only_on_epoch():
    with fluid.dygraph.guard():
        probe = _Probe()
        scheduler = D.StepDecay(0.5, step_size=2, decay_rate=0.2)
        adam = fluid.optimizer.SGD(scheduler, parameter_list=probe.parameters())
        seen = []
        for epoch in range(6):
            rates, reported = _rates_used(adam, probe, 2)
            assert rates == pytest.approx([rates[0]] * 2) and reported[-1] == pytest.approx(rates[0])
            seen.append(rates[0])
            scheduler.epoch()
            assert adam.current_step_lr() == pytest.approx(rates[0])  # still the last update's rate
        np.testing.assert_allclose(seen, [0.5 * 0.2 ** (e // 2) for e in range(6)], rtol=1e-6)
        scheduler.epoch(1)
        assert scheduler.epoch_num == 1 and float(scheduler().numpy()[0]) == pytest.approx(0.5)


def test_multi_step_and_lambda_decays():
    with fluid.dygraph.guard():
        multi = D.MultiStepDecay(0.5, [2, 4, 8], 0.2)
        lam = D.LambdaDecay(0.5, lambda e: 0.95 ** e)
        got_multi, got_lam = [], []
        for _ in range(10):
            got_multi.append(float(multi().numpy()[0]))
            got_lam.append(float(lam().numpy()[0]))
            multi.epoch()
            lam.epoch()
        np.testing.assert_allclose(got_multi, [0.5 * 0.2 ** sum(e >= m for m in (2, 4, 8)) for e in range(10)],
                                   rtol=1e-6)
        np.testing.assert_allclose(got_lam, [0.5 * 0.95 ** e for e in range(10)], rtol=1e-6)
        with pytest.raises(ValueError, match="must be incremented"):
            D.MultiStepDecay(0.5, [3, 2])
        with pytest.raises(ValueError, match="decay_rate should be < 1.0"):
            D.StepDecay(0.5, 2, 1.5)
        with pytest.raises(TypeError, match="'step_size' must be 'int'"):
            D.StepDecay(0.5, "2")
        with pytest.raises(TypeError, match="'learning_rate' must be 'float, int'"):
            D.LambdaDecay("0.5", abs)
        with pytest.raises(ValueError, match="Invalid learning rate: -1"):
            D.StepDecay(-1, 2)
        with pytest.raises(TypeError, match="'lr_lambda' in 'LambdaDecay' must be 'function'"):
            D.LambdaDecay(0.5, 3)


def _plateau_expected(losses, lr, factor, patience, cooldown, mode, threshold, threshold_mode):
    best, bad, cool, out = None, 0, 0, []
    for loss in losses:
        if cool > 0:
            cool -= 1
        else:
            margin = (best or 0) * threshold if threshold_mode == "rel" else threshold
            better = best is None or (loss < best - margin if mode == "min" else loss > best + margin)
            best, bad = (loss, 0) if better else (best, bad + 1)
            if bad > patience:
                cool, bad, lr = cooldown, 0, lr * factor
        out.append(lr)
    return out


@pytest.mark.parametrize("mode,threshold_mode", [("min", "rel"), ("max", "abs")])
def test_reduce_lr_on_plateau(mode, threshold_mode):
    losses = [float(np.sin(k)) for k in range(1, 31)]
    with fluid.dygraph.guard():
        plateau = D.ReduceLROnPlateau(1.0, mode=mode, decay_rate=0.5, patience=2, cooldown=1, threshold=1e-4,
                                      threshold_mode=threshold_mode)
        probe = _Probe()
        sgd = fluid.optimizer.SGD(plateau, parameter_list=probe.parameters())
        got = []
        for loss in losses:
            _rates_used(sgd, probe, 1)  # updates do not move it
            plateau.step(to_variable(np.array([loss], "float32")))
            got.append(float(plateau().numpy()[0]))
        expected = _plateau_expected(losses, 1.0, 0.5, 2, 1, mode, 1e-4, threshold_mode)
        assert got == pytest.approx(expected) and min(expected) < 1.0
        assert _rates_used(sgd, probe, 1)[0] == pytest.approx([expected[-1]])
        with pytest.raises(AssertionError, match="loss.shape should be"):
            plateau.step(to_variable(np.ones([2], "float32")))
        with pytest.raises(ValueError, match="decay_rate should be < 1.0"):
            D.ReduceLROnPlateau(1.0, decay_rate=2.0)
        with pytest.raises(ValueError, match="threshold mode test is unknown"):
            D.ReduceLROnPlateau(1.0, threshold_mode="test")


def test_optimizer_state_dict_round_trips_the_decay(tmp_path):
    with fluid.dygraph.guard():
        probe = _Probe()
        step_decay = D.ExponentialDecay(0.1, 2, 0.5, staircase=True)
        epoch_decay = D.StepDecay(0.5, step_size=2)
        plateau = D.ReduceLROnPlateau(1.0, decay_rate=0.5, patience=0)
        opts = [fluid.optimizer.Adam(d, parameter_list=probe.parameters()) for d in (step_decay, epoch_decay,
                                                                                      plateau)]
        for k in range(5):
            for opt in opts:
                _rates_used(opt, probe, 1)
            epoch_decay.epoch()
            plateau.step(to_variable(np.array([1.0 + k], "float32")))
        fresh = [D.ExponentialDecay(0.1, 2, 0.5, staircase=True), D.StepDecay(0.5, step_size=2),
                 D.ReduceLROnPlateau(1.0, decay_rate=0.5, patience=0)]
        for k, (opt, decay) in enumerate(zip(opts, fresh)):
            state = opt.state_dict()
            assert ("global_step" in state) == (k == 0)
            path = str(tmp_path / f"opt{k}")
            fluid.dygraph.save_dygraph(state, path)
            _, loaded = fluid.dygraph.load_dygraph(path)
            restored = fluid.optimizer.Adam(decay, parameter_list=probe.parameters())
            restored.set_dict(loaded)
            assert decay.state_dict() == opt._learning_rate.state_dict()
        assert fresh[0].step_num == 5 and float(fresh[0]().numpy()[0]) == pytest.approx(0.1 * 0.5 ** 2)
        assert fresh[1].epoch_num == 5 and float(fresh[1]().numpy()[0]) == pytest.approx(0.5 * 0.1 ** 2)
        assert fresh[2].epoch_num == 5 and float(fresh[2]().numpy()[0]) == pytest.approx(0.5 ** 4)
        with pytest.raises(RuntimeError, match=r"Can't find \[ step_num \] in state_dict"):
            D.ExponentialDecay(0.1, 2, 0.5).set_dict({})
        with pytest.raises(KeyError, match="no 'LR_Scheduler' entry"):
            fluid.optimizer.SGD(D.ExponentialDecay(0.1, 2, 0.5), parameter_list=probe.parameters()).set_dict({})


def test_linear_warmup_then_an_inner_decay():
    with fluid.dygraph.guard():
        inner = fluid.layers.polynomial_decay(learning_rate=1.0, decay_steps=10, end_learning_rate=0.0, power=1.0)
        assert isinstance(inner, D.PolynomialDecay)  # fluid.layers' decays are the dygraph objects here
        warm = fluid.layers.linear_lr_warmup(inner, warmup_steps=3, start_lr=0.1, end_lr=1.0)
        got = [float(warm().numpy()[0]) for _ in range(6)]
        # warm-up steps 1, 2 (begin=1); the inner decay is called on every update, so it resumes at step 2
        np.testing.assert_allclose(got, [0.1 + 0.3 * 1, 0.1 + 0.3 * 2, 0.8, 0.7, 0.6, 0.5], rtol=1e-6)
        with pytest.raises(TypeError, match="should be \\[int, float or LearningRateDecay\\]"):
            D.LinearLrWarmup("fake", 2, 0.0, 1.0)
        with pytest.raises(AssertionError, match="end_lr 0.0 must be greater than start_lr 1.0"):
            D.LinearLrWarmup(0.1, 2, 1.0, 0.0)
        for layer_fn, cls in ((fluid.layers.noam_decay, D.NoamDecay), (fluid.layers.piecewise_decay, D.PiecewiseDecay),
                              (fluid.layers.cosine_decay, D.CosineDecay)):
            args = {D.NoamDecay: (64, 4), D.PiecewiseDecay: ([2], [0.1, 0.01]), D.CosineDecay: (0.1, 3, 4)}[cls]
            assert isinstance(layer_fn(*args), cls)


def test_decays_are_dygraph_only():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        fluid.layers.data("x", [3])
        with pytest.raises(TypeError, match="fluid.dygraph's decays work in dygraph mode"):
            fluid.optimizer.SGD(D.PiecewiseDecay([2], [0.1, 0.01], 0))
        assert isinstance(fluid.layers.piecewise_decay([2], [0.1, 0.01]), fluid.framework.Variable)


def test_sequential_model_with_piecewise_decay_learns():
    rng = np.random.RandomState(0)
    x = rng.rand(64, 4).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32") + 0.3).astype("float32")
    with fluid.dygraph.guard():
        model = Sequential(("hidden", Linear(4, 16, act="tanh")), ("out", Linear(16, 1)))
        decay = D.PiecewiseDecay([20, 40], [0.1, 0.05, 0.01], 0)
        opt = fluid.optimizer.Momentum(decay, momentum=0.9, parameter_list=model.parameters())
        losses = []
        for _ in range(60):
            loss = fluid.layers.reduce_mean(fluid.layers.square(model(to_variable(x)) - to_variable(y)))
            loss.backward()
            opt.minimize(loss)
            model.clear_gradients()
            losses.append(float(loss.numpy()[0]))
        assert opt.current_step_lr() == pytest.approx(0.01) and decay.step_num == 60
        assert losses[-1] < 0.1 * losses[0], losses[::10]
