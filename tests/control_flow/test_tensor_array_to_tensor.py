"""tensor_array_to_tensor: static (an array variable, also one filled through the scope) and dygraph (a list)."""
import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers


def _joined(use_stack):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        array = L.create_array("float32")
        array.persistable = True  # kept from the scope (a run starts the others empty)
        out, index = L.tensor_array_to_tensor(array, axis=1, use_stack=use_stack)
    return main, array, out, index


@pytest.mark.parametrize("use_stack", [False, True])
def test_an_array_filled_through_the_scope_is_read_by_the_op(use_stack):
    main, array, out, index = _joined(use_stack)
    a, b = np.ones((2, 3), "float32"), np.arange(8, dtype="float32").reshape(2, 4)
    if use_stack:
        b = b[:, :3]
    scope = fluid.Scope()
    held = scope.var(array.name).get_lod_tensor_array()
    for value in (a, b):
        t = fluid.LoDTensor()
        t.set(value, fluid.CPUPlace())
        held.append(t)
    got, sizes = fluid.Executor().run(main, fetch_list=[out, index], scope=scope)
    expected = np.stack([a, b], axis=1) if use_stack else np.concatenate([a, b], axis=1)
    np.testing.assert_array_equal(got, expected)
    assert sizes.dtype == np.int32 and sizes.tolist() == ([3, 3] if use_stack else [3, 4])  # each entry's size


def test_dygraph_takes_a_list_and_static_refuses_what_is_not_a_variable():
    x0, x1 = np.random.rand(2, 3, 4).astype("float32"), np.random.rand(2, 3, 4).astype("float32")
    with fluid.dygraph.guard():
        array = L.create_array("float32")
        L.array_write(L.assign(x0), L.fill_constant([1], "int64", 0), array)
        L.array_write(L.assign(x1), L.fill_constant([1], "int64", 1), array)
        out, sizes = L.tensor_array_to_tensor(array, axis=1, use_stack=True)
        np.testing.assert_array_equal(out.numpy(), np.stack([x0, x1], axis=1))
        assert sizes.numpy().tolist() == [3, 3]
    with fluid.program_guard(fluid.Program()):
        with pytest.raises(TypeError, match="The type of 'input' in tensor_array_to_tensor must be"):
            L.tensor_array_to_tensor(x0)
        with pytest.raises(TypeError, match=r"The type of 'input\[0\]' in tensor_array_to_tensor must be"):
            L.tensor_array_to_tensor([x0])
