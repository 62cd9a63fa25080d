"""fluid.op's Operator run against a Scope, op protos, core.get_grad_op_desc, Blocks in dygraph mode and the
LoDTensor accessors that fluid's op-test harness drives (minifluid/op.py, framework/op_proto.py, core.py,
NOTE [ Blocks in dygraph mode ] in framework/block.py)."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import core
from minifluid.framework import OpProtoHolder
from minifluid.op import Operator


def _scope_with(**arrays):
    scope = fluid.Scope()
    for name, value in arrays.items():
        scope.var(name).get_tensor().set(value, fluid.CPUPlace())
    return scope


def test_an_operator_runs_against_a_scope_and_sees_each_new_input_value():
    rng = np.random.RandomState(0)
    x, y = rng.rand(2, 3).astype("float32"), rng.rand(3, 4).astype("float32")
    scope = _scope_with(x=x, y=y)
    op = Operator("mul", X="x", Y="y", Out="out", x_num_col_dims=1)
    op.run(scope, fluid.CPUPlace())
    np.testing.assert_allclose(np.array(scope.find_var("out").get_tensor()), x @ y, rtol=1e-6)
    tensor = scope.find_var("x").get_tensor()
    assert tensor._get_float_element(4) == pytest.approx(float(x.reshape(-1)[4]))
    tensor._set_float_element(4, 10.0)  # a numeric gradient's nudge, then the same op again
    op.run(scope, fluid.CPUPlace())
    x[1, 1] = 10.0
    np.testing.assert_allclose(np.array(scope.find_var("out").get_tensor()), x @ y, rtol=1e-6)
    assert op.type() == "mul" and op.input("X") == ["x"] and op.output("Out") == ["out"]
    assert op.attr("x_num_col_dims") == 1


def test_operator_slot_facts_and_protos_follow_the_registry():
    assert Operator.get_op_inputs("sum") == [("X", True)]
    assert ("X", False) in Operator.get_op_inputs("mul")
    assert "x_num_col_dims" in Operator.get_op_attr_names("mul") and "op_role" in Operator.get_op_attr_names("mul")
    proto = OpProtoHolder.instance().get_op_proto("conv2d")
    by_name = {v.name: v for v in proto.inputs}
    assert by_name["Input"].dispensable is False and by_name["Bias"].dispensable is True
    assert not by_name["Input"].duplicable and OpProtoHolder.instance().get_op_proto("concat").inputs[0].duplicable
    with pytest.raises(ValueError, match='Operator "no_such_op" has not been registered'):
        OpProtoHolder.instance().get_op_proto("no_such_op")
    with pytest.raises(TypeError, match="variable names"):
        Operator("mul", X=["x", 3], Y="y", Out="out")


def test_get_grad_op_desc_gives_the_grad_op_append_backward_emits():
    prog = fluid.Program()
    with fluid.program_guard(prog):
        x = fluid.data("x", [None, 3])
        y = fluid.layers.create_parameter([3, 4], "float32", name="w")
        out = fluid.layers.mul(x, y)
    op = prog.global_block().ops[-1]
    descs, grad_to_var = core.get_grad_op_desc(op.desc, set(), [])
    assert [d.type() for d in descs] == ["mul_grad"]
    assert sorted(descs[0].output_arg_names()) == sorted(["x@GRAD", "w@GRAD"])
    assert grad_to_var["w@GRAD"] == "w" and grad_to_var[out.name + "@GRAD"] == out.name
    descs, _ = core.get_grad_op_desc(op.desc, {"x"}, [])
    assert "w@GRAD" in descs[0].output_arg_names() and "x@GRAD" not in descs[0].output_arg_names()
    assert core.has_grad_op_maker("mul") and not core.has_grad_op_maker("mul_grad")
    assert "mul_grad" in core._get_all_register_op_kernels() and not core.has_infer_inplace("mul")


def test_a_block_in_dygraph_mode_runs_its_ops_at_once_and_they_differentiate():
    x_np = np.arange(6, dtype="float32").reshape(2, 3)
    with fluid.dygraph.guard():
        block = fluid.default_main_program().global_block()
        before = len(block.ops)
        x = fluid.dygraph.to_variable(x_np)
        x.stop_gradient = False
        out = block.create_var(name="doubled", dtype="float32")
        block.append_op(type="scale", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"scale": 2.0})
        loss = block.create_var(dtype="float32")
        block.append_op(type="mean", inputs={"X": [out]}, outputs={"Out": [loss]})
        loss.backward()
        np.testing.assert_allclose(out.numpy(), 2 * x_np)
        np.testing.assert_allclose(x.gradient(), np.full((2, 3), 2 / 6, "float32"), rtol=1e-6)
        assert len(block.ops) == before and out.name == "doubled"
        view = out.value().get_tensor()
        view.set_recursive_sequence_lengths([[1, 1]])
        assert out.value().get_tensor().recursive_sequence_lengths() == [[1, 1]]
        np.testing.assert_allclose(np.array(view), 2 * x_np)


def test_lod_tensor_resize_copy_and_element_access():
    t = fluid.LoDTensor()
    t._set_dims([2, 2])
    assert t.shape() == [2, 2]
    t.set(np.arange(4, dtype="float64").reshape(2, 2), fluid.CPUPlace())
    t.set_recursive_sequence_lengths([[1, 1]])
    copy = t._copy(fluid.CPUPlace())
    copy._set_double_element(0, 7.0)
    assert t._get_double_element(0) == 0.0 and copy._get_double_element(0) == 7.0
    assert copy.recursive_sequence_lengths() == [[1, 1]]
    mine = np.zeros(3, "float32")
    held = fluid.LoDTensor()
    held.set(mine, fluid.CPUPlace())
    held._set_float_element(1, 5.0)  # never written into the caller's array
    assert mine.tolist() == [0.0, 0.0, 0.0] and np.array(held).tolist() == [0.0, 5.0, 0.0]
    scope = _scope_with(fed=mine)
    scope.find_var("fed").get_tensor()._set_float_element(2, 4.0)
    assert mine.tolist() == [0.0, 0.0, 0.0] and np.array(scope.find_var("fed").get_tensor()).tolist() == [0, 0, 4.0]


def test_scalar_scope_variables_and_default_lod_levels():
    scope = fluid.Scope()
    scope.var("lr").set_float(0.5)
    scope.var("step").set_int(3)
    assert np.array(scope.find_var("lr").get_tensor()).tolist() == [0.5]
    assert np.array(scope.find_var("step").get_tensor()).dtype == np.int32
    block = fluid.Program().global_block()
    assert block.create_var(name="v", lod_level=None).lod_level == 0
