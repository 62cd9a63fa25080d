"""matmul: fluid 1.8's batched matrix product with transposes, ``alpha`` and ``head_number``.

A 1-D X is a row [1, K] and a 1-D Y a column [K, 1] (each transposed by its flag like a matrix); every
dimension before the last two of an input is its batch, flattened. The two batches are equal, or one
input has none (it is then shared by every batch of the other). The result takes the leading dimensions
of the input with a batch; the row a 1-D X brought and the column a 1-D Y brought are dropped again,
and a result with no dimension left is [1].

``head_number`` H > 1 multiplies head by head: X's K columns are H blocks. When Y has K rows, its rows
are H blocks too and the H products sit side by side (width H * N); when Y has K / H rows, its columns
are the H blocks (width N). Kernels and gradients work on 3-D (4-D with heads) views of the inputs.
"""
import numpy as np

from . import parallel
from .registry import register_grad, register_op


def _dims(x_shape, y_shape, tx, ty):
    """(batch_x, rows_x, cols_x), (batch_y, rows_y, cols_y) after the transposes; a batch is None when the
    input has none, -1 when unknown."""
    def matrix(shape, vector, flip):
        shape = list(shape)
        if len(shape) == 1:
            shape = vector(shape[0])
        lead = shape[:-2]
        batch = None if not lead else (-1 if any(d < 0 for d in lead) else int(np.prod(lead)))
        r, c = shape[-2], shape[-1]
        return (batch, c, r) if flip else (batch, r, c)
    return (matrix(x_shape, lambda k: [1, k], tx), matrix(y_shape, lambda k: [k, 1], ty))


def _out_shape(x_shape, y_shape, attrs):
    (bx, m, kx), (by, ky, n) = _dims(x_shape, y_shape, attrs["transpose_X"], attrs["transpose_Y"])
    heads = attrs.get("head_number", 1)
    if heads > 1 and (kx < 0 or ky < 0):
        n = -1  # whether Y's rows or columns are the heads is known only with both widths
    kx = ky if kx < 0 else kx
    ky = kx if ky < 0 else ky
    if bx is not None and by is not None and bx != by and bx >= 0 and by >= 0:
        raise ValueError(f"matmul: the batch size of the two matrices should be equal, or at least one is "
                         f"zero. But received X's shape: {list(x_shape)}, Y's shape: {list(y_shape)}.")
    if heads > 1:
        if kx >= 0 and kx % heads:
            raise ValueError(f"matmul: X's width ({kx}) must divide into head_number ({heads}) heads. But "
                             f"received X's shape: {list(x_shape)}.")
        if kx != ky and kx >= 0 and ky >= 0 and kx != ky * heads:
            raise ValueError(f"matmul: with head_number {heads}, Y's height must be X's width or X's width / "
                             f"head_number; received X's shape: {list(x_shape)}, Y's shape: {list(y_shape)}.")
        n = n * heads if kx == ky and n >= 0 else n
    elif kx != ky:
        raise ValueError(f"matmul: Input X's width should be equal to the Y's height, but received X's shape: "
                         f"{list(x_shape)}, Y's shape: {list(y_shape)}.")
    if bx is not None:
        out = list(x_shape[:-2]) + [m, n]
    elif by is not None:
        out = list(y_shape[:-2]) + [m, n]
    else:
        out = [m, n]
    if len(x_shape) == 1 and out[-2] == 1:
        out = out[:-2] + [out[-1]]
    if len(y_shape) == 1 and out[-1] == 1:
        out = out[:-1]
    return tuple(out) or (1,)


def _x_view(x, tx, heads):
    """X as (batch, M, K), or (batch, H, M, K / H) with heads."""
    m = x.reshape(1, -1) if x.ndim == 1 else x
    m = m.reshape((-1,) + m.shape[-2:])
    m = m.swapaxes(-1, -2) if tx else m
    if heads > 1:
        b, rows, k = m.shape
        m = m.reshape(b, rows, heads, k // heads).transpose(0, 2, 1, 3)
    return m


def _x_unview(d, x, tx, heads):
    if heads > 1:
        b, h, rows, k = d.shape
        d = d.transpose(0, 2, 1, 3).reshape(b, rows, h * k)
    d = d.swapaxes(-1, -2) if tx else d
    return d.reshape(x.shape)


def _y_view(y, ty, heads, split):
    """Y as (batch, K, N), or (batch, H, K', N') with heads: its rows or its columns split (module docstring)."""
    m = y.reshape(-1, 1) if y.ndim == 1 else y
    m = m.reshape((-1,) + m.shape[-2:])
    m = m.swapaxes(-1, -2) if ty else m
    if heads > 1:
        b, k, n = m.shape
        if split:
            m = m.reshape(b, k, heads, n // heads).transpose(0, 2, 1, 3)
        else:
            m = m.reshape(b, heads, k // heads, n)
    return m


def _y_unview(d, y, ty, heads, split):
    if heads > 1:
        b, h, k, n = d.shape
        d = d.transpose(0, 2, 1, 3).reshape(b, k, h * n) if split else d.reshape(b, h * k, n)
    d = d.swapaxes(-1, -2) if ty else d
    return d.reshape(y.shape)


def _operands(attrs, x, y):
    """(heads, whether Y's columns are the heads, X's view, Y's view)."""
    heads = max(int(attrs.get("head_number", 1)), 1)
    a = _x_view(x, attrs["transpose_X"], heads)
    ky = (1 if attrs["transpose_Y"] else y.size) if y.ndim == 1 else y.shape[-1 if attrs["transpose_Y"] else -2]
    split = heads > 1 and a.shape[-1] * heads != ky
    return heads, split, a, _y_view(y, attrs["transpose_Y"], heads, split)


def _reduce_batch(d, batch):
    """The gradient of an operand shared over the other's batch: summed over it."""
    return d.sum(axis=0, keepdims=True) if batch == 1 and d.shape[0] != 1 else d


@register_op("matmul", inputs=("X", "Y"), outputs=("Out",),
             attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0, "head_number": 1,
                    "use_mkldnn": False},
             infer_shape=lambda attrs, x, y: (_out_shape(x.shape, y.shape, attrs), x.dtype),
             share_lod={"Out": "X"}, grad_share_lod={})
def _matmul_forward(attrs, x, y):
    out_shape = _out_shape(x.shape, y.shape, attrs)
    heads, _, a, b = _operands(attrs, x, y)
    out = parallel.matmul(a[0], b[0])[None] if a.ndim == 3 and a.shape[0] == b.shape[0] == 1 else a @ b
    if heads > 1:
        out = out.transpose(0, 2, 1, 3)
    out = out.reshape(out_shape)
    return out if attrs["alpha"] == 1.0 else (out * attrs["alpha"]).astype(out.dtype, copy=False)


@register_grad("matmul")
def _matmul_backward(attrs, ins, outs, douts, need):
    x, y = ins
    heads, split, a, b = _operands(attrs, x, y)
    batch = max(a.shape[0], b.shape[0])
    shape = (batch, a.shape[-2], heads, b.shape[-1]) if heads > 1 else (batch, a.shape[-2], b.shape[-1])
    d = douts[0].reshape(shape)
    d = d.transpose(0, 2, 1, 3) if heads > 1 else d
    if attrs["alpha"] != 1.0:
        d = d * attrs["alpha"]
    dx = dy = None
    if need[0]:
        dx = _x_unview(_reduce_batch(d @ b.swapaxes(-1, -2), a.shape[0]), x, attrs["transpose_X"], heads)
    if need[1]:
        dy = _y_unview(_reduce_batch(a.swapaxes(-1, -2) @ d, b.shape[0]), y, attrs["transpose_Y"], heads, split)
    return (None if dx is None else dx.astype(x.dtype, copy=False),
            None if dy is None else dy.astype(y.dtype, copy=False))
