"""fluid 1.8's other optimizers (optimizer/more.py) against numpy reimplementations of their update rules
(two steps on float64, as tests/numerics/test_optimizer.py), and the averaging wrappers (optimizer/average.py)
against averages of the parameters fetched after each step."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.initializer import NumpyArrayInitializer
from minifluid.ops.registry import get_op_spec

from . import test_optimizer
from .test_optimizer import B0, W0, X, _build, _check

LR = 0.125


def _zeros(*names):
    return lambda v: {n: np.zeros_like(v) for n in names}


def test_adamax():
    b1, b2, eps = 0.9, 0.999, 1e-8

    def update(p, g, s):
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["u"] = np.maximum(b2 * s["u"] + eps, np.abs(g))
        p = p - LR / (1 - s["b1p"]) * s["m"] / s["u"]
        s["b1p"] *= b1
        return p
    _check(fluid.optimizer.Adamax(learning_rate=LR), update,
           lambda v: {"m": np.zeros_like(v), "u": np.zeros_like(v), "b1p": b1})


def test_adadelta_ignores_the_learning_rate():
    rho, eps = 0.9, 1e-6

    def update(p, g, s):
        s["eg"] = rho * s["eg"] + (1 - rho) * g * g
        dx = -np.sqrt((s["edx"] + eps) / (s["eg"] + eps)) * g
        s["edx"] = rho * s["edx"] + (1 - rho) * dx * dx
        return p + dx
    main = _check(fluid.optimizer.Adadelta(learning_rate=123.0, rho=rho, epsilon=eps), update, _zeros("eg", "edx"))
    op = next(op for op in main.global_block().ops if op.type == "adadelta")
    assert "LearningRate" not in op.input_names


def test_decayed_adagrad():
    decay, eps = 0.8, 1e-6

    def update(p, g, s):
        s["m"] = decay * s["m"] + (1 - decay) * g * g
        return p - LR * g / (np.sqrt(s["m"]) + eps)
    _check(fluid.optimizer.DecayedAdagrad(learning_rate=LR, decay=decay), update, _zeros("m"))


@pytest.mark.parametrize("lr_power", [-0.5, -0.25])
def test_ftrl_with_l1_and_l2(lr_power):
    l1, l2 = 0.05, 0.2

    def update(p, g, s):
        new = s["sq"] + g * g
        s["lin"] = s["lin"] + g - (new ** -lr_power - s["sq"] ** -lr_power) / LR * p
        shrunk = (l1 * np.sign(s["lin"]) - s["lin"]) / (new ** -lr_power / LR + 2 * l2)
        s["sq"] = new
        return np.where(np.abs(s["lin"]) > l1, shrunk, 0.0)
    _check(fluid.optimizer.Ftrl(learning_rate=LR, l1=l1, l2=l2, lr_power=lr_power), update, _zeros("sq", "lin"))


def test_lamb_with_a_parameter_excluded_from_weight_decay():
    b1, b2, eps, wd = 0.9, 0.999, 1e-6, 0.3

    def update(p, g, s):
        s["m1"] = b1 * s["m1"] + (1 - b1) * g
        s["m2"] = b2 * s["m2"] + (1 - b2) * g * g
        r = s["m1"] / (np.sqrt(s["m2"]) + eps) + (0.0 if p.ndim == 1 else wd) * p
        return p - LR * np.linalg.norm(p) / np.linalg.norm(r) * r
    _check(fluid.optimizer.Lamb(learning_rate=LR, lamb_weight_decay=wd,
                                exclude_from_weight_decay_fn=lambda param: param.name.endswith(".b_0")),
           update, _zeros("m1", "m2"))


def test_lars_momentum():
    mu, coeff, wd = 0.9, 0.01, 0.001

    def update(p, g, s):
        local = LR * coeff * np.linalg.norm(p) / (np.linalg.norm(g) + wd * np.linalg.norm(p))
        s["v"] = mu * s["v"] + local * (g + wd * p)
        return p - s["v"]
    _check(fluid.optimizer.LarsMomentum(learning_rate=LR, momentum=mu, lars_coeff=coeff, lars_weight_decay=wd),
           update, _zeros("v"))


@pytest.mark.parametrize("clip", [1e-3, 1e3])  # the gradient clipped, and not
def test_dpsgd_clips_the_gradient_and_adds_the_seeded_noise(clip):
    sigma, batch = 0.5, 4.0
    noise = np.random.RandomState(7).normal(0.0, 1.0) * sigma  # a seeded op draws the same value each step

    def update(p, g, s):
        norm = np.linalg.norm(g)
        return p - LR * (g / (norm / clip if norm > clip else 1.0) + noise / batch)
    opt = fluid.optimizer.Dpsgd(learning_rate=LR, clip=clip, batch_size=batch, sigma=sigma)
    opt._seed = 7
    _check(opt, update, lambda v: None)


def test_new_optimizers_reject_a_missing_hyperparameter_by_name():
    with pytest.raises(ValueError, match="AdamaxOptimizer: beta1 is not set"):
        fluid.optimizer.Adamax(beta1=None)
    with pytest.raises(TypeError, match="FtrlOptimizer: l1 must be a float, got str"):
        fluid.optimizer.Ftrl(0.1, l1="0.1")
    with pytest.raises(ValueError, match="learning_rate is not set"):
        fluid.optimizer.Adadelta(None)


@pytest.mark.parametrize("op_type, extra", [
    ("adamax", ("Moment", "InfNorm", "Beta1Pow")), ("decayed_adagrad", ("Moment",)),
    ("lars_momentum", ("Velocity",)), ("adadelta", ("AvgSquaredGrad", "AvgSquaredUpdate")),
])
def test_more_update_kernels_allocate_nothing_after_the_first_step(op_type, extra):
    assert get_op_spec(op_type).inputs  # registered
    test_optimizer.test_update_kernels_allocate_nothing_after_the_first_step(op_type, extra)


def test_adamax_in_dygraph_matches_the_static_graph():
    def run_static():
        main, startup, pairs = _build(fluid.optimizer.Adamax(learning_rate=LR))
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        for _ in range(3):
            w, = exe.run(main, feed={"x": X}, fetch_list=[pairs[0][0]] if pairs[0][0].name.endswith("w_0")
                         else [pairs[1][0]])
        return w

    with fluid.dygraph.guard():
        fc = fluid.dygraph.Linear(4, 3, param_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(W0)),
                                  bias_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(B0)), dtype="float64")
        opt = fluid.optimizer.Adamax(learning_rate=LR, parameter_list=fc.parameters())
        for _ in range(3):
            loss = fluid.layers.mean(fluid.layers.square(fc(fluid.dygraph.to_variable(X))))
            loss.backward()
            opt.minimize(loss)
            fc.clear_gradients()
        eager_w = fc.weight.numpy()
    np.testing.assert_allclose(eager_w, run_static(), rtol=1e-10)


# --- averaging ---------------------------------------------------------------------------------------
def _train(make_wrapper, steps, optimizer=None):
    """SGD on the fc of test_optimizer; ``make_wrapper()`` is built after minimize. Returns the wrapper, the
    executor and the weights fetched after each step."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float64")
        y = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(W0)),
                            bias_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(B0), do_model_average=False))
        loss = fluid.layers.mean(fluid.layers.square(y))
        opt = optimizer or fluid.optimizer.SGD(learning_rate=LR)
        opt.minimize(loss)
        wrapper = make_wrapper()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    weights = [exe.run(main, feed={"x": X}, fetch_list=["fc_0.w_0"])[0].copy() for _ in range(steps)]
    return wrapper, exe, weights


def _weight():
    return fluid.global_scope().find_var("fc_0.w_0").get_tensor().__array__().copy()


@pytest.mark.parametrize("windows, steps, averaged", [
    ((10000, 10000), 4, slice(0, 4)),  # a window never full: the mean of every step's weights
    ((2, 2), 5, slice(2, 5)),  # full after steps 2 and 4: the last full window (3, 4) and step 5
])
def test_model_average_applies_the_window_mean_and_restores(windows, steps, averaged):
    avg, exe, weights = _train(lambda: fluid.optimizer.ModelAverage(0.5, *windows), steps)
    assert [p.name for p, _ in avg.params_grads] == ["fc_0.w_0"]  # the bias has do_model_average=False
    with avg.apply(exe):
        np.testing.assert_allclose(_weight(), np.mean(weights[averaged], axis=0), rtol=1e-12)
    np.testing.assert_allclose(_weight(), weights[-1], rtol=0, atol=0)
    with avg.apply(exe, need_restore=False):
        pass
    np.testing.assert_allclose(_weight(), np.mean(weights[averaged], axis=0), rtol=1e-12)
    avg.restore(exe)
    np.testing.assert_allclose(_weight(), weights[-1], rtol=0, atol=0)


def test_model_average_checks_its_windows():
    with pytest.raises(ValueError, match=r"min_average_window \(5\) shouldn't be larger than max_average_window"):
        fluid.optimizer.ModelAverage(0.1, min_average_window=5, max_average_window=4)


@pytest.mark.parametrize("thres", [False, True])
def test_exponential_moving_average_is_bias_corrected_and_leaves_the_averages_alone(thres):
    def make():
        step = fluid.layers.autoincreased_step_counter("@TEST_STEP@", begin=1) if thres else None
        ema = fluid.optimizer.ExponentialMovingAverage(0.75, thres_steps=step)
        ema.update()
        return ema
    ema, exe, weights = _train(make, 3)
    decays = [min(0.75, (t + 1) / (t + 10)) if thres else 0.75 for t in (1, 2, 3)]
    avg = np.zeros_like(W0)
    for d, w in zip(decays, weights):
        avg = d * avg + (1 - d) * w
    expected = avg / (1 - decays[-1] ** 3)
    for _ in range(2):  # applying twice gives the same (fluid 1.8 divided the averages themselves each time)
        with ema.apply(exe):
            np.testing.assert_allclose(_weight(), expected, rtol=1e-6)  # the decay is a float32 variable
        np.testing.assert_array_equal(_weight(), weights[-1])


def test_lookahead_syncs_slow_and_fast_weights_every_k_steps():
    k, alpha = 3, 0.25
    wrapped = fluid.optimizer.LookaheadOptimizer(fluid.optimizer.SGD(learning_rate=LR), alpha=alpha, k=k)
    _, _, weights = _train(lambda: None, 7, optimizer=wrapped)
    fast, slow = [W0.copy(), B0.copy()], [W0.copy(), B0.copy()]
    for step, got in enumerate(weights, 1):
        d = 2 * (X @ fast[0] + fast[1]) / (X.shape[0] * 3)
        fast = [fast[0] - LR * X.T @ d, fast[1] - LR * d.sum(0)]
        if step % k == 0:
            slow = [alpha * f + (1 - alpha) * s for f, s in zip(fast, slow)]
            fast = [s.copy() for s in slow]
        np.testing.assert_allclose(got, fast[0], rtol=1e-10, err_msg=f"step {step}")


def test_dgc_momentum_needs_cuda_and_static_mode_as_in_fluid():
    if not fluid.is_compiled_with_cuda():
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            fluid.optimizer.DGCMomentumOptimizer(0.1, 0.9, rampup_begin_step=0)
    with fluid.dygraph.guard():
        with pytest.raises(Exception, match="In dygraph, don't support DGCMomentumOptimizer"):
            fluid.optimizer.DGCMomentumOptimizer(0.1, 0.9, rampup_begin_step=0)


def test_pipeline_optimizer_trains_as_the_optimizer_it_wraps():
    def train(pipelined):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data("x", [None, 4], "float64")
            hidden = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(W0)),
                                     bias_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(B0)))
            loss = fluid.layers.mean(fluid.layers.square(hidden))
            opt = fluid.optimizer.SGD(learning_rate=0.25)
            if pipelined:
                opt = fluid.optimizer.PipelineOptimizer(opt, cut_list=[[hidden], [loss]],
                                                        place_list=[fluid.CPUPlace()] * 3, concurrency_list=[1, 1, 2])
            opt.minimize(loss)
        exe = fluid.Executor(fluid.CPUPlace())
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            losses = [exe.run(main, feed={"x": X}, fetch_list=[loss])[0] for _ in range(3)]
        return main, losses
    main, piped = train(True)
    _, plain = train(False)
    np.testing.assert_array_equal(np.array(piped), np.array(plain))
    assert main._pipeline_opt["concurrency_list"] == [1, 1, 2]
    with pytest.raises(ValueError, match="one entry per section"):
        fluid.optimizer.PipelineOptimizer(fluid.optimizer.SGD(0.1), cut_list=[[main.global_block().var("x")]] * 2,
                                          place_list=[fluid.CPUPlace()])
    with pytest.raises(ValueError, match="instance of Optimizer"):
        fluid.optimizer.PipelineOptimizer("sgd")
    sgd = fluid.optimizer.SGD(0.1)
    with fluid.dygraph.guard():
        with pytest.raises(Exception, match="In dygraph, don't support PipelineOptimizer"):
            fluid.optimizer.PipelineOptimizer(sgd)
