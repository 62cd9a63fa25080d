"""Window geometry and the im2col / col2im machinery shared by conv2d and pool2d.

NOTE [ Channels-last inside the kernels ]
Programs see NCHW tensors, as in fluid. The conv and pool kernels work on the NHWC *memory order*:
they read their input through ``x.transpose(0, 2, 3, 1)`` and return ``y.transpose(0, 3, 1, 2)`` of
an NHWC result, i.e. an NCHW-shaped view of channels-last memory. A conv -> batch_norm -> relu ->
conv chain therefore never transposes: the elementwise ops keep their input's memory order (numpy's
order='K'), and the next conv finds its input already contiguous in NHWC. Shapes, values and
everything a user can observe are NCHW; only ``flags['C_CONTIGUOUS']`` differs.

Why NHWC: an im2col row (one output pixel, every tap and channel) is then kw*C contiguous floats per
kernel row, so building the [N*OH*OW, kh*kw*C] matrix is a copy of contiguous runs, and the GEMM
result [N*OH*OW, F] is already the NHWC output. In NCHW order the same matrix was a gather of single
floats and took longer than the GEMM itself.

NOTE [ im2col with strides ]
``Geometry.windows`` is a zero-copy strided view [N, OH, OW, kh, kw, C] of the padded NHWC input:
output pixel (oh, ow) and tap (i, j) read padded[oh*sh + i*dh, ow*sw + j*dw]. ``Geometry.col2im``
adds per-tap gradients back with one strided slice-add per tap (kh*kw numpy calls, never per pixel).

NOTE [ Workspaces ]
The padded input and the im2col matrix are scratch: large (up to one chunk of the im2col matrix,
NOTE [ im2col in chunks ]; the whole matrix of the first ResNet stage is 75 MB at batch 128),
short-lived and the same size every step. Allocating them anew each step
costs page faults on memory the kernel then zero-fills; ``scratch`` instead hands out a per-thread
buffer per role that grows to the largest size asked and is reused. A scratch array never leaves the
kernel that asked for it (no output is a view of one), so reuse cannot alias a result. A padded chunk's
borders survive in its buffer: ``padded`` fills them only when this thread's previous call on the buffer
left other padding there (``_borders_kept``), since the chunk's Python (border fills, a strided view,
sizes) held the GIL longer than its copy ran: 45 -> 18 us per chunk, and every chunk of a conv pays it.

NOTE [ im2col in chunks ]
The conv kernels build the im2col matrix a few images at a time (``Geometry.map_chunks``), each
chunk about CHUNK_BYTES, and run one GEMM per chunk: the chunk is written and read back while it is
still in cache instead of a round trip of the whole matrix through memory (75 MB at batch 128 in
ResNet-20's first stage), and the scratch buffers hold one chunk, not the matrix. The chunks are also
the pieces that ``for_each`` spreads over the cores (NOTE [ Intra-op threads ] in parallel.py): each
thread builds a chunk in its own scratch buffer and runs its GEMM on one OpenBLAS thread. Chunk size,
measured on ResNet-20's 3x3 convs at batch 128 on two threads (forward / backward ms, 16 channels at
32x32): 0.3 MiB 25 / 35, 1.25 MiB 18.5 / 28, 2.5 MiB 9.6 / 20, 5 MiB 10.7 / 17, 40 MiB 14 / 25; 32 and
64 channels are best at 2.5-5 MiB too. Smaller chunks pay numpy's and OpenBLAS's per-call overhead
(and the GEMM's packing of its small filter matrix) too often; the whole matrix leaves the cache.
A matrix of more than MIN_SPLIT_BYTES makes at least MIN_CHUNKS chunks whatever its size per image: a
1x1 conv's matrix is its input, and as one chunk it ran on one thread (ResNet-20's 16->32 stride-2
shortcut backward 4.8 -> 3.3 ms; a 64->256 1x1 conv at 28x28, batch 32: 16 / 31 -> 10 / 17 ms forward
/ backward). The chunk count never depends on the thread count, so neither do the results. It is a
multiple of CHUNK_COUNT_MULTIPLE (4) and the images are shared out evenly (sizes differ by at most one), so
that 2 or 4 threads finish together: chunks of a fixed 4 MB left a short last one (ResNet-20's 64-channel
stage: 28, 28, 28, 28 and 16 images), and one thread idle while the other ran a whole chunk. Eight chunks
of 16 images there, twelve of 10-11 at 32 channels: best-of-30 forward / backward 5.57 / 10.23 -> 5.02 /
9.42 ms (64 channels), 6.13 / 10.60 -> 5.37 / 9.36 ms (32 channels) on two threads; 16 channels unchanged.

NOTE [ Channels-first im2col for few channels ]
A network's first conv reads the fed images: NCHW memory with 1 or 3 channels. Its channels-last im2col
copies runs of only kw*C floats (9 for a 3x3 RGB filter), one numpy inner loop per run: ResNet-20's
first conv spent longer building the matrix than multiplying it. When the input is NCHW memory and a
run of OW output pixels is longer than kw*C (``conv.py``'s ``_channels_first``), ``map_planes`` builds
the transposed matrix instead, [C*kh*kw, N*OH*OW], whose rows are runs of OW floats of one input plane
(3.5x fewer, longer copies for that conv); the forward GEMM reads it transposed (BLAS takes it as it is)
and the filter gradient is ``matrix @ dout``. The output is the same NHWC [N*OH*OW, F] product.
"""
import math
import threading

import numpy as np

from .parallel import for_each
from .registry import array_module

__all__ = ["Geometry", "CONV_SIZE_ERROR", "POOL_SIZE_ERROR", "to_nhwc", "from_nhwc", "scratch", "nhwc_shape"]

CONV_SIZE_ERROR = (
    "The output's size is expected to be greater than 0. But recieved: output's size is {out}. The output's size "
    "is computed by ((input_size + padding_1 + padding_2 - (dilation * (filter_size - 1) + 1)) / stride + 1), "
    "where input_size is {size}, padding is ({p0}, {p1}), filter_size is {k}, dilation is {d}, stride is {s}.")
POOL_SIZE_ERROR = (
    "ShapeError: the output size must be greater than 0. But received: output_size = {out} due to the settings "
    "of input_size({size}), padding({p0},{p1}), k_size({k}) and stride({s}). Please check again!")


def _pads(attrs, in_hw, k_hw, strides, dilations):
    """fluid's padding_algorithm: ([top, bottom, left, right], dilations)."""
    algo = attrs.get("padding_algorithm", "EXPLICIT")
    if algo == "VALID":
        return [0, 0, 0, 0], list(dilations)
    if algo == "SAME":
        pads = []
        for size, k, s in zip(in_hw, k_hw, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0) if size >= 0 else 0
            pads += [total // 2, total - total // 2]
        return pads, [1, 1]
    p = [int(v) for v in attrs["paddings"]]
    return ([p[0], p[0], p[1], p[1]] if len(p) == 2 else p), list(dilations)


def _cpp_div(a, b):
    """``a / b`` for ints as C++ computes it (truncating toward zero): fluid's output-size formulas
    use it, so a window larger than the (padded) input still gives one output, (6 - 7) / 7 + 1 == 1."""
    q = abs(a) // b
    return q if a >= 0 else -q


def _out_size(size, k, stride, pads, dil, ceil, message):
    """One spatial output size: (size + pad_0 + pad_1 - dilated_k [+ stride - 1 if ceil]) / stride + 1."""
    if size < 0:
        return -1
    span = size + pads[0] + pads[1] - (dil * (k - 1) + 1)
    out = _cpp_div(span + (stride - 1 if ceil else 0), stride) + 1
    if out <= 0:
        raise ValueError(message.format(out=out, size=size, p0=pads[0], p1=pads[1], k=k, d=dil, s=stride))
    return out


# --- layouts --------------------------------------------------------------------------------------
def to_nhwc(x, fmt):
    """The NHWC view of a logical NCHW (or NHWC) tensor (see NOTE [ Channels-last inside the kernels ])."""
    return x if fmt == "NHWC" else x.transpose(0, 2, 3, 1)


def from_nhwc(y, fmt):
    return y if fmt == "NHWC" else y.transpose(0, 3, 1, 2)


def nhwc_shape(shape, fmt):
    return tuple(shape) if fmt == "NHWC" else (shape[0], shape[2], shape[3], shape[1])


# --- workspaces -----------------------------------------------------------------------------------
_local = threading.local()
CHUNK_BYTES = 4 << 20  # NOTE [ im2col in chunks ]
MIN_CHUNKS, MIN_SPLIT_BYTES, CHUNK_COUNT_MULTIPLE = 4, 1 << 20, 4


def scratch(role, shape, dtype, xp=np):
    """A reusable uninitialised array for ``role`` (NOTE [ Workspaces ]); CuPy arrays are not pooled."""
    if xp is not np:
        return xp.empty(shape, dtype=dtype)
    pool = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = {}
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    buf = pool.get(role)
    if buf is None or buf.nbytes < nbytes:
        buf = pool[role] = np.empty(nbytes, dtype=np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def _borders_kept(role, buf, key):
    """True when the padding around the images of ``role``'s scratch ``buf`` still holds what ``key``
    (widths and value) asks for: this thread's last ``padded`` call on the same buffer filled it for at
    least as many images of the same shape, and ``padded`` writes only inside the borders. Otherwise
    records that the caller fills them now (NOTE [ Workspaces ]: a chunk's border fills cost more Python
    than its copy)."""
    pool = getattr(_local, "pool", None)
    if type(buf) is not np.ndarray or pool is None:
        return False
    kept = _local.__dict__.setdefault("borders", {})
    base, record = pool.get(role), kept.get(role)
    if (record is not None and record[0] is base and record[1] == key and record[2] == buf.shape[1:]
            and record[3] == buf.dtype and record[4] >= buf.shape[0]):
        return True
    kept[role] = (base, key, buf.shape[1:], buf.dtype, buf.shape[0])
    return False


def strided_view(a, shape, strides):
    """A strided view of ``a`` for the kernels to read: read-only and built directly on a C-contiguous numpy
    array (~10x cheaper than ``as_strided``: one per chunk of images), else ``as_strided`` with the arguments
    numpy and CuPy share (CuPy's takes no ``writeable``)."""
    if type(a) is np.ndarray and a.flags.c_contiguous:
        view = np.ndarray(shape, a.dtype, buffer=a, strides=strides)
        view.flags.writeable = False
        return view
    return array_module(a).lib.stride_tricks.as_strided(a, shape, strides)


class Geometry:
    """Kernel, stride, dilation, pads and output size of one conv/pool call (2-tuples but ``pads``)."""

    def __init__(self, attrs, in_hw, k_hw, strides, dilations, ceil=False, message=CONV_SIZE_ERROR):
        self.k, self.s = tuple(int(k) for k in k_hw), tuple(int(s) for s in strides)
        self.pads, dil = _pads(attrs, in_hw, k_hw, strides, dilations)
        self.d = tuple(int(d) for d in dil)
        self.out = tuple(_out_size(size, k, s, self.pads[2 * i:2 * i + 2], d, ceil, message)
                         for i, (size, k, s, d) in enumerate(zip(in_hw, self.k, self.s, self.d)))
        self._widths = {}

    def widths(self, hw):
        """((top, bottom), (left, right)) padding; bottom/right grow when the last window runs past
        the padded input (ceil_mode, or a size truncated toward zero)."""
        hw = tuple(hw)
        widths = self._widths.get(hw)
        if widths is not None:
            return widths
        widths = []
        for i in range(2):
            need = (self.out[i] - 1) * self.s[i] + (self.k[i] - 1) * self.d[i] + 1
            lo, hi = self.pads[2 * i], self.pads[2 * i + 1]
            widths.append((lo, max(hi, need - hw[i] - lo)))
        self._widths[hw] = widths = tuple(widths)
        return widths

    def padded(self, x4, value=0.0, role="pad"):
        """NHWC ``x4`` surrounded by ``value`` (a scratch buffer), or ``x4`` itself when no padding is needed."""
        (t, b), (l, r) = self.widths(x4.shape[1:3])
        if not (t or b or l or r):
            return x4
        n, h, w, c = x4.shape
        buf = scratch(role, (n, h + t + b, w + l + r, c), x4.dtype, array_module(x4))
        if type(x4) is not np.ndarray or not _borders_kept(role, buf, (t, b, l, r, value)):  # a pooled buffer
            buf[:, :t] = value
            buf[:, t + h:] = value
            buf[:, t:t + h, :l] = value
            buf[:, t:t + h, l + w:] = value
        buf[:, t:t + h, l:l + w] = x4
        return buf

    def windows(self, xp4):
        """Strided view [N, OH, OW, kh, kw, C] of the padded NHWC input (NOTE [ im2col with strides ])."""
        s = xp4.strides
        shape = xp4.shape[:1] + self.out + self.k + xp4.shape[3:]
        strides = (s[0], s[1] * self.s[0], s[2] * self.s[1], s[1] * self.d[0], s[2] * self.d[1], s[3])
        return strided_view(xp4, shape, strides)

    def im2col(self, x4, role="cols"):
        """[N*OH*OW, kh*kw*C] matrix of every window of NHWC ``x4`` (one copy into a scratch buffer)."""
        n, c = x4.shape[0], x4.shape[3]
        if self.k == (1, 1) and not any(self.pads):  # a 1x1 conv reads (a strided subsample of) the input
            sub = x4[:, :self.s[0] * (self.out[0] - 1) + 1:self.s[0], :self.s[1] * (self.out[1] - 1) + 1:self.s[1]]
            if sub.flags.c_contiguous:
                return sub.reshape(-1, c)
        cols = scratch(role, (n,) + self.out + self.k + (c,), x4.dtype, array_module(x4))
        cols[...] = self.windows(self.padded(x4))
        return cols.reshape(n * self.out[0] * self.out[1], -1)

    def map_chunks(self, x4, fn, role="cols"):
        """``[fn(lo, hi, matrix), ...]`` over chunks of images [lo, hi) of NHWC ``x4``, ``matrix`` the chunk's
        im2col matrix [(hi - lo)*OH*OW, kh*kw*C] in a scratch buffer of about one chunk (NOTE [ im2col in
        chunks ]); the chunks run on the intra-op threads (NOTE [ Intra-op threads ] in parallel.py)."""
        n, c = x4.shape[0], x4.shape[3]  # (a 1x1 conv's contiguous input is its own matrix: chunks of views)
        return self.map_images(n, c * x4.dtype.itemsize, lambda lo, hi: fn(lo, hi, self.im2col(x4[lo:hi], role)),
                               array_module(x4))

    def map_planes(self, x, fn, role="planes"):
        """``[fn(lo, hi, matrix), ...]`` over chunks of images [lo, hi) of a C-contiguous NCHW numpy ``x``,
        ``matrix`` the chunk's channels-first im2col matrix [C*kh*kw, (hi - lo)*OH*OW] (rows in the filter's
        (c, i, j) order) in a scratch buffer (NOTE [ Channels-first im2col for few channels ])."""
        n, c, h, w = x.shape
        (kh, kw), (oh, ow) = self.k, self.out

        def chunk(lo, hi):  # each plane padded as a one-channel NHWC image
            src = self.padded(x[lo:hi].reshape(-1, h, w, 1), role=role + "-pad")
            src = src.reshape((hi - lo, c) + src.shape[1:3])
            st = src.strides
            view = strided_view(src, (c, kh, kw, hi - lo, oh, ow), (st[1], st[2] * self.d[0], st[3] * self.d[1],
                                                                    st[0], st[2] * self.s[0], st[3] * self.s[1]))
            planes = scratch(role, view.shape, x.dtype)
            planes[...] = view
            return fn(lo, hi, planes.reshape(c * kh * kw, -1))
        return self.map_images(n, c * x.dtype.itemsize, chunk)

    def map_images(self, n, tap_bytes, fn, xp=np):
        """``[fn(lo, hi), ...]`` over chunks of ``n`` images sized so that a chunk's [OH*OW, kh*kw] matrix of
        ``tap_bytes`` per entry is at most about CHUNK_BYTES, run on the intra-op threads (CuPy: in turn). A
        matrix of more than MIN_SPLIT_BYTES makes at least MIN_CHUNKS chunks (a 1x1 conv's small matrix would be
        one chunk, on one thread); the chunks never depend on the thread count (NOTE [ im2col in chunks ])."""
        per_image = self.out[0] * self.out[1] * self.k[0] * self.k[1] * tap_bytes
        count = max(-(-per_image * n // CHUNK_BYTES), MIN_CHUNKS if per_image * n > MIN_SPLIT_BYTES else 1)
        count = min(n, -(-count // CHUNK_COUNT_MULTIPLE) * CHUNK_COUNT_MULTIPLE if count > 1 else 1)
        cuts = [n * k // count for k in range(count + 1)]
        bounds = list(zip(cuts[:-1], cuts[1:]))
        if xp is not np:
            return [fn(lo, hi) for lo, hi in bounds]
        return for_each(len(bounds), lambda k: fn(*bounds[k]))

    def tap_slices(self, i, j):
        """The padded-input slice (rows, cols) that tap (i, j) reads for every output pixel."""
        (oh, ow), (sh, sw), (dh, dw) = self.out, self.s, self.d
        return (slice(i * dh, i * dh + sh * (oh - 1) + 1, sh), slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))

    def col2im(self, tap_grad, in_shape4, dtype, xp, out=None):
        """Sum per-tap gradients ``tap_grad(i, j)`` ([N, OH, OW, C]) into a NHWC input of ``in_shape4``;
        with ``out`` (an array of that shape) the sum is built in it, or in a scratch buffer and copied into it
        when the input is padded."""
        n, h, w, c = in_shape4
        (t, b), (l, r) = self.widths((h, w))
        shape = (n, h + t + b, w + l + r, c)
        unpadded = out is not None and not (t or b or l or r)  # sum straight into ``out``
        dxp = xp.zeros(shape, dtype=dtype) if out is None else out if unpadded else scratch("col2im", shape, dtype, xp)
        if out is not None:
            dxp.fill(0)
        for i in range(self.k[0]):
            for j in range(self.k[1]):
                rows, cols = self.tap_slices(i, j)
                dxp[:, rows, cols] += tap_grad(i, j)
        if out is None:
            return dxp[:, t:t + h, l:l + w]
        if not unpadded:
            out[...] = dxp[:, t:t + h, l:l + w]
        return out
