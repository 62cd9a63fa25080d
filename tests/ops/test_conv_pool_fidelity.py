"""fluid 1.8's attribute names, data formats and argument errors of the conv-transpose, pooling and
interpolation ops (ops/conv_transpose.py, ops/conv3d.py, ops/pool.py, ops/pool3d.py, layers/image.py)."""
import numpy as np
import pytest

import minifluid as fluid


def _run_op(op_type, inputs, outputs, attrs):
    """Append one op to a fresh program with its inputs as fed data, run it, return its outputs by slot."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        block = main.global_block()
        ins = {slot: block.create_var(name=slot.lower(), shape=value.shape, dtype=value.dtype)
               for slot, value in inputs.items()}
        outs = {slot: block.create_var(name=slot.lower() + "_out", dtype="float64") for slot in outputs}
        block.append_op(type=op_type, inputs={k: [v] for k, v in ins.items()},
                        outputs={k: [v] for k, v in outs.items()}, attrs=attrs)
    got = fluid.Executor(fluid.CPUPlace()).run(main, feed={v.name: inputs[k] for k, v in ins.items()},
                                               fetch_list=list(outs.values()), scope=fluid.Scope())
    return dict(zip(outputs, got))


def test_conv2d_transpose_takes_fluids_full_attribute_set():
    rng = np.random.RandomState(0)
    x, w = rng.rand(2, 3, 4, 4), rng.rand(3, 2, 3, 3)
    base = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "data_format": "NCHW"}
    plain = _run_op("conv2d_transpose", {"Input": x, "Filter": w}, ["Output"], base)["Output"]
    extra = dict(base, is_test=False, fuse_relu=False, fuse_activation="", fuse_alpha=0.0, fuse_beta=0.0)
    for op_type in ("conv2d_transpose", "depthwise_conv2d_transpose"):
        got = _run_op(op_type, {"Input": x, "Filter": w}, ["Output"], extra)["Output"]
        np.testing.assert_allclose(got, plain)
    assert got.shape == (2, 2, 6, 6)
    spec = fluid.framework.OpProtoHolder.instance().get_op_proto("conv2d_transpose")
    defaults = {a.name for a in spec.attrs}
    assert {"is_test", "fuse_relu", "fuse_activation", "fuse_alpha", "fuse_beta"} <= defaults


def test_conv3d_transpose_reads_nhwc_as_channels_last():
    """fluid's 3-D ops take data_format "NHWC" for channels-last 5-D data, as "NDHWC"."""
    rng = np.random.RandomState(1)
    x, w = rng.rand(2, 3, 3, 4, 5), rng.rand(3, 4, 2, 2, 2)
    attrs = {"strides": [1, 2, 1], "paddings": [0, 1, 0], "dilations": [1, 1, 1], "groups": 1}
    first = _run_op("conv3d_transpose", {"Input": x, "Filter": w}, ["Output"],
                    dict(attrs, data_format="NCDHW"))["Output"]
    for fmt in ("NHWC", "NDHWC"):
        last = _run_op("conv3d_transpose", {"Input": x.transpose(0, 2, 3, 4, 1), "Filter": w}, ["Output"],
                       dict(attrs, data_format=fmt))["Output"]
        np.testing.assert_allclose(last, first.transpose(0, 2, 3, 4, 1))


def test_conv2d_transpose_layer_refuses_a_nested_padding_of_the_wrong_length_with_a_value_error():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3, 5, 5])
        with pytest.raises(ValueError, match="padding's length must be 2"):
            fluid.layers.conv2d_transpose(x, num_filters=6, filter_size=3,
                                          padding=[[1, 1], [1, 1], [0, 0], [0, 0], [1, 1]])
        with pytest.raises(ValueError, match="padding's type must be a list or tuple of 2 int"):
            fluid.layers.conv2d_transpose(x, num_filters=6, filter_size=3, padding=[[1, 1], [1, 1]])


def _with_index(x, **attrs):
    got = _run_op("max_pool2d_with_index", {"X": x}, ["Out", "Mask"], attrs)
    return got["Out"], got["Mask"]


def test_max_pool2d_with_index_gives_the_max_and_its_flat_position():
    x = np.array([[[[1., 9., 2., 3.],
                    [4., 5., 8., 0.],
                    [7., 6., 5., 9.]]]])  # [1, 1, 3, 4]
    out, mask = _with_index(x, ksize=[2, 2], strides=[1, 2], paddings=[0, 0])
    np.testing.assert_array_equal(out, [[[[9., 8.], [7., 9.]]]])
    np.testing.assert_array_equal(mask, [[[[1, 6], [8, 11]]]])  # row * 4 + column of each max
    assert mask.dtype == np.int32
    out, mask = _with_index(x, ksize=[1, 1], global_pooling=True, paddings=[1, 1])  # whole map, pads ignored
    assert out.tolist() == [[[[9.0]]]] and mask.tolist() == [[[[1]]]]
    out, mask = _with_index(x, ksize=[2, 3], adaptive=True)  # rows [0, 2) [1, 3); columns [0, 2) [1, 3) [2, 4)
    np.testing.assert_array_equal(out, [[[[9., 9., 8.], [7., 8., 9.]]]])
    np.testing.assert_array_equal(mask, [[[[1, 1, 6], [8, 6, 11]]]])
    out, mask = _with_index(x, ksize=[1, 1], global_pooling=True, adaptive=True)  # fluid: one window per pixel
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(mask, np.arange(12).reshape(1, 1, 3, 4))


def test_max_pool2d_with_index_gradient_goes_to_each_max_position():
    rng = np.random.RandomState(3)
    x = rng.permutation(2 * 3 * 5 * 5).reshape(2, 3, 5, 5).astype("float64")  # no ties
    from minifluid.testing import check_op
    check_op("max_pool2d_with_index", {"X": x}, {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]},
             outputs=["Out", "Mask"], grad_outputs=["Out"])
    check_op("max_pool2d_with_index", {"X": x}, {"ksize": [2, 3], "adaptive": True}, outputs=["Out", "Mask"],
             grad_outputs=["Out"])


def test_adaptive_pool2d_returns_the_mask_with_require_index():
    x_np = np.arange(2 * 16, dtype="float32").reshape(1, 2, 4, 4)[:, :, ::-1].copy()
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2, 4, 4])
        out, mask = fluid.layers.adaptive_pool2d(x, [2, 2], require_index=True)
    assert mask.dtype == fluid.core.VarDesc.VarType.INT32 and tuple(out.shape) == (-1, 2, 2, 2)
    got_out, got_mask = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x_np}, fetch_list=[out, mask])
    np.testing.assert_array_equal(got_out, x_np.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
    np.testing.assert_array_equal(got_mask[0, 0], [[1, 3], [9, 11]])  # rows reversed: each max is top right


def test_pool2d_layer_takes_fluids_padding_forms():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [2, 5, 5, 3])
        ops = fluid.default_main_program().global_block().ops
        nested = fluid.layers.pool2d(x, 3, pool_padding=[[0, 0], [1, 2], [1, 1], [0, 0]], data_format="NHWC")
        assert ops[-1].attr("paddings") == [1, 2, 1, 1] and tuple(nested.shape) == (2, 6, 5, 3)
        fluid.layers.pool2d(x, 3, pool_padding=[2, 2, 1, 1], data_format="NHWC")
        assert ops[-1].attr("paddings") == [2, 1]
        fluid.layers.pool2d(x, 3, pool_padding="same", data_format="NHWC")
        assert ops[-1].attr("padding_algorithm") == "SAME" and ops[-1].attr("paddings") == [0, 0]
        with pytest.raises(ValueError, match="in the batch or channel dimensions"):
            fluid.layers.pool2d(x, 3, pool_padding=[[1, 1], [0, 0], [0, 0], [0, 0]], data_format="NHWC")
        with pytest.raises(ValueError, match=r"Attr\(ceil_mode\) must be False"):
            fluid.layers.pool2d(x, 3, pool_padding="VALID", ceil_mode=True, data_format="NHWC")
        with pytest.raises(TypeError, match="use_cudnn"):
            fluid.layers.pool2d(x, 3, use_cudnn=[0], data_format="NHWC")


def _resize_program(build, **feed):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        out = build()
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=[out])
    return out, got


def test_image_resize_takes_out_shape_entries_as_int32_variables():
    x_np = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)

    def build():
        x = fluid.data("x", [None, 1, 4, 4])
        h = fluid.data("h", [1], dtype="int32")
        return fluid.layers.resize_nearest(x, out_shape=[h, 2], align_corners=False)
    out, got = _resize_program(build, x=x_np, h=np.array([8], "int32"))
    assert tuple(out.shape) == (-1, 1, -1, 2)
    np.testing.assert_array_equal(got, x_np[:, :, [0, 0, 1, 1, 2, 2, 3, 3]][:, :, :, [0, 2]])
    op = out.block.ops[-1]
    assert op.type == "nearest_interp" and len(op.input("SizeTensor")) == 2 and op.attr("out_w") == 2

    def build_3d():
        x = fluid.data("x", [None, 1, 1, 2, 2])
        d = fluid.data("d", [1], dtype="int32")
        return fluid.layers.resize_trilinear(x, out_shape=[d, 2, 2])
    _, got = _resize_program(build_3d, x=np.ones((1, 1, 1, 2, 2), "float32"), d=np.array([3], "int32"))
    np.testing.assert_array_equal(got, np.ones((1, 1, 3, 2, 2)))


def test_image_resize_takes_a_scale_variable():
    x_np = np.arange(4, dtype="float32").reshape(1, 1, 2, 2)

    def build():
        x = fluid.data("x", [None, 1, 2, 2])
        scale = fluid.data("scale", [1], dtype="float32")
        return fluid.layers.resize_bilinear(x, scale=scale, align_corners=True)
    out, got = _resize_program(build, x=x_np, scale=np.array([1.5], "float32"))
    assert tuple(out.shape) == (-1, 1, -1, -1)
    np.testing.assert_allclose(got, [[[[0, 0.5, 1], [1, 1.5, 2], [2, 2.5, 3]]]])


def test_bilinear_interp_of_uint8_blends_in_float_and_truncates():
    x = np.array([[[[0, 255], [100, 1]]]], dtype=np.uint8)
    got = _run_op("bilinear_interp", {"X": x}, ["Out"], {"out_h": 1, "out_w": 3, "align_corners": True})["Out"]
    # row 0 only (ratio 0 for one output row): 0, 127.5, 255 -> truncated
    np.testing.assert_array_equal(got, [[[[0, 127, 255]]]])


def test_pad2d_with_a_paddings_input_takes_an_empty_paddings_attr():
    x = np.arange(4.0).reshape(1, 2, 2, 1)  # NHWC
    got = _run_op("pad2d", {"X": x, "Paddings": np.array([0, 1, 2, 0], "int32")}, ["Out"],
                  {"paddings": [], "mode": "constant", "pad_value": 9.0, "data_format": "NHWC"})["Out"]
    np.testing.assert_array_equal(got[0, :, :, 0], [[9, 9, 0, 1], [9, 9, 2, 3], [9, 9, 9, 9]])


def test_spp_pools_a_pyramid_of_bins_and_flattens_each_level():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    spp = lambda x, kind: _run_op("spp", {"X": x}, ["Out"], {"pyramid_height": 2, "pooling_type": kind})["Out"]
    np.testing.assert_array_equal(spp(x, "max"), [[15, 5, 7, 13, 15]])
    np.testing.assert_allclose(spp(x, "avg"), [[7.5, 2.5, 4.5, 10.5, 12.5]])
    # 3 x 3 in 2 x 2 bins: kernel 2, stride 2, padding (4 - 3 + 1) / 2 = 1: rows [0, 1) and [1, 3), exclusive
    x3 = np.arange(9.0).reshape(1, 1, 3, 3)
    np.testing.assert_allclose(spp(x3, "avg"), [[4, 0, 1.5, 4.5, 6]])
    from minifluid.testing import check_op
    rng = np.random.RandomState(5)
    for kind in ("max", "avg"):
        check_op("spp", {"X": rng.permutation(2 * 3 * 8 * 7).reshape(2, 3, 8, 7) * 0.1},
                 {"pyramid_height": 3, "pooling_type": kind})


def test_unpool_writes_each_value_where_its_index_points_and_routes_the_gradient_back():
    x = np.array([[[[5.0, 7.0], [13.0, 15.0]]]])
    indices = np.array([[[[5, 7], [13, 15]]]], "int32")  # 2x2 max pool positions in a 4x4 map
    attrs = {"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0]}
    got = _run_op("unpool", {"X": x, "Indices": indices}, ["Out"], attrs)["Out"]
    want = np.zeros(16)
    want[[5, 7, 13, 15]] = [5, 7, 13, 15]
    np.testing.assert_array_equal(got, want.reshape(1, 1, 4, 4))
    from minifluid.testing import check_op
    rng = np.random.RandomState(2)
    positions = np.stack([rng.permutation(25)[:4] for _ in range(6)]).reshape(2, 3, 2, 2).astype("int32")
    check_op("unpool", {"X": rng.randn(2, 3, 2, 2), "Indices": positions},
             {"ksize": [3, 3], "strides": [2, 2], "paddings": [0, 0]})  # a 5x5 output
    with pytest.raises(ValueError, match="outside the 4x4 output"):
        _run_op("unpool", {"X": x, "Indices": indices + 1}, ["Out"], attrs)


def test_conv_shift_is_a_circular_correlation_per_row():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    y = np.array([[1.0, 10.0, 100.0]])  # taps at offsets -1, 0, +1
    got = _run_op("conv_shift", {"X": x, "Y": y}, ["Out"], {})["Out"]
    np.testing.assert_array_equal(got, [[4 + 10 + 200, 1 + 20 + 300, 2 + 30 + 400, 3 + 40 + 100]])
    from minifluid.testing import check_op
    rng = np.random.RandomState(4)
    check_op("conv_shift", {"X": rng.randn(3, 7), "Y": rng.randn(3, 5)})
    with pytest.raises(ValueError, match="should be odd"):
        _run_op("conv_shift", {"X": x, "Y": np.ones((1, 2))}, ["Out"], {})


def test_global_adaptive_pooling_pools_one_window_per_pixel_as_fluid():
    """fluid sets the window to the whole input for global_pooling, and adaptive then asks for that many outputs."""
    from minifluid.testing import check_op
    rng = np.random.RandomState(6)
    x4, x5 = rng.randn(2, 3, 4, 5), rng.randn(2, 2, 3, 4, 2)
    for kind in ("max", "avg"):
        attrs = {"pooling_type": kind, "ksize": [2, 2], "global_pooling": True, "adaptive": True}
        out = check_op("pool2d", {"X": x4}, attrs, reference=lambda X: X)["Out"]
        assert out.shape == x4.shape
        check_op("pool3d", {"X": x5}, dict(attrs, ksize=[1, 2, 2]), reference=lambda X: X)
