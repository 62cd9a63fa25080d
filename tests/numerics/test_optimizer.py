"""Optimizers, regularizers and gradient clipping against numpy reimplementations (two steps).

Learning rates are powers of two: fluid keeps the learning rate in a float32 variable, and these
are exact there, so float64 parameters can be compared to 1e-12.
"""
import tracemalloc

import numpy as np
import pytest

import minifluid as fluid
from minifluid.initializer import NumpyArrayInitializer
from minifluid.ops.registry import OpRole, get_op_spec

rng = np.random.RandomState(3)
W0 = rng.randn(4, 3)
B0 = rng.randn(3)
X = rng.randn(5, 4)


def _build(optimizer, loss_kind="square", w_attr=None):
    """fc(4 -> 3) on float64 data, initialised to W0/B0; returns (main, startup, w, b, pairs)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float64")
        w_attr = w_attr or fluid.ParamAttr(initializer=NumpyArrayInitializer(W0))
        y = fluid.layers.fc(x, 3, param_attr=w_attr, bias_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(B0)))
        if loss_kind == "square":
            y = fluid.layers.square(y)
        loss = fluid.layers.mean(y)
        _, pairs = optimizer.minimize(loss)
    return main, startup, pairs


def _steps(main, startup, pairs, n=2):
    """Run n steps; per step the fetched raw gradients and the parameters after the update."""
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    fetch = [g for _, g in pairs] + [p for p, _ in pairs]
    out = []
    for _ in range(n):
        values = exe.run(main, feed={"x": X}, fetch_list=fetch)
        k = len(pairs)
        out.append((dict(zip([p.name for p, _ in pairs], values[:k])),
                    dict(zip([p.name for p, _ in pairs], values[k:]))))
    return out


def _raw_grads(w, b):
    """Gradients of mean((X @ w + b) ** 2)."""
    y = X @ w + b
    d = 2 * y / y.size
    return {"fc_0.w_0": X.T @ d, "fc_0.b_0": d.sum(0)}


def _check(optimizer, update, state_init):
    main, startup, pairs = _build(optimizer)
    steps = _steps(main, startup, pairs)
    params = {"fc_0.w_0": W0.copy(), "fc_0.b_0": B0.copy()}
    state = {name: state_init(v) for name, v in params.items()}
    for grads, after in steps:
        expected = _raw_grads(params["fc_0.w_0"], params["fc_0.b_0"])
        for name in params:
            np.testing.assert_allclose(grads[name], expected[name], rtol=1e-10)
            params[name] = update(params[name], grads[name], state[name])
            np.testing.assert_allclose(after[name], params[name], rtol=1e-10, atol=1e-14, err_msg=name)
    return main


def test_sgd():
    main = _check(fluid.optimizer.SGD(learning_rate=0.125), lambda p, g, s: p - 0.125 * g, lambda v: None)
    ops = [op for op in main.global_block().ops if op.type == "sgd"]
    assert len(ops) == 2 and all(op.attr("op_role") == OpRole.Optimize for op in ops)
    assert all(op.output("ParamOut") == op.input("Param") for op in ops)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(nesterov):
    def update(p, g, s):
        s["v"] = 0.9 * s["v"] + g
        return p - ((g + 0.9 * s["v"]) * 0.0625 if nesterov else 0.0625 * s["v"])
    _check(fluid.optimizer.Momentum(learning_rate=0.0625, momentum=0.9, use_nesterov=nesterov), update,
           lambda v: {"v": np.zeros_like(v)})


def test_adam():
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 2 ** -7

    def update(p, g, s):
        s["m1"] = b1 * s["m1"] + (1 - b1) * g
        s["m2"] = b2 * s["m2"] + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - s["b2p"]) / (1 - s["b1p"])
        p = p - lr_t * s["m1"] / (np.sqrt(s["m2"]) + eps)  # fluid 1.8: epsilon not scaled
        s["b1p"] *= b1
        s["b2p"] *= b2
        return p
    _check(fluid.optimizer.Adam(learning_rate=lr), update,
           lambda v: {"m1": np.zeros_like(v), "m2": np.zeros_like(v), "b1p": b1, "b2p": b2})


def test_adam_with_betas_as_variables_updates_as_with_the_same_numbers():
    class Adam(fluid.optimizer.Adam):  # its betas made in the program it minimizes, as Variables or numbers
        def minimize(self, loss, *args, **kwargs):
            if betas_as_vars[0]:
                self._beta1, self._beta2 = (fluid.layers.create_global_var([1], v, "float32", persistable=True)
                                            for v in (self._beta1, self._beta2))
            return super().minimize(loss, *args, **kwargs)

    def run(as_vars):
        betas_as_vars[0] = as_vars
        main, startup, pairs = _build(Adam(learning_rate=2 ** -7))
        return main, _steps(main, startup, pairs, n=3)
    betas_as_vars = [False]
    main, with_vars = run(True)
    _, with_floats = run(False)
    for (_, a), (_, b) in zip(with_vars, with_floats):  # the same parameters, in order (names differ)
        for x, y in zip(a.values(), b.values()):
            np.testing.assert_allclose(x, y, rtol=1e-5)  # a float32 variable holds 0.9 rounded
    adam = [op for op in main.global_block().ops if op.type == "adam"]
    assert adam and all(op.input("Beta1Tensor") and op.input("Beta2Tensor") for op in adam)
    with pytest.raises(ValueError, match=r"Input\(Beta1Tensor\) size must be 1, but get 2"):
        get_op_spec("adam").kernel(dict(get_op_spec("adam").attrs), *(np.ones(3, "float32") for _ in range(2)),
                                   np.ones(1, "float32"), *(np.zeros(3, "float32") for _ in range(2)),
                                   np.ones(1, "float32"), np.ones(1, "float32"), np.ones(2, "float32"), None)


def _sgd_program(out_name):
    prog = fluid.Program()
    block = prog.global_block()
    for name in ("p", "g", "lr"):
        block.create_var(name=name, shape=[3] if name != "lr" else [1], dtype="float32")
    block.create_var(name=out_name, dtype="float32")
    block.append_op(type="sgd", inputs={"Param": "p", "Grad": "g", "LearningRate": "lr"},
                    outputs={"ParamOut": out_name})
    return prog


@pytest.mark.parametrize("out_name", ["p", "p_out"])
def test_an_update_never_writes_into_an_array_the_caller_holds(out_name):
    p, g, lr = np.ones(3, "float32"), np.full(3, 2.0, "float32"), np.array([0.5], "float32")
    prog = _sgd_program(out_name)
    assert prog.global_block().var(out_name).shape == (3,)  # shaped as the Param it updates
    out, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"p": p, "g": g, "lr": lr}, fetch_list=[out_name])
    np.testing.assert_array_equal(out, np.zeros(3, "float32"))
    np.testing.assert_array_equal(p, np.ones(3, "float32"))  # the fed array keeps its values
    with fluid.dygraph.guard():
        block = fluid.default_main_program().global_block()
        param, grad, rate = (fluid.dygraph.to_variable(a) for a in (p, g, lr))
        target = param if out_name == "p" else block.create_var(name="dy_out", dtype="float32")
        block.append_op(type="sgd", inputs={"Param": param, "Grad": grad, "LearningRate": rate},
                        outputs={"ParamOut": target})
        np.testing.assert_array_equal(target.numpy(), np.zeros(3, "float32"))
        expected_param = np.zeros(3) if out_name == "p" else np.ones(3)  # updated only when it is the output
        np.testing.assert_array_equal(param.numpy(), expected_param)


def test_adagrad():
    def update(p, g, s):
        s["m"] = s["m"] + g * g
        return p - 0.125 * g / (np.sqrt(s["m"]) + 1e-6)
    _check(fluid.optimizer.Adagrad(learning_rate=0.125), update, lambda v: {"m": np.zeros_like(v)})


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop(centered):
    rho, eps, mom, lr = 0.95, 1e-6, 0.5, 2 ** -7

    def update(p, g, s):
        s["ms"] = rho * s["ms"] + (1 - rho) * g * g
        if centered:
            s["mg"] = rho * s["mg"] + (1 - rho) * g
            s["mom"] = mom * s["mom"] + lr * g / np.sqrt(s["ms"] - s["mg"] ** 2 + eps)
        else:
            s["mom"] = mom * s["mom"] + lr * g / np.sqrt(s["ms"] + eps)
        return p - s["mom"]
    _check(fluid.optimizer.RMSProp(learning_rate=lr, momentum=mom, centered=centered), update,
           lambda v: {"ms": np.zeros_like(v), "mg": np.zeros_like(v), "mom": np.zeros_like(v)})


def test_accumulators_and_learning_rate_are_persistable_and_initialised_in_startup():
    main, startup, _ = _build(fluid.optimizer.Adam(learning_rate=0.01))
    block = main.global_block()
    names = ["learning_rate_0"] + [f"fc_0.{p}_0_{acc}_0" for p in ("w", "b")
                                   for acc in ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc")]
    for name in names:
        assert block.var(name).persistable, name
    filled = {op.output("Out")[0]: op.attr("value") for op in startup.global_block().ops if op.type == "fill_constant"}
    assert filled["learning_rate_0"] == pytest.approx(0.01)
    assert filled["fc_0.w_0_beta1_pow_acc_0"] == pytest.approx(0.9)
    assert filled["fc_0.w_0_moment1_0"] == 0.0
    assert block.var("fc_0.w_0_moment1_0").shape == (4, 3)
    assert block.var("fc_0.w_0_beta2_pow_acc_0").shape == (1,)


def test_parameter_arrays_are_updated_in_place():
    main, startup, pairs = _build(fluid.optimizer.Adam(learning_rate=0.01))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    scope = fluid.global_scope()
    before = {n: id(scope.find_value(n)) for n in ("fc_0.w_0", "fc_0.w_0_moment1_0", "fc_0.w_0_beta1_pow_acc_0")}
    for _ in range(2):
        exe.run(main, feed={"x": X})
    assert {n: id(scope.find_value(n)) for n in before} == before


def test_per_parameter_learning_rate():
    attr = fluid.ParamAttr(initializer=NumpyArrayInitializer(W0), learning_rate=3.0)
    main, startup, pairs = _build(fluid.optimizer.SGD(learning_rate=0.125), w_attr=attr)
    (grads, after), = _steps(main, startup, pairs, n=1)
    np.testing.assert_allclose(after["fc_0.w_0"], W0 - 0.375 * grads["fc_0.w_0"], rtol=1e-12)
    np.testing.assert_allclose(after["fc_0.b_0"], B0 - 0.125 * grads["fc_0.b_0"], rtol=1e-12)


@pytest.mark.parametrize("kind", ["L2", "L1"])
def test_regularizers(kind):
    coeff = 0.3
    reg = fluid.regularizer.L2Decay(coeff) if kind == "L2" else fluid.regularizer.L1Decay(coeff)
    main, startup, pairs = _build(fluid.optimizer.SGD(learning_rate=0.125, regularization=reg), loss_kind="linear")
    (grads, after), = _steps(main, startup, pairs, n=1)
    raw_w = X.T @ np.full((5, 3), 1.0 / 15)
    decay_w = coeff * (W0 if kind == "L2" else np.sign(W0))
    np.testing.assert_allclose(grads["fc_0.w_0"], raw_w + decay_w, rtol=1e-12)
    np.testing.assert_allclose(after["fc_0.w_0"], W0 - 0.125 * (raw_w + decay_w), rtol=1e-12)


def test_param_attr_regularizer_wins_over_the_optimizers():
    attr = fluid.ParamAttr(initializer=NumpyArrayInitializer(W0), regularizer=fluid.regularizer.L2Decay(0.0))
    opt = fluid.optimizer.SGD(learning_rate=0.125, regularization=fluid.regularizer.L2Decay(5.0))
    main, startup, pairs = _build(opt, loss_kind="linear", w_attr=attr)
    (grads, after), = _steps(main, startup, pairs, n=1)
    np.testing.assert_allclose(grads["fc_0.w_0"], X.T @ np.full((5, 3), 1.0 / 15), rtol=1e-12)
    np.testing.assert_allclose(grads["fc_0.b_0"], np.full(3, 5 / 15) + 5.0 * B0, rtol=1e-12)


def _clipped_step(clip, use_set_gradient_clip=False):
    with fluid.unique_name.guard():
        return _clipped_step_named(clip, use_set_gradient_clip)


def _clipped_step_named(clip, use_set_gradient_clip):
    opt = fluid.optimizer.SGD(learning_rate=0.125, grad_clip=None if use_set_gradient_clip else clip)
    if use_set_gradient_clip:
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [None, 4], "float64")
            y = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(W0)),
                                bias_attr=fluid.ParamAttr(initializer=NumpyArrayInitializer(B0)))
            loss = fluid.layers.mean(fluid.layers.square(y))
            fluid.clip.set_gradient_clip(clip)
            _, pairs = opt.minimize(loss)
    else:
        main, startup, pairs = _build(opt)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    w, b = exe.run(main, feed={"x": X}, fetch_list=["fc_0.w_0", "fc_0.b_0"])
    return _raw_grads(W0, B0), w, b


@pytest.mark.parametrize("via_set_gradient_clip", [False, True])
def test_global_norm_clipping(via_set_gradient_clip):
    clip_norm = 0.5
    raw, w, b = _clipped_step(fluid.clip.GradientClipByGlobalNorm(clip_norm), via_set_gradient_clip)
    norm = np.sqrt((raw["fc_0.w_0"] ** 2).sum() + (raw["fc_0.b_0"] ** 2).sum())
    assert norm > clip_norm
    scale = clip_norm / max(norm, clip_norm)
    np.testing.assert_allclose(w, W0 - 0.125 * raw["fc_0.w_0"] * scale, rtol=1e-12)
    np.testing.assert_allclose(b, B0 - 0.125 * raw["fc_0.b_0"] * scale, rtol=1e-12)


def test_value_and_norm_clipping():
    raw, w, _ = _clipped_step(fluid.clip.GradientClipByValue(0.0625))
    np.testing.assert_allclose(w, W0 - 0.125 * np.clip(raw["fc_0.w_0"], -0.0625, 0.0625), rtol=1e-12)
    raw, w, _ = _clipped_step(fluid.clip.GradientClipByNorm(0.125))
    g = raw["fc_0.w_0"]
    np.testing.assert_allclose(w, W0 - 0.125 * g * 0.125 / np.linalg.norm(g), rtol=1e-12)


def test_one_fc_with_sgd_has_exactly_two_parameters():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        _, pairs = fluid.optimizer.SGD(learning_rate=0.125).minimize(loss)
    assert [p.name for p in main.all_parameters()] == ["fc_0.w_0", "fc_0.b_0"]
    assert sorted(p.name for p, _ in pairs) == ["fc_0.b_0", "fc_0.w_0"]


def test_optimizer_argument_checks():
    with pytest.raises(TypeError, match="learning rate"):
        fluid.optimizer.SGD(learning_rate="0.125")
    with pytest.raises(TypeError, match="grad_clip"):
        fluid.optimizer.SGD(learning_rate=0.125, grad_clip=1.0)


def test_data_parallel_clips_and_regularizes_the_averaged_gradient():
    def one_step(parallel):
        with fluid.unique_name.guard(), fluid.scope_guard(fluid.Scope()):
            opt = fluid.optimizer.SGD(learning_rate=0.125, regularization=fluid.regularizer.L2Decay(0.25),
                                      grad_clip=fluid.clip.GradientClipByGlobalNorm(0.5))
            main, startup, pairs = _build(opt)
            exe = fluid.Executor(fluid.CPUPlace())
            exe.run(startup)
            program = main
            if parallel:
                program = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(2))
            exe.run(program, feed={"x": np.vstack([X, X[:3]])})  # 8 rows: two equal halves
            return [fluid.global_scope().find_value(n).copy() for n in ("fc_0.w_0", "fc_0.b_0")]
    for single, parallel in zip(one_step(False), one_step(True)):
        np.testing.assert_allclose(parallel, single, rtol=1e-12)


@pytest.mark.parametrize("op_type, extra", [
    ("sgd", ()), ("momentum", ("Velocity",)), ("adam", ("Moment1", "Moment2", "Beta1Pow", "Beta2Pow")),
    ("adagrad", ("Moment",)), ("rmsprop", ("MeanSquare", "Moment", "MeanGrad")),
])
def test_update_kernels_allocate_nothing_after_the_first_step(op_type, extra):
    spec = get_op_spec(op_type)
    shape = (256, 512)
    values = {"Param": rng.rand(*shape).astype("float32"), "Grad": rng.rand(*shape).astype("float32"),
              "LearningRate": np.array([0.01], "float32")}
    for name in extra:
        values[name] = np.full((1,) if "Pow" in name else shape, 0.5, "float32")
    args = [values.get(slot) for slot in spec.inputs]
    attrs = dict(spec.attrs, centered=True) if op_type == "rmsprop" else dict(spec.attrs)
    out = spec.kernel(attrs, *args)  # warm-up: creates the scratch buffer
    tracemalloc.start()
    try:
        out = spec.kernel(attrs, *args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < values["Param"].nbytes // 8
    first = out[0] if isinstance(out, tuple) else out
    assert first is values["Param"]


def test_adam_holds_its_betas_in_the_parameters_precision():
    spec = get_op_spec("adam")
    g = np.full(4, 0.3, "float32")
    args = [np.ones(4, "float32"), g, np.array([0.01], "float32"), np.zeros(4, "float32"), np.zeros(4, "float32"),
            np.array([0.9], "float32"), np.array([0.999], "float32"), None, None]
    _, m1, m2, _, _ = spec.kernel(dict(spec.attrs), *args)
    b1, b2 = np.float32(0.9), np.float32(0.999)  # fluid's kernel: T beta1_, T beta2_
    np.testing.assert_array_equal(m1, (np.float32(1) - b1) * g)
    np.testing.assert_array_equal(m2, (np.float32(1) - b2) * g * g)
