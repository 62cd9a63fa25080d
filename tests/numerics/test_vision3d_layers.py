"""conv3d, conv3d_transpose, pool3d and adaptive_pool3d through Program + Executor: fluid 1.8's signatures and
defaults, parameter names and shapes, output shapes for every padding form, the two layouts agreeing, argument
errors, and a small 3-D conv net whose loss falls (the ops are checked in tests/ops/conv3d_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
rng = np.random.RandomState(5)
E = inspect.Parameter.empty


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_signatures_are_fluids():
    assert _signature(L.conv3d) == [("input", E), ("num_filters", E), ("filter_size", E), ("stride", 1), ("padding", 0),
                                    ("dilation", 1), ("groups", None), ("param_attr", None), ("bias_attr", None),
                                    ("use_cudnn", True), ("act", None), ("name", None), ("data_format", "NCDHW")]
    assert _signature(L.conv3d_transpose) == [
        ("input", E), ("num_filters", E), ("output_size", None), ("filter_size", None), ("padding", 0), ("stride", 1),
        ("dilation", 1), ("groups", None), ("param_attr", None), ("bias_attr", None), ("use_cudnn", True),
        ("act", None), ("name", None), ("data_format", "NCDHW")]
    assert _signature(L.pool3d) == [("input", E), ("pool_size", -1), ("pool_type", "max"), ("pool_stride", 1),
                                    ("pool_padding", 0), ("global_pooling", False), ("use_cudnn", True),
                                    ("ceil_mode", False), ("name", None), ("exclusive", True),
                                    ("data_format", "NCDHW")]
    assert _signature(L.adaptive_pool3d) == [("input", E), ("pool_size", E), ("pool_type", "max"),
                                             ("require_index", False), ("name", None)]


def test_parameters_and_output_shapes_for_every_padding_form():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4, 6, 7, 8])
        outs = [L.conv3d(x, 5, 3), L.conv3d(x, 6, [3, 2, 1], padding=[1, 2, 0], stride=2, groups=2),
                L.conv3d(x, 2, 3, padding=[1, 0, 2, 2, 0, 1]), L.conv3d(x, 2, 3, padding="SAME", stride=2),
                L.conv3d(x, 2, 3, padding=[[0, 0], [0, 0], [1, 1], [0, 1], [2, 0]]), L.conv3d(x, 2, 3, padding="valid"),
                L.conv3d_transpose(x, 3, filter_size=3, stride=2, padding=1),
                L.conv3d_transpose(x, 3, output_size=[12, 14, 16], stride=2),
                L.pool3d(x, 2, "avg", 2), L.pool3d(x, 3, pool_stride=2, pool_padding=1, ceil_mode=True),
                L.pool3d(x, [2, 3, 3], pool_padding="SAME", pool_stride=[2, 3, 3]), L.pool3d(x, global_pooling=True),
                L.adaptive_pool3d(x, [2, 3, 5], "avg"), L.adaptive_pool3d(x, 4)]
    assert [list(o.shape) for o in outs] == [
        [-1, 5, 4, 5, 6], [-1, 6, 3, 5, 4], [-1, 2, 5, 9, 7], [-1, 2, 3, 4, 4], [-1, 2, 6, 6, 8], [-1, 2, 4, 5, 6],
        [-1, 3, 11, 13, 15], [-1, 3, 12, 14, 16], [-1, 4, 3, 3, 4], [-1, 4, 4, 4, 5], [-1, 4, 3, 3, 3],
        [-1, 4, 1, 1, 1], [-1, 4, 2, 3, 5], [-1, 4, 4, 4, 4]]
    params = {p.name: list(p.shape) for p in main.global_block().all_parameters()}
    assert params["conv3d_0.w_0"] == [5, 4, 3, 3, 3] and params["conv3d_0.b_0"] == [5]
    assert params["conv3d_1.w_0"] == [6, 2, 3, 2, 1]
    assert params["conv3d_transpose_0.w_0"] == [4, 3, 3, 3, 3] and params["conv3d_transpose_1.w_0"] == [4, 3, 2, 2, 2]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    got = exe.run(main, feed={"x": rng.randn(2, 4, 6, 7, 8).astype("float32")}, fetch_list=outs)
    assert [g.shape for g in got] == [tuple([2] + list(o.shape)[1:]) for o in outs]
    std = np.array(fluid.global_scope().find_var("conv3d_0.w_0").get_tensor()).std()
    assert 0.5 < std / (2.0 / (27 * 4)) ** 0.5 < 1.5  # fluid's Normal(0, sqrt(2 / (k^3 * C))) default


def test_the_two_layouts_agree():
    x = rng.randn(2, 3, 4, 5, 6).astype("float64")
    results = {}
    for fmt in ("NCDHW", "NDHWC"):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            shape = [None, 3, 4, 5, 6] if fmt == "NCDHW" else [None, 4, 5, 6, 3]
            v = fluid.data("x", shape, "float64")
            init = fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(
                np.arange(4 * 3 * 8, dtype="float64").reshape(4, 3, 2, 2, 2) / 50))
            h = L.conv3d(v, 4, 2, padding=[1, 0, 1], stride=[1, 2, 1], param_attr=init, data_format=fmt, act="relu")
            t = L.conv3d_transpose(h, 2, filter_size=2, stride=2, data_format=fmt,
                                   param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
            p = L.pool3d(t, 3, "avg", 2, pool_padding=1, data_format=fmt, exclusive=False)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        feed = x if fmt == "NCDHW" else x.transpose(0, 2, 3, 4, 1)
        out = exe.run(main, feed={"x": feed}, fetch_list=[h, t, p])
        results[fmt] = out if fmt == "NCDHW" else [o.transpose(0, 4, 1, 2, 3) for o in out]
    for a, b in zip(results["NCDHW"], results["NDHWC"]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_3d_conv_net_learns():
    """Which half of the volume (front or back) holds the bright cube: the loss must fall well below chance."""
    n = 48
    x = rng.rand(n, 1, 6, 6, 6).astype("float32") * 0.2
    y = rng.randint(0, 2, (n, 1)).astype("int64")
    for i in range(n):
        d = 0 if y[i, 0] == 0 else 3
        x[i, 0, d:d + 3, 1:4, 2:5] += 1.0
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup):
        v, label = fluid.data("x", [None, 1, 6, 6, 6]), fluid.data("y", [None, 1], "int64")
        h = L.conv3d(v, 4, 3, padding=1, act="relu")
        h = L.pool3d(h, 2, "max", 2)
        h = L.conv3d_transpose(h, 2, filter_size=2, stride=2, act="relu")
        h = L.adaptive_pool3d(h, [2, 1, 1], "avg")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 2), label))
        fluid.optimizer.Adam(0.05).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    losses = [float(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss])[0]) for _ in range(40)]
    assert losses[-1] < 0.3 < losses[0]


def test_argument_errors_name_what_is_wrong():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 4, 6, 6, 6])
        with pytest.raises(ValueError, match="Attr\\(data_format\\) should be 'NCDHW' or 'NDHWC'"):
            L.conv3d(x, 2, 3, data_format="NCHW")
        with pytest.raises(ValueError, match="divisible by Attr\\(groups\\)"):
            L.conv3d(x, 2, 3, groups=3)
        with pytest.raises(ValueError, match="Unknown padding: 'HALF'"):
            L.conv3d(x, 2, 3, padding="half")
        with pytest.raises(ValueError, match="Non-zero padding"):
            L.conv3d(x, 2, 3, padding=[[0, 1], [0, 0], [1, 1], [1, 1], [1, 1]])
        with pytest.raises(ValueError, match="output_size must be set when filter_size is None"):
            L.conv3d_transpose(x, 2)
        with pytest.raises(ValueError, match="When Attr\\(global_pooling\\) is False, Attr\\(pool_size\\) must be"):
            L.pool3d(x)
        with pytest.raises(ValueError, match="ceil_mode must be False"):
            L.pool3d(x, 2, pool_padding="VALID", ceil_mode=True)
        with pytest.raises(ValueError, match="Unknown Attr\\(pool_type\\): 'sum'"):
            L.pool3d(x, 2, "sum")
        with pytest.raises(ValueError, match="invalid setting 'require_index'"):
            L.adaptive_pool3d(x, 2, "avg", require_index=True)
        with pytest.raises(ValueError, match="5-D tensor"):
            L.pool3d(fluid.data("img", [None, 3, 8, 8]), 2)
        with pytest.raises(ValueError, match="output's size is expected to be greater than 0"):
            L.conv3d(x, 2, 7)
        with pytest.raises(ValueError, match="output_size of Op\\(ConvTransposeOp\\)"):
            L.conv3d_transpose(x, 2, output_size=[20, 12, 12], filter_size=2, stride=2)


def test_adaptive_max_pool3d_returns_fluids_mask_of_max_positions():
    x = rng.randn(2, 3, 5, 4, 6).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("x", [None, 3, 5, 4, 6])
        v.stop_gradient = False
        out, mask = L.adaptive_pool3d(v, [2, 3, 4], require_index=True)
        grad, = fluid.backward.gradients([L.reduce_sum(out)], [v])
    assert [op.type for op in main.global_block().ops][0] == "max_pool3d_with_index"
    assert list(out.shape) == list(mask.shape) == [-1, 3, 2, 3, 4] and mask.dtype == "int32"
    got, where, g = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x}, fetch_list=[out, mask, grad])
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, where.reshape(2, 3, -1), 2).reshape(got.shape), got)
    d0, d1 = np.arange(2) * 5 // 2, -(-(np.arange(2) + 1) * 5 // 2)  # depth windows [0, 3) and [2, 5): they overlap
    np.testing.assert_array_equal(got[:, :, 0, 0, 0], x[:, :, d0[0]:d1[0], 0:2, 0:2].max(axis=(2, 3, 4)))
    counts = np.bincount((np.arange(6).reshape(2, 3, 1) * 120 + where.reshape(2, 3, -1)).reshape(-1), minlength=720)
    np.testing.assert_array_equal(g, counts.reshape(x.shape))  # each max gets one 1 per window it wins
