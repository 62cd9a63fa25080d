"""Kernels give the same values whatever the memory order of their input: a conv/pool/batch_norm output is
an NCHW view of channels-last memory (NOTE [ Channels-last inside the kernels ] in ops/im2col.py), which
takes ChannelView's fast path (NOTE [ Per-channel broadcasts on channels-last memory ] in ops/channels.py);
plain NCHW arrays take the broadcasting path that check_op verifies against central differences."""
import numpy as np
import pytest

from minifluid.ops.channels import ChannelView
from minifluid.ops.registry import get_op_spec


def _channels_last(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def test_channel_view_takes_the_fast_path_only_where_channels_are_innermost():
    x = np.zeros((2, 3, 4, 5))
    assert ChannelView(_channels_last(x), 1).perm is not None
    assert ChannelView(x, 1).perm is None  # plain NCHW: broadcast along H*W-long rows instead
    assert ChannelView(x.transpose(0, 2, 3, 1), 3).perm is None  # a non-contiguous NHWC view
    assert ChannelView(np.zeros((6, 3)), 1).perm is not None


@pytest.mark.parametrize("attrs", [{}, {"is_test": True}, {"use_global_stats": True}])
def test_batch_norm_on_channels_last_memory_matches_plain_nchw(attrs):
    spec = get_op_spec("batch_norm")
    attrs = dict(spec.attrs, **attrs)
    rng = np.random.RandomState(0)
    x = rng.randn(4, 3, 5, 6) * 2 + 1
    stats = rng.randn(3), rng.randn(3), rng.randn(3), rng.rand(3) + 0.5
    dy = rng.randn(*x.shape)
    results = []
    for xin, dyin in ((x, dy), (_channels_last(x), _channels_last(dy)), (_channels_last(x), dy)):
        outs = spec.kernel(attrs, xin, *stats, None)
        grads = spec.grad(attrs, (xin,) + stats + (None,), outs, (dyin,) + (None,) * 5, (True, True, True) + (False,) * 3)
        results.append([np.asarray(a) for a in outs[:5] + grads[:3]])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    assert not results[1][0].flags.c_contiguous  # the output keeps its input's channels-last memory


@pytest.mark.parametrize("axis", [1, -1])
def test_a_per_channel_bias_on_channels_last_memory_matches_plain_nchw(axis):
    """elementwise_add of a [C] bias (a conv's) adds and sums over long rows of channels-last memory."""
    spec = get_op_spec("elementwise_add")
    rng = np.random.RandomState(0)
    x = rng.randn(8, 6, 10, 12) if axis == 1 else rng.randn(8, 10, 12, 6)
    y, dout = rng.randn(6), rng.randn(*x.shape)
    attrs = dict(spec.attrs, axis=axis)
    results = []
    for xin, din in ((x, dout), (_channels_last(x), _channels_last(dout))):
        out = spec.kernel(attrs, xin, y)
        dx, dy = spec.grad(attrs, (xin, y), (out,), (din,), (True, True))
        results.append((out, dx, dy))
        assert out.strides == xin.strides  # the sum keeps x's memory order
    bias = y.reshape(1, 6, 1, 1) if axis == 1 else y
    np.testing.assert_allclose(results[1][0], x + bias, rtol=1e-12)
    np.testing.assert_allclose(results[1][2], dout.sum(axis=(0, 2, 3) if axis == 1 else (0, 1, 2)), rtol=1e-12)
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pooling_type", ["avg", "max"])
def test_a_global_pool_gradient_keeps_its_inputs_channels_last_memory(pooling_type):
    """The gradient of a global pool over a conv's output comes back in that output's channels-last memory, so
    the relu_grad it meets next runs on its block path, not on mixed memory orders."""
    spec = get_op_spec("pool2d")
    attrs = dict(spec.attrs, pooling_type=pooling_type, global_pooling=True)
    rng = np.random.RandomState(0)
    x = _channels_last(rng.randn(3, 4, 5, 6))
    out = spec.kernel(attrs, x)
    dout = rng.randn(*out.shape)
    dx = spec.grad(attrs, (x,), (out,), (dout,), (True,))[0]
    assert dx.strides == x.strides
    if pooling_type == "avg":
        np.testing.assert_allclose(dx, np.broadcast_to(dout / 30, x.shape), rtol=1e-12)
    else:
        np.testing.assert_allclose(dx.sum(axis=(2, 3)), dout[:, :, 0, 0], rtol=1e-12)
