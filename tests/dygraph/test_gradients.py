"""Eager gradients equal the static graph's for the same network, batch and parameter values.

The eager network is built first; its freshly initialised parameters are copied into the static
program's scope, then both compute d(loss)/d(param) on one batch.
"""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Conv2D, Linear, Pool2D, to_variable


def _static_grads(build, feed, eager_params):
    """Build ``build()`` -> loss in a fresh program, load ``eager_params`` (name -> array, in creation
    order) into its parameters (same creation order), and return (loss, {param name: grad})."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = build()
        params_grads = fluid.backward.append_backward(loss)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    static_params = [p.name for p in main.global_block().all_parameters()]
    assert len(static_params) == len(eager_params)
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name, value in zip(static_params, eager_params.values()):
            scope.var(name).get_tensor().set(value.copy(), fluid.CPUPlace())
        grads = [g for _, g in params_grads]
        out = exe.run(main, feed=feed, fetch_list=[loss] + grads)
    return out[0], {p.name: g for (p, _), g in zip(params_grads, out[1:])}, static_params


def _assert_grads_match(eager_loss, eager_params, static):
    loss, grads, static_names = static
    np.testing.assert_allclose(eager_loss.numpy(), loss, rtol=1e-5)
    for eager_p, name in zip(eager_params, static_names):
        np.testing.assert_allclose(eager_p.gradient(), grads[name], rtol=1e-4, atol=1e-6, err_msg=name)


def test_mlp_relu_softmax_with_cross_entropy_mean():
    rng = np.random.RandomState(0)
    x, y = rng.rand(16, 8).astype("float32"), rng.randint(0, 4, (16, 1)).astype("int64")

    def build():
        xv = fluid.data("x", [None, 8])
        label = fluid.data("label", [None, 1], "int64")
        h = fluid.layers.fc(xv, 16, act="relu")
        return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 4), label))

    with fluid.dygraph.guard():
        fc1, fc2 = Linear(8, 16, act="relu"), Linear(16, 4)
        params = [fc1.weight, fc1.bias, fc2.weight, fc2.bias]
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fc2(fc1(to_variable(x))), to_variable(y)))
        loss.backward()
        values = {p.name: p.numpy() for p in params}
    _assert_grads_match(loss, params, _static_grads(build, {"x": x, "label": y}, values))


def test_conv_pool_fc_net():
    rng = np.random.RandomState(1)
    x, y = rng.rand(6, 1, 8, 8).astype("float32"), rng.randint(0, 10, (6, 1)).astype("int64")

    def build():
        xv = fluid.data("x", [None, 1, 8, 8])
        label = fluid.data("label", [None, 1], "int64")
        h = fluid.layers.conv2d(xv, num_filters=4, filter_size=3, act="relu")
        h = fluid.layers.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
        return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 10), label))

    with fluid.dygraph.guard():
        conv, pool, fc = Conv2D(1, 4, 3, act="relu"), Pool2D(2, "max", 2), Linear(4 * 3 * 3, 10)
        params = [conv.weight, conv.bias, fc.weight, fc.bias]
        h = fluid.layers.reshape(pool(conv(to_variable(x))), [-1, 36])
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fc(h), to_variable(y)))
        loss.backward()
        values = {p.name: p.numpy() for p in params}
    _assert_grads_match(loss, params, _static_grads(build, {"x": x, "label": y}, values))


def test_fan_out_and_operators_match_central_differences():
    """x used several times (gradients summed), operators with scalars, matmul, division."""
    rng = np.random.RandomState(2)
    a0, b0 = rng.rand(3, 4).astype("float64") + 0.5, rng.rand(4, 2).astype("float64") + 0.5

    def f(a, b):
        return ((a * a - a / 2.0 + 1.0) @ b / (a @ b + 1.0) * 3.0 - (2.0 - a @ b) + (-a @ b)).sum()

    with fluid.dygraph.guard():
        a, b = to_variable(a0), to_variable(b0)
        a.stop_gradient = b.stop_gradient = False
        out = ((a * a - a / 2.0 + 1.0) @ b / (a @ b + 1.0) * 3.0 - (2.0 - a @ b) + (-a @ b))
        fluid.layers.reduce_sum(out).backward()
        np.testing.assert_allclose(out.numpy().sum(), f(a0, b0))
        for t, v in ((a, a0), (b, b0)):
            num = np.zeros_like(v)
            for i in np.ndindex(v.shape):
                d = np.zeros_like(v)
                d[i] = 1e-6
                args = (v + d, b0) if t is a else (a0, v + d)
                args_m = (v - d, b0) if t is a else (a0, v - d)
                num[i] = (f(*args) - f(*args_m)) / 2e-6
            np.testing.assert_allclose(t.gradient(), num, rtol=1e-5)


def test_duplicable_ops_concat_split_sums():
    with fluid.dygraph.guard():
        a = to_variable(np.arange(6, dtype="float32").reshape(2, 3))
        b = to_variable(np.ones((2, 3), "float32"))
        a.stop_gradient = b.stop_gradient = False
        parts = fluid.layers.split(fluid.layers.concat([a, b], axis=1), [2, 4], dim=1)
        total = fluid.layers.sums([parts[1] * 2.0, parts[1]])
        fluid.layers.reduce_sum(total).backward()
        # parts[1] = [a[:, 2], b]; total = 3 * parts[1]; parts[0] unused -> zero gradient
        np.testing.assert_array_equal(a.gradient(), [[0, 0, 3], [0, 0, 3]])
        np.testing.assert_array_equal(b.gradient(), np.full((2, 3), 3.0))


@pytest.mark.parametrize("opt_name", ["SGD", "Momentum", "Adam"])
def test_dygraph_updates_equal_static_updates(opt_name):
    """Three steps of the same optimizer: eager parameters equal the static scope's afterwards."""
    rng = np.random.RandomState(3)
    batches = [(rng.rand(8, 5).astype("float32"), rng.randint(0, 3, (8, 1)).astype("int64")) for _ in range(3)]
    make = {"SGD": lambda **kw: fluid.optimizer.SGD(0.1, **kw),
            "Momentum": lambda **kw: fluid.optimizer.Momentum(0.1, 0.9, **kw),
            "Adam": lambda **kw: fluid.optimizer.Adam(0.05, **kw)}[opt_name]
    with fluid.dygraph.guard():
        fc = Linear(5, 3)
        init = [fc.weight.numpy(), fc.bias.numpy()]
        opt = make(parameter_list=fc.parameters())
        for x, y in batches:
            loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fc(to_variable(x)), to_variable(y)))
            loss.backward()
            opt.minimize(loss)
            fc.clear_gradients()
        eager = [fc.weight.numpy(), fc.bias.numpy()]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xv, label = fluid.data("x", [None, 5]), fluid.data("label", [None, 1], "int64")
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(xv, 3), label))
        make().minimize(loss)
    scope, exe = fluid.Scope(), fluid.Executor()
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name, value in zip(["fc_0.w_0", "fc_0.b_0"], init):
            scope.var(name).get_tensor().set(value.copy())
        for x, y in batches:
            exe.run(main, feed={"x": x, "label": y})
        static = [np.array(scope.find_var(n).get_tensor()) for n in ("fc_0.w_0", "fc_0.b_0")]
    for e, s in zip(eager, static):
        np.testing.assert_allclose(e, s, rtol=1e-5, atol=1e-7)
