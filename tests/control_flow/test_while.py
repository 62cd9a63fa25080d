"""While and tensor arrays: loops run their block's cached plan once per step, arrays start empty in
every run, and gradients through a loop equal those of the loop written out by hand (float64)."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.executor import executor as executor_module

L = fluid.layers


def _doubling_loop(steps):
    """arr[0] = x; arr[k+1] = 2 * arr[k] for k < steps; returns (main, last entry, length, arr)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 3], "float64")
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", steps)
        arr = L.array_write(x, i)
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            nxt = L.scale(L.array_read(arr, i), 2.0)
            L.increment(i, in_place=True)
            L.array_write(nxt, i, arr)
            L.less_than(i, n, cond=cond)
        return main, L.array_read(arr, i), L.array_length(arr), arr


def test_while_runs_its_block_until_the_condition_fails_and_arrays_restart_each_run(monkeypatch):
    built, real = [], executor_module.build_plan

    def counting(program, feed_names, fetch_names, block_idx=0, *args, **kwargs):
        built.append(block_idx)
        return real(program, feed_names, fetch_names, block_idx, *args, **kwargs)
    monkeypatch.setattr(executor_module, "build_plan", counting)
    main, last, length, arr = _doubling_loop(5)
    exe, x = fluid.Executor(), np.ones((2, 3))
    for _ in range(3):  # the array starts empty in each run: always 6 entries
        got, n, entries = exe.run(main, feed={"x": x}, fetch_list=[last, length, arr], scope=fluid.Scope())
        assert got.tolist() == [[32.0] * 3] * 2 and n.tolist() == [6]
        assert [e[0, 0] for e in entries] == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    assert built == [0, 1]  # 15 steps in 3 runs: one plan per block, none per step
    held, = exe.run(main, feed={"x": x}, fetch_list=[arr], return_numpy=False, scope=fluid.Scope())
    assert isinstance(held, fluid.LoDTensorArray) and len(held) == 6 and np.array(held[5])[0, 0] == 32.0


def _rnn(unrolled, steps=4):
    """h_{k+1} = tanh(h_k W + x U + b) with shared parameters: in a While over arrays, or unrolled."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3], "float64")
        h0 = fluid.data("h0", [None, 3], "float64")
        x.stop_gradient = h0.stop_gradient = False

        def cell(h):
            return L.fc([h, x], 3, act="tanh", param_attr=[fluid.ParamAttr(name="W"), fluid.ParamAttr(name="U")],
                        bias_attr=fluid.ParamAttr(name="b"))
        if unrolled:
            h = h0
            for _ in range(steps):
                h = cell(h)
        else:
            i = L.fill_constant([1], "int64", 0)
            n = L.fill_constant([1], "int64", steps)
            mem = L.array_write(h0, i)
            cond = L.less_than(i, n)
            loop = L.While(cond)
            with loop.block():
                new = cell(L.array_read(mem, i))
                L.increment(i, in_place=True)
                L.array_write(new, i, mem)
                L.less_than(i, n, cond=cond)
            h = L.array_read(mem, i)
        loss = L.reduce_sum(L.square(h))
        grads = fluid.gradients(loss, [main.global_block().var(n) for n in ("W", "U", "b")] + [x, h0])
        if not unrolled:
            with pytest.raises(NotImplementedError, match="second backward pass over the same 'while'"):
                fluid.backward.append_backward(loss)
    scope, exe = fluid.Scope(), fluid.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(7)
    for name in ("W", "U", "b"):
        shape = main.global_block().var(name).shape
        scope.var(name).get_tensor().set(rng.uniform(-0.8, 0.8, shape), fluid.CPUPlace())
    feed = {"x": rng.uniform(-1, 1, (2, 3)), "h0": rng.uniform(-1, 1, (2, 3))}
    return exe.run(main, feed=feed, fetch_list=[loss] + grads, scope=scope)


def test_gradients_through_a_while_loop_equal_the_unrolled_loop():
    loop, unrolled = _rnn(False), _rnn(True)
    assert len(loop) == len(unrolled) == 6  # loss, W, U, b, x, h0
    for got, want in zip(loop, unrolled):
        assert np.abs(want).sum() > 0
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)


def test_while_checks_its_condition():
    with fluid.program_guard(fluid.Program()):
        i = L.fill_constant([1], "int64", 0)
        with pytest.raises(TypeError, match="must be \\['bool'\\]"):
            L.While(i)
        with pytest.raises(TypeError, match="condition expected shape as \\[1\\]"):
            L.While(L.fill_constant([2], "bool", True))
        loop = L.While(L.less_than(i, L.fill_constant([1], "int64", 3)))
        with pytest.raises(ValueError, match="never updates its condition"):
            with loop.block():
                L.increment(i, in_place=True)


def test_reading_an_index_never_written_names_the_array():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 3], "float64")
        arr = L.array_write(x, L.fill_constant([1], "int64", 0))
        out = L.array_read(arr, L.fill_constant([1], "int64", 2))
    with pytest.raises(IndexError, match=f"{arr.name!r} has no element 2: it holds 1"):
        fluid.Executor().run(main, feed={"x": np.ones((1, 3))}, fetch_list=[out], scope=fluid.Scope())


def test_gradient_of_state_kept_in_a_plain_variable_is_refused_with_the_way_out():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3], "float64")
        h = L.fc(x, 3)
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", 3)
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            L.assign(L.fc(h, 3, param_attr=fluid.ParamAttr(name="V")), h)
            L.increment(i, in_place=True)
            L.less_than(i, n, cond=cond)
        with pytest.raises(NotImplementedError, match=f"overwrites the float variable\\(s\\) \\['{h.name}'\\].*"
                                                      "tensor array"):
            fluid.backward.append_backward(L.reduce_sum(h))


def test_a_differentiable_float_counter_a_loop_advances_gets_its_gradient():
    """``i`` fed with stop_gradient False and advanced in place by the loop's ``increment``: it is still a
    leaf of the program (the loop reads it first), so ``i@GRAD`` exists, and the counter is no carried
    state (the gradient block steps it back) so the loop's gradient builds."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        i = fluid.data("i", [1], "float32")
        i.stop_gradient = False
        limit = fluid.layers.fill_constant([1], "float32", 11.0)
        x = fluid.data("x", [1], "float32")
        x.stop_gradient = False  # the loop overwrites it: its gradient flows to the square that step made

        def body(i, x):
            return [fluid.layers.increment(i), fluid.layers.elementwise_mul(i, i)]
        out = fluid.layers.while_loop(lambda i, x: fluid.layers.less_than(i, limit), body, [i, x])
        loss = fluid.layers.mean(out[1])
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    for start in (1.0, 3.5):  # each step squares the advanced counter: the last square is of 11 or 11.5
        value, grad = exe.run(main, feed={"i": np.array([start], "float32"), "x": np.ones(1, "float32")},
                              fetch_list=[loss, i.grad_name])
        last = start + np.ceil(11 - start)
        assert value[0] == last ** 2 and grad[0] == 2 * last  # d last**2 / d start: the counter carries on
