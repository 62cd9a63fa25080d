"""Sequence ops over windows and positions: row_conv, add_position_encoding, sequence_scatter, im2sequence.

Like ops/sequence.py, each kernel reads its input's LoD as lengths and works on the whole batch at once
(row positions from ``row_segments``, one gather or one ``np.bincount`` scatter); the only loops run over
the few taps of a window (row_conv's future context, im2sequence's filter), never over sequences.
row_conv and add_position_encoding also take a padded [batch, time, width] tensor without LoD.
"""
import numpy as np

from .registry import register_grad, register_op
from .sequence import lod_of, row_segments, _check_rows


def _time_lengths(ctx, op, x, slot="X"):
    """(lengths, rows as [rows, width...]) from the LoD of ``slot`` or, without LoD, a [batch, time, ...] tensor."""
    lod = ctx.input_lod(slot)
    if lod:
        if len(lod) != 1:
            raise ValueError(f"The input({slot})'s lod level of {op} should be equal to 1, but received {len(lod)}.")
        _check_rows(op, x, lod[0], slot)
        return np.asarray(lod[0], np.int64), x
    if x.ndim != 3:
        raise ValueError(f"The input({slot}) of {op} without LoD should be a [batch, time, width] tensor (3-D), but "
                         f"received shape {list(x.shape)}")
    return np.full(x.shape[0], x.shape[1], np.int64), x.reshape((-1,) + x.shape[2:])


# --- row_conv: out[t] = sum_k x[t + k] * filter[k] over the next rows of the same sequence ---------------
def _row_conv_taps(lengths, n_rows, taps):
    """(k, the rows r whose r + k lies in their own sequence) for each tap k."""
    seq, pos, _ = row_segments(lengths)
    left = lengths[seq] - pos  # rows from r to its sequence's end, r included
    for k in range(min(taps, n_rows)):
        rows = np.flatnonzero(left > k)
        yield k, rows


def _row_conv_infer(attrs, x, filt):
    if len(filt.shape) != 2:
        raise ValueError(f"Input(Filter)'s dimensions should be 2. Received: Input(Filter)'s shape: {list(filt.shape)}.")
    if x.shape[-1] >= 0 and filt.shape[1] >= 0 and filt.shape[1] != x.shape[-1]:
        raise ValueError(f"row_conv: Input(Filter)'s width ({filt.shape[1]}) must equal Input(X)'s last dimension "
                         f"({x.shape[-1]})")
    return x.shape, x.dtype


@register_op("row_conv", inputs=("X", "Filter"), outputs=("Out",), context=True, share_lod={"Out": "X"},
             infer_shape=_row_conv_infer)
def _row_conv_forward(ctx, attrs, x, filt):
    _row_conv_infer(attrs, x, filt)
    lengths, rows = _time_lengths(ctx, "row_conv", x)
    out = np.zeros_like(rows)
    for k, r in _row_conv_taps(lengths, len(rows), len(filt)):
        out[r] += rows[r + k] * filt[k]
    return out.reshape(x.shape)


@register_grad("row_conv")
def _row_conv_backward(ctx, attrs, ins, outs, douts, need):
    (x, filt), dout = ins, douts[0]
    lengths, rows = _time_lengths(ctx, "row_conv", x)
    dout = dout.reshape(rows.shape)
    dx, dfilt = np.zeros_like(rows), np.zeros_like(filt)
    for k, r in _row_conv_taps(lengths, len(rows), len(filt)):
        dx[r + k] += dout[r] * filt[k]
        dfilt[k] = (dout[r] * rows[r + k]).sum(axis=0)
    return (dx.reshape(x.shape) if need[0] else None), (dfilt if need[1] else None)


# --- add_position_encoding: alpha * x + beta * [sin(pos / 10000^(k / (half - 1))), cos(...)] ----------------
def _encoding(positions, width, dtype):
    half = width // 2
    rate = 10000.0 ** (np.arange(half) / (half - 1)) if half > 1 else np.full(half, 10000.0)
    angle = positions[:, None] / rate
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1).astype(dtype)


@register_op("add_position_encoding", inputs=("X",), outputs=("Out",), attrs={"alpha": 1.0, "beta": 1.0},
             context=True, share_lod={"Out": "X"}, infer_shape=lambda attrs, x: (x.shape, x.dtype))
def _add_position_encoding_forward(ctx, attrs, x):
    lengths, rows = _time_lengths(ctx, "AddPositionEncodingOp", x)
    if rows.ndim != 2 or rows.shape[1] % 2:
        raise ValueError(f"The input(X)'s feature size of AddPositionEncodingOp only support even, but received "
                         f"shape {list(x.shape)}")
    _, pos, _ = row_segments(lengths)
    out = attrs["alpha"] * rows + attrs["beta"] * _encoding(pos, rows.shape[1], x.dtype)
    return out.astype(x.dtype, copy=False).reshape(x.shape)


@register_grad("add_position_encoding")
def _add_position_encoding_backward(ctx, attrs, ins, outs, douts, need):
    return (douts[0] * douts[0].dtype.type(attrs["alpha"]),)


# --- sequence_scatter: out = x; out[i, ids of sequence i] += the updates of sequence i ------------------------
def _scatter_index(ctx, x, ids, updates):
    lengths = lod_of(ctx, "Ids", "SequenceScatter", max_levels=1)[0]
    if ids.shape[0] != updates.shape[0] or ids.size != ids.shape[0] or updates.size != updates.shape[0]:
        raise ValueError(f"The shape of SequenceScatter operator's input Updates and Ids do not match, receive "
                         f"Updates's shape is {list(updates.shape)}, Ids's shape is {list(ids.shape)} (each should "
                         f"be [M, 1]).")
    _check_rows("sequence_scatter", ids, lengths, "Ids")
    if len(lengths) > x.shape[0]:
        raise ValueError(f"The segment index is out of bound in SequenceScatter operator, it must be less than "
                         f"batch size: Ids has {len(lengths)} sequences but X has {x.shape[0]} rows.")
    width = int(np.prod(x.shape[1:]))
    flat_ids = ids.reshape(-1).astype(np.int64)
    if flat_ids.size and (flat_ids.min() < 0 or flat_ids.max() >= width):
        raise ValueError(f"sequence_scatter: Ids must lie in [0, {width}) (the size of a row of X), but received "
                         f"values from {flat_ids.min()} to {flat_ids.max()}")
    seq, _, _ = row_segments(lengths)
    return seq * width + flat_ids


@register_op("sequence_scatter", inputs=("X", "Ids", "Updates"), outputs=("Out",), context=True,
             no_grad_inputs=("Ids",), grad_share_lod={"Updates@GRAD": "Updates"},
             infer_shape=lambda attrs, x, ids, updates: (x.shape, x.dtype))
def _sequence_scatter_forward(ctx, attrs, x, ids, updates):
    index = _scatter_index(ctx, x, ids, updates)
    added = np.bincount(index, weights=updates.reshape(-1), minlength=x.size)
    return (x.reshape(-1) + added).astype(x.dtype, copy=False).reshape(x.shape)


@register_grad("sequence_scatter")
def _sequence_scatter_backward(ctx, attrs, ins, outs, douts, need):
    (x, ids, updates), dout = ins, douts[0]
    dupdates = dout.reshape(-1)[_scatter_index(ctx, x, ids, updates)].reshape(updates.shape) if need[2] else None
    return (dout.copy() if need[0] else None), None, dupdates


# --- im2sequence: every filter window of every image becomes one row [C * kh * kw]; one sequence per image --
def _im2seq_out(size, k, pad0, pad1, stride):
    """Windows along one axis; the division truncates toward zero as fluid's does (no count below 0)."""
    span = np.asarray(size + pad0 + pad1 - k)
    return np.maximum(np.sign(span) * (np.abs(span) // stride) + 1, 0)


def _im2seq_grid(attrs, x):
    (kh, kw), (sh, sw), (up, left, down, right) = attrs["kernels"], attrs["strides"], attrs["paddings"]
    return int(_im2seq_out(x.shape[2], kh, up, down, sh)), int(_im2seq_out(x.shape[3], kw, left, right, sw))


def _im2seq_infer(attrs, x, y):
    if len(x.shape) != 4:
        raise ValueError(f"Input(X) of Im2SequenceOp should be a 4-D tensor [N, C, H, W], but received shape "
                         f"{list(x.shape)}")
    (kh, kw), c = attrs["kernels"], x.shape[1]
    return (-1, c * kh * kw if c >= 0 else -1), x.dtype


def _im2seq_plan(attrs, x, y):
    """(grid rows, grid columns, [N, rows, columns] mask of the windows each image keeps). Without Y (or for one
    image) every image keeps the input's grid; with Y each keeps the grid of its real size (after out_stride),
    which may run past the input: those windows read zeros, as fluid's im2col does."""
    oh, ow = _im2seq_grid(attrs, x)
    if y is None or x.shape[0] <= 1:
        return oh, ow, np.ones((x.shape[0], oh, ow), bool)
    real = np.asarray(y).reshape(x.shape[0], 2).astype(np.int64)
    real = -(-real // np.asarray(attrs["out_stride"], np.int64))  # ceil division by out_stride
    (kh, kw), (sh, sw), (up, left, down, right) = attrs["kernels"], attrs["strides"], attrs["paddings"]
    rh, rw = _im2seq_out(real[:, 0], kh, up, down, sh), _im2seq_out(real[:, 1], kw, left, right, sw)
    oh, ow = max(oh, int(rh.max())), max(ow, int(rw.max()))
    return oh, ow, (np.arange(oh)[None, :, None] < rh[:, None, None]) & (np.arange(ow)[None, None, :] < rw[:, None, None])


def _im2seq_padded_shape(attrs, x, oh, ow):
    """The zero-padded image holding every window of the oh x ow grid."""
    (kh, kw), (sh, sw), (up, left, down, right) = attrs["kernels"], attrs["strides"], attrs["paddings"]
    return x.shape[:2] + (max(x.shape[2] + up + down, (oh - 1) * sh + kh), max(x.shape[3] + left + right,
                                                                            (ow - 1) * sw + kw))


@register_op("im2sequence", inputs=("X", "Y"), outputs=("Out",), optional=("Y",), no_grad_inputs=("Y",),
             attrs={"kernels": [1, 1], "strides": [1, 1], "paddings": [0, 0, 0, 0], "out_stride": [1, 1]},
             context=True, infer_shape=_im2seq_infer)
def _im2sequence_forward(ctx, attrs, x, y):
    _im2seq_infer(attrs, x, y)
    (kh, kw), (sh, sw), (up, left, _, _) = attrs["kernels"], attrs["strides"], attrs["paddings"]
    oh, ow, keep = _im2seq_plan(attrs, x, y)
    padded = np.zeros(_im2seq_padded_shape(attrs, x, oh, ow), x.dtype)
    padded[:, :, up:up + x.shape[2], left:left + x.shape[3]] = x
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]
    rows = windows[:, :, :oh, :ow].transpose(0, 2, 3, 1, 4, 5)  # [N, oh, ow, C, kh, kw]
    ctx.set_output_lod("Out", [keep.sum(axis=(1, 2)).tolist()])
    return rows[keep].reshape(-1, x.shape[1] * kh * kw)


@register_grad("im2sequence")
def _im2sequence_backward(ctx, attrs, ins, outs, douts, need):
    (x, y), dout = ins, douts[0]
    (kh, kw), (sh, sw), (up, left, _, _) = attrs["kernels"], attrs["strides"], attrs["paddings"]
    oh, ow, keep = _im2seq_plan(attrs, x, y)
    grid = np.zeros((x.shape[0], oh, ow, x.shape[1], kh, kw), dout.dtype)
    grid[keep] = dout.reshape(-1, x.shape[1], kh, kw)
    dpad = np.zeros(_im2seq_padded_shape(attrs, x, oh, ow), dout.dtype)
    grid = grid.transpose(0, 3, 4, 5, 1, 2)  # [N, C, kh, kw, oh, ow]
    for i in range(kh):  # one strided slice-add per filter tap
        for j in range(kw):
            dpad[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] += grid[:, :, i, j]
    return dpad[:, :, up:up + x.shape[2], left:left + x.shape[3]], None
