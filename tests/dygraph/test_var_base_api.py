"""fluid 1.8's VarBase surface: to_variable's zero_copy, __index__, iteration and slicing, set_value's checks,
generated names, ``.block`` and LayerHelper.to_variable."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import to_variable


def test_to_variable_shares_the_array_on_cpu_unless_zero_copy_is_false():
    data = np.array([[2, 3, 1]], "float32")
    with fluid.dygraph.guard(fluid.CPUPlace()):
        shared, default, copied = (to_variable(data, zero_copy=True), to_variable(data),
                                   to_variable(data, zero_copy=False))
        data[0, 0] = -1
        assert shared.numpy()[0, 0] == default.numpy()[0, 0] == -1
        assert copied.numpy()[0, 0] == 2


def test_data_tensors_are_named_generated_var_per_guard_and_layer_helper_converts():
    data = np.ones((2, 2), "float32")
    for _ in range(2):  # each guard's tracer numbers its own
        with fluid.dygraph.guard():
            assert [to_variable(data).name, to_variable(data, name="x").name, to_variable(data).name] == [
                "generated_var_0", "x", "generated_var_1"]
    with fluid.dygraph.guard():
        helper = fluid.dygraph.Linear(2, 2)._helper
        t = helper.to_variable(data, name="abc")
        data[0, 0] = 5  # LayerHelper.to_variable copies
        assert t.name == "abc" and t.numpy()[0, 0] == 1
        assert helper.to_variable(t) is t
        with pytest.raises(TypeError, match="expected type is 'ndarray' or 'Variable'"):
            helper.to_variable("test")
    with pytest.raises(AssertionError, match="dygraph mode"):
        fluid.layers.LayerHelper("x").to_variable(data)


def test_one_element_integer_tensors_are_indices():
    with fluid.dygraph.guard():
        two = to_variable(np.array([2]))
        assert list(range(two)) == [0, 1] and [1, 2, 3][two] == 3 and "abc"[two] == "c"
        with pytest.raises(TypeError, match="integer tensor"):
            [1, 2, 3][to_variable(np.array([1.0], "float32"))]
        with pytest.raises(AssertionError, match="only one element"):
            [1, 2, 3][to_variable(np.array([1, 2]))]


def test_iteration_gives_rows_and_an_index_out_of_range_is_an_index_error():
    data = np.arange(12, dtype="float32").reshape(3, 4)
    with fluid.dygraph.guard():
        t = to_variable(data)
        rows = [row.numpy() for row in t]
        assert len(rows) == 3 and all(np.array_equal(r, d) for r, d in zip(rows, data))
        np.testing.assert_array_equal(t[-3].numpy(), data[0])
        for bad in (3, -4):
            with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 0"):
                t[bad]
        with pytest.raises(IndexError, match="axis 1"):
            t[0, 4]
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 4], "float32")  # static: a known dimension is checked, an unknown one is not
        with pytest.raises(IndexError, match="axis 1"):
            x[:, 4]
        assert x[7].shape is not None


def test_set_value_checks_the_shape_as_fluid():
    with fluid.dygraph.guard():
        t = to_variable(np.zeros((2, 3), "float32"), name="w")
        with pytest.raises(AssertionError, match=r"Variable \[ w \] need tensor with shape \[2, 3\]"):
            t.set_value(np.zeros((3, 2), "float32"))
        t.set_value(np.ones((2, 3)))
        assert t.dtype == "float32" and t.numpy().sum() == 6


def test_block_is_the_main_programs_global_block_in_dygraph_mode():
    with fluid.dygraph.guard():
        t = to_variable(np.ones((2, 2), "float32"))
        block = t.block
        assert block is fluid.default_main_program().global_block()
        out = block.create_var(name="doubled", dtype="float32")
        block.append_op(type="scale", inputs={"X": [t]}, outputs={"Out": [out]}, attrs={"scale": 2.0})
        np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 2.0))  # ran at once
        assert not block.ops
    with pytest.warns(UserWarning, match="deprecated"):
        assert fluid.framework._var_base_to_np(t).sum() == 4


def test_an_empty_tensor_says_so():
    with fluid.dygraph.guard():
        empty = fluid.Program().current_block().create_var(name="X", shape=[-1, 3], dtype="float32")
        with pytest.raises(RuntimeError, match="Tensor of X is Empty"):
            empty.numpy()
        with pytest.raises(RuntimeError, match="holds no data"):
            empty.backward()
