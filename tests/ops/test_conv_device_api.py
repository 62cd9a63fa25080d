"""conv2d / conv3d / pool2d kernels on device arrays use only what CuPy offers: here a numpy subclass plays
the CuPy array and a stand-in module CuPy's API, where ``as_strided`` takes no ``writeable`` flag (numpy's
does; passing it made every conv on a CUDAPlace fail). The real CuPy run needs a GPU."""
import types

import numpy as np
import pytest

from minifluid.ops import registry
from minifluid.ops.registry import get_op_spec


class DeviceArray(np.ndarray):
    """Arrays of the stand-in device (``registry.array_module`` sees a non-numpy type)."""


def _as_strided(x, shape=None, strides=None):  # CuPy's signature: no subok, no writeable
    return np.lib.stride_tricks.as_strided(x, shape, strides)


class _StandInCupy(types.ModuleType):
    def __init__(self):
        super().__init__("cupy")
        self.lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=_as_strided))

    def __getattr__(self, name):
        return getattr(np, name)

    def get_array_module(self, *arrays):
        return self


@pytest.fixture
def device(monkeypatch):
    monkeypatch.setattr(registry, "_cupy", _StandInCupy())
    return lambda a: np.ascontiguousarray(a).view(DeviceArray)


@pytest.mark.parametrize("op, x_shape, w_shape, attrs", [
    ("conv2d", (3, 4, 7, 6), (5, 4, 3, 3), {"paddings": [1, 1]}),
    ("conv2d", (3, 4, 7, 6), (6, 2, 3, 3), {"strides": [2, 2], "groups": 2}),
    ("depthwise_conv2d", (2, 4, 6, 6), (4, 1, 3, 3), {"paddings": [1, 1], "groups": 4}),
    ("conv3d", (2, 3, 4, 5, 5), (4, 3, 2, 3, 3), {"paddings": [0, 1, 1]}),
])
def test_conv_kernels_and_gradients_run_on_device_arrays_and_match_numpy(device, op, x_shape, w_shape, attrs):
    spec = get_op_spec(op)
    attrs = dict(spec.attrs, **attrs)
    rng = np.random.RandomState(0)
    x, w = rng.randn(*x_shape).astype("float32"), rng.randn(*w_shape).astype("float32")
    extra = (None,) * (len(spec.inputs) - 2)
    out = spec.kernel(attrs, x, w, *extra)
    dout = rng.randn(*out.shape).astype("float32")
    need = (True, True) + (False,) * len(extra)
    grads = spec.grad(attrs, (x, w) + extra, (out,), (dout,), need)[:2]
    d_out = spec.kernel(attrs, device(x), device(w), *extra)
    d_grads = spec.grad(attrs, (device(x), device(w)) + extra, (d_out,), (device(dout),), need)[:2]
    for got, want in zip((d_out,) + tuple(d_grads), (out,) + tuple(grads)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", [{"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]},
                                   {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2]}])
def test_pool2d_and_its_gradient_run_on_device_arrays_and_match_numpy(device, attrs):
    spec = get_op_spec("pool2d")
    attrs = dict(spec.attrs, **attrs)
    x = np.random.RandomState(0).randn(2, 3, 7, 7).astype("float32")
    out = spec.kernel(attrs, x)
    dout = np.random.RandomState(1).randn(*out.shape).astype("float32")
    dx = spec.grad(attrs, (x,), (out,), (dout,), (True,))[0]
    d_out = spec.kernel(attrs, device(x))
    d_dx = spec.grad(attrs, (device(x),), (d_out,), (device(dout),), (True,))[0]
    np.testing.assert_allclose(np.asarray(d_out), out, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(d_dx), dx, rtol=1e-6, atol=1e-6)
