"""conv2d builds its im2col matrix a few images at a time (NOTE [ im2col in chunks ] in ops/im2col.py): the
values do not depend on the chunk size, and the size follows OpenBLAS's thread count."""
import numpy as np
import pytest

from minifluid import _blas
from minifluid.ops import im2col
from minifluid.ops.registry import get_op_spec


@pytest.mark.parametrize("attrs", [{"paddings": [1, 1]}, {"strides": [2, 2], "paddings": [1, 1]}, {}])
def test_conv2d_and_its_gradients_do_not_depend_on_the_chunk_size(attrs, monkeypatch):
    spec = get_op_spec("conv2d")
    attrs = dict(spec.attrs, **attrs)
    rng = np.random.RandomState(0)
    x = np.ascontiguousarray(rng.randn(7, 5, 6, 3).transpose(0, 3, 1, 2))  # channels-last memory, 7 images
    w = rng.randn(4, 3, 3, 3)
    results = []
    for chunk in (1 << 30, 1):  # one chunk; one image per chunk
        monkeypatch.setattr(im2col, "_chunk_bytes", chunk)
        out = spec.kernel(attrs, x, w, None, None)
        dout = np.random.RandomState(1).randn(*out.shape)
        results.append((out,) + spec.grad(attrs, (x, w, None, None), (out,), (dout,), (True, True, False, False))[:2])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def test_the_chunk_size_follows_the_blas_thread_count(monkeypatch):
    monkeypatch.setattr(im2col, "_chunk_bytes", im2col._chunk_bytes)
    im2col.use_blas_threads(1)
    assert im2col._chunk_bytes == im2col.CHUNK_BYTES
    im2col.use_blas_threads(2)
    assert im2col._chunk_bytes == im2col.CHUNK_BYTES_THREADED
    if _blas.get_num_threads() is not None:
        before = _blas.get_num_threads()
        try:
            _blas.set_num_threads(1)
            assert im2col._chunk_bytes == im2col.CHUNK_BYTES
        finally:
            _blas.set_num_threads(before)
