"""Context ops (kernel(ctx, attrs, ...)) run eagerly in dygraph mode with their tensors' LoD: a kernel reads
its inputs' LoD and sets its outputs' (dygraph/tracer.py's _EagerContext), and its gradient gets the same
context. The op-test harness runs every op so, Blocks in dygraph mode appending them."""
import numpy as np

import minifluid as fluid


def _eager_op(op_type, inputs, out_slot, attrs=None):
    block = fluid.default_main_program().global_block()
    out = block.create_var(name=f"{op_type}_out", dtype="float32")
    block.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


def test_a_context_op_reads_its_input_lod_and_differentiates_in_dygraph():
    x_np = np.arange(10, dtype="float32").reshape(5, 2)
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(x_np)
        x.stop_gradient = False
        x.value().get_tensor().set_recursive_sequence_lengths([[2, 3]])
        pooled = _eager_op("sequence_pool", {"X": [x]}, "Out", {"pooltype": "SUM"})
        np.testing.assert_allclose(pooled.numpy(), [x_np[:2].sum(0), x_np[2:].sum(0)])
        weights = fluid.dygraph.to_variable(np.array([[1.0], [2.0]], "float32"))
        fluid.layers.reduce_sum(pooled * weights).backward()
        np.testing.assert_allclose(x.gradient(), [[1, 1]] * 2 + [[2, 2]] * 3)


def test_a_context_op_gives_its_output_the_lod_it_sets_in_dygraph():
    x_np = np.arange(2 * 1 * 3 * 3, dtype="float32").reshape(2, 1, 3, 3)
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(x_np)
        x.stop_gradient = False
        out = _eager_op("im2sequence", {"X": [x]}, "Out", {"kernels": [2, 2], "strides": [1, 1]})
        assert out.value().get_tensor().recursive_sequence_lengths() == [[4, 4]]
        assert out.shape == [8, 4] and out.numpy()[0].tolist() == [0, 1, 3, 4]
        fluid.layers.reduce_sum(out).backward()
        np.testing.assert_allclose(x.gradient()[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


def test_im2sequence_windows_of_a_real_size_past_the_input_read_zeros():
    """Image 0's real size (after out_stride) gives a 3 x 2 grid of 2 x 1 windows on a 3 x 2 input, whose own
    grid is 2 x 2: its last row of windows reads one row of zeros."""
    x_np = np.arange(2 * 1 * 3 * 2, dtype="float32").reshape(2, 1, 3, 2) + 1
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 1, 3, 2])
        size = fluid.data("size", [None, 2])
        out = fluid.layers.im2sequence(x, filter_size=[2, 1], input_image_size=size, out_stride=1)
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x_np, "size": np.array([[4, 2], [2, 1]], "float32")},
                                                fetch_list=[out], return_numpy=False)
    assert got.recursive_sequence_lengths() == [[6, 1]]
    np.testing.assert_array_equal(np.array(got), [[1, 3], [2, 4], [3, 5], [4, 6], [5, 0], [6, 0], [7, 9]])
