"""fused_embedding_seq_pool (fluid.contrib.layers): embedding lookup and sum pooling per sequence in one op.

Ids: int64 [T, 1] (or [T]) with one LoD level; W: [vocab, D]; Out: [number of sequences, D], each the sum of its
ids' rows of W (rows of ``padding_idx`` count as zeros; an empty sequence gives zeros). The gradient scatters
each sequence's output gradient to its ids' rows in one sorted reduction (ops/sequence.py's scatter_rows)."""
import numpy as np

from .sequence import lod_of, row_segments, scatter_rows, segment_sum
from .registry import register_grad, register_op


def _ids(ids, vocab, padding_idx):
    flat = np.asarray(ids).reshape(-1).astype(np.int64, copy=False)
    bad = (flat < 0) | (flat >= vocab)
    if padding_idx >= 0:
        bad &= flat != padding_idx
    if bad.any():
        raise ValueError(f"fused_embedding_seq_pool: ids must lie in [0, {vocab}), got {flat[bad][:5].tolist()}")
    return flat


@register_op("fused_embedding_seq_pool", inputs=("W", "Ids"), outputs=("Out",), no_grad_inputs=("Ids",),
             context=True, attrs={"combiner": "sum", "padding_idx": -1, "is_sparse": False, "grad_inplace": False},
             infer_shape=lambda attrs, w, ids: ((-1, w.shape[1]), w.dtype))
def _fused_embedding_forward(ctx, attrs, w, ids):
    if attrs["combiner"] != "sum":
        raise ValueError(f"fused_embedding_seq_pool: combiner must be 'sum' (the only one fluid has), got "
                         f"{attrs['combiner']!r}")
    lengths = np.asarray(lod_of(ctx, "Ids", "FusedEmbeddingSeqPoolOp", max_levels=1)[-1], np.int64)
    flat = _ids(ids, w.shape[0], attrs["padding_idx"])
    rows = w[flat]
    if attrs["padding_idx"] >= 0:
        rows[flat == attrs["padding_idx"]] = 0
    return segment_sum(rows, lengths)


@register_grad("fused_embedding_seq_pool")
def _fused_embedding_backward(ctx, attrs, ins, outs, douts, need):
    (w, ids), dout = ins, douts[0]
    lengths = np.asarray(ctx.input_lod("Ids")[-1], np.int64)
    seq = row_segments(lengths)[0]
    flat = np.asarray(ids).reshape(-1).astype(np.int64, copy=False)
    values = dout[seq]
    if attrs["padding_idx"] >= 0:
        values[flat == attrs["padding_idx"]] = 0
    return scatter_rows(flat, values, w.shape[0]).astype(w.dtype, copy=False), None
