"""Sequence (LoD) ops: pooling, softmax, convolution, expansion, concatenation, reshape and reversal.

Each kernel is a context kernel (executor/context.py) reading its input's LoD as recursive sequence
lengths and works on the whole batch at once: offsets from a cumulative sum, one segment reduction
(``np.add.reduceat`` / ``np.maximum.reduceat``) or one fancy index per op; never a loop over sequences.
Empty sequences are allowed where fluid allows them (pooling gives ``pad_value`` for them).
"""
import numpy as np

from .registry import grad_var_name, register_grad, register_op

__all__ = ["lod_offsets", "lod_of", "row_segments", "scatter_rows", "segment_sum"]


def lod_offsets(lengths):
    """[3, 0, 2] -> array([0, 3, 3, 5]) (int64)."""
    out = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def lod_of(ctx, slot, op_type, max_levels=None, index=0):
    """The LoD (lengths per level) of input ``slot``; fluid's error when it has none (or too many levels)."""
    lod = ctx.input_lod(slot, index)
    if not lod:
        raise ValueError(f"Input({slot}) Tensor of {op_type} does not contain LoD information "
                         f"(feed a LoDTensor, or a variable declared with lod_level > 0)")
    if max_levels is not None and len(lod) > max_levels:
        raise ValueError(f"{op_type}: the LoD of Input({slot}) has {len(lod)} levels; at most {max_levels} "
                         f"supported (LoD {lod})")
    return lod


def row_segments(lengths):
    """(sequence index of every row, row position inside its sequence, offsets)."""
    lengths = np.asarray(lengths, np.int64)
    offsets = lod_offsets(lengths)
    seq = np.repeat(np.arange(len(lengths)), lengths)
    return seq, np.arange(int(offsets[-1])) - offsets[seq], offsets


def segment_sum(x, lengths, fill=0.0):
    """Sum of the rows of each sequence (``fill`` for an empty one), one ``np.add.reduceat``."""
    lengths = np.asarray(lengths, np.int64)
    out = np.full((len(lengths),) + x.shape[1:], fill, x.dtype)
    full = lengths > 0
    if full.any():
        out[full] = np.add.reduceat(x[:int(lengths.sum())], lod_offsets(lengths)[:-1][full], axis=0)
    return out


def scatter_rows(index, values, n_rows):
    """``np.add.at(zeros(n_rows, ...), index, values)`` by a stable sort and one ``np.add.reduceat``
    (``np.add.at`` is an order of magnitude slower on large batches)."""
    out = np.zeros((n_rows,) + values.shape[1:], values.dtype)
    if index.size:
        order = np.argsort(index, kind="stable")
        ordered = index[order]
        starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
        out[ordered[starts]] = np.add.reduceat(values[order], starts, axis=0)
    return out


def _check_rows(op_type, x, lengths, slot="X"):
    if x.shape[0] != sum(lengths):
        raise ValueError(f"{op_type}: Input({slot}) has {x.shape[0]} rows but its LoD {list(lengths)} covers "
                         f"{sum(lengths)}")


def _dim0_unknown(x):
    return (-1,) + tuple(x.shape[1:])


# --- sequence_pool ------------------------------------------------------------------------------------
_POOL_TYPES = ("AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST")


@register_op("sequence_pool", inputs=("X",), outputs=("Out", "MaxIndex"), context=True,
             attrs={"pooltype": "AVERAGE", "is_test": False, "pad_value": 0.0},
             infer_shape=lambda attrs, x: ((_dim0_unknown(x), x.dtype), (_dim0_unknown(x), "int32")))
def _sequence_pool_forward(ctx, attrs, x):
    pool = attrs["pooltype"].upper()
    if pool not in _POOL_TYPES:
        raise ValueError(f"sequence_pool: unsupported pooltype {attrs['pooltype']!r}; expected one of "
                         f"{[p.lower() for p in _POOL_TYPES]}")
    lod = lod_of(ctx, "X", "SequencePoolOp", max_levels=2)
    lengths = np.asarray(lod[-1], np.int64)
    _check_rows("sequence_pool", x, lengths)
    if len(lod) > 1:
        ctx.set_output_lod("Out", lod[:1])
    offsets, full, pad = lod_offsets(lengths), lengths > 0, x.dtype.type(attrs["pad_value"])
    index = np.full((len(lengths),) + x.shape[1:], -1, np.int32)  # the row of each max (MAX); -1: none
    if pool in ("SUM", "AVERAGE", "SQRT"):
        out = segment_sum(x, lengths, pad)
        scale = {"SUM": None, "AVERAGE": lengths, "SQRT": np.sqrt(lengths)}[pool]
        if scale is not None:
            out[full] /= scale[full].reshape((-1,) + (1,) * (x.ndim - 1)).astype(x.dtype)
    elif pool == "MAX":
        out = np.full((len(lengths),) + x.shape[1:], pad, x.dtype)
        if full.any():
            starts = offsets[:-1][full]
            out[full] = np.maximum.reduceat(x, starts, axis=0)
            seq, _, _ = row_segments(lengths)
            rows = np.arange(x.shape[0]).reshape((-1,) + (1,) * (x.ndim - 1))
            first = np.where(x == out[seq], rows, x.shape[0])  # the first row reaching the max
            index[full] = np.minimum.reduceat(first, starts, axis=0)
    else:
        out = np.full((len(lengths),) + x.shape[1:], pad, x.dtype)
        out[full] = x[offsets[1:][full] - 1] if pool == "LAST" else x[offsets[:-1][full]]
    return out, index


@register_grad("sequence_pool")
def _sequence_pool_backward(ctx, attrs, ins, outs, douts, need):
    (x,), (_, index), (dout, _) = ins, outs, douts
    pool = attrs["pooltype"].upper()
    lengths = np.asarray(ctx.input_lod("X")[-1], np.int64)
    seq, _, offsets = row_segments(lengths)
    full = lengths > 0
    if pool in ("SUM", "AVERAGE", "SQRT"):
        dx = dout[seq]
        if pool != "SUM":
            scale = (lengths if pool == "AVERAGE" else np.sqrt(lengths))[seq]
            dx = dx / scale.reshape((-1,) + (1,) * (x.ndim - 1)).astype(x.dtype)
        return (dx.astype(x.dtype, copy=False),)
    dx = np.zeros_like(x)
    if pool == "MAX":
        flat_dx, flat_dout = dx.reshape(x.shape[0], -1), dout.reshape(len(lengths), -1)
        rows = index.reshape(len(lengths), -1)[full]
        cols = np.broadcast_to(np.arange(flat_dx.shape[1]), rows.shape)
        flat_dx[rows, cols] = flat_dout[full]
    else:
        dx[offsets[1:][full] - 1 if pool == "LAST" else offsets[:-1][full]] = dout[full]
    return (dx,)


# --- sequence_softmax ---------------------------------------------------------------------------------
@register_op("sequence_softmax", inputs=("X",), outputs=("Out",), context=True, share_lod={"Out": "X"},
             attrs={"use_cudnn": False, "data_format": "AnyLayout"}, infer_shape=lambda attrs, x: (x.shape, x.dtype))
def _sequence_softmax_forward(ctx, attrs, x):
    lengths = lod_of(ctx, "X", "SequenceSoftmaxOp")[-1]
    if x.size != x.shape[0]:
        raise ValueError(f"sequence_softmax: Input(X) must hold one value per row ([N, 1] or [N]); got shape "
                         f"{list(x.shape)}")
    _check_rows("sequence_softmax", x, lengths)
    seq, _, offsets = row_segments(lengths)
    flat = x.reshape(-1)
    full = np.asarray(lengths) > 0
    peak = np.zeros(len(lengths), x.dtype)
    if full.any():
        peak[full] = np.maximum.reduceat(flat, offsets[:-1][full])
    e = np.exp(flat - peak[seq])
    return (e / segment_sum(e, lengths, 1.0)[seq]).reshape(x.shape)


@register_grad("sequence_softmax")
def _sequence_softmax_backward(ctx, attrs, ins, outs, douts, need):
    (out,), (dout,) = outs, douts
    lengths = ctx.input_lod("X")[-1]
    seq, _, _ = row_segments(lengths)
    prod = (out * dout).reshape(-1)
    return ((dout.reshape(-1) - segment_sum(prod, lengths)[seq]).reshape(out.shape) * out,)


# --- sequence_conv ------------------------------------------------------------------------------------
def _context_masks(attrs, lengths):
    """[rows, contextLength]: whether context position k of each row lies inside the row's sequence (it is
    then row ``r + contextStart + k``), and the padding row it reads otherwise (above the sequence:
    ``src + up``; below it: ``up + src - length``, ``src`` its position in the sequence)."""
    seq, pos, _ = row_segments(lengths)
    length = np.asarray(lengths, np.int64)[seq][:, None]
    start = attrs["contextStart"]
    up = max(0, -start)
    src = pos[:, None] + start + np.arange(attrs["contextLength"])
    inside = (src >= 0) & (src < length)
    return inside, np.where(src < 0, src + up, up + src - length)


def _shifts(attrs, n_rows):
    """(k, rows r whose ``r + shift`` is a row, as a slice, and the shifted slice) per context position."""
    for k in range(attrs["contextLength"]):
        shift = attrs["contextStart"] + k
        lo, hi = max(0, -shift), min(n_rows, n_rows - shift)
        if lo < hi:
            yield k, slice(lo, hi), slice(lo + shift, hi + shift)


def _context_columns(attrs, x, inside, pad_row, padding):
    """The [rows, contextLength, width] context of every row: one shifted copy of X per context position
    (a loop over the few positions, never over sequences), then zeros or padding outside sequences."""
    col = np.zeros((x.shape[0], attrs["contextLength"], x.shape[1]), x.dtype)
    for k, rows, shifted in _shifts(attrs, x.shape[0]):
        col[rows, k] = x[shifted]
    outside = ~inside
    col[outside] = padding[pad_row[outside]] if attrs["paddingTrainable"] else 0
    return col


def _sequence_conv_infer(attrs, x, padding, filt):
    if attrs["contextStride"] != 1:
        raise ValueError("Currently, SequenceConvOp only supports contextStride=1. But received "
                         f"contextStride = {attrs['contextStride']}.")
    if len(x.shape) != 2 or len(filt.shape) != 2:
        raise ValueError(f"Input(X, Filter) should be 2-D tensor. But received Input(X): {list(x.shape)}, "
                         f"Filter: {list(filt.shape)}")
    if min(filt.shape[0], x.shape[1]) >= 0 and filt.shape[0] != attrs["contextLength"] * x.shape[1]:
        raise ValueError(f"Filter's height should be context_length * input_hidden_size. But received: "
                         f"filter's height = {filt.shape[0]}, context_length * input_hidden_size = "
                         f"{attrs['contextLength'] * x.shape[1]}.")
    return ((x.shape[0], filt.shape[1]), x.dtype)


@register_op("sequence_conv", inputs=("X", "PaddingData", "Filter"), outputs=("Out",), context=True,
             optional=("PaddingData",), share_lod={"Out": "X"}, infer_shape=_sequence_conv_infer,
             attrs={"paddingTrainable": False, "contextLength": 3, "contextStart": 0, "contextStride": 1})
def _sequence_conv_forward(ctx, attrs, x, padding, filt):
    _sequence_conv_infer(attrs, x, padding, filt)
    lengths = lod_of(ctx, "X", "SequenceConvOp", max_levels=1)[0]
    _check_rows("sequence_conv", x, lengths)
    if attrs["paddingTrainable"] and padding is None:
        raise ValueError("Input(PaddingData) of SequenceConvOp should not be null (paddingTrainable is True).")
    inside, pad_row = _context_masks(attrs, lengths)
    return _context_columns(attrs, x, inside, pad_row, padding).reshape(x.shape[0], -1) @ filt


@register_grad("sequence_conv")
def _sequence_conv_backward(ctx, attrs, ins, outs, douts, need):
    (x, padding, filt), (dout,) = ins, douts
    inside, pad_row = _context_masks(attrs, ctx.input_lod("X")[0])
    dfilt = dx = dpad = None
    if need[2]:
        dfilt = _context_columns(attrs, x, inside, pad_row, padding).reshape(x.shape[0], -1).T @ dout
    dcol = (dout @ filt.T).reshape(x.shape[0], attrs["contextLength"], x.shape[1])
    if need[0]:
        masked = dcol * inside[..., None]
        dx = np.zeros_like(x)
        for k, rows, shifted in _shifts(attrs, x.shape[0]):
            dx[shifted] += masked[rows, k]
    if need[1] and padding is not None:
        outside = ~inside
        dpad = (scatter_rows(pad_row[outside], dcol[outside], len(padding)) if attrs["paddingTrainable"]
                else np.zeros_like(padding))
    return dx, dpad, dfilt


# --- sequence_expand / sequence_expand_as ------------------------------------------------------------
def _expand_rows(x_lengths, repeats):
    """Source rows of sequence i of X (``x_lengths[i]`` rows) repeated ``repeats[i]`` times, in order."""
    x_lengths, repeats = np.asarray(x_lengths, np.int64), np.asarray(repeats, np.int64)
    copies = np.repeat(np.arange(len(repeats)), repeats)  # which X sequence each output sequence copies
    out_lengths = x_lengths[copies]
    seq, pos, _ = row_segments(out_lengths)
    return lod_offsets(x_lengths)[copies][seq] + pos, out_lengths


def _expand_infer(attrs, x, y):
    if len(x.shape) < 2:
        raise ValueError(f"Dimension number of Input(X) should be at least 2. But received: input rank "
                         f"{len(x.shape)}, input shape {list(x.shape)}.")
    return (_dim0_unknown(x), x.dtype)


@register_op("sequence_expand", inputs=("X", "Y"), outputs=("Out",), attrs={"ref_level": -1}, context=True,
             no_grad_inputs=("Y",), infer_shape=_expand_infer)
def _sequence_expand_forward(ctx, attrs, x, y):
    x_lod, y_lod = ctx.input_lod("X"), ctx.input_lod("Y")
    if len(x_lod) > 1:
        raise ValueError(f"Level of Input(X)'s lod should not be greater than 1. But received: lod level "
                         f"{len(x_lod)}.")
    if not y_lod:
        raise ValueError("Level of Input(Y)'s lod should be greater than 0. But received: lod level 0.")
    ref = attrs["ref_level"]
    if not (ref == -1 or 0 <= ref < len(y_lod)):
        raise ValueError(f"Invlid `ref_level`, which should be either equal to -1 or in [0, {len(y_lod)}), but "
                         f"received `ref_level` = {ref}.")
    repeats = y_lod[ref]
    x_lengths = x_lod[0] if x_lod else [1] * x.shape[0]
    if len(x_lengths) != len(repeats):
        raise ValueError(f"sequence_expand: Input(X) holds {len(x_lengths)} sequences (rows when it has no LoD) "
                         f"but Input(Y)'s LoD level {ref} holds {len(repeats)}")
    rows, out_lengths = _expand_rows(x_lengths, repeats)
    if x_lod:
        ctx.set_output_lod("Out", [out_lengths.tolist()])
    return x[rows]


@register_grad("sequence_expand")
def _sequence_expand_backward(ctx, attrs, ins, outs, douts, need):
    (x, _), (dout,) = ins, douts
    x_lod, y_lod = ctx.input_lod("X"), ctx.input_lod("Y")
    rows, _ = _expand_rows(x_lod[0] if x_lod else [1] * x.shape[0], y_lod[attrs["ref_level"]])
    return scatter_rows(rows, dout, x.shape[0]), None


@register_op("sequence_expand_as", inputs=("X", "Y"), outputs=("Out",), context=True, no_grad_inputs=("Y",),
             share_lod={"Out": "Y"}, grad_share_lod={grad_var_name("X"): "X"}, infer_shape=_expand_infer)
def _sequence_expand_as_forward(ctx, attrs, x, y):
    y_lod = ctx.input_lod("Y")
    if len(y_lod) != 1:
        raise ValueError(f"Level number of Input(Y)'s lod should be 1. But received Y's lod level = {len(y_lod)}.")
    if x.shape[0] != len(y_lod[0]):
        raise ValueError(f"The first dimension of Input(X) should be one less than the size of Input(Y)'s 0 level "
                         f"lod. But received X's shape[0] = {x.shape[0]}, Y's lod[0].size = {len(y_lod[0]) + 1}.")
    return x[np.repeat(np.arange(x.shape[0]), y_lod[0])]


@register_grad("sequence_expand_as")
def _sequence_expand_as_backward(ctx, attrs, ins, outs, douts, need):
    (x, _), (dout,) = ins, douts
    return segment_sum(dout, ctx.input_lod("Y")[0]).astype(x.dtype, copy=False), None


# --- sequence_concat ----------------------------------------------------------------------------------
def _concat_order(lods):
    """Rows of the stacked inputs in output order (sequence i of every input, input by input) and the
    output's sequence lengths."""
    lengths = np.asarray([lod[0] for lod in lods], np.int64)  # [inputs, sequences]
    base = np.concatenate([[0], np.cumsum(lengths.sum(axis=1))[:-1]])
    starts = base[:, None] + np.stack([lod_offsets(row)[:-1] for row in lengths])
    order = lengths.T.reshape(-1)  # sequence-major: (seq 0 of input 0, seq 0 of input 1, ...)
    seq, pos, _ = row_segments(order)
    return starts.T.reshape(-1)[seq] + pos, lengths.sum(axis=0)


@register_op("sequence_concat", inputs=("X",), outputs=("Out",), duplicable=("X",), context=True,
             infer_shape=lambda attrs, xs: (_dim0_unknown(xs[0]), xs[0].dtype))
def _sequence_concat_forward(ctx, attrs, xs):
    lods = [ctx.input_lod("X", i) for i in range(len(xs))]
    if any(not lod for lod in lods):
        raise ValueError("Input(X) Tensor of SequenceConcatOp does not contain LoD information.")
    counts = {len(lod[0]) for lod in lods}
    if len(counts) > 1:
        raise ValueError(f"The number of sequence must be same between each input. But received "
                         f"{[len(lod[0]) for lod in lods]}")
    rows, out_lengths = _concat_order(lods)
    ctx.set_output_lod("Out", [out_lengths.tolist()])
    return np.concatenate(xs, axis=0)[rows]


@register_grad("sequence_concat")
def _sequence_concat_backward(ctx, attrs, ins, outs, douts, need):
    (xs,), (dout,) = ins, douts
    rows, _ = _concat_order([ctx.input_lod("X", i) for i in range(len(xs))])
    stacked = np.empty((sum(x.shape[0] for x in xs),) + dout.shape[1:], dout.dtype)
    stacked[rows] = dout
    return (np.split(stacked, np.cumsum([x.shape[0] for x in xs])[:-1]),)


# --- sequence_reshape ---------------------------------------------------------------------------------
@register_op("sequence_reshape", inputs=("X",), outputs=("Out",), attrs={"new_dim": 1}, context=True,
             infer_shape=lambda attrs, x: ((-1, attrs["new_dim"]), x.dtype))
def _sequence_reshape_forward(ctx, attrs, x):
    lod = lod_of(ctx, "X", "SequenceReshapeOp")
    if len(lod) != 1:
        raise ValueError(f"Only support one level sequence now. But lod size of Input(X) is ({len(lod)})")
    lengths, width, new = np.asarray(lod[0], np.int64), x.shape[1], attrs["new_dim"]
    if x.shape[0] != lengths.sum():
        raise ValueError(f"The size of X.shape[0] and X.lod()[0].back() should be same. But received "
                         f"({x.shape[0]}) != ({lengths.sum()})")
    bad = (lengths * width) % new != 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"Please make sure (sequence_length * dimension) can be divided by new_dim with no "
                         f"remainder for each sequence. The {i}th sequence has length {lengths[i]}, dimension "
                         f"{width}, new_dim {new}.")
    ctx.set_output_lod("Out", [(lengths * width // new).tolist()])
    return x.reshape(-1, new)


@register_grad("sequence_reshape")
def _sequence_reshape_backward(ctx, attrs, ins, outs, douts, need):
    (x,), (dout,) = ins, douts
    return (dout.reshape(x.shape),)


# --- sequence_reverse ---------------------------------------------------------------------------------
def _reversed_rows(lengths):
    seq, pos, offsets = row_segments(lengths)
    return offsets[seq + 1] - 1 - pos


@register_op("sequence_reverse", inputs=("X",), outputs=("Y",), context=True, share_lod={"Y": "X"},
             infer_shape=lambda attrs, x: (x.shape, x.dtype))
def _sequence_reverse_forward(ctx, attrs, x):
    lengths = lod_of(ctx, "X", "SequenceReverseOp")[-1]
    _check_rows("sequence_reverse", x, lengths)
    return x[_reversed_rows(lengths)]


@register_grad("sequence_reverse")
def _sequence_reverse_backward(ctx, attrs, ins, outs, douts, need):
    (dout,) = douts
    return (dout[_reversed_rows(ctx.input_lod("X")[-1])],)
