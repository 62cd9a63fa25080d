"""Per-channel vectors against whole tensors, at memory speed whatever the memory order.

NOTE [ Per-channel broadcasts on channels-last memory ]
A [C] vector broadcast along the channel axis of an NCHW-shaped view of channels-last memory (every
conv, pool and batch_norm output: NOTE [ Channels-last inside the kernels ] in im2col.py) makes numpy's
innermost loop C floats long, one loop call per pixel: ``x * a`` on a [128, 16, 32, 32] float32 tensor
took 5.8 ms where the same bytes as plain memory take 0.9 ms. ``ChannelView`` sees such memory as
[rows, C * r] (the channel axis innermost, r pixels per row) and tiles the vector r times, so every
per-channel multiply, add and sum runs over long contiguous rows. When the channel axis is not the
innermost of the memory (plain NCHW), the view is the tensor itself and vectors broadcast as usual.
A row holds at least ROW_FLOATS floats (r the power of two that makes C * r reach it): rows of 4096 floats
(r = 256 at 16 channels, ResNet-20's first stage) ran some broadcasts 4-6x slower on this machine for one
placement of the tiled vector in 256 (a [512, 4096] subtract: 0.95 ms, 4-6 ms there; no such placement in
scans of 8192- and 16384-float rows); batch_norm on that stage took 3.6-4.0 / 4.5-5.2 ms forward / backward
with rows of 4096 floats and 2.7-3.1 / 3.5-4.1 ms with rows of 8192 (three runs, tools/bench_train.py's
ResNet-20 shapes on two threads; the other stages' rows were 8192 floats or more already).

NOTE [ Per-channel passes in blocks ]
A kernel that makes several passes over a tensor larger than the cache (8 MB per activation in ResNet-20's
first stage) pays for each from memory. ``map_blocks`` runs a function over row blocks of the flat view,
about BLOCK_BYTES each, so that a kernel makes its in-place passes over one block while it is in cache,
and hands the blocks to the intra-op threads (parallel.py). A tensor under ELEMENTWISE_MIN_BYTES (it fits
the cache; per-block calls would cost more than they save: batch_norm on a 2 MB tensor ran 1.7x slower in
1 MB blocks), and memory whose channel axis is not innermost, is one block: the whole tensor.
"""
import math

from . import parallel
from .registry import array_module

__all__ = ["ChannelView"]

ROW_FLOATS = 8192  # the least row length of the flat view (the tiled vector, 32-64 KiB, stays in cache)
BLOCK_BYTES = 1 << 20  # NOTE [ Per-channel passes in blocks ]


class ChannelView:
    """How to apply per-channel vectors to ``x`` (channel axis ``c_axis``) and to arrays laid out like it."""

    __slots__ = ("shape", "size", "c", "c_axis", "perm", "inverse", "r", "xp")

    def __init__(self, x, c_axis):
        self.shape, self.size, self.xp, self.c_axis = x.shape, x.size, array_module(x), c_axis
        self.c = c = x.shape[c_axis]
        perm = tuple(i for i in range(x.ndim) if i != c_axis) + (c_axis,)
        self.perm = perm if c and x.size and x.transpose(perm).flags.c_contiguous else None
        self.r = math.gcd(x.size // c, 1 << max(0, -(-ROW_FLOATS // c) - 1).bit_length()) if self.perm else 1
        self.inverse = tuple(perm.index(i) for i in range(x.ndim))

    def like(self, a):
        """True when ``a`` can be seen through this view (same shape, same memory order as ``x``)."""
        return a.shape == self.shape and (self.perm is None or a.transpose(self.perm).flags.c_contiguous)

    def flat(self, a):
        """``a`` (laid out like ``x``) as [rows, C * r], or ``a`` itself when the channel axis is not innermost."""
        return a.transpose(self.perm).reshape(-1, self.c * self.r) if self.perm else a

    def vec(self, v):
        """A [C] vector shaped to broadcast against ``flat(...)``."""
        if self.perm:
            tiled = self.xp.empty(self.r * self.c, dtype=v.dtype)
            tiled.reshape(self.r, self.c)[...] = v
            return tiled
        return v.reshape(tuple(self.c if i == self.c_axis else 1 for i in range(len(self.shape))))

    def empty(self, dtype):
        """An uninitialised array laid out like ``x``."""
        if self.perm is None:
            return self.xp.empty(self.shape, dtype=dtype)
        return self.xp.empty(tuple(self.shape[i] for i in self.perm), dtype=dtype).transpose(self.inverse)

    def sum(self, *arrays):
        """Per-channel sum of the elementwise product of one or two arrays laid out like ``x``."""
        if self.perm:
            return self.flat_sum(*(self.flat(a) for a in arrays))
        letters = "abcdefghij"[:len(self.shape)]
        return self.xp.einsum(",".join([letters] * len(arrays)) + "->" + letters[self.c_axis], *arrays)

    def flat_sum(self, *flats):
        """Per-channel sum of the elementwise product of one or two (blocks of) ``flat(...)`` views: column
        sums of the wide [rows, C * r] view, then the r copies of each channel."""
        if not self.perm:
            return self.sum(*flats)
        columns = flats[0].sum(axis=0) if len(flats) == 1 else self.xp.einsum("ij,ij->j", *flats)
        return columns.reshape(self.r, self.c).sum(axis=0)

    def map_blocks(self, fn, itemsize):
        """``[fn(rows), ...]`` for row slices of ``flat(...)`` of about BLOCK_BYTES (NOTE [ Per-channel passes in
        blocks ]); on the intra-op threads when the tensor is large, in order otherwise."""
        if not self.perm or self.xp.__name__ != "numpy" or self.size * itemsize < parallel.ELEMENTWISE_MIN_BYTES:
            return [fn(slice(None))]  # a tensor that fits the cache (or the device): one block
        rows = self.size // (self.c * self.r)
        step = max(1, BLOCK_BYTES // (self.c * self.r * itemsize))
        blocks = [slice(lo, min(rows, lo + step)) for lo in range(0, rows, step)]
        return parallel.for_each(len(blocks), lambda i: fn(blocks[i]))
