"""fluid.one_hot (fluid 1.8's input.py, op one_hot_v2): ids of any shape, the depth axis appended; and both
one_hots' Variable depth (the depth_tensor input)."""
import numpy as np
import pytest

import minifluid as fluid


def _run(ids, depth, allow=False, shape=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", shape or [None] + list(ids.shape[1:]), ids.dtype.name)
        out = fluid.one_hot(x, depth, allow_out_of_range=allow)
    assert out.shape == tuple(x.shape) + (depth,) and out.dtype == "float32" and out.stop_gradient
    return fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": ids}, fetch_list=[out])[0]


def test_ids_without_a_trailing_one_get_a_depth_axis():
    ids = np.array([[1, 3], [0, 2], [3, 3]], np.int64)
    np.testing.assert_array_equal(_run(ids, 4), np.eye(4, dtype=np.float32)[ids])
    np.testing.assert_array_equal(_run(np.array([2, 0], np.int32), 3), [[0, 0, 1], [1, 0, 0]])


def test_out_of_range_ids_raise_or_give_zero_rows():
    ids = np.array([1, 5], np.int64)
    with pytest.raises(ValueError, match=r"should be less than Input\(depth\), but received input \(5\)"):
        _run(ids, 3)
    np.testing.assert_array_equal(_run(ids, 3, allow=True), [[0, 1, 0], [0, 0, 0]])


def test_bad_inputs_name_what_was_expected():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="one_hot_v2"):
            fluid.one_hot(fluid.data("f", [None], "float32"), 3)
        with pytest.raises(TypeError, match="The type of 'depth' in one_hot_v2 must be"):
            fluid.one_hot(fluid.data("i", [None], "int64"), 2.5)


@pytest.mark.parametrize("layer, ids", [(fluid.layers.one_hot, [[1], [3], [0]]), (fluid.one_hot, [1, 3, 0])])
def test_a_variable_depth_is_read_when_the_op_runs(layer, ids):
    main, startup = fluid.Program(), fluid.Program()
    ids = np.array(ids, np.int64)
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None] + list(ids.shape[1:]), "int64")
        depth = fluid.data("depth", [1], "int32")
        out = layer(x, depth)
    assert out.shape == (-1, -1) and depth.stop_gradient
    op = main.global_block().ops[-1]
    assert op.type in ("one_hot", "one_hot_v2") and op.input("depth_tensor") == ["depth"]
    exe = fluid.Executor(fluid.CPUPlace())
    got, = exe.run(main, feed={"x": ids, "depth": np.array([5], np.int32)}, fetch_list=[out])
    np.testing.assert_array_equal(got, np.eye(5, dtype=np.float32)[[1, 3, 0]])
    with pytest.raises(ValueError, match=r"received input \(3\) not less than depth \(2\)"):
        exe.run(main, feed={"x": ids, "depth": np.array([2], np.int32)}, fetch_list=[out])
    with fluid.dygraph.guard():
        eager = layer(fluid.dygraph.to_variable(ids), fluid.dygraph.to_variable(np.array([4])))
        np.testing.assert_array_equal(eager.numpy(), np.eye(4, dtype=np.float32)[[1, 3, 0]])
