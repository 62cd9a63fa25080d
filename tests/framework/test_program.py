import numpy as np
import pytest

import minifluid as fluid
from minifluid.framework import graph
from minifluid.framework.proto import framework_pb2 as pb


def _mean_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        b = main.global_block()
        s = b.create_var("s", dtype=None)
        b.append_op("scale", {"X": x}, {"Out": s}, {"scale": 2.0})
        m = b.create_var("m", dtype=None)
        b.append_op("mean", {"X": s}, {"Out": m})
    return main, startup, x, s, m


def test_new_program_has_block_zero_with_parent_minus_one():
    p = fluid.Program()
    assert p.num_blocks == 1 and p.global_block().idx == 0 and p.global_block().parent_idx == -1
    assert p.current_block() is p.global_block() and p.block(0) is p.global_block()


def test_block_indices_never_reused():
    p = fluid.Program()
    b1 = p._create_block()
    b2 = p._create_block()
    assert (b1.idx, b1.parent_idx, b2.idx, b2.parent_idx) == (1, 0, 2, 1)
    p._rollback()
    assert p.current_block().idx == 1
    b3 = p._create_block()
    assert (b3.idx, b3.parent_idx, p.num_blocks) == (3, 1, 4)


def test_infer_shape_fills_output_vars():
    main, _, x, s, m = _mean_program()
    assert s.shape == (-1, 3) and s.dtype == "float32"
    assert m.shape == (1,)


def test_clone_is_deep_and_independent():
    main, _, x, s, m = _mean_program()
    main.random_seed = 7
    c = main.clone()
    assert c.random_seed == 7 and len(c.global_block().ops) == 2
    c.global_block().ops[0]._set_attr("scale", 5.0)
    c.global_block().create_var("extra")
    assert main.global_block().ops[0].attr("scale") == 2.0
    assert not main.global_block().has_var("extra")
    assert c.global_block().var("x").need_check_feed


def test_clone_keeps_parameters():
    p = fluid.Program()
    p.global_block().create_parameter("w", [2, 2])
    c = p.clone()
    assert [q.name for q in c.all_parameters()] == ["w"]
    assert c.global_block().var("w") is not p.global_block().var("w")


def test_clone_for_test_sets_is_test_and_keeps_forward_ops(scratch_registry):
    scratch_registry.register_op("_test_is_test_op", inputs=("X",), outputs=("Out",), attrs={"is_test": False})(
        lambda attrs, x: x * (0.5 if attrs["is_test"] else 1.0))
    p = fluid.Program()
    b = p.global_block()
    x = b.create_var("x", [2])
    y = b.create_var("y", [2])
    b.append_op("_test_is_test_op", {"X": x}, {"Out": y})
    b.append_op("scale", {"X": y}, {"Out": y})
    t = p.clone(for_test=True)
    assert [op.type for op in t.global_block().ops] == ["_test_is_test_op", "scale"]
    assert t.global_block().ops[0].attr("is_test") is True
    assert "is_test" not in t.global_block().ops[1].attrs
    assert p.global_block().ops[0].attr("is_test") is False


def test_random_seed_must_be_int():
    p = fluid.Program()
    with pytest.raises(ValueError):
        p.random_seed = "1"
    p.random_seed = 3
    assert p.random_seed == 3


def test_program_guard_restores_on_exit_and_on_exception():
    main0, start0 = fluid.default_main_program(), fluid.default_startup_program()
    m, s = fluid.Program(), fluid.Program()
    with fluid.program_guard(m, s):
        assert fluid.default_main_program() is m and fluid.default_startup_program() is s
    assert fluid.default_main_program() is main0
    with pytest.raises(KeyError):
        with fluid.program_guard(m):
            assert fluid.default_main_program() is m and fluid.default_startup_program() is start0
            raise KeyError("x")
    assert fluid.default_main_program() is main0 and fluid.default_startup_program() is start0


def test_operator_idx_attr_names_and_the_op_of_its_output():
    b = fluid.Program().global_block()
    x, y = b.create_var(name="x", shape=[5, 10]), b.create_var(name="y", shape=[10, 8])
    first, out = b.create_var(name="first", shape=[5, 8]), b.create_var(name="out", shape=[5, 8])
    assert out.op is None
    b.append_op(type="mul", inputs={"X": [x], "Y": y}, outputs={"Out": [first]})
    mul = b.append_op(type="mul", inputs={"X": [x], "Y": y}, outputs={"Out": [out]}, attrs={"x_num_col_dims": 1})
    assert (mul.idx, b.ops[0].idx, out.op, first.op) == (1, 0, mul, b.ops[0])
    assert set(mul.attr_names) == {"x_num_col_dims", "y_num_col_dims", "use_mkldnn", "scale_x", "scale_y",
                                   "scale_out", "force_fp32_output", "op_role", "op_role_var", "op_namescope",
                                   "op_callstack", "op_device"}
    assert (mul.attr_type("x_num_col_dims"), mul.attr_type("scale_y")) == (pb.INT, pb.FLOATS)  # fluid's AttrType
    b._remove_op(0)
    orphan = type(mul)(b, "mul", {"X": ["x"], "Y": ["y"]}, {"Out": ["out"]})  # made, never added to the block
    with pytest.raises(ValueError, match="Can't find op itself in it's block"):
        orphan.idx
    assert mul.idx == 0 and first.op is None


def test_to_string_throw_on_error_names_a_variable_never_typed():
    p = fluid.Program()
    b = p.global_block()
    untyped, written = b.create_var(name="t", shape=[0, 1]), b.create_var(name="w")
    b.append_op("fill_constant", outputs={"Out": [written]}, attrs={"shape": [1], "value": 1.0})
    assert "var t" in p.to_string(False)
    with pytest.raises(ValueError, match=r"blocks\[0\]\.vars \['t'\]: type\.lod_tensor\.tensor\.data_type are not"):
        p.to_string(True)
    untyped.desc.set_dtype("float32")
    assert "var w" in p.to_string(True)


def test_to_string_is_readable():
    main, *_ = _mean_program()
    text = str(main)
    assert "var x : LOD_TENSOR.shape[-1, 3].dtype(float32)" in text
    assert "scale(inputs={X=['x']}" in text and "mean(" in text


def test_unknown_op_and_bad_slots_are_clear():
    b = fluid.Program().global_block()
    x = b.create_var("x", [1])
    with pytest.raises(ValueError, match='Operator "elementwise_ad" has not been registered. Did you mean'):
        b.append_op("elementwise_ad", {"X": x, "Y": x}, {"Out": x})
    with pytest.raises(ValueError, match="^`type` to initialized an Operator can not be None.$"):
        b.append_op()
    with pytest.raises(ValueError, match="no input slot"):
        b.append_op("scale", {"Z": x}, {"Out": x})
    with pytest.raises(ValueError, match="no attribute 'scal'"):
        b.append_op("scale", {"X": x}, {"Out": x}, {"scal": 1.0})


def test_variable_is_symbolic():
    x = fluid.Program().global_block().create_var("x", [2])
    with pytest.raises(TypeError, match="symbolic"):
        bool(x)


def test_data_variables():
    main = fluid.Program()
    with fluid.program_guard(main):
        a = fluid.data("a", [None, 784])
        b = fluid.layers.data("b", [784])
        c = fluid.layers.data("c", [None, 3], dtype="int64")
        d = fluid.layers.data("d", [3], append_batch_size=False)
    assert a.shape == (-1, 784) and a.need_check_feed and a.stop_gradient and a.is_data
    assert a.dtype == "float32" and b.dtype == "float32"
    assert b.shape == (-1, 784) and not b.need_check_feed
    assert c.shape == (-1, 3) and c.dtype == "int64"
    assert d.shape == (3,)
    with pytest.raises(TypeError):
        fluid.data(1, [1])
    with pytest.raises(TypeError):
        fluid.data("e", 5)
    with pytest.raises(TypeError):
        fluid.layers.data("e", "5")


def test_networkx_graph_tools():
    main, _, x, s, m = _mean_program()
    block = main.global_block()
    g = graph.op_graph(block)
    assert list(g.edges) == [(0, 1)] and g.edges[0, 1]["vars"] == ["s"]
    assert graph.ops_needed_for(block, ["s"]) == [0]
    assert graph.ops_needed_for(block, ["m"]) == [0, 1]
    assert graph.topological_op_order(block) == [0, 1]
    assert graph.find_cycle(block) is None
    dot = graph.to_dot(block)
    assert dot.startswith("digraph") and 'op0 -> "s"' in dot
    b = block
    b.append_op("scale", {"X": m}, {"Out": s})  # s -> mean -> m -> scale -> s
    assert graph.find_cycle(block) is not None


def test_pruning_is_the_graph_walk_stopping_at_fed_variables_and_keeping_in_place_updates():
    main = fluid.Program()
    block = main.global_block()
    for name in "xabcd":
        block.create_var(name=name, shape=[1], dtype="float32")
    block.append_op("fill_constant", {}, {"Out": "a"}, {"shape": [1], "dtype": "float32", "value": 1.0})  # 0
    block.append_op("scale", {"X": "a"}, {"Out": "b"}, {"scale": 2.0})  # 1
    block.append_op("increment", {"X": "a"}, {"Out": "a"}, {"step": 1.0})  # 2: a updated in place
    block.append_op("elementwise_add", {"X": "a", "Y": "b"}, {"Out": "c"})  # 3
    block.append_op("relu", {"X": "x"}, {"Out": "d"})  # 4: not needed for c
    assert graph.ops_needed_for(block, ["c"]) == [0, 1, 2, 3]
    assert graph.ops_needed_for(block, ["c"], fed=["b"]) == [0, 2, 3]  # b is fed: scale goes
    assert graph.ops_needed_for(block, ["c"], fed=["a"]) == [1, 3]  # a is fed: its writers go
    assert graph.ops_needed_for(block, ["d", "b"]) == [0, 1, 4]
    for fed, fetch in ([[], ["c"]], [["b"], ["c"]], [["a"], ["c"]], [[], ["d", "b"]]):
        kept = main._prune_with_input(fed, fetch).global_block().ops
        assert [op.type for op in kept] == [block.ops[i].type for i in graph.ops_needed_for(block, fetch, fed)]


def test_a_name_created_again_returns_the_variable_only_if_shape_and_dtype_match():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 784], dtype="float32")
        assert fluid.data(name="x", shape=[None, 784], dtype="float32") is x
        assert main.global_block().create_var(name="x") is x  # nothing given: nothing to compare
        with pytest.raises(ValueError, match=r"^Variable x has been created before. the previous shape is "
                                             r"\(-1, 784\); the new shape is \(-1, 1, 28, 28\)"):
            fluid.data(name="x", shape=[None, 1, 28, 28], dtype="float32")
        with pytest.raises(ValueError, match="The previous data type is float32; the new data type is int64"):
            fluid.data(name="x", shape=[None, 784], dtype="int64")


def _two_branch_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        hidden = fluid.layers.fc(x, size=3)
        out = fluid.layers.relu(hidden)
        other = fluid.layers.scale(x, scale=2.0)
    return main, x, hidden, out, other


def test_prune_with_input_keeps_what_the_targets_need_from_the_feeds():
    main, x, hidden, out, other = _two_branch_program()
    pruned = main._prune_with_input([hidden.name], [out])
    assert [op.type for op in pruned.global_block().ops] == ["relu"]  # fc's ops go: hidden is fed
    assert not pruned.global_block().has_var(other.name) and pruned.global_block().has_var(hidden.name)
    whole = main._prune(out.name)
    assert [op.type for op in whole.global_block().ops] == [op.type for op in main.global_block().ops[:-1]]
    assert len(main.global_block().ops) == len(whole.global_block().ops) + 1  # the original is untouched
    with pytest.raises(ValueError, match="can only be str"):
        main._prune_with_input([2, 3], [])
    with pytest.raises(ValueError, match="Variable or Operator"):
        main._prune_with_input([], [1.5])


def test_program_desc_round_trips_through_a_string():
    main, x, hidden, out, other = _two_branch_program()
    restored = fluid.Program.parse_from_string(main.desc.serialize_to_string())
    assert [op.type for op in restored.global_block().ops] == [op.type for op in main.global_block().ops]
    assert restored.global_block().var(out.name).shape == out.shape
    with pytest.raises(ValueError, match=r"not a fluid program \(a ProgramDesc protobuf\) \(it is a Python pickle\)"):
        fluid.Program.parse_from_string(__import__("pickle").dumps([1]))  # never unpickled: it could run code


def test_copy_param_info_from_takes_parameter_settings():
    main, *_ = _two_branch_program()
    main.global_block().all_parameters()[0].trainable = False
    copy = fluid.Program.parse_from_string(main.desc.serialize_to_string())
    for var in copy.global_block().all_parameters():
        var.trainable = True
    copy._copy_param_info_from(main)
    want = {p.name: p.trainable for p in main.global_block().all_parameters()}
    assert sorted(want.values()) == [False, True]
    assert {p.name: p.trainable for p in copy.global_block().all_parameters()} == want  # desc order: by name
    with pytest.raises(TypeError, match="should be invoked with Program"):
        copy._copy_param_info_from("program")
    with pytest.raises(TypeError, match="should be invoked with Program"):
        copy._copy_dist_param_info_from("program")
    main._is_distributed = True
    copy._copy_dist_param_info_from(main)
    assert copy._is_distributed is True


def test_a_test_clone_taken_after_minimize_equals_one_taken_before():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 3, act="relu"))
        before = main.clone(for_test=True)
        fluid.optimizer.Adam(0.01, regularization=fluid.regularizer.L2Decay(1e-4)).minimize(loss)
        after = main.clone(for_test=True)
    assert [op.type for op in after.global_block().ops] == [op.type for op in before.global_block().ops]
    assert sorted(after.global_block().vars) == sorted(before.global_block().vars)  # no gradients, moments, lr
    assert len(main.global_block().vars) > len(after.global_block().vars)  # the original keeps them


def _two_loss_cond(minimize_inside):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4])
        pred = fluid.layers.fc(x, 1)
        flag = fluid.layers.fill_constant([1], "int32", 2) == 0

        def branch(act):
            loss = fluid.layers.mean(act(pred))
            if minimize_inside:
                fluid.optimizer.SGD(0.1).minimize(loss)
            return loss
        loss = fluid.layers.cond(flag, lambda: branch(fluid.layers.relu), lambda: branch(fluid.layers.sigmoid))
    return main, startup, loss, x


def test_a_test_clone_drops_gradient_blocks_and_what_only_the_backward_named():
    main, startup, loss, _ = _two_loss_cond(False)
    before = main.clone(for_test=True)
    with fluid.program_guard(main, startup):
        fluid.optimizer.SGD(0.1).minimize(loss)
    assert main.num_blocks == 5  # the forward branches and their gradient blocks
    after = main.clone(for_test=True)
    assert after.num_blocks == before.num_blocks == 3
    assert [(b.idx, b.parent_idx) for b in after.blocks] == [(0, -1), (1, 0), (2, 0)]
    for a, b in zip(after.blocks, before.blocks):
        assert sorted(a.vars) == sorted(b.vars)
    # an optimizer minimized inside a branch: the test clone's branch ops name only what the forward uses
    inside, inside_startup, inside_loss, _ = _two_loss_cond(True)
    plain, _, _, _ = _two_loss_cond(False)
    tested, want = inside.clone(for_test=True), plain.clone(for_test=True)
    for a, b in zip(tested.blocks, want.blocks):
        assert sorted(a.vars) == sorted(b.vars)
        assert [(op.type, op.inputs, op.outputs) for op in a.ops] == [(op.type, op.inputs, op.outputs) for op in b.ops]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(inside_startup)
        out, = exe.run(tested, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[inside_loss.name])
    assert np.isfinite(out).all()
