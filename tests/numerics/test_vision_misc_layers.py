"""The layers of layers/vision_misc.py through Program + Executor: fluid 1.8's signatures and defaults, output
shapes and dtypes, values against numpy, gradients reaching parameters, and fluid's argument errors (the ops
themselves are checked in tests/ops/vision_misc_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
rng = np.random.RandomState(41)
E = inspect.Parameter.empty


def run(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return main, fetch, exe.run(main, feed=feed, fetch_list=fetch)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_fluids():
    assert _signature(L.mish) == [("x", E), ("threshold", 20), ("name", None)]
    assert _signature(L.unfold) == [("x", E), ("kernel_sizes", E), ("strides", 1), ("paddings", 0), ("dilations", 1),
                                    ("name", None)]
    assert _signature(L.temporal_shift) == [("x", E), ("seg_num", E), ("shift_ratio", 0.25), ("name", None)]
    assert _signature(L.fsp_matrix) == [("x", E), ("y", E)]
    assert _signature(L.bilinear_tensor_product) == [("x", E), ("y", E), ("size", E), ("act", None), ("name", None),
                                                     ("param_attr", None), ("bias_attr", None)]
    assert _signature(L.sigmoid_focal_loss) == [("x", E), ("label", E), ("fg_num", E), ("gamma", 2.0),
                                                ("alpha", 0.25)]
    assert _signature(L.affine_grid) == [("theta", E), ("out_shape", E), ("name", None)]
    assert _signature(L.grid_sampler) == [("x", E), ("grid", E), ("name", None)]
    assert _signature(L.interpolate) == _signature(L.image_resize)
    assert _signature(L.resize_trilinear) == [("input", E), ("out_shape", None), ("scale", None), ("name", None),
                                              ("actual_shape", None), ("align_corners", True), ("align_mode", 1),
                                              ("data_format", "NCDHW")]


def test_mish_values_shape_and_dtype():
    x = (rng.randn(4, 5) * 4).astype("float32")

    def build():
        v = fluid.data("x", [None, 5])
        return [L.mish(v), L.mish(v, threshold=1.0)]
    _, (y, cut), (got, got_cut) = run(build, {"x": x})
    assert y.shape == (-1, 5) and y.dtype == "float32" and got.dtype == np.float32
    np.testing.assert_allclose(got, x * np.tanh(np.log1p(np.exp(x))), rtol=1e-5, atol=1e-6)
    sp = np.where(x > 1, x, np.where(x < -1, np.exp(x), np.log1p(np.exp(x))))
    np.testing.assert_allclose(got_cut, x * np.tanh(sp), rtol=1e-5, atol=1e-6)


def test_unfold_shapes_and_values_follow_paddings_forms():
    x = rng.randn(2, 3, 6, 5).astype("float64")

    def build():
        v = fluid.data("x", [None, 3, 6, 5], "float64")
        return [L.unfold(v, 3), L.unfold(v, [2, 3], strides=2, paddings=[1, 2]),
                L.unfold(v, 2, paddings=[1, 0, 0, 2], dilations=[2, 1])]
    _, outs, got = run(build, {"x": x})
    assert [list(o.shape) for o in outs] == [[-1, 27, 12], [-1, 18, 16], [-1, 12, 30]]
    assert [g.shape for g in got] == [(2, 27, 12), (2, 18, 16), (2, 12, 30)]
    # the default case against a direct slice: column (c, i, j), row oh * 3 + ow
    for c, i, j, oh, ow in ((0, 0, 0, 0, 0), (2, 1, 2, 3, 1), (1, 2, 1, 2, 2)):
        assert got[0][1, (c * 3 + i) * 3 + j, oh * 3 + ow] == x[1, c, oh + i, ow + j]
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)))  # [h, w] paddings pad both sides
    assert got[1][0, (2 * 2 + 1) * 3 + 2, 3 * 4 + 2] == padded[0, 2, 3 * 2 + 1, 2 * 2 + 2]


def test_temporal_shift_and_fsp_values():
    x = rng.randn(4, 8, 2, 2).astype("float32")
    y = rng.randn(4, 3, 2, 2).astype("float32")

    def build():
        a, b = fluid.data("x", [None, 8, 2, 2]), fluid.data("y", [None, 3, 2, 2])
        return [L.temporal_shift(a, seg_num=2), L.fsp_matrix(a, b)]
    _, (ts, fsp), (got_ts, got_fsp) = run(build, {"x": x, "y": y})
    assert list(ts.shape) == [-1, 8, 2, 2] and list(fsp.shape) == [-1, 8, 3]
    clips = x.reshape(2, 2, 8, 2, 2)
    want = np.zeros_like(clips)
    want[:, 1, :2] = clips[:, 0, :2]  # channels [0, 2): from the previous segment
    want[:, 0, 2:4] = clips[:, 1, 2:4]  # channels [2, 4): from the next one
    want[:, :, 4:] = clips[:, :, 4:]
    np.testing.assert_array_equal(got_ts, want.reshape(x.shape))
    np.testing.assert_allclose(got_fsp, np.einsum("nahw,nbhw->nab", x, y) / 4, rtol=1e-5, atol=1e-6)


def test_gradients_flow_through_every_layer_into_a_conv():
    x = rng.randn(4, 2, 5, 5).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("x", [None, 2, 5, 5])
        feat = L.mish(L.conv2d(v, 4, 3, padding=1))
        shifted = L.temporal_shift(feat, seg_num=2, shift_ratio=0.25)
        loss = L.mean(L.square(L.unfold(shifted, 2))) + L.mean(L.fsp_matrix(feat, shifted))
        fluid.optimizer.SGD(0.05).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    losses = [float(exe.run(main, feed={"x": x}, fetch_list=[loss])[0]) for _ in range(5)]
    assert losses[-1] < losses[0]


def test_bilinear_tensor_product_parameters_values_and_training():
    x, y = rng.randn(5, 3).astype("float32"), rng.randn(5, 4).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a, b = fluid.data("x", [None, 3]), fluid.data("y", [None, 4])
        out = L.bilinear_tensor_product(a, b, 6, act="tanh")
        plain = L.bilinear_tensor_product(a, b, 2, param_attr=fluid.ParamAttr(name="btp_w"), bias_attr=False)
        loss = L.mean(L.square(out - 0.3)) + L.mean(plain)
        fluid.optimizer.SGD(0.5).minimize(loss)
    params = {p.name: list(p.shape) for p in main.global_block().all_parameters()}
    assert params == {"bilinear_tensor_product_0.w_0": [6, 3, 4], "bilinear_tensor_product_0.b_0": [1, 6],
                      "btp_w": [2, 3, 4]}
    assert list(out.shape) == [-1, 6] and out.dtype == "float32"
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    scope = fluid.global_scope()
    w = np.array(scope.find_var("bilinear_tensor_product_0.w_0").get_tensor()).copy()
    bias = np.array(scope.find_var("bilinear_tensor_product_0.b_0").get_tensor()).copy()
    first, got = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss, out])
    np.testing.assert_allclose(got, np.tanh(np.einsum("ni,kij,nj->nk", x, w, y) + bias), rtol=1e-5, atol=1e-6)
    for _ in range(5):
        last, = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss])
    assert float(last) < float(first)


def test_sigmoid_focal_loss_values_and_gradient_reach_the_logits():
    x = rng.randn(6, 4).astype("float32")
    label = np.array([[1], [0], [4], [-1], [2], [2]], dtype="int32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        feat = fluid.data("x", [None, 4])
        lab = fluid.data("label", [None, 1], "int32")
        fg = L.fill_constant([1], "int32", 3)
        logits = L.fc(feat, 4)
        loss = L.sigmoid_focal_loss(logits, lab, fg, gamma=2.0, alpha=0.25)
        total = L.reduce_sum(loss)
        fluid.optimizer.SGD(0.5).minimize(total)
    assert list(loss.shape) == [-1, 4] and loss.dtype == "float32"
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    z, got = exe.run(main, feed={"x": x, "label": label}, fetch_list=[logits, loss])
    p = 1 / (1 + np.exp(-z))
    pos = label == np.arange(1, 5)
    neg = (label != -1) & ~pos
    want = -0.25 / 3 * pos * (1 - p) ** 2 * np.log(p) - 0.75 / 3 * neg * p ** 2 * np.log(1 - p)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert not got[3].any()  # label -1: ignored
    losses = [float(exe.run(main, feed={"x": x, "label": label}, fetch_list=[total])[0]) for _ in range(5)]
    assert losses[-1] < losses[0]


def test_spatial_transformer_shapes_values_and_training():
    """affine_grid + grid_sampler as a spatial transformer: the identity theta reads the image back, a shift
    by one pixel moves it (zeros coming in), and the theta predicted by an fc layer (from a fixed start off
    the identity) trains towards reading the image back."""
    img = np.random.RandomState(5).randn(2, 3, 4, 5).astype("float32")
    shift = np.array([[1, 0, 2 / 4], [0, 1, 0]], dtype="float32")  # x + 2/(W-1): one pixel to the right
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3, 4, 5])
        theta = fluid.data("theta", [None, 2, 3])
        grid = L.affine_grid(theta, [2, 3, 4, 5])
        grid_t = L.affine_grid(theta, L.fill_constant([4], "int32", 4))
        moved = L.grid_sampler(x, grid)
        start = fluid.initializer.NumpyArrayInitializer(np.array([[0.9, 0.05, 0.05, -0.05, 0.95, 0.0]], "float32"))
        ones = L.fill_constant_batch_size_like(x, [-1, 1], "float32", 1.0)
        learned = L.reshape(L.fc(ones, 6, param_attr=fluid.ParamAttr(initializer=start), bias_attr=False), [-1, 2, 3])
        out = L.grid_sampler(x, L.affine_grid(learned, [2, 3, 4, 5]))
        loss = L.mean(L.square(out - x))
        fluid.optimizer.SGD(0.05).minimize(loss)
    assert list(grid.shape) == [-1, 4, 5, 2] and list(grid_t.shape) == [-1, -1, -1, 2]
    assert list(moved.shape) == [-1, 3, 4, 5] and moved.dtype == "float32"
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    ident = np.tile(np.array([[1, 0, 0], [0, 1, 0]], "float32"), (2, 1, 1))
    feed = {"x": img, "theta": ident}
    got, got_t = exe.run(main, feed=feed, fetch_list=[moved, grid_t])
    np.testing.assert_allclose(got, img, rtol=1e-5, atol=1e-5)
    assert got_t.shape == (2, 4, 4, 2) and np.allclose(got_t[0, 0, :, 0], [-1, -1 / 3, 1 / 3, 1])
    shifted, = exe.run(main, feed={"x": img, "theta": np.stack([shift, shift])}, fetch_list=[moved])
    np.testing.assert_allclose(shifted[..., :-1], img[..., 1:], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(shifted[..., -1], 0, atol=1e-6)
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0]) for _ in range(5)]
    assert losses[-1] < losses[0], losses


def test_resize_trilinear_and_interpolate_shapes_values_and_training():
    """resize_trilinear, interpolate (also BICUBIC: on aligned corners an integer source position reads the
    pixel itself) and their gradient."""
    vol = rng.randn(2, 3, 2, 3, 4).astype("float32")
    img = rng.randn(2, 3, 4, 4).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("v", [None, 3, 2, 3, 4])
        x = fluid.data("x", [None, 3, 4, 4])
        up = L.resize_trilinear(v, out_shape=[3, 5, 7])
        by_scale = L.interpolate(v, scale=2.0, resample="TRILINEAR", data_format="NCDHW")
        ndhwc = L.resize_trilinear(L.transpose(v, [0, 2, 3, 4, 1]), out_shape=[3, 5, 7], data_format="NDHWC")
        shape_t = L.resize_trilinear(v, out_shape=L.fill_constant([3], "int32", 4))
        flat = L.interpolate(x, out_shape=[6, 6], align_corners=False)
        cubic = L.interpolate(x, out_shape=[7, 7], resample="BICUBIC")
        same = L.image_resize(x, out_shape=[6, 6], align_corners=False)
        gain = L.create_parameter([1, 3, 1, 1, 1], "float32", default_initializer=fluid.initializer.Constant(0.5))
        loss = L.mean(L.square(L.resize_trilinear(v * gain, scale=1.5) - 1.0))
        fluid.optimizer.SGD(0.1).minimize(loss)
    assert [list(o.shape) for o in (up, by_scale, ndhwc, shape_t)] == [[-1, 3, 3, 5, 7], [-1, 3, 4, 6, 8],
                                                                      [-1, 3, 5, 7, 3], [-1, 3, -1, -1, -1]]
    types = [op.type for op in main.global_block().ops]
    assert types.count("trilinear_interp") == 5 and types.count("bilinear_interp") == 2
    assert types.count("bicubic_interp") == 1 and list(cubic.shape) == [-1, 3, 7, 7]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got = exe.run(main, feed={"v": vol, "x": img}, fetch_list=[up, by_scale, ndhwc, shape_t, flat, same, cubic])
    assert [g.shape for g in got[:4]] == [(2, 3, 3, 5, 7), (2, 3, 4, 6, 8), (2, 3, 5, 7, 3), (2, 3, 4, 4, 4)]
    np.testing.assert_allclose(got[2], got[0].transpose(0, 2, 3, 4, 1), rtol=1e-6)
    np.testing.assert_array_equal(got[4], got[5])
    np.testing.assert_allclose(got[6][:, :, ::2, ::2], img, rtol=1e-5, atol=1e-6)  # 4 -> 7: rows 0, 2, 4, 6 are 0..3
    # aligned corners: the 8 corner voxels are the input's, the centre of D is the mean of its two slices
    np.testing.assert_allclose(got[0][:, :, ::2, ::4, ::6], vol[:, :, :, ::2, ::3], rtol=1e-6)
    np.testing.assert_allclose(got[0][:, :, 1, 0, 0], vol[:, :, :, 0, 0].mean(axis=2), rtol=1e-5, atol=1e-6)
    losses = [float(exe.run(main, feed={"v": vol, "x": img}, fetch_list=[loss])[0]) for _ in range(4)]
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("call, error, message", [
    (lambda v: L.mish(v, threshold=0), AssertionError, "threshold of mish should be greater than 0, but got 0"),
    (lambda v: L.mish(v, threshold="1"), TypeError, "The type of 'threshold' in mish must be"),
    (lambda v: L.unfold(v, [2, 2, 2]), AssertionError, "kernel_sizes should either be an integer or a list of two"),
    (lambda v: L.unfold(v, 2, paddings=[1, 2, 3]), ValueError, "paddings should either be an integer or a list of 2"),
    (lambda v: L.unfold(v, 2, paddings=(1, 1)), ValueError, "Unexpected type of paddings"),
    (lambda v: L.unfold(v, 7), ValueError,
     r"filter_size\(7\), dilation\(1\) and stride\(1\), the output size is less than 0, please check again. "
     r"Input_size:4"),
    (lambda v: L.temporal_shift(v, 2.0), TypeError, "The type of 'seg_num' in temporal_shift must be"),
    (lambda v: L.temporal_shift(v, 2, shift_ratio=0.5), ValueError, r"Attr\(shift_ratio\) should be less than 0.5"),
    (lambda v: L.temporal_shift(v, 4), ValueError, r"dimension\[0\] should be divided exactly by Attr\(seg_num\)"),
    (lambda v: L.fsp_matrix(v, L.unsqueeze(v, [0])), ValueError, r"The Input\(Y\) must have shape"),
    (lambda v: L.fsp_matrix(v, L.transpose(v, [0, 1, 3, 2])), ValueError, r"should have the same height"),
    (lambda v: L.bilinear_tensor_product(v, v, 2), ValueError, r"The input\(X\) must be a 2D Tensor."),
    (lambda v: L.resize_trilinear(v, [2, 3, 4]), ValueError, "'TRILINEAR'only support 5-D tensor."),
    (lambda v: L.resize_trilinear(L.unsqueeze(v, [0]), [2, 3]), ValueError,
     "out_shape length should be 3 for input 5-D tensor."),
    (lambda v: L.resize_trilinear(L.unsqueeze(v, [0]), [2, 3, 4], data_format="NCHW"), ValueError,
     "only `NCDHW` or `NDHWC` supported for 5-D input."),
    (lambda v: L.interpolate(v, [2, 3], resample="LINEAR"), ValueError,
     "The 'resample' of image_resize can only be 'BILINEAR', 'TRILINEAR',  'BICUBIC' or 'NEAREST' currently."),
    (lambda v: L.interpolate(L.unsqueeze(v, [0]), [2, 3]), ValueError,
     "'BILINEAR', 'BICUBIC' and 'NEAREST' only support 4-D tensor."),
    (lambda v: L.image_resize(v, [2, 3], resample="BICUBIC"), ValueError,
     "The 'resample' of image_resize can only be 'BILINEAR', 'TRILINEAR', or 'NEAREST' currently."),
    (lambda v: L.affine_grid(L.reshape(v, [6, 3, 20]), [6, 3, 4, 5]), ValueError,
     r"The second dimesion of input 'theta' in AffineGridOp should be 2. But received second dimesion=\[3\]"),
    (lambda v: L.affine_grid(L.reshape(v, [60, 2, 3]), 5), ValueError, "The out_shape should be a list, tuple or"),
    (lambda v: L.affine_grid(L.reshape(v, [60, 2, 3]), [4, 5]), ValueError,
     r"The size of attribute 'output_shape' in AffineGridOp should be 4. But received output_shape's size=\[2\]"),
    (lambda v: L.grid_sampler(v, L.reshape(v, [6, 5, 4, 3])), ValueError,
     r"Input\(Grid\) dimension\[3\] should be 2, but received 3"),
    (lambda v: L.grid_sampler(v, L.reshape(v, [6, 6, 5, 2])), ValueError,
     r"Input\(X\) dims\[2\] and Input\(Grid\) dims\[1\] should be equal, but received X dimension\[2\]\(4\) != "
     r"Grid dimension\[1\]\(6\)"),
    (lambda v: L.sigmoid_focal_loss(L.reshape(v, [6, 60]), L.fill_constant([6, 2], "int32", 1),
                                    L.fill_constant([1], "int32", 1)), ValueError,
     r"The last dimension of Input\(Label\) should be 1, but received Label shape is:\[6, 2\]"),
    (lambda v: L.sigmoid_focal_loss(L.reshape(v, [6, 60]), L.fill_constant([6, 1], "int64", 1),
                                    L.fill_constant([1], "int32", 1)), TypeError,
     r"The data type of 'label' in sigmoid_focal_loss must be \['int32'\]"),
])
def test_argument_errors_are_fluids(call, error, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        v = fluid.data("x", [6, 3, 4, 5])
        with pytest.raises(error, match=message):
            call(v)


def test_float_only_inputs():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        v = fluid.data("x", [2, 3, 4, 5], "int64")
        for call in (L.mish, lambda a: L.unfold(a, 2), lambda a: L.temporal_shift(a, 2), lambda a: L.fsp_matrix(a, a)):
            with pytest.raises(TypeError, match=r"The data type of '(x|x)' in \w+ must be \['float32', 'float64'\]"):
                call(v)
