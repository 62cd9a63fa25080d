"""fluid 1.8 details that Paddle's cond / while_loop tests lean on: ``%``, ``//``, ``==``, ``!=`` on
static Variables, ``Variable.grad_name``, gradients of a made-differentiable constant, and the
gradients a data-parallel run fetches."""
import math

import numpy as np
import pytest

import minifluid as fluid
from minifluid.backward import append_backward

L = fluid.layers


def test_mod_floordiv_eq_ne_append_ops_and_variables_still_hash_by_identity():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        i = fluid.data("i", [1], "int32")
        j = fluid.data("j", [1], "int32")
        outs = [i % 3, i // 2, i == 4, i != 4, (i % 2) == 0, L.equal(i, j)]
        assert (i == j) is False and i in [j, i]  # between Variables == stays identity
        table = {i: "i", j: "j"}  # a Variable is still a dict key by identity
    assert table[i] == "i" and table[j] == "j" and len({i, j, i}) == 2
    assert [v.dtype for v in outs] == ["int32", "int32", "bool", "bool", "bool", "bool"]
    exe = fluid.Executor()
    for v in (-5, 3, 4):
        got = exe.run(main, feed={"i": np.array([v], "int32"), "j": np.array([3], "int32")}, fetch_list=outs)
        c_mod, c_div = int(math.fmod(v, 3)), int(v / 2)  # fluid's integer kernels are C's % and /
        assert [g.item() for g in got] == [c_mod, c_div, v == 4, v != 4, v % 2 == 0, v == 3]


def test_grad_name_names_the_gradient_append_backward_makes():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [2, 3])
        x.stop_gradient = False
        append_backward(L.mean(x * 2.0))
    assert x.grad_name == "x@GRAD"
    got, = fluid.Executor().run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[x.grad_name])
    np.testing.assert_allclose(got, np.full((2, 3), 2.0 / 6))


def test_constant_made_differentiable_gets_its_gradient_through_cond():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        a = L.fill_constant([1], "float32", 1.5)
        a.stop_gradient = False
        b = L.fill_constant([1], "float32", 2.0)
        b.stop_gradient = False
        p = fluid.data("p", [1], "bool")
        out = L.cond(p, lambda: a * b, lambda: b * 3.0)
        append_backward(out)
    exe = fluid.Executor()
    for pick, want in ((True, [3.0, 2.0, 1.5]), (False, [6.0, 0.0, 3.0])):
        got = exe.run(main, feed={"p": np.array([pick])}, fetch_list=[out, a.name + "@GRAD", b.name + "@GRAD"])
        assert [g.item() for g in got] == want


def test_data_parallel_fetches_gradients_as_fluid_scales_them():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        x.stop_gradient = False
        loss = L.mean(L.fc(x, 1, bias_attr=False, param_attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.Constant(1.0))))
        append_backward(loss)
    exe = fluid.Executor()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    xs = np.arange(12, dtype="float32").reshape(4, 3)
    x_grad, w_grad = exe.run(compiled, feed={"x": xs}, fetch_list=[x.name + "@GRAD", "w@GRAD"], scope=scope)
    # each replica's loss gradient is 1/2: an input's gradient is its replica's over 2 ...
    np.testing.assert_allclose(x_grad, np.full((4, 3), 1.0 / 2 / 2))
    # ... and a parameter's the all-reduced average, the same on every place
    per_place = [xs[:2].mean(0), xs[2:].mean(0)]
    np.testing.assert_allclose(w_grad, np.concatenate([np.mean(per_place, 0)[:, None]] * 2), rtol=1e-6)


def test_while_loop_carries_dicts_and_lists_and_leaves_the_callers_containers_alone():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        i = L.fill_constant([1], "int64", 0)
        ten = L.fill_constant([1], "int64", 10)
        state = {"count": L.fill_constant([1], "int64", 0)}
        rows = [L.fill_constant([1, 2], "float32", 0.0)]

        def body(i, state, rows):
            state["count"] = state["count"] + 2
            rows[0] = L.reshape(rows[0], [2, -1]) + 1.0
            rows.append(i)  # changes the body's copy, not the caller's list
            rows.pop()
            return [L.increment(i), state, rows]
        i_out, state_out, rows_out = L.while_loop(lambda i, s, r: L.less_than(i, ten), body, [i, state, rows])
    assert list(state) == ["count"] and len(rows) == 1
    got = fluid.Executor().run(main, fetch_list=[i_out, state_out["count"], rows_out[0]])
    assert got[0].tolist() == [10] and got[1].tolist() == [20] and got[2].tolist() == [[10.0], [10.0]]
    with fluid.program_guard(fluid.Program()):
        k = L.fill_constant([1], "int64", 0)
        with pytest.raises(ValueError, match="same arity"):
            L.while_loop(lambda k, d: k > 0, lambda k, d: [L.increment(k), dict(d, extra=k)], [k, {"a": k}])


def test_increment_of_a_non_variable_is_a_type_error():
    with fluid.program_guard(fluid.Program()):
        with pytest.raises(TypeError, match="'x' in increment must be"):
            L.increment([1, 2, 3])


def test_data_parallel_merged_fetch_of_a_tensor_array_joins_each_entry():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2])
        i = L.zeros([1], "int64")
        array = L.array_write(x, i)
        L.array_write(L.reduce_sum(x, dim=0), L.increment(i), array)
    exe = fluid.Executor()
    compiled = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(2))
    xs = np.arange(8, dtype="float32").reshape(4, 2)
    merged, = exe.run(compiled, feed={"x": xs}, fetch_list=[array], scope=fluid.Scope())
    assert len(merged) == 2
    np.testing.assert_array_equal(merged[0], xs)
    np.testing.assert_array_equal(merged[1], np.concatenate([xs[:2].sum(0), xs[2:].sum(0)]))
    per_place, = exe.run(compiled, feed={"x": xs}, fetch_list=[array], scope=fluid.Scope(), return_merged=False)
    assert [len(a) for a in per_place] == [2, 2] and per_place[1][0].tolist() == xs[2:].tolist()


def test_eager_tensors_compare_with_eq_and_give_their_gradient_as_grad_ivar():
    with fluid.dygraph.guard():
        a = fluid.dygraph.to_variable(np.array([3.0, 4.0], "float32"))
        a.stop_gradient = False
        b = fluid.dygraph.to_variable(np.array([3.0, 5.0], "float32"))
        assert (a == b).numpy().tolist() == [True, False] and (a != b).numpy().tolist() == [False, True]
        assert len({a, b, a}) == 2  # still hashed by identity
        assert a._grad_ivar() is None
        L.reduce_sum(a * 2.0).backward()
        assert a._grad_ivar().numpy().tolist() == [2.0, 2.0]


def _branch_trained_program(lr=0.5):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [2, 3])
        pick = fluid.data("pick", [1], "bool")
        h = L.fc(x, 1, bias_attr=False, param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(1.0)))

        def train(scale, opt):
            def fn():
                loss = L.mean(h * scale)
                opt.minimize(loss)
                return loss
            return fn
        loss = L.cond(pick, train(1.0, fluid.optimizer.SGD(lr)), train(3.0, fluid.optimizer.SGD(lr)))
    return main, startup, loss


def test_an_optimizer_minimized_inside_a_cond_branch_trains_the_layers_before_it_when_the_branch_runs():
    main, startup, loss = _branch_trained_program()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    xs = np.arange(6, dtype="float32").reshape(2, 3)
    w = lambda: np.array(scope.find_var("w").get_tensor()).ravel()  # noqa: E731
    exe.run(main, feed={"x": xs, "pick": np.array([True])}, fetch_list=[loss], scope=scope)
    np.testing.assert_allclose(w(), 1.0 - 0.5 * xs.mean(0))  # d mean(x w) / dw = column means
    before = w()
    exe.run(main, feed={"x": xs, "pick": np.array([False])}, fetch_list=[loss], scope=scope)
    np.testing.assert_allclose(w(), before - 0.5 * 3.0 * xs.mean(0), rtol=1e-6)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    with pytest.raises(NotImplementedError, match="optimizer is used in control flow"):
        exe.run(compiled, feed={"x": xs, "pick": np.array([True, True])}, fetch_list=[loss], scope=scope)
