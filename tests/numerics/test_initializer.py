"""Initializers put their ops in the startup program with the right shapes, attributes and statistics."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import initializer as init


def _startup_ops(startup):
    return {op.output("Out")[0]: op for op in startup.global_block().ops}


def _init_value(initializer, shape, seed=0, dtype="float32"):
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = seed
    with fluid.program_guard(main, startup):
        param = fluid.layers.LayerHelper("p").create_parameter(
            fluid.ParamAttr(name="p", initializer=initializer), shape, dtype)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    assert main.global_block().var("p") is param and not _startup_ops(main)
    return fluid.global_scope().find_value("p"), _startup_ops(startup)["p"]


def test_layer_defaults_xavier_weights_zero_bias_in_the_startup_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 30])
        fluid.layers.fc(x, 20)
        img = fluid.data("img", [None, 3, 8, 8])
        fluid.layers.conv2d(img, num_filters=4, filter_size=5)
    assert not any(op.type in ("uniform_random", "gaussian_random", "fill_constant")
                   for op in main.global_block().ops)
    ops = _startup_ops(startup)
    w = ops["fc_0.w_0"]
    assert w.type == "uniform_random" and w.attr("shape") == [30, 20]
    assert w.attr("max") == pytest.approx(np.sqrt(6.0 / 50)) and w.attr("min") == -w.attr("max")
    b = ops["fc_0.b_0"]
    assert b.type == "fill_constant" and b.attr("shape") == [20] and b.attr("value") == 0.0
    conv = ops["conv2d_0.w_0"]
    assert conv.type == "gaussian_random" and conv.attr("shape") == [4, 3, 5, 5]
    assert conv.attr("std") == pytest.approx(np.sqrt(2.0 / (5 * 5 * 3))) and conv.attr("mean") == 0.0
    assert ops["conv2d_0.b_0"].attr("shape") == [4]
    assert startup.global_block().var("fc_0.w_0").persistable


@pytest.mark.parametrize("initializer, check", [
    (init.Constant(0.25), lambda v: np.all(v == 0.25)),
    (init.Uniform(-0.5, 1.5), lambda v: v.min() >= -0.5 and v.max() < 1.5 and abs(v.mean() - 0.5) < 0.02),
    (init.Normal(1.0, 2.0), lambda v: abs(v.mean() - 1.0) < 0.03 and abs(v.std() - 2.0) < 0.03),
    (init.TruncatedNormal(0.0, 0.5), lambda v: np.abs(v).max() <= 1.0 and 0.4 < v.std() < 0.47),
    (init.Xavier(uniform=False), lambda v: abs(v.std() - np.sqrt(2.0 / 500)) < 0.002),
    (init.MSRA(), lambda v: np.abs(v).max() <= np.sqrt(6.0 / 200) and abs(v.std() - np.sqrt(2.0 / 200)) < 0.002),
    (init.MSRA(uniform=False), lambda v: abs(v.std() - np.sqrt(2.0 / 200)) < 0.002),
])
def test_statistics(initializer, check):
    value, _ = _init_value(initializer, [200, 300], seed=5)
    assert value.shape == (200, 300) and value.dtype == np.float32
    assert check(value)


def test_seed_zero_uses_the_program_seed_and_is_reproducible():
    a, op = _init_value(init.Xavier(), [10, 10], seed=42)
    b, _ = _init_value(init.Xavier(), [10, 10], seed=42)
    c, _ = _init_value(init.Xavier(), [10, 10], seed=43)
    own, own_op = _init_value(init.Xavier(seed=7), [10, 10], seed=42)
    assert op.attr("seed") == 42 and own_op.attr("seed") == 7
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(a, own)


def test_numpy_array_initializer_and_aliases():
    array = np.arange(6, dtype="float64").reshape(2, 3) / 7
    value, op = _init_value(init.NumpyArrayInitializer(array), [2, 3], dtype="float64")
    assert op.type == "assign_value"
    np.testing.assert_array_equal(value, array)
    ints, _ = _init_value(init.NumpyArrayInitializer(np.array([3, -1], dtype="int64")), [2], dtype="int64")
    assert ints.dtype == np.int64 and ints.tolist() == [3, -1]
    with pytest.raises(ValueError, match="does not match"):
        _init_value(init.NumpyArrayInitializer(array), [3, 2])
    assert init.XavierInitializer is init.Xavier and init.ConstantInitializer is init.Constant
    assert init.MSRAInitializer is init.MSRA and init.NormalInitializer is init.Normal


def test_param_attr_overrides_and_names():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name="my_w", initializer=init.Constant(0.5),
                                                          learning_rate=2.0, trainable=False),
                        bias_attr=False)
        fluid.layers.fc(x, 3, param_attr=init.Normal(0.0, 0.1), bias_attr="my_b")
    params = {p.name: p for p in main.all_parameters()}
    assert list(params) == ["my_w", "fc_1.w_0", "my_b"]
    assert params["my_w"].optimize_attr["learning_rate"] == 2.0 and not params["my_w"].trainable
    ops = _startup_ops(startup)
    assert ops["my_w"].type == "fill_constant" and ops["fc_1.w_0"].type == "gaussian_random"
    assert ops["my_b"].type == "fill_constant"
    with pytest.raises(TypeError):
        fluid.ParamAttr(initializer="xavier")
