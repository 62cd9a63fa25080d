"""Sequence (LoD) ops between padded and LoD layouts, and on LoD itself: sequence_pad / sequence_unpad,
sequence_mask, sequence_slice, sequence_enumerate and lod_reset (also lod_append's op).

Same conventions as ops/sequence.py: context kernels over the whole batch, fancy indexing from offsets.
"""
import numpy as np

from ..dtypes import convert_dtype, to_numpy_dtype
from .registry import grad_var_name, register_grad, register_op
from .sequence import lod_of, lod_offsets, row_segments

# --- sequence_pad / sequence_unpad --------------------------------------------------------------------
def _pad_infer(attrs, x, pad_value):
    if len(x.shape) < 2:
        raise ValueError(f"The rank of SequencePadOp Input(X) can't be less than 2. But received ({len(x.shape)})")
    padded = attrs["padded_length"]  # -1: the longest sequence, known when it runs
    return ((-1, padded) + tuple(x.shape[1:]), x.dtype), ((-1,), "int64")


@register_op("sequence_pad", inputs=("X", "PadValue"), outputs=("Out", "Length"), attrs={"padded_length": -1},
             context=True, no_grad_inputs=("PadValue",), infer_shape=_pad_infer)
def _sequence_pad_forward(ctx, attrs, x, pad_value):
    lengths = np.asarray(lod_of(ctx, "X", "SequencePadOp")[0], np.int64)
    step = x.shape[1:]
    if pad_value.shape not in ((1,), step) and pad_value.size != 1:
        raise ValueError(f"The SequencePadOp Input(PadValue) must be a scalar or a tensor whose shape equals to "
                         f"time steps in sequences. But received PadValue's shape {list(pad_value.shape)}, time "
                         f"step's shape {list(step)}")
    if x.shape[0] != lengths.sum():
        raise ValueError(f"The Input(X)'s lod info mismatches the actual tensor shape. The Input(X)'s lod info is "
                         f"({lengths.sum()}), the actual tensor shape is ({x.shape[0]})")
    longest = int(lengths.max()) if len(lengths) else 0
    padded = attrs["padded_length"]
    if padded == -1:
        padded = longest
    if padded < longest:
        raise ValueError(f"The Attr(padded_length) must be -1 or an int greater than the length of the longest "
                         f"original sequence. But the padded_length received is ({padded}), the length of the "
                         f"longest original sequence is ({longest})")
    out = np.empty((len(lengths), padded) + step, x.dtype)
    out[...] = pad_value.reshape(step) if pad_value.shape == step else pad_value.reshape(-1)[0]
    seq, pos, _ = row_segments(lengths)
    out[seq, pos] = x
    return out, lengths


@register_grad("sequence_pad")
def _sequence_pad_backward(ctx, attrs, ins, outs, douts, need):
    (x, _), (dout, _) = ins, douts
    seq, pos, _ = row_segments(ctx.input_lod("X")[0])
    return dout[seq, pos].reshape(x.shape), None


@register_op("sequence_unpad", inputs=("X", "Length"), outputs=("Out",), context=True, no_grad_inputs=("Length",),
             infer_shape=lambda attrs, x, length: ((-1,) + (tuple(x.shape[2:]) or (1,)), x.dtype))
def _sequence_unpad_forward(ctx, attrs, x, length):
    lengths = length.reshape(-1).astype(np.int64)
    if len(x.shape) < 2 or len(lengths) != x.shape[0] or (len(lengths) and lengths.max() > x.shape[1]):
        raise ValueError(f"sequence_unpad: Input(X) of shape {list(x.shape)} must be [batch, max_len, ...] with "
                         f"one Length per row, each at most max_len; got Length {lengths.tolist()}")
    seq, pos, _ = row_segments(lengths)
    ctx.set_output_lod("Out", [lengths.tolist()])
    out = x[seq, pos]
    return out.reshape(-1, 1) if x.ndim == 2 else out


@register_grad("sequence_unpad")
def _sequence_unpad_backward(ctx, attrs, ins, outs, douts, need):
    (x, length), (dout,) = ins, douts
    seq, pos, _ = row_segments(length.reshape(-1).astype(np.int64))
    dx = np.zeros_like(x)
    dx[seq, pos] = dout.reshape((len(seq),) + x.shape[2:])
    return dx, None


# --- sequence_mask ------------------------------------------------------------------------------------
def _mask_infer(attrs, x, maxlen_tensor):
    width = attrs["maxlen"] if attrs["maxlen"] >= 0 and maxlen_tensor is None else -1
    return (tuple(x.shape) + (width,), convert_dtype(attrs["out_dtype"]))


@register_op("sequence_mask", inputs=("X", "MaxLenTensor"), outputs=("Y",), optional=("MaxLenTensor",),
             attrs={"maxlen": -1, "out_dtype": "int64"}, no_gradient=True, infer_shape=_mask_infer)
def _sequence_mask_forward(attrs, x, maxlen_tensor):
    maxlen = int(maxlen_tensor.reshape(-1)[0]) if maxlen_tensor is not None else attrs["maxlen"]
    if maxlen < 0:
        maxlen = int(x.max()) if x.size else 0
    return (np.arange(maxlen) < x[..., None]).astype(to_numpy_dtype(attrs["out_dtype"]))


# --- sequence_slice -----------------------------------------------------------------------------------
def _slice_rows(op_lengths, offset, length):
    """Rows taken: ``length[i]`` rows of sequence i from its row ``offset[i]``."""
    offset, length = offset.reshape(-1).astype(np.int64), length.reshape(-1).astype(np.int64)
    seq, pos, _ = row_segments(length)
    return lod_offsets(op_lengths)[:-1][seq] + offset[seq] + pos, length


@register_op("sequence_slice", inputs=("X", "Offset", "Length"), outputs=("Out",), context=True,
             no_grad_inputs=("Offset", "Length"), infer_shape=lambda attrs, x, o, n: ((-1,) + tuple(x.shape[1:]),
                                                                                      x.dtype))
def _sequence_slice_forward(ctx, attrs, x, offset, length):
    lod = lod_of(ctx, "X", "SequenceSlice operator")
    if len(lod) != 1:
        raise ValueError(f"LoD information error. SequenceSlice operator only support one level sequence now, "
                         f"but received LoD level is {len(lod)}.")
    lengths = np.asarray(lod[0], np.int64)
    for name, v in (("length", length), ("offset", offset)):
        if v.shape[0] != len(lengths):
            raise ValueError(f"Input {name} shape error. The length of input LoD sequence and input {name} shape "
                             f"should be equal, but received {len(lengths)} != {v.shape[0]}.")
    o, n = offset.reshape(-1), length.reshape(-1)
    for name, v in (("offset", o), ("length", n)):
        if (v < 0).any():
            i = int(np.flatnonzero(v < 0)[0])
            raise ValueError(f"The input {name}[{i}]'s value is negative, its value is {int(v[i])}, expect it to "
                             "be non-negative.")
    over = o + n > lengths
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise IndexError(f"The slice end index of target tensor is out of range. expect it less than or equal to "
                         f"{lengths[i]}, but the actual slice end index is {int(o[i] + n[i])}.")
    rows, out_lengths = _slice_rows(lengths, offset, length)
    ctx.set_output_lod("Out", [out_lengths.tolist()])
    return x[rows]


@register_grad("sequence_slice")
def _sequence_slice_backward(ctx, attrs, ins, outs, douts, need):
    (x, offset, length), (dout,) = ins, douts
    rows, _ = _slice_rows(ctx.input_lod("X")[0], offset, length)
    dx = np.zeros_like(x)
    dx[rows] = dout
    return dx, None, None


# --- sequence_enumerate -------------------------------------------------------------------------------
@register_op("sequence_enumerate", inputs=("X",), outputs=("Out",), attrs={"win_size": 2, "pad_value": 0},
             context=True, share_lod={"Out": "X"}, no_gradient=True,
             infer_shape=lambda attrs, x: ((x.shape[0], attrs["win_size"]), x.dtype))
def _sequence_enumerate_forward(ctx, attrs, x):
    lengths = np.asarray(lod_of(ctx, "X", "SequenceEnumerateOp")[-1], np.int64)
    win = attrs["win_size"]
    if win < 2:
        raise ValueError(f"The window size should be not less than 2. But received {win}.")
    if x.size != x.shape[0]:
        raise ValueError(f"sequence_enumerate: Input(X) must hold one id per row ([N, 1]); got shape {list(x.shape)}")
    if not x.size:
        return np.empty((0, win), x.dtype)
    seq, pos, _ = row_segments(lengths)
    shift = np.arange(win)
    inside = (pos[:, None] + shift) < lengths[seq][:, None]
    rows = np.minimum(np.arange(x.shape[0])[:, None] + shift, x.shape[0] - 1)
    return np.where(inside, x.reshape(-1)[rows], x.dtype.type(attrs["pad_value"]))


# --- lod_reset (lod_reset and lod_append layers) ------------------------------------------------------
@register_op("lod_reset", inputs=("X", "Y"), outputs=("Out",), attrs={"target_lod": [], "append": False},
             optional=("Y",), no_grad_inputs=("Y",), context=True, grad_share_lod={grad_var_name("X"): "X"},
             infer_shape=lambda attrs, x, y: (x.shape, x.dtype))
def _lod_reset_forward(ctx, attrs, x, y):
    y_lod = ctx.input_lod("Y") if y is not None else []
    if y_lod:
        if sum(y_lod[-1]) != x.shape[0]:
            raise ValueError(f"The last value of Input(Y)'s last level LoD should be equal to the first dimension "
                             f"of Input(X). But received the last value of Input(Y)'s last level LoD is "
                             f"{sum(y_lod[-1])}, the first dimension of Input(X) is {x.shape[0]}.")
        ctx.set_output_lod("Out", y_lod)
        return x.copy()
    level = [int(v) for v in (y.reshape(-1) if y is not None else attrs["target_lod"])]
    if len(level) <= 1:
        raise ValueError(f"The size of target LoD should be greater than 1. But received the size of target LoD "
                         f"is {len(level)}.")
    if level[0] != 0:
        raise ValueError(f"Target LoD should be a vector starting from 0. But target LoD starts from {level[0]}.")
    if level[-1] != x.shape[0]:
        raise ValueError(f"The last value of 'Target LoD''s last level LoD should be equal to the first dimension "
                         f"of Input(X). But received the 'Target LoD' is {level}, Input(X)'s shape is is "
                         f"{list(x.shape)}.")
    lengths = np.diff(level)
    if (lengths < 0).any():
        raise ValueError(f"'Target LoD' should be an ascending vector. But received the Target LoD is {level}.")
    ctx.set_output_lod("Out", (ctx.input_lod("X") if attrs["append"] else []) + [lengths.tolist()])
    return x.copy()


@register_grad("lod_reset")
def _lod_reset_backward(ctx, attrs, ins, outs, douts, need):
    return douts[0], None
