"""Small parts of fluid's Python / core surface that its own tests and legacy scripts call."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.framework.proto import framework_pb2 as pb


@pytest.mark.parametrize("shape, dtype, message", [(None, "float32", "shape of Parameter should not be None"),
                                                   ([1], None, "dtype of Parameter should not be None"),
                                                   ([], "float32", "must be greater than 0"),
                                                   ([-1], "float32", r"received \[-1\]")])
def test_a_parameter_needs_a_known_shape_and_a_dtype(shape, dtype, message):
    with pytest.raises(ValueError, match=message):
        fluid.Program().global_block().create_parameter(name="p", shape=shape, dtype=dtype)


def test_get_parameter_value_by_name_reads_the_global_scope():
    main = fluid.Program()
    main.global_block().create_parameter(name="w", shape=[2, 3], dtype="float32",
                                         initializer=fluid.initializer.Constant(1.5))
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(main)
        np.testing.assert_array_equal(fluid.io.get_parameter_value_by_name("w", exe, main), np.full((2, 3), 1.5))
        with pytest.raises(AssertionError, match="not parameter"):
            fluid.io.get_parameter_value(main.global_block().create_var(name="v", shape=[1]), exe)


def test_tensor_allocation_by_dims_and_scope_ints():
    scope = fluid.Scope()
    tensor = scope.var("t").get_tensor()
    tensor._set_dims([3, 4])
    tensor._alloc_int(fluid.CPUPlace())
    assert np.array(scope.find_var("t").get_tensor()).dtype == np.int32 and np.array(tensor).shape == (3, 4)
    assert isinstance(tensor._mutable_data(fluid.CPUPlace(), "float64"), int) and np.array(tensor).dtype == np.float64
    t = fluid.Tensor()
    t.set(np.arange(8).reshape(2, 4), fluid.CPUPlace())
    np.testing.assert_array_equal(np.array(t[1:, ::2]), [[4, 6]])
    var = scope.var("n")
    var.set_int(10)
    assert var.is_int() and var.get_int() == 10
    scope._remove_from_pool()
    with pytest.raises(RuntimeError, match="Deleting a nonexistent scope is not allowed"):
        scope._remove_from_pool()


def test_layer_argument_checks():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="shape"):
            fluid.layers.create_global_var(1, 2.0, "float32")
        with pytest.raises(TypeError, match="item of shape should be int"):
            fluid.layers.create_global_var([1.0, 2.0], 2.0, "float32")
        with pytest.raises(ValueError):
            fluid.layers.create_global_var([1, 2], 2.0, np.complex128)
        label = fluid.data("label", [None, 3])
        with pytest.raises(TypeError, match="'input' in square_error_cost"):
            fluid.layers.square_error_cost([256, 3], label)


def test_desc_block_op_attr_type():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        fluid.layers.batch_norm(fluid.data("x", [None, 3, 4, 4]))
    op = main.desc.block(0).op(0)
    assert op.type() == "batch_norm" and main.desc.block(0).op_size() == 1
    assert op.attr_type("is_test") == pb.BOOLEAN and op.attr_type("epsilon") == pb.FLOAT
    op._set_attr("is_test", True)
    assert op.attr_type("is_test") == pb.BOOLEAN
