"""fluid.dygraph's Conv3D, Conv3DTranspose and SpectralNorm against loop-by-loop numpy references."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Conv3D, Conv3DTranspose, SpectralNorm, to_variable

X = np.random.RandomState(0).rand(2, 4, 5, 6, 7).astype("float32")


def _conv3d_ref(x, w, stride, pad, groups):
    xp = np.pad(x, ((0, 0), (0, 0)) + ((pad, pad),) * 3)
    per_group_out, per_group_in = w.shape[0] // groups, w.shape[1]
    k = w.shape[2]
    size = [(d + 2 * pad - k) // stride + 1 for d in x.shape[2:]]
    out = np.zeros((x.shape[0], w.shape[0], *size))
    for f in range(w.shape[0]):
        g = f // per_group_out
        for d in range(size[0]):
            for h in range(size[1]):
                for c in range(size[2]):
                    patch = xp[:, g * per_group_in:(g + 1) * per_group_in, d * stride:d * stride + k,
                               h * stride:h * stride + k, c * stride:c * stride + k]
                    out[:, f, d, h, c] = (patch * w[f]).sum(axis=(1, 2, 3, 4))
    return out


def test_conv3d_groups_stride_padding_bias_act():
    with fluid.dygraph.guard():
        conv = Conv3D(4, 6, 3, stride=2, padding=1, groups=2, act="relu",
                      bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.2)))
        assert conv.weight.shape == [6, 2, 3, 3, 3] and conv.bias.shape == [6]
        x = to_variable(X)
        x.stop_gradient = False
        out = conv(x)
        ref = np.maximum(_conv3d_ref(X, conv.weight.numpy(), 2, 1, 2) + 0.2, 0)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
        fluid.layers.reduce_sum(out).backward()
        assert x.gradient().shape == X.shape and conv.weight.gradient().shape == (6, 2, 3, 3, 3)
        with pytest.raises(ValueError, match="num_channels must be divisible by groups"):
            Conv3D(4, 6, 3, groups=3)
        with pytest.raises(AssertionError, match="param_attr should not be False"):
            Conv3D(4, 6, 3, param_attr=False)


def test_conv3d_transpose_scatters_each_voxel():
    with fluid.dygraph.guard():
        tconv = Conv3DTranspose(4, 2, 2, stride=2, bias_attr=False)
        assert tconv.weight.shape == [4, 2, 2, 2, 2] and tconv.bias is None
        out = tconv(to_variable(X))
        w = tconv.weight.numpy()
        ref = np.zeros((2, 2, 10, 12, 14))
        for i in range(5):
            for j in range(6):
                for k in range(7):
                    ref[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2, 2 * k:2 * k + 2] += np.einsum(
                        "nc,cokmq->nokmq", X[:, :, i, j, k], w)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
        biased = Conv3DTranspose(4, 2, 2, stride=2)  # fluid 1.8 makes this bias but never adds it; we add it
        biased.bias.set_value(np.array([1.0, -1.0], "float32"))
        biased.weight.set_value(w)
        np.testing.assert_allclose(biased(to_variable(X)).numpy(), ref + np.array([1.0, -1.0])[None, :, None, None,
                                                                                                 None], rtol=1e-5,
                                   atol=1e-6)


def test_spectral_norm_divides_by_the_largest_singular_value():
    w = np.random.RandomState(2).randn(6, 2, 3, 3).astype("float32")
    with fluid.dygraph.guard():
        # the two singular values are 8.16 and 7.44: 30 iterations from some random starts (1 in 40 global seeds)
        # stopped short of rtol 1e-4; 100 converge from every start tried (200 seeds)
        sn = SpectralNorm([6, 2, 3, 3], dim=1, power_iters=100)
        assert sn.weight_u.shape == [2] and sn.weight_v.shape == [54] and sn.weight_u.stop_gradient
        sigma = np.linalg.svd(np.moveaxis(w, 1, 0).reshape(2, -1), compute_uv=False)[0]
        np.testing.assert_allclose(sn(to_variable(w)).numpy(), w / sigma, rtol=1e-4)
