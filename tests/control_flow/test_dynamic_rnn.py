"""DynamicRNN over LoD sequences and its rank-table ops: outputs in input order with the input's LoD,
gradients equal to the same recurrence written out per sequence (float64)."""
import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
LENGTHS = [3, 1, 4, 2]


def _fc(inputs, act="tanh"):
    names = [f"w{k}" for k in range(len(inputs))]
    return L.fc(inputs, 3, act=act, param_attr=[fluid.ParamAttr(name=n) for n in names],
                bias_attr=fluid.ParamAttr(name="b"))


def _run(build, feed):
    """out, loss and the gradients of the parameters and of the three inputs (lod_tensor_to_array's,
    reorder_lod_tensor_by_rank's and shrink_rnn_memory's gradients in the DynamicRNN)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = build()
        loss = L.reduce_sum(L.square(out))
        block = main.global_block()
        for name in ("x", "boot", "ctx"):
            block.var(name).stop_gradient = False
        grads = fluid.gradients(loss, [block.var(n) for n in ("w0", "w1", "w2", "b", "x", "boot", "ctx")])
    scope, exe = fluid.Scope(), fluid.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(3)
    for name in ("w0", "w1", "w2", "b"):
        shape = main.global_block().var(name).shape
        scope.var(name).get_tensor().set(rng.uniform(-0.7, 0.7, shape), fluid.CPUPlace())
    return exe.run(main, feed=feed, fetch_list=[out, loss] + grads, scope=scope, return_numpy=False)


def test_dynamic_rnn_equals_the_recurrence_written_out_per_sequence():
    rng = np.random.RandomState(0)
    x, boot, ctx = rng.uniform(-1, 1, (sum(LENGTHS), 3)), rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (4, 3))

    def dynamic():
        seq = fluid.data("x", [None, 3], "float64", lod_level=1)
        h0 = fluid.data("boot", [None, 3], "float64")
        c = fluid.data("ctx", [None, 3], "float64")
        rnn = L.DynamicRNN()
        with rnn.block():
            word = rnn.step_input(seq)
            static = rnn.static_input(c)
            prev = rnn.memory(init=h0, need_reorder=True)
            plain = rnn.memory(shape=[3], value=0.25, dtype="float64")
            hidden = _fc([word, prev, static])
            rnn.update_memory(prev, hidden)
            rnn.update_memory(plain, L.scale(plain, 2.0))
            rnn.output(hidden + plain)
        return rnn()

    def written_out():
        seq = fluid.data("x", [None, 3], "float64")
        h0 = fluid.data("boot", [None, 3], "float64")
        c = fluid.data("ctx", [None, 3], "float64")
        outs, start = [], 0
        for s, n in enumerate(LENGTHS):
            h, plain = L.slice(h0, [0], [s], [s + 1]), 0.25
            for t in range(n):
                h = _fc([L.slice(seq, [0], [start + t], [start + t + 1]), h, L.slice(c, [0], [s], [s + 1])])
                outs.append(h + plain)
                plain *= 2.0
            start += n
        return L.concat(outs, axis=0)

    lod_x = fluid.create_lod_tensor(x, [LENGTHS], fluid.CPUPlace())
    got = _run(dynamic, {"x": lod_x, "boot": boot, "ctx": ctx})
    want = _run(written_out, {"x": x, "boot": boot, "ctx": ctx})
    assert got[0].recursive_sequence_lengths() == [LENGTHS]
    for g, w in zip(got, want):
        assert np.abs(np.array(w)).sum() > 0
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-10, atol=1e-13)


def test_rank_table_ops_order_by_length_and_restore():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 1], "float64", lod_level=1)
        table = L.lod_rank_table(x)
        longest = L.max_sequence_len(table)
        steps = L.lod_tensor_to_array(x, table)
        back = L.array_to_lod_tensor(steps, table)
        reordered = L.reorder_lod_tensor_by_rank(x, table)
        first = L.array_read(steps, L.fill_constant([1], "int64", 0))
        shrunk = L.shrink_memory(first, L.fill_constant([1], "int64", 2), table)
    data = np.arange(10, dtype="float64").reshape(10, 1)  # sequences [0 1 2] [3] [4 5 6 7] [8 9]
    feed = {"x": fluid.create_lod_tensor(data, [LENGTHS], fluid.CPUPlace())}
    n, arr, b, r, s = fluid.Executor().run(main, feed=feed, fetch_list=[longest, steps, back, reordered, shrunk],
                                           return_numpy=False, scope=fluid.Scope())
    assert np.array(n).tolist() == [4]
    assert [np.array(e).ravel().tolist() for e in arr] == [[4, 0, 8, 3], [5, 1, 9], [6, 2], [7]]
    assert np.array(b).ravel().tolist() == list(range(10)) and b.recursive_sequence_lengths() == [LENGTHS]
    assert np.array(r).ravel().tolist() == [4, 5, 6, 7, 0, 1, 2, 8, 9, 3]
    assert r.recursive_sequence_lengths() == [[4, 3, 2, 1]]
    assert np.array(s).ravel().tolist() == [4, 0]  # two sequences are longer than step 2


def test_dynamic_rnn_misuse_is_refused():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3], "float64", lod_level=1)
        rnn = L.DynamicRNN()
        with pytest.raises(ValueError, match="can only be invoked inside rnn block"):
            rnn.step_input(x)
        with pytest.raises(RuntimeError, match="static_input\\(\\) must be called after step_input"):
            with rnn.block():
                rnn.static_input(x)
    with fluid.program_guard(fluid.Program()):
        main = fluid.default_main_program()
        x = fluid.data("x", [None, 3], "float64")
        table = L.lod_rank_table(x)
    with pytest.raises(ValueError, match="'x' of lod_rank_table has no LoD"):
        fluid.Executor().run(main, feed={"x": np.ones((2, 3))}, fetch_list=[], scope=fluid.Scope())
    assert table.type == "LOD_RANK_TABLE"  # fluid's kind for it
