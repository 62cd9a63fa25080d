"""append_backward / gradients through the real Executor: finite differences, accumulation, pruning."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.backward import append_backward, gradients
from minifluid.ops.registry import OpRole

rng = np.random.RandomState(7)


def _run(main, startup, feed, fetch, scope=None):
    scope = scope or fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        return exe.run(main, feed=feed, fetch_list=fetch), scope


def _mlp_loss(act="tanh"):
    x = fluid.data("x", [None, 5], "float64")
    label = fluid.data("label", [None, 1], "int64")
    h = fluid.layers.fc(x, 8, act=act)
    logits = fluid.layers.fc(h, 4)
    return fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(logits, label))


@pytest.mark.parametrize("act, batch", [("tanh", 6), ("relu", 6), ("tanh", 4)])  # 4: batch == fc_1's width
def test_mlp_gradients_match_finite_differences(act, batch):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        loss = _mlp_loss(act)
        forward = main.clone()
        params_grads = append_backward(loss)
    assert [p.name for p, _ in params_grads] == ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    feed = {"x": rng.randn(batch, 5), "label": rng.randint(0, 4, (batch, 1)).astype("int64")}
    grads, scope = _run(main, startup, feed, [g for _, g in params_grads])
    exe = fluid.Executor(fluid.CPUPlace())

    def loss_at():
        with fluid.scope_guard(scope):
            return float(exe.run(forward, feed=feed, fetch_list=[loss.name])[0][0])

    eps = 1e-6
    for (param, _), analytic in zip(params_grads, grads):
        value = scope.find_value(param.name)
        assert value.dtype == np.float64
        numeric = np.zeros_like(value)
        for i in np.ndindex(value.shape):
            old = value[i]
            value[i] = old + eps
            up = loss_at()
            value[i] = old - eps
            down = loss_at()
            value[i] = old
            numeric[i] = (up - down) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-8, err_msg=param.name)


def test_data_inputs_get_no_gradient_and_op_roles_are_marked():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        loss = _mlp_loss()
        append_backward(loss)
    block = main.global_block()
    assert not block.has_var("x@GRAD") and not block.has_var("label@GRAD")
    first_mul_grad = next(op for op in block.ops if op.type == "mul_grad" and op.input("X") == ["x"])
    assert "X@GRAD" not in first_mul_grad.outputs and first_mul_grad.output("Y@GRAD") == ["fc_0.w_0@GRAD"]
    swce_grad = next(op for op in block.ops if op.type == "softmax_with_cross_entropy_grad")
    assert "Label@GRAD" not in swce_grad.outputs
    roles = [(op.type, op.attrs.get("op_role", 0)) for op in block.ops]
    assert ("reduce_mean", OpRole.Forward | OpRole.Loss) in roles
    assert ("fill_constant", OpRole.Backward | OpRole.Loss) in roles
    for op in block.ops:
        if op.type.endswith("_grad"):
            assert op.attr("op_role") == OpRole.Backward
        elif op.type in ("mul", "elementwise_add", "tanh", "softmax_with_cross_entropy"):
            assert op.attrs.get("op_role", 0) == OpRole.Forward
    for name in ("fc_0.w_0", "fc_1.tmp_1"):
        assert block.var(name + "@GRAD").shape == block.var(name).shape


def test_gradient_accumulation_over_a_shared_parameter_and_a_var_used_twice():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float64")
        shared = fluid.ParamAttr(name="shared_w", initializer=fluid.initializer.NumpyArrayInitializer(
            np.arange(12, dtype="float64").reshape(3, 4) / 10))
        a = fluid.layers.fc(x, 4, param_attr=shared, bias_attr=False)
        b = fluid.layers.fc(x, 4, param_attr=shared, bias_attr=False)
        sq = fluid.layers.elementwise_mul(a, a)  # a feeds one op twice
        loss = fluid.layers.mean(fluid.layers.elementwise_add(sq, b))
        params_grads = append_backward(loss)
    assert [p.name for p, _ in params_grads] == ["shared_w"]
    ops = main.global_block().ops
    sums = [op for op in ops if op.type == "sum"]
    assert {tuple(op.output("Out")) for op in sums} == {("shared_w@GRAD",), (a.name + "@GRAD",)}
    assert all("@RENAME@" in n for op in sums for n in op.input("X"))
    xv = rng.randn(5, 3)
    (g,), scope = _run(main, startup, {"x": xv}, [params_grads[0][1]])
    w = np.arange(12, dtype="float64").reshape(3, 4) / 10
    n = 5 * 4
    expected = xv.T @ (2 * (xv @ w) / n) + xv.T @ np.full((5, 4), 1.0 / n)
    np.testing.assert_allclose(g, expected, rtol=1e-12)


def test_stop_gradient_and_no_grad_set_prune_the_backward_pass():
    def build(stop=False, no_grad=None):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data("x", [None, 4])
            h = fluid.layers.fc(x, 3, act="relu")
            h.stop_gradient = stop
            loss = fluid.layers.mean(fluid.layers.fc(h, 2))
            pairs = append_backward(loss, no_grad_set=no_grad)
        return main, [p.name for p, _ in pairs]

    full, names = build()
    assert names == ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    stopped, names = build(stop=True)
    assert names == ["fc_1.w_0", "fc_1.b_0"]
    assert not any(op.type in ("relu_grad", "elementwise_add_grad") and "fc_0" in str(op.inputs)
                   for op in stopped.global_block().ops)
    pruned, names = build(no_grad={"fc_1.w_0", "fc_0.tmp_2"})
    assert names == ["fc_1.b_0"]
    grad_ops = [op.type for op in pruned.global_block().ops if op.type.endswith("_grad")]
    assert grad_ops == ["mean_grad", "elementwise_add_grad"]  # nothing below fc_1's bias is needed


def test_parameter_list_restricts_the_pairs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        loss = _mlp_loss()
        pairs = append_backward(loss, parameter_list=["fc_1.w_0"])
    assert [(p.name, g.name) for p, g in pairs] == [("fc_1.w_0", "fc_1.w_0@GRAD")]
    assert not main.global_block().has_var("fc_0.w_0@GRAD")


def test_gradients_of_an_expression_and_none_for_stop_gradient_inputs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float64")
        x.stop_gradient = False
        frozen = fluid.data("frozen", [None, 3], "float64")
        y = fluid.layers.elementwise_add(fluid.layers.elementwise_mul(x, x), frozen)
        y = fluid.layers.scale(y, scale=3.0)
        gx, gfrozen = fluid.gradients([y], [x, frozen])
    assert gfrozen is None
    xv = rng.randn(2, 3)
    (value,), _ = _run(main, startup, {"x": xv, "frozen": xv}, [gx])
    np.testing.assert_allclose(value, 6 * xv)


def test_gradients_with_target_gradients_and_an_unused_split_output():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float64")
        x.stop_gradient = False
        left, right = fluid.layers.split(x, 2, dim=1)
        y = fluid.layers.scale(left, scale=2.0)
        seed = fluid.data("seed", [None, 2], "float64")
        (gx,) = gradients(y, x, target_gradients=seed)
    assert any(op.type == "fill_zeros_like" for op in main.global_block().ops)
    seed_v = rng.randn(3, 2)
    (value,), _ = _run(main, startup, {"x": rng.randn(3, 4), "seed": seed_v}, [gx])
    np.testing.assert_allclose(value, np.hstack([2 * seed_v, np.zeros((3, 2))]))


def test_loss_must_have_a_known_shape():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        per_sample = fluid.layers.fc(x, 1)
        with pytest.raises(ValueError, match="fully known shape such as"):
            append_backward(per_sample)
