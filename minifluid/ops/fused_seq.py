"""Fused sequence ops of fluid 1.8 that its inference passes put into optimized programs (no gradient, as in
fluid): fusion_seqpool_concat, fusion_seqpool_cvm_concat, fusion_seqexpand_concat_fc and
fusion_seqconv_eltadd_relu. Each is the ops it replaces composed from their kernels in ops/sequence.py:
one segment reduction, repeat or context gather over the whole batch and one matrix product, never a loop
over sequences (the loops below run over the op's few inputs or context positions).
"""
import numpy as np

from . import parallel
from .registry import register_op
from .rnn import activation
from .sequence import _context_columns, _context_masks, lod_of, segment_sum

_POOLS = ("AVERAGE", "SUM", "SQRT")


# --- fusion_seqpool_concat / fusion_seqpool_cvm_concat: sequence_pool of every input, concat on axis 1 --------
def _pool_concat_infer(op_type, attrs, xs):
    if attrs["axis"] != 1:
        raise ValueError(f"{op_type} only supports concat axis=1 yet, but received axis value is {attrs['axis']}")
    if not xs:
        raise ValueError(f"Inputs(X) of {op_type} should be greater than 1, but received value is 0.")
    if len(xs[0].shape) != 2:
        raise ValueError(f"{op_type}: the dims size of first input should be equal to 2, but received value is "
                         f"{len(xs[0].shape)}.")
    return (-1, xs[0].shape[1] * len(xs)), xs[0].dtype


def _pool_concat(ctx, op_type, attrs, xs):
    """[sequences, inputs * width]: block i of row j pools sequence j of input i (an empty one gives 0)."""
    pool = attrs["pooltype"]
    if pool not in _POOLS:
        raise ValueError(f"{op_type}: attribute pooltype must be one of {list(_POOLS)}, but received {pool!r}")
    lengths = [np.asarray(lod_of(ctx, "X", op_type, index=i)[0], np.int64) for i in range(len(xs))]
    n, width = len(lengths[0]), int(np.prod(xs[0].shape[1:]))
    out = np.empty((n, width * len(xs)), xs[0].dtype)
    for i, (x, lens) in enumerate(zip(xs, lengths)):
        x = x.reshape(x.shape[0], -1)
        if x.shape[1] != width:
            raise ValueError(f"{op_type}: width of all inputs should be equal, but the width of the {i}-th input "
                             f"{x.shape[1]} is not equal to the previous {width}")
        if len(lens) != n:
            raise ValueError(f"{op_type}: batchsize of all inputs should be equal, but the {i}-th input holds "
                             f"{len(lens)} sequences where the first holds {n}.")
        if lens.sum() != x.shape[0]:
            raise ValueError(f"{op_type}: Input(X)[{i}] has {x.shape[0]} rows but its LoD {lens.tolist()} covers "
                             f"{int(lens.sum())}")
        block = out[:, i * width:(i + 1) * width]
        block[...] = segment_sum(x, lens)
        if pool != "SUM":
            scale = np.maximum(lens, 1).astype(x.dtype)
            block /= (scale if pool == "AVERAGE" else np.sqrt(scale))[:, None]
    ctx.set_output_lod("Out", [[1] * n])
    return out


@register_op("fusion_seqpool_concat", inputs=("X",), outputs=("Out",), duplicable=("X",), context=True,
             attrs={"pooltype": "SUM", "axis": 1}, no_gradient=True,
             share_lod={"Out": "X"},  # Out's lod_level 1 while building, as fluid's; the kernel sets its LoD
             infer_shape=lambda attrs, xs: _pool_concat_infer("FusionSeqPoolConcatOp", attrs, xs))
def _seqpool_concat_forward(ctx, attrs, xs):
    return _pool_concat(ctx, "FusionSeqPoolConcatOp", attrs, xs)


def _seqpool_cvm_concat_infer(attrs, xs, cvm):
    if not attrs["use_cvm"]:
        raise ValueError("FusionSeqPoolCVMConcatOp only supports use_cvm is true yet.")
    return _pool_concat_infer("FusionSeqPoolCVMConcatOp", attrs, xs)


@register_op("fusion_seqpool_cvm_concat", inputs=("X", "CVM"), outputs=("Out",), duplicable=("X",), context=True,
             attrs={"pooltype": "SUM", "use_cvm": True, "axis": 1}, no_gradient=True,
             infer_shape=_seqpool_cvm_concat_infer)
def _seqpool_cvm_concat_forward(ctx, attrs, xs, cvm):
    """As fusion_seqpool_concat, then cvm on every pooled block: its first two columns (show, click) become
    log(show + 1) and log(click + 1) - log(show + 1). CVM itself is not read (as in fluid)."""
    _seqpool_cvm_concat_infer(attrs, xs, cvm)
    out = _pool_concat(ctx, "FusionSeqPoolCVMConcatOp", attrs, xs)
    blocks = out.reshape(out.shape[0], len(xs), -1)
    if blocks.shape[2] < 2:
        raise ValueError(f"FusionSeqPoolCVMConcatOp: every input needs at least 2 columns (show, click), but "
                         f"received width {blocks.shape[2]}")
    np.log1p(blocks[..., 0], out=blocks[..., 0])
    np.log1p(blocks[..., 1], out=blocks[..., 1])
    blocks[..., 1] -= blocks[..., 0]
    return out


# --- fusion_seqexpand_concat_fc: act(concat(X0, expand(X1), expand(X2), ...) @ FCWeight + FCBias) -------------
def _expand_concat_fc_infer(attrs, xs, w, b):
    if len(xs) < 2:
        raise ValueError(f"Inputs(X) of FusionSeqExpandConcatFCOp should larger than 1, but received value is: "
                         f"{len(xs)}.")
    if len(w.shape) != 2:
        raise ValueError(f"Input(FCWeight)'s rank must be 2, but received value is: {len(w.shape)}.")
    total = sum(x.shape[1] for x in xs)
    if min(total, w.shape[0]) >= 0 and total != w.shape[0]:
        raise ValueError(f"FC height should be sum of all inputs width, but received FC height is: {w.shape[0]}, "
                         f"sum of all inputs width is: {total}.")
    d = w.shape[1]
    if b is not None and tuple(b.shape) not in ((d,), (1, d)):
        raise ValueError(f"FCBias shapes must be {d} or 1x{d}, but received {list(b.shape)}.")
    return ((xs[0].shape[0], d), xs[0].dtype), ((-1, d), xs[0].dtype)


@register_op("fusion_seqexpand_concat_fc", inputs=("X", "FCWeight", "FCBias"), outputs=("Out", "FCOut"),
             duplicable=("X",), optional=("FCBias",), attrs={"fc_activation": "identity"}, context=True,
             no_gradient=True, share_lod={"Out": "X"}, infer_shape=_expand_concat_fc_infer)
def _seqexpand_concat_fc_forward(ctx, attrs, xs, w, b):
    """X0 [T, M0] holds the sequences; X1.. [N, Mi] one row per sequence (LoD all ones), each repeated over
    its sequence's rows. The product splits along FCWeight's rows: X0 @ W0 over the T rows, the other
    inputs' part once per sequence (FCOut [N, D]) then repeated."""
    _expand_concat_fc_infer(attrs, xs, w, b)
    act = activation("fusion_seqexpand_concat_fc", attrs, "fc_activation")[0]
    ref = lod_of(ctx, "X", "FusionSeqExpandConcatFCOp")
    if len(ref) != 1:
        raise ValueError(f"FusionSeqExpandConcatFCOp: only support input lod size is 1, but received value is: "
                         f"{len(ref)}.")
    lengths = np.asarray(ref[0], np.int64)
    n = len(lengths)
    first = ctx.input_lod("X", 1)
    for i, x in enumerate(xs[1:], 1):
        if x.shape[0] != n or ctx.input_lod("X", i) != first:
            raise ValueError(f"FusionSeqExpandConcatFCOp: Input(X)[{i}] must hold one row per sequence of X[0] ({n}) "
                             f"with the LoD of X[1], but received {x.shape[0]} rows with LoD {ctx.input_lod('X', i)}")
    if lengths.sum() != xs[0].shape[0]:
        raise ValueError(f"FusionSeqExpandConcatFCOp: Input(X)[0] has {xs[0].shape[0]} rows but its LoD covers "
                         f"{int(lengths.sum())}")
    bounds = np.cumsum([x.shape[1] for x in xs])
    fc_out = parallel.matmul(xs[1], w[bounds[0]:bounds[1]])
    for x, lo, hi in zip(xs[2:], bounds[1:], bounds[2:]):
        fc_out += parallel.matmul(x, w[lo:hi])
    out = parallel.matmul(xs[0], w[:bounds[0]])
    out += np.repeat(fc_out, lengths, axis=0)
    if b is not None:
        out += b.reshape(1, -1)
    with np.errstate(over="ignore"):
        act(out, out)
    return out, fc_out


# --- fusion_seqconv_eltadd_relu: relu(sequence_conv(X, Filter) + Bias) ------------------------------------------
def _seqconv_infer(attrs, x, filt, bias):
    length, start = attrs["contextLength"], attrs["contextStart"]
    if attrs["contextStride"] != 1:
        raise ValueError(f"Currently, FusionSeqConvEltAddReluOp only supports contextStride=1, but received value "
                         f"is: {attrs['contextStride']}.")
    if len(x.shape) != 2 or len(filt.shape) != 2:
        raise ValueError(f"FusionSeqConvEltAddReluOp: Input(X) and Filter should be 2-D tensors, but received "
                         f"{list(x.shape)} and {list(filt.shape)}.")
    if length <= 0:
        raise ValueError(f"FusionSeqConvEltAddReluOp: attribute contextLength should be greater than 0, but "
                         f"received {length}.")
    if min(filt.shape[0], x.shape[1]) >= 0 and filt.shape[0] != length * x.shape[1]:
        raise ValueError(f"Filter's height should be equal to context_length * input_hidden_size, but received "
                         f"Filter height is: {filt.shape[0]},context_length is: {length}, input_hidden_size is: "
                         f"{x.shape[1]}.")
    if length + start <= 0:
        raise ValueError(f"contextStart size should be smaller than contextLength, but received context_length is: "
                         f"{length}, contextStart is: {start}.")
    return ((x.shape[0], filt.shape[1]), x.dtype), ((x.shape[0], filt.shape[0]), x.dtype)


@register_op("fusion_seqconv_eltadd_relu", inputs=("X", "Filter", "Bias"), outputs=("Out", "ColMat"),
             attrs={"contextLength": 3, "contextStart": 0, "contextStride": 1}, context=True, no_gradient=True,
             share_lod={"Out": "X"}, infer_shape=_seqconv_infer)
def _seqconv_eltadd_relu_forward(ctx, attrs, x, filt, bias):
    """ColMat [T, contextLength * M]: each row's context window (zeros outside its sequence), as
    sequence_conv builds it; Out = relu(ColMat @ Filter + Bias)."""
    _seqconv_infer(attrs, x, filt, bias)
    if bias.size != filt.shape[1]:
        raise ValueError(f"bias size should be equal to weights feature size, but received bias size is: "
                         f"{bias.size}, weights feature size is: {filt.shape[1]}.")
    lod = lod_of(ctx, "X", "FusionSeqConvEltAddReluOp")
    if len(lod) != 1:
        raise ValueError(f"Only support one level sequence now, but received value is: {len(lod)}.")
    if sum(lod[0]) != x.shape[0]:
        raise ValueError(f"FusionSeqConvEltAddReluOp: Input(X) has {x.shape[0]} rows but its LoD covers "
                         f"{sum(lod[0])}")
    conv = dict(attrs, paddingTrainable=False)
    inside, pad_row = _context_masks(conv, lod[0])
    col = _context_columns(conv, x, inside, pad_row, None).reshape(x.shape[0], -1)
    out = parallel.matmul(col, filt)
    out += bias.reshape(1, -1)
    np.maximum(out, 0, out=out)
    return out, col
