"""fluid.layers.control_flow's routing layers (ops/lod_routing.py): split_lod_tensor / merge_lod_tensor by
rows or by sequences at a LoD level, select_input / select_output, and ConditionalBlock."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.backward import append_backward
from minifluid.layers import control_flow_api as cf

L = fluid.layers


def _lod_tensor(rows, lod):
    t = fluid.LoDTensor()
    t.set(np.arange(rows, dtype="float32").reshape(rows, 1), fluid.CPUPlace())
    t.set_recursive_sequence_lengths(lod)
    return t


def _run(build, feed):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        fetch = build()
    return fluid.Executor().run(main, feed=feed, fetch_list=fetch, scope=fluid.Scope(), return_numpy=False)


def test_split_and_merge_move_whole_sequences_of_a_level_and_back():
    def build():
        x = fluid.data("x", [None, 1], lod_level=2)
        x.stop_gradient = False
        mask = fluid.data("m", [None, 1], "bool")
        yes, no = cf.split_lod_tensor(x, mask, level=1)  # the 3 sentences of 2 paragraphs
        merged = cf.merge_lod_tensor(yes * 2.0, no, x, mask, level=1)
        append_backward(L.reduce_sum(merged))
        return [yes, no, merged, x.name + "@GRAD"]
    feed = {"x": _lod_tensor(6, [[2, 1], [1, 3, 2]]), "m": np.array([[False], [True], [False]])}
    yes, no, merged, grad = _run(build, feed)
    assert np.array(yes).ravel().tolist() == [1, 2, 3] and yes.recursive_sequence_lengths() == [[3]]
    assert np.array(no).ravel().tolist() == [0, 4, 5] and no.recursive_sequence_lengths() == [[1, 2]]
    assert np.array(merged).ravel().tolist() == [0, 2, 4, 6, 4, 5]
    assert merged.recursive_sequence_lengths() == [[2, 1], [1, 3, 2]]
    assert np.array(grad).ravel().tolist() == [1, 2, 2, 2, 1, 1] and grad.recursive_sequence_lengths() == \
        [[2, 1], [1, 3, 2]]


def test_merge_takes_branches_whose_sequences_were_pooled_to_rows():
    def build():
        x = fluid.data("x", [None, 1], lod_level=1)
        mask = fluid.data("m", [None, 1], "bool")
        yes, no = cf.split_lod_tensor(x, mask)
        return [cf.merge_lod_tensor(L.sequence_pool(yes, "sum"), L.sequence_pool(no, "max"), x, mask)]
    out, = _run(build, {"x": _lod_tensor(6, [[2, 3, 1]]), "m": np.array([[True], [False], [True]])})
    assert np.array(out).ravel().tolist() == [1.0, 4.0, 5.0] and out.recursive_sequence_lengths() == []


def test_select_output_writes_the_chosen_output_and_select_input_reads_it_back_with_gradients():
    def build():
        x = fluid.data("x", [2])
        x.stop_gradient = False
        k = fluid.data("k", [1], "int32")
        block = fluid.default_main_program().current_block()
        outs = [block.create_var(dtype="float32") for _ in range(3)]
        cf.select_output(x * 3.0, outs, k)
        y = cf.select_input(outs, k)
        append_backward(L.mean(y))
        return [y, x.name + "@GRAD"]
    for k in range(3):
        y, g = _run(build, {"x": np.array([1.0, -2.0], "float32"), "k": np.array([k], "int32")})
        assert np.array(y).tolist() == [3.0, -6.0] and np.array(g).tolist() == [1.5, 1.5]
    with fluid.program_guard(fluid.Program()):
        x = fluid.data("x", [2])
        with pytest.raises(TypeError, match="'mask' in select_input"):
            cf.select_input([x], fluid.data("f", [1], "float32"))
        with pytest.raises(TypeError, match="'outputs' in select_output"):
            cf.select_output(x, x, fluid.data("k", [1], "int32"))


def test_conditional_block_on_a_tensor_runs_when_it_has_rows_and_passes_no_gradient_to_its_condition():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1])
        x.stop_gradient = False
        block = cf.ConditionalBlock(inputs=[x])
        out = L.create_tensor("float32")
        with block.block():
            L.assign(L.scale(x, 4.0), out)
        append_backward(L.mean(out))
    assert any(v.type == "STEP_SCOPES" for v in main.global_block().vars.values())
    op = next(o for o in main.global_block().ops if o.type == "conditional_block")
    op.desc.infer_shape(main.global_block().desc)
    got = fluid.Executor().run(main, feed={"x": np.ones((4, 1), "float32")}, fetch_list=[out, x.name + "@GRAD"])
    assert got[0].ravel().tolist() == [4.0] * 4 and got[1].ravel().tolist() == [1.0] * 4
