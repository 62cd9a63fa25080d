"""StaticRNN, IfElse, Switch and cond: forward results and gradients equal to the same computation
written out by hand (float64)."""
import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers


def _run(build, feed, seed=5):
    """Build ``build()`` -> (fetches...) with append_backward on its first fetch; run once; return the
    loss, the gradient of every parameter by name and the other fetches."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, *others = build()
        grads = fluid.backward.append_backward(loss)
    scope = fluid.Scope()
    exe = fluid.Executor()
    np.random.seed(seed)
    exe.run(startup, scope=scope)
    for p in main.global_block().all_parameters():  # the same values in both programs, by name
        rng = np.random.RandomState(abs(hash(p.name)) % 1000)
        scope.var(p.name).get_tensor().set(rng.uniform(-0.5, 0.5, p.shape), fluid.CPUPlace())
    out = exe.run(main, feed=feed, fetch_list=[loss] + [g for _, g in grads] + others, scope=scope)
    return out[0], {p.name: g for (p, _), g in zip(grads, out[1:])}, out[1 + len(grads):]


def _fc(x, name, size=3, act="tanh"):
    return L.fc(x, size, act=act, param_attr=fluid.ParamAttr(name=name), bias_attr=fluid.ParamAttr(name=name + "_b"))


def _assert_same(a, b):
    assert a[1].keys() == b[1].keys() and a[1]
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12)
    for name in a[1]:
        np.testing.assert_allclose(a[1][name], b[1][name], rtol=1e-10, atol=1e-12, err_msg=name)


def test_static_rnn_equals_the_unrolled_network():
    seq = np.random.RandomState(0).uniform(-1, 1, (4, 2, 3))

    def rnn_net():
        x = fluid.data("x", [4, -1, 3], "float64")
        h0 = fluid.data("h0", [-1, 3], "float64")
        rnn = L.StaticRNN()
        with rnn.step():
            word = rnn.step_input(x)
            prev = rnn.memory(init=h0)
            zero = rnn.memory(shape=[-1, 3], batch_ref=word, init_value=0.5)
            hidden = _fc(L.concat([word, prev], axis=1), "w") + zero
            rnn.update_memory(prev, hidden)
            rnn.update_memory(zero, L.scale(zero, 0.5))
            rnn.step_output(hidden)
        out = rnn()
        assert out.shape[0] == 4
        return L.reduce_sum(L.square(out)), out

    def unrolled():
        x = fluid.data("x", [4, -1, 3], "float64")
        h0 = fluid.data("h0", [-1, 3], "float64")
        prev, zero, outs = h0, None, []
        words = L.unstack(x, axis=0)
        zero = L.fill_constant_batch_size_like(x, [-1, 3], "float64", 0.5, input_dim_idx=1)
        for word in words:
            prev = _fc(L.concat([word, prev], axis=1), "w") + zero
            zero = L.scale(zero, 0.5)
            outs.append(prev)
        out = L.stack(outs, axis=0)
        return L.reduce_sum(L.square(out)), out

    feed = {"x": seq, "h0": np.full((2, 3), 0.1)}
    a, b = _run(rnn_net, feed), _run(unrolled, feed)
    _assert_same(a, b)
    np.testing.assert_allclose(a[2][0], b[2][0], rtol=1e-12)


def test_static_rnn_reads_an_unknown_sequence_length_at_run_time():
    def net(steps):
        def build():
            x = fluid.data("x", [steps, -1, 3], "float64")
            rnn = L.StaticRNN()
            with rnn.step():
                word = rnn.step_input(x)
                prev = rnn.memory(shape=[-1, 3], batch_ref=word)
                hidden = _fc(L.concat([word, prev], axis=1), "w")
                rnn.update_memory(prev, hidden)
                rnn.step_output(hidden)
            out = rnn()
            assert out.shape[0] == steps
            return L.reduce_sum(L.square(out)), out
        return build

    for length in (2, 5):  # one program with seq_len -1 runs both lengths as the fixed-length programs do
        feed = {"x": np.random.RandomState(length).uniform(-1, 1, (length, 2, 3))}
        a, b = _run(net(-1), feed), _run(net(length), feed)
        _assert_same(a, b)
        assert a[2][0].shape == (length, 2, 3)


def test_ifelse_routes_rows_and_its_gradients_equal_the_masked_computation():
    xs = np.random.RandomState(1).uniform(-1, 1, (5, 3))

    def ifelse_net():
        x = fluid.data("x", [-1, 3], "float64")
        limit = fluid.data("limit", [-1, 1], "float64")
        ie = L.IfElse(L.less_than(L.slice(x, [1], [0], [1]), limit))
        with ie.true_block():
            ie.output(_fc(ie.input(x), "t"))
        with ie.false_block():
            ie.output(_fc(ie.input(x), "f", act="sigmoid"))
        out, = ie()
        return L.reduce_sum(L.square(out)), out

    def masked():
        x = fluid.data("x", [-1, 3], "float64")
        limit = fluid.data("limit", [-1, 1], "float64")
        mask = L.cast(L.less_than(L.slice(x, [1], [0], [1]), limit), "float64")
        out = _fc(x, "t") * mask + _fc(x, "f", act="sigmoid") * (1.0 - mask)
        return L.reduce_sum(L.square(out)), out

    for limit in (0.0, 5.0, -5.0):  # mixed rows, all rows true, all rows false
        feed = {"x": xs, "limit": np.full((5, 1), limit)}
        a, b = _run(ifelse_net, feed), _run(masked, feed)
        np.testing.assert_allclose(a[2][0], b[2][0], rtol=1e-12)
        _assert_same(a, b)


def test_switch_runs_the_first_case_that_holds_else_the_default():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        step = fluid.data("step", [1], "float64")
        out = L.create_global_var([1], 0.0, "float64", persistable=True, name="lr")
        with L.Switch() as switch:
            with switch.case(L.less_than(step, L.fill_constant([1], "float64", 10.0))):
                L.assign(np.array([1.0]), out)
            with switch.case(L.less_than(step, L.fill_constant([1], "float64", 20.0))):
                L.assign(np.array([2.0]), out)
            with switch.default():
                L.assign(np.array([3.0]), out)
    exe = fluid.Executor()
    exe.run(startup)
    got = [exe.run(main, feed={"step": np.array([s], "float64")}, fetch_list=[out])[0].item()
           for s in (0.0, 9.0, 10.0, 19.0, 25.0)]
    assert got == [1.0, 1.0, 2.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="at least one condition"):
        with fluid.program_guard(fluid.Program()), L.Switch() as switch:
            switch.default()


def test_cond_builds_both_branches_runs_one_and_differentiates_it():
    xs = np.random.RandomState(2).uniform(-1, 1, (2, 3))

    def net(flag):
        def build():
            x = fluid.data("x", [-1, 3], "float64")
            pred = L.fill_constant([1], "bool", flag)
            out = L.cond(pred, lambda: _fc(x, "t"), lambda: _fc(x, "f", act="sigmoid"))
            return L.reduce_sum(L.square(out)), out
        return build

    def direct(flag):
        def build():
            x = fluid.data("x", [-1, 3], "float64")
            _fc(x, "t"), _fc(x, "f", act="sigmoid")  # both parameters exist, as in cond
            out = _fc(x, "t") if flag else _fc(x, "f", act="sigmoid")
            return L.reduce_sum(L.square(out)), out
        return build

    for flag in (True, False):
        a, b = _run(net(flag), {"x": xs}), _run(direct(flag), {"x": xs})
        np.testing.assert_allclose(a[0], b[0], rtol=1e-12)
        assert set(b[1]) == ({"t", "t_b"} if flag else {"f", "f_b"}) and set(a[1]) == {"t", "t_b", "f", "f_b"}
        for name in a[1]:  # the branch that did not run: zero gradients
            want = b[1][name] if name in b[1] else np.zeros_like(a[1][name])
            np.testing.assert_allclose(a[1][name], want, rtol=1e-10, atol=1e-12, err_msg=name)
            assert np.abs(a[1][name]).sum() > 0 or name not in b[1]
    with pytest.raises(ValueError, match="true_fn returns None while false_fn returns non-None"):
        with fluid.program_guard(fluid.Program()):
            x = fluid.data("x", [-1, 3], "float64")
            L.cond(L.fill_constant([1], "bool", True), lambda: None, lambda: x * 2)
