"""Rank tables over any LoD level (fluid's LoDRankTable): time steps that are whole sub-sequences with
their own LoD, and shrink / reorder on multi-level LoD tensors."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.backward import append_backward

L = fluid.layers
LOD = [[2, 1], [1, 3, 2], [2, 1, 1, 3, 2, 1]]  # 2 paragraphs > 3 sentences > 6 words > 10 rows


def _tensor(rows, lod):
    t = fluid.LoDTensor()
    t.set(np.arange(rows, dtype="float32").reshape(rows, 1), fluid.CPUPlace())
    t.set_recursive_sequence_lengths(lod)
    return t


def _run(build, feed, fetch_names=()):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        fetch = build()
    scope = fluid.Scope()
    got = fluid.Executor().run(main, feed=feed, fetch_list=fetch, scope=scope, return_numpy=False)
    return got, scope, [scope.find_var(n) for n in fetch_names]


def test_steps_of_an_outer_level_are_sub_sequences_with_their_lod_and_come_back_whole():
    names = {}

    def build():
        x = fluid.data("x", [None, 1], lod_level=3)
        x.stop_gradient = False
        table = L.lod_rank_table(x, level=1)  # rank the 3 sentences: lengths 1, 3, 2 words
        array = L.lod_tensor_to_array(x, table)
        back = L.array_to_lod_tensor(array, table)
        append_backward(L.reduce_sum(back * 3.0))
        table.persistable = array.persistable = True  # kept in the scope after the run
        names.update(table=table.name, array=array.name)
        return [back, L.max_sequence_len(table), x.name + "@GRAD"]
    (back, longest, grad), scope, _ = _run(build, {"x": _tensor(10, LOD)})
    table = scope.find_var(names["table"]).get_lod_rank_table()
    assert table.items() == [(1, 3), (2, 2), (0, 1)]
    steps = scope.find_var(names["array"]).get_lod_tensor_array()
    # step t: word t of each sentence longer than t (longest sentence first), with its rows
    assert [np.array(s).ravel().tolist() for s in steps] == [[2, 7, 8, 0, 1], [3, 9], [4, 5, 6]]
    assert [s.recursive_sequence_lengths() for s in steps] == [[[1, 2, 2]], [[1, 1]], [[3]]]
    assert np.array(back).ravel().tolist() == list(range(10)) and back.recursive_sequence_lengths() == LOD
    assert np.array(longest).tolist() == [3]
    np.testing.assert_array_equal(np.array(grad), np.full((10, 1), 3.0))


def test_array_to_lod_tensor_of_pooled_steps_gets_the_coarse_lod():
    def build():
        x = fluid.data("x", [None, 1], lod_level=2)
        table = L.lod_rank_table(x, level=0)
        array = L.lod_tensor_to_array(x, table)
        i = L.fill_constant([1], "int64", 0)
        pooled = L.create_array("float32")
        for t in range(2):  # each step's sentences pooled to one row: one row per paragraph alive
            step = L.array_read(array, i)
            step.lod_level = 1
            L.array_write(L.sequence_pool(step, "sum"), i, pooled)
            i = L.increment(i, in_place=False)
        return [L.array_to_lod_tensor(pooled, table)]
    (out,), _, _ = _run(build, {"x": _tensor(6, [[1, 2], [2, 1, 3]])})
    assert np.array(out).ravel().tolist() == [1.0, 2.0, 12.0] and out.recursive_sequence_lengths() == [[1, 2]]


def test_shrink_memory_keeps_the_leading_sequences_of_a_lod_memory():
    def build():
        x = fluid.data("x", [None, 1], lod_level=1)
        ref = fluid.data("ref", [None, 1], lod_level=1)
        table = L.lod_rank_table(ref)
        i = L.fill_constant([1], "int64", 0)
        outs = []
        for _ in range(3):
            outs.append(L.shrink_memory(x, i, table))
            i = L.increment(i, in_place=False)
        return outs
    feed = {"x": _tensor(6, [[3, 2, 1]]), "ref": _tensor(6, [[1, 3, 2]])}
    outs, _, _ = _run(build, feed)
    assert [np.array(o).ravel().tolist() for o in outs] == [list(range(6)), list(range(5)), [0, 1, 2]]
    assert [o.recursive_sequence_lengths() for o in outs] == [[[3, 2, 1]], [[3, 2]], [[3]]]


def test_reorder_moves_whole_nested_sequences_and_its_gradient_keeps_the_lod():
    def build():
        x = fluid.data("x", [None, 1], lod_level=2)
        x.stop_gradient = False
        ref = fluid.data("ref", [None, 1], lod_level=1)
        out = L.reorder_lod_tensor_by_rank(x, L.lod_rank_table(ref))
        append_backward(L.reduce_sum(out))
        return [out, x.name + "@GRAD"]
    feed = {"x": _tensor(6, [[1, 2], [2, 1, 3]]), "ref": _tensor(3, [[1, 2]])}
    (out, grad), _, _ = _run(build, feed)
    assert np.array(out).ravel().tolist() == [2, 3, 4, 5, 0, 1]
    assert out.recursive_sequence_lengths() == [[2, 1], [1, 3, 2]]
    assert grad.recursive_sequence_lengths() == [[1, 2], [2, 1, 3]]


def test_rank_table_layers_take_a_variable_or_a_list_of_them_and_check_the_table():
    with fluid.program_guard(fluid.Program()):
        x = fluid.data("x", [None, 1], lod_level=1)
        table = L.lod_rank_table([x])
        assert table.type == fluid.core.VarDesc.VarType.LOD_RANK_TABLE
        L.lod_tensor_to_array([x], [table])
        with pytest.raises(TypeError, match="'x' in lod_rank_table"):
            L.lod_rank_table(np.ones((2, 1), "float32"))
        with pytest.raises(TypeError, match=r"'x\[0\]' in lod_tensor_to_array"):
            L.lod_tensor_to_array([np.ones(2)], table)
        with pytest.raises(TypeError, match="rank_table should be LOD_RANK_TABLE"):
            L.reorder_lod_tensor_by_rank(x, fluid.data("t", [4], "int32"))


def test_scope_tensor_array_of_a_new_variable_fills_it():
    scope = fluid.Scope()
    arr = scope.var("arr").get_lod_tensor_array()
    arr.append(_tensor(2, [[2]]))
    again = scope.find_var("arr").get_lod_tensor_array()
    assert len(again) == 1 and again[0].recursive_sequence_lengths() == [[2]]


def test_nested_dynamic_rnn_step_input_keeps_the_inner_lod_level():
    with fluid.program_guard(fluid.Program()):
        words = fluid.data("w", [None, 1], "int64", lod_level=2)
        rnn = L.DynamicRNN()
        with rnn.block():
            sentence = rnn.step_input(words)
            assert sentence.lod_level == 1
            rnn.output(L.sequence_pool(L.cast(sentence, "float32"), "sum"))

