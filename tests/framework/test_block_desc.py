"""Editing a Program through descs (framework/block_desc.py): a grad op from core.get_grad_op_desc appended
with block.desc.append_op() + copy_from, variables made and typed through block.desc; scope tensors that
stay live across runs (executor/scope.py); batch_norm's trainable_statistics and argument check."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import core
from minifluid.op import Operator


def _append_grad_op(block, fwd_op, no_grad=()):
    """What fluid's op tests do to run one grad op: the desc from get_grad_op_desc, copied into the block."""
    descs, grad_to_var = core.get_grad_op_desc(fwd_op.desc, set(no_grad), [])
    new = block.desc.append_op()
    new.copy_from(descs[0])
    for name in descs[0].output_arg_names():
        block.desc.var(name.encode("ascii"))
    for name in descs[0].output_arg_names():
        block.desc.find_var(name.encode("ascii")).set_dtype(core.VarDesc.VarType.FP32)
    block.program._sync_with_cpp()
    return new, grad_to_var


def test_a_grad_op_desc_copied_into_a_block_runs_there():
    rng = np.random.RandomState(0)
    x, y, dout = (rng.rand(3, 4).astype("float32") for _ in range(3))
    prog = fluid.Program()
    block = prog.global_block()
    for name in ("x", "y", "out", "out@GRAD"):
        block.create_var(name=name, dtype="float32", shape=[3, 4])
    op = block.append_op(type="elementwise_mul", inputs={"X": block.var("x"), "Y": block.var("y")},
                         outputs={"Out": block.var("out")})
    new, grad_to_var = _append_grad_op(block, op)
    assert new.type() == "elementwise_mul_grad" and block.ops[-1].type == "elementwise_mul_grad"
    assert grad_to_var["x@GRAD"] == "x" and block.var("y@GRAD").dtype == "float32"
    dx, dy = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": x, "y": y, "out@GRAD": dout},
                                                  fetch_list=["x@GRAD", "y@GRAD"])
    np.testing.assert_allclose(dx, dout * y, rtol=1e-6)
    np.testing.assert_allclose(dy, dout * x, rtol=1e-6)


def test_the_no_grad_set_names_gradients_and_batch_norm_reads_only_its_output_gradient():
    prog = fluid.Program()
    with fluid.program_guard(prog):
        x = fluid.data("x", [2, 3, 4, 4])
        fluid.layers.batch_norm(x)
    op = prog.global_block().ops[-1]
    descs, _ = core.get_grad_op_desc(op.desc, {op.input("Scale")[0] + "@GRAD"}, [])
    grad = descs[0]
    assert grad.input("Y@GRAD") == [op.output("Y")[0] + "@GRAD"]
    assert not any(grad.input(s) for s in ("MeanOut@GRAD", "VarianceOut@GRAD", "SavedMean@GRAD"))
    assert grad.output("Scale@GRAD") == [] and grad.output("Bias@GRAD") == [op.input("Bias")[0] + "@GRAD"]
    with pytest.raises(AttributeError, match="copy_from"):
        prog.global_block().desc.append_op().type()


def test_a_block_desc_makes_finds_and_types_variables():
    block = fluid.Program().global_block()
    desc = block.desc
    assert desc.find_var(b"v") is None and not desc.has_var("v")
    var_desc = desc.var(b"v")
    var_desc.set_dtype(core.VarDesc.VarType.FP64)
    var_desc.set_shape([2, 5])
    var_desc.set_lod_level(1)
    v = block.var("v")
    assert (v.dtype, v.shape, v.lod_level) == ("float64", (2, 5), 1)
    assert desc.find_var("v").dtype() == "float64" and desc.var("v").name() == "v"


def test_a_tensor_taken_before_a_run_sees_what_the_run_wrote():
    scope = fluid.Scope()
    out = scope.var("out").get_tensor()  # fluid's tensor is the variable's: taken before the op runs
    scope.var("x").get_tensor().set(np.arange(6, dtype="float32").reshape(2, 3), fluid.CPUPlace())
    Operator("scale", X="x", Out="out", scale=3.0).run(scope, fluid.CPUPlace())
    np.testing.assert_array_equal(np.array(out), np.arange(6, dtype="float32").reshape(2, 3) * 3)
    out.set_recursive_sequence_lengths([[1, 1]])
    assert scope.find_var("out").get_tensor().recursive_sequence_lengths() == [[1, 1]]


def _bn_out(x_np, is_test, trainable_statistics):
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        x = fluid.data("x", list(x_np.shape))
        y = fluid.dygraph.BatchNorm(x_np.shape[1], is_test=is_test, trainable_statistics=trainable_statistics)(x)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        return exe.run(prog, feed={"x": x_np}, fetch_list=[y])[0]


def test_batch_norm_at_test_time_with_trainable_statistics_normalises_by_the_batch():
    x = np.random.RandomState(1).randn(4, 3, 5, 5).astype("float32") * 3 + 2
    train = _bn_out(x, False, False)
    np.testing.assert_allclose(_bn_out(x, True, True), train, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(train.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    assert abs(_bn_out(x, True, False) - train).max() > 0.5  # the running statistics (0 and 1) instead


def test_batch_norm_refuses_an_integer_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [2, 3, 4, 4], dtype="int32")
        with pytest.raises(TypeError, match="batch_norm"):
            fluid.layers.batch_norm(x)


def test_an_op_desc_names_its_attribute_kinds_with_core_attr_type():
    prog = fluid.Program()
    with fluid.program_guard(prog):
        x = fluid.data("x", [2, 3])
        fluid.layers.scale(fluid.layers.mul(x, fluid.layers.create_parameter([3, 4], "float32")), 2.0)
    mul, scale = prog.global_block().ops[-2:]
    assert mul.desc.attr_type("x_num_col_dims") == core.AttrType.INT == 0
    assert scale.desc.attr_type("scale") == core.AttrType.FLOAT and scale.desc.attr_type("bias_after_scale") == \
        core.AttrType.BOOLEAN
