"""core.ops (dygraph/op_functions.py): one function per op, fluid 1.8's calling convention, and
fluid.dygraph_utils built on it."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import core, dygraph_utils


def _t(a):
    return fluid.dygraph.to_variable(np.asarray(a, dtype="float32"))


def test_an_op_function_takes_inputs_then_attribute_pairs_and_differentiates():
    with fluid.dygraph.guard():
        x, y = _t(np.arange(6).reshape(2, 3)), _t([1.0, 2.0, 3.0])
        x.stop_gradient = False
        out = core.ops.elementwise_mul(x, y, "axis", -1)
        np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(2, 3) * [1, 2, 3])
        loss = core.ops.reduce_sum(core.ops.scale(out, "scale", 2.0), "reduce_all", True)
        loss.backward()
        np.testing.assert_array_equal(x.gradient(), np.tile([2.0, 4.0, 6.0], (2, 1)))


def test_duplicable_outputs_take_a_count_and_several_outputs_come_as_a_tuple():
    with fluid.dygraph.guard():
        parts = core.ops.split(_t(np.arange(12).reshape(2, 6)), 3, "axis", 1, "num", 3)
        assert isinstance(parts, list) and [p.shape for p in parts] == [[2, 2]] * 3
        values, indices = core.ops.top_k(_t([[3.0, 9.0, 1.0]]), "k", 2)
        np.testing.assert_array_equal(values.numpy(), [[9.0, 3.0]])
        np.testing.assert_array_equal(indices.numpy(), [[1, 0]])


def test_an_update_op_writes_the_outputs_it_is_given():
    with fluid.dygraph.guard():
        param, grad, lr = _t([1.0, 2.0]), _t([0.5, 0.5]), _t([2.0])
        returned = core.ops.sgd(param, lr, grad, param)
        assert returned is param
        np.testing.assert_array_equal(param.numpy(), [0.0, 1.0])


def test_op_functions_are_dygraph_only_and_check_their_arguments():
    with pytest.raises(RuntimeError, match="dygraph mode only"):
        core.ops.relu(np.ones(2, "float32"))
    with fluid.dygraph.guard():
        with pytest.raises(TypeError, match="inputs"):
            core.ops.elementwise_add(_t([1.0]))
        with pytest.raises(TypeError, match="name, value pairs"):
            core.ops.scale(_t([1.0]), "scale")
    with pytest.raises(AttributeError, match="no op 'no_such_op'"):
        core.ops.no_such_op


def test_dygraph_utils_append_activation_and_bias():
    with fluid.dygraph.guard():
        x, b = _t([[-1.0, 2.0], [3.0, -4.0]]), _t([10.0, 20.0])
        assert dygraph_utils._append_activation_in_dygraph(x) is x
        np.testing.assert_array_equal(dygraph_utils._append_activation_in_dygraph(x, "relu").numpy(),
                                      [[0.0, 2.0], [3.0, 0.0]])
        np.testing.assert_array_equal(dygraph_utils._append_bias_in_dygraph(x, b, axis=1).numpy(),
                                      [[9.0, 22.0], [13.0, 16.0]])
    with pytest.raises(AssertionError, match="dynamic graph mode"):
        dygraph_utils._append_bias_in_dygraph(None, None)


def test_core_varbase_makes_eager_tensors_and_every_eager_tensor_is_one():
    x = np.ones((2, 2), "float32")
    with fluid.dygraph.guard():
        kept, shared = core.VarBase(value=x, place=core.CPUPlace()), core.VarBase(x, zero_copy=True)
        x[0, 0] = 5.0
        assert kept.numpy()[0, 0] == 1.0 and shared.numpy()[0, 0] == 5.0  # a copy unless zero_copy
        assert isinstance(fluid.dygraph.to_variable(x), core.VarBase)
        assert isinstance(fluid.dygraph.Linear(2, 2).weight, core.VarBase)
        assert core.VarBase(x, name="w", persistable=True).name == "w"
    assert not isinstance(x, core.VarBase) and core.Layer().forward([]) == []
