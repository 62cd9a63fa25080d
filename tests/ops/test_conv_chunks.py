"""conv2d builds its im2col matrix a few images at a time (NOTE [ im2col in chunks ] in ops/im2col.py) and
spreads the chunks over the intra-op threads (NOTE [ Intra-op threads ] in ops/parallel.py): the values depend
on neither the chunk size nor the thread count."""
import numpy as np
import pytest

from minifluid.ops import im2col, parallel
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
        monkeypatch.setattr(im2col, "CHUNK_BYTES", chunk)
        out = spec.kernel(attrs, x, w, None, None)
        dout = np.random.RandomState(1).randn(*out.shape)
        results.append((out,) + spec.grad(attrs, (x, w, None, None), (out,), (dout,), (True, True, False, False))[:2])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def _conv_and_grads(attrs, x, w):
    spec = get_op_spec("conv2d")
    out = spec.kernel(attrs, x, w, None, None)
    dout = np.random.RandomState(1).randn(*out.shape).astype(x.dtype)
    return (out,) + spec.grad(attrs, (x, w, None, None), (out,), (dout,), (True, True, False, False))[:2]


@pytest.mark.parametrize("attrs", [{"paddings": [1, 1]}, {"strides": [2, 2], "paddings": [1, 1]}, {},
                                   {"paddings": [2, 2], "dilations": [2, 2]}])
def test_conv2d_and_its_gradients_are_the_same_on_one_thread_and_on_three(attrs, monkeypatch):
    """Chunks of one image each: with three threads they run on all three, and the filter gradient's per-chunk
    sums still add up in chunk order, so every value is bitwise the same."""
    attrs = dict(get_op_spec("conv2d").attrs, **attrs)
    rng = np.random.RandomState(0)
    x = np.ascontiguousarray(rng.randn(9, 6, 7, 3).astype("float32").transpose(0, 3, 1, 2))
    w = rng.randn(5, 3, 3, 3).astype("float32")
    monkeypatch.setattr(im2col, "CHUNK_BYTES", 1)
    results = []
    for threads in (1, 3):
        monkeypatch.setattr(parallel, "_threads", threads)
        results.append(_conv_and_grads(attrs, x, w))
    for a, b in zip(*results):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("attrs", [{"paddings": [1, 1]}, {"strides": [2, 2], "paddings": [2, 1, 0, 1]},
                                   {"dilations": [2, 1], "paddings": [1, 1]}, {}])
@pytest.mark.parametrize("channels", [1, 3])
def test_the_channels_first_im2col_gives_what_the_channels_last_one_gives(attrs, channels, monkeypatch):
    """NCHW memory with few channels takes the channels-first im2col (NOTE [ Channels-first im2col for few
    channels ] in ops/im2col.py), the same values in channels-last memory the usual one; chunks of two images."""
    from minifluid.ops import conv
    attrs = dict(get_op_spec("conv2d").attrs, **attrs)
    rng = np.random.RandomState(0)
    x_nchw = rng.randn(5, channels, 7, 21)
    x_nhwc = np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    w = rng.randn(4, channels, 3, 3)
    monkeypatch.setattr(im2col, "CHUNK_BYTES", 2 * 7 * 21 * 9 * channels * 8)
    geo = conv._conv_geometry(attrs, x_nhwc.transpose(0, 2, 3, 1).shape, w.shape)
    assert conv._channels_first(geo, x_nchw, "NCHW", 1)
    if channels > 1:  # (one channel: both memory orders are the same array)
        assert not conv._channels_first(geo, x_nhwc, "NCHW", 1)
    first, last = _conv_and_grads(attrs, x_nchw, w), _conv_and_grads(attrs, x_nhwc, w)
    for a, b in zip(first, last):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_padded_chunks_reuse_their_borders_only_when_they_still_hold_the_padding():
    """``Geometry.padded`` fills a scratch buffer's borders only when this thread's last call on that buffer
    left other padding there (another value or widths, other images, more images): each result equals np.pad."""
    rng = np.random.RandomState(0)
    geo = im2col.Geometry({"paddings": [1, 2]}, (5, 6), (3, 3), (1, 1), (1, 1))
    other = im2col.Geometry({"paddings": [2, 0]}, (5, 6), (3, 3), (1, 1), (1, 1))
    calls = [(geo, 3, (5, 6), 0.0), (geo, 2, (5, 6), 0.0), (geo, 3, (5, 6), -np.inf), (geo, 4, (5, 6), 0.0),
             (other, 4, (5, 6), 0.0), (geo, 4, (4, 6), 0.0), (geo, 1, (5, 6), 0.0)]
    for g, n, hw, value in calls:
        x = rng.randn(n, *hw, 2)
        (t, b), (l, r) = g.widths(hw)
        got = g.padded(x, value, role="test-pad")
        want = np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=value)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("stride", [1, 2])
def test_a_1x1_conv_is_split_into_chunks_for_the_threads_and_equals_one_product(stride, monkeypatch):
    """A 1x1 conv's matrix is small per image: above MIN_SPLIT_BYTES it still makes MIN_CHUNKS chunks (else one
    thread would do the whole product); the result and both gradients equal one whole product's."""
    monkeypatch.setattr(im2col, "MIN_SPLIT_BYTES", 1)
    attrs = dict(get_op_spec("conv2d").attrs, strides=[stride, stride])
    rng = np.random.RandomState(0)
    x = np.ascontiguousarray(rng.randn(9, 6, 8, 3).transpose(0, 3, 1, 2))  # channels-last memory
    w = rng.randn(4, 3, 1, 1)
    geo = im2col.Geometry(attrs, (6, 8), (1, 1), (stride, stride), (1, 1))
    chunks = geo.map_images(9, 3 * 8, lambda lo, hi: (lo, hi))
    assert len(chunks) >= im2col.MIN_CHUNKS and chunks[0] == (0, 2) and chunks[-1][1] == 9
    out, dx, dw = _conv_and_grads(attrs, x, w)
    sub = x[:, :, ::stride, ::stride]
    np.testing.assert_allclose(out, np.einsum("nchw,fc->nfhw", sub, w[:, :, 0, 0]), rtol=1e-12, atol=1e-12)
    dout = np.random.RandomState(1).randn(*out.shape)
    want_dx = np.zeros_like(x)
    want_dx[:, :, ::stride, ::stride] = np.einsum("nfhw,fc->nchw", dout, w[:, :, 0, 0])
    np.testing.assert_allclose(dx, want_dx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dw[:, :, 0, 0], np.einsum("nfhw,nchw->fc", dout, sub), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n, c, hw", [(128, 64, 8), (128, 32, 16), (128, 16, 32), (37, 64, 8)])
def test_conv_chunks_come_in_fours_of_equal_size(n, c, hw):
    """NOTE [ im2col in chunks ]: the chunk count is a multiple of 4 and the images are shared out evenly, so two
    or four threads finish together (fixed 4 MB chunks gave the 64-channel stage 28, 28, 28, 28 and 16 images)."""
    attrs = dict(get_op_spec("conv2d").attrs, paddings=[1, 1])
    geo = im2col.Geometry(attrs, (hw, hw), (3, 3), [1, 1], [1, 1])
    sizes = geo.map_images(n, c * 4, lambda lo, hi: hi - lo)
    assert sum(sizes) == n and len(sizes) % im2col.CHUNK_COUNT_MULTIPLE == 0
    assert max(sizes) - min(sizes) <= 1
    assert max(sizes) * hw * hw * 9 * c * 4 <= im2col.CHUNK_BYTES  # no chunk over the size asked for
