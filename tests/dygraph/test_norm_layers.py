"""fluid.dygraph.GroupNorm / InstanceNorm: fluid 1.8's constructor arguments and parameters, values against
numpy, gradients through the eager tape (the ops: tests/ops/vision_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import GroupNorm, InstanceNorm

rng = np.random.RandomState(3)


def _normalised(x, groups, eps=1e-5):
    g = x.reshape(x.shape[0], groups, -1)
    return ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + eps)).reshape(x.shape)


def test_constructors_take_fluids_arguments():
    e = inspect.Parameter.empty
    assert [(p.name, p.default) for p in inspect.signature(GroupNorm).parameters.values()] == [
        ("channels", e), ("groups", e), ("epsilon", 1e-05), ("param_attr", None), ("bias_attr", None), ("act", None),
        ("data_layout", "NCHW"), ("dtype", "float32")]
    assert [(p.name, p.default) for p in inspect.signature(InstanceNorm).parameters.values()] == [
        ("num_channels", e), ("epsilon", 1e-05), ("param_attr", None), ("bias_attr", None), ("dtype", "float32")]
    assert fluid.GroupNorm is GroupNorm and fluid.InstanceNorm is InstanceNorm


def test_group_norm_parameters_values_and_gradients():
    x = rng.randn(2, 6, 3, 3).astype("float32")
    with fluid.dygraph.guard():
        plain = GroupNorm(6, 3)
        assert plain.weight is None and plain.bias is None and not plain.parameters()  # as fluid 1.8's
        np.testing.assert_allclose(plain(fluid.dygraph.to_variable(x)).numpy(), _normalised(x, 3), rtol=1e-4,
                                   atol=1e-5)
        gn = GroupNorm(6, 2, param_attr=fluid.ParamAttr(), bias_attr=fluid.ParamAttr(), act="relu")
        assert [list(p.shape) for p in gn.parameters()] == [[6], [6]]
        out = gn(fluid.dygraph.to_variable(x))
        np.testing.assert_allclose(out.numpy(), np.maximum(_normalised(x, 2), 0), rtol=1e-4, atol=1e-5)
        fluid.layers.reduce_sum(out).backward()
        np.testing.assert_allclose(gn.bias.gradient(), (_normalised(x, 2) > 0).sum(axis=(0, 2, 3)), rtol=1e-5)
        with pytest.raises(ValueError, match="unsupported data layout:NHWC"):
            GroupNorm(6, 2, data_layout="NHWC")


def test_instance_norm_parameters_values_and_gradients():
    x = rng.randn(3, 2, 4).astype("float32")
    with fluid.dygraph.guard():
        inorm = InstanceNorm(2, epsilon=1e-3)
        assert [list(p.shape) for p in inorm.parameters()] == [[2], [2]]
        out = inorm(fluid.dygraph.to_variable(x))
        np.testing.assert_allclose(out.numpy(), _normalised(x, 2, 1e-3), rtol=1e-4, atol=1e-5)
        fluid.layers.reduce_sum(out * out).backward()
        np.testing.assert_allclose(inorm.scale.gradient(), 2 * (_normalised(x, 2, 1e-3) ** 2).sum(axis=(0, 2)),
                                   rtol=1e-4)
        with pytest.raises(AssertionError, match="bias_attr should not be False in InstanceNorm."):
            InstanceNorm(2, bias_attr=False)
