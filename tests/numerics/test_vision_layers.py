"""group_norm / instance_norm and the channel-rearranging layers through Program + Executor: fluid 1.8's
signatures, parameters (names, shapes, ParamAttr handling), values against numpy, training, and fluid's
errors (the ops themselves are checked in tests/ops/vision_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
rng = np.random.RandomState(23)


def build_and_run(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return main, exe.run(main, feed=feed, fetch_list=fetch)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_norm_layers_take_fluids_signatures():
    e = inspect.Parameter.empty
    assert _signature(L.group_norm) == [("input", e), ("groups", e), ("epsilon", 1e-05), ("param_attr", None),
                                        ("bias_attr", None), ("act", None), ("data_layout", "NCHW"), ("name", None)]
    assert _signature(L.instance_norm) == [("input", e), ("epsilon", 1e-05), ("param_attr", None),
                                           ("bias_attr", None), ("name", None)]


def _group_normalised(x, groups, eps=1e-5):
    g = x.reshape(x.shape[0], groups, -1)
    return ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + eps)).reshape(x.shape)


def test_group_norm_parameters_follow_fluids_param_attr_rule_and_values_match_numpy():
    x = rng.randn(3, 6, 2, 2).astype("float32")

    def build():
        v = fluid.data("x", [None, 6, 2, 2])
        plain = L.group_norm(v, groups=3)
        named = L.group_norm(v, groups=2, param_attr=fluid.ParamAttr(name="gn_s"), bias_attr="gn_b", act="relu")
        return [plain, named]
    main, (plain, named) = build_and_run(build, {"x": x})
    params = {p.name: list(p.shape) for p in main.global_block().all_parameters()}
    assert params == {"gn_s": [6], "gn_b": [6]}  # the defaults create no parameters, as in fluid 1.8
    np.testing.assert_allclose(plain, _group_normalised(x, 3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(named, np.maximum(_group_normalised(x, 2), 0), rtol=1e-4, atol=1e-5)
    op = [o for o in main.global_block().ops if o.type == "group_norm"][0]
    stats = main.global_block().var(op.output("Mean")[0])
    assert list(stats.shape) == [-1, 3] and stats.stop_gradient


def test_group_norm_nhwc_matches_nchw():
    x = rng.randn(2, 4, 3, 8).astype("float64")

    def build():
        v = fluid.data("x", [None, 4, 3, 8], "float64")
        return [L.group_norm(v, groups=4, data_layout="NHWC")]
    _, (y,) = build_and_run(build, {"x": x})
    expected = _group_normalised(x.transpose(0, 3, 1, 2), 4).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-8)


def test_instance_norm_parameters_values_and_training():
    x = rng.randn(4, 3, 5, 5).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("x", [None, 3, 5, 5])
        y = L.instance_norm(L.conv2d(v, 3, 3, padding=1))
        plain = L.instance_norm(v, epsilon=1e-3)
        loss = L.mean(L.square(y - 0.5))
        fluid.optimizer.SGD(0.2).minimize(loss)
    params = {p.name: list(p.shape) for p in main.global_block().all_parameters()}
    assert params["instance_norm_0.w_0"] == [3] and params["instance_norm_0.b_0"] == [3]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    out = exe.run(main, feed={"x": x}, fetch_list=[plain])[0]
    g = x.reshape(4, 3, -1)
    expected = (g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-3)
    np.testing.assert_allclose(out, expected.reshape(x.shape), rtol=1e-4, atol=1e-5)
    losses = [float(exe.run(main, feed={"x": x}, fetch_list=[loss])[0]) for _ in range(15)]
    assert losses[-1] < losses[0] * 0.8  # only the bias can move the (zero-mean) output towards 0.5


def test_norm_layer_errors_are_fluids():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 6, 4, 4])
        with pytest.raises(ValueError, match=r"got wrong value: received NWHC but only NCHW or NHWC supported"):
            L.group_norm(x, 2, data_layout="NWHC")
        with pytest.raises(ValueError, match=r"Attr\(groups\) of Op\(group_norm\) must divide .*\[6\].*\[4\]"):
            L.group_norm(x, 4)
        with pytest.raises(ValueError, match=r"Attr\(groups\) of Op\(group_norm\) must be greater than or equal"):
            L.group_norm(x, 0)
        with pytest.raises(TypeError, match="The data type of 'input' in group_norm must be"):
            L.group_norm(fluid.data("i", [None, 4], "int64"), 2)
        unknown = fluid.data("u", [None, -1, 4, 4])
        assert list(L.group_norm(unknown, 2).shape) == [-1, -1, 4, 4]  # no parameters: channels may be unknown
        with pytest.raises(ValueError, match="group_norm: the channel dimension of the input must be known, got -1"):
            L.group_norm(unknown, 2, param_attr="s")
        with pytest.raises(AssertionError, match="bias_attr should not be False in instance_norm."):
            L.instance_norm(x, bias_attr=False)
        with pytest.raises(ValueError, match=r"the dimension of input X must be between 2 and 5.*\[-1, 2, 2, 2, 2, 2\]"):
            L.instance_norm(fluid.data("big", [None, 2, 2, 2, 2, 2]))


def test_rearranging_layers_take_fluids_signatures():
    e = inspect.Parameter.empty
    assert _signature(L.pixel_shuffle) == [("x", e), ("upscale_factor", e)]
    assert _signature(L.space_to_depth) == [("x", e), ("blocksize", e), ("name", None)]
    assert _signature(L.shuffle_channel) == [("x", e), ("group", e), ("name", None)]
    assert _signature(L.maxout) == [("x", e), ("groups", e), ("name", None), ("axis", 1)]
    assert _signature(L.affine_channel) == [("x", e), ("scale", None), ("bias", None), ("data_layout", "NCHW"),
                                            ("name", None), ("act", None)]
    assert _signature(L.pad_constant_like) == [("x", e), ("y", e), ("pad_value", 0.0), ("name", None)]
    assert _signature(L.crop) == _signature(L.crop_tensor) == [("x", e), ("shape", None), ("offsets", None),
                                                               ("name", None)]


def test_rearranging_layers_shapes_and_values():
    x = rng.randn(2, 8, 4, 6).astype("float32")

    def build():
        v = fluid.data("x", [None, 8, 4, 6])
        outs = [L.pixel_shuffle(v, 2), L.space_to_depth(v, 2), L.shuffle_channel(v, 4), L.maxout(v, 2),
                L.maxout(v, 3, axis=-1)]
        assert [list(o.shape) for o in outs] == [[-1, 2, 8, 12], [-1, 32, 2, 3], [-1, 8, 4, 6], [-1, 4, 4, 6],
                                                 [-1, 8, 4, 2]]
        return outs
    _, (ps, s2d, sc, mo, mo_last) = build_and_run(build, {"x": x})
    np.testing.assert_array_equal(ps, x.reshape(2, 2, 2, 2, 4, 6).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 8, 12))
    assert sorted(s2d.ravel()) == sorted(x.ravel())  # a permutation (its order: tests/ops/vision_cases.py)
    np.testing.assert_array_equal(sc[:, 1], x[:, 2])  # channel 2 = group 1's first goes to position 1
    np.testing.assert_array_equal(mo, x.reshape(2, 4, 2, 4, 6).max(2))
    np.testing.assert_array_equal(mo_last, x.reshape(2, 8, 4, 2, 3).max(4))


def test_affine_channel_trains_its_scale_and_bias_variables():
    x = rng.randn(8, 3, 2, 2).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        v = fluid.data("x", [None, 3, 2, 2])
        helper = L.LayerHelper("affine")
        scale = helper.create_parameter(fluid.ParamAttr(name="ac_scale", initializer=fluid.initializer.Constant(1.0)),
                                        [3], "float32")
        bias = helper.create_parameter(fluid.ParamAttr(name="ac_bias"), [3], "float32", is_bias=True)
        y = L.affine_channel(v, scale, bias, act="relu")
        only_bias = L.affine_channel(v, bias=bias)
        loss = L.mean(L.square(y - 2.0))
        fluid.optimizer.SGD(0.3).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    first, shifted = exe.run(main, feed={"x": x}, fetch_list=[loss, only_bias])
    np.testing.assert_allclose(shifted, x, rtol=1e-6)  # the bias starts at zero
    later = [float(exe.run(main, feed={"x": x}, fetch_list=[loss])[0]) for _ in range(30)]
    assert later[-1] < float(first) * 0.5


def test_pad_constant_like_and_crops():
    x = rng.randn(3, 4, 5).astype("float32")

    def build():
        big = fluid.data("big", [None, 4, 5])
        small = fluid.data("small", [None, 2, 3])
        offs = L.fill_constant([3], "int32", 1)
        corner = L.fill_constant([1], "int32", 2)
        return [L.pad_constant_like(big, small, pad_value=-1.0), L.crop(big, shape=small, offsets=[0, 1, 2]),
                L.crop(big, shape=[2, 2, 2], offsets=offs), L.crop_tensor(big, shape=[2, -1, 3], offsets=[1, 0, 2]),
                L.crop_tensor(big, shape=[-1, 2, corner], offsets=[0, corner, 1])]
    small = rng.randn(3, 2, 3).astype("float32")
    _, (padded, like, by_tensor, ct, mixed) = build_and_run(build, {"big": x, "small": small})
    expected = np.full((3, 4, 5), -1.0, "float32")
    expected[:, :2, :3] = small
    np.testing.assert_array_equal(padded, expected)
    np.testing.assert_array_equal(like, x[:, 1:3, 2:5])
    np.testing.assert_array_equal(by_tensor, x[1:3, 1:3, 1:3])
    np.testing.assert_array_equal(ct, x[1:3, 0:4, 2:5])
    np.testing.assert_array_equal(mixed, x[:, 2:4, 1:3])


def test_rearranging_layer_errors_are_fluids():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 6, 4, 4])
        with pytest.raises(TypeError, match="upscale factor must be int type"):
            L.pixel_shuffle(x, 2.0)
        with pytest.raises(ValueError, match=r"The square of upscale_factor\[2\] should divide the number of channel"):
            L.pixel_shuffle(x, 2)
        with pytest.raises(ValueError, match="blocksize must be a python Int"):
            L.space_to_depth(x, "2")
        with pytest.raises(ValueError, match=r"input channel \(6\) should be divisible by the square of"):
            L.space_to_depth(x, 2)
        with pytest.raises(TypeError, match="group must be int type"):
            L.shuffle_channel(x, None)
        with pytest.raises(ValueError, match=r"Attr\(axis\) should be 1 when data format is NCHW.*Received Attr"):
            L.maxout(x, 2, axis=2)
        with pytest.raises(ValueError, match=r"Attr\(groups\) of Op\(maxout\) must be positive and divide the "
                                             r"channels \(6\), but received 4"):
            L.maxout(x, 4)
        with pytest.raises(TypeError, match=r"The type of 'scale' in affine_channel must be"):
            L.affine_channel(x, scale=[1.0] * 6)
        with pytest.raises(ValueError, match=r"The size of X\[1\]\(6\) should be greater than or equal to the size"):
            L.pad_constant_like(x, fluid.data("y", [None, 7, 4, 4]))
        with pytest.raises(ValueError, match=r"should not be zero, but received: 0"):
            L.crop_tensor(x, shape=[1, 0, 2, 2])
        with pytest.raises(ValueError, match=r"should be greater or equal to zero, but received: -1"):
            L.crop_tensor(x, shape=[1, 2, 2, 2], offsets=[0, -1, 0, 0])
        with pytest.raises(ValueError, match=r"The number of elements \(3\) of attribute 'shape' for CropTensor"):
            L.crop_tensor(x, shape=[1, 2, 2])
