"""rank_attention and batch_fc (fluid.contrib.layers, CTR models).

rank_attention: instance i's RankOffset row is [rank_i, (rank_ik, index_ik) for k < MaxRank] (1-based ranks, 0 or
less: none). Out[i] = sum over k with both ranks set of X[index_ik] @ P[rank_i - 1, rank_ik - 1], where P is
RankParam viewed as [MaxRank, MaxRank, width of X, out width]. One gather of the blocks and one einsum; the
gradients scatter back with ops/sequence.py's scatter_rows.
batch_fc: one fully connected layer per slot pair: Out[s] = Input[s] @ W[s] + Bias[s].
"""
import numpy as np

from .registry import register_grad, register_op
from .sequence import scatter_rows


def _rank_blocks(attrs, x, offset, param):
    k_max = attrs["MaxRank"]
    offset = np.asarray(offset).astype(np.int64, copy=False)
    if offset.ndim != 2 or offset.shape[1] != 2 * k_max + 1 or offset.shape[0] != x.shape[0]:
        raise ValueError(f"rank_attention: RankOffset must be [rows of X ({x.shape[0]}), 2 * MaxRank + 1 = "
                         f"{2 * k_max + 1}], got {list(offset.shape)}")
    if param.shape[0] != k_max * k_max * x.shape[1]:
        raise ValueError(f"rank_attention: RankParam must have MaxRank * MaxRank * width of X = "
                         f"{k_max * k_max * x.shape[1]} rows, got {param.shape[0]}")
    lower, faster, index = offset[:, :1] - 1, offset[:, 1::2] - 1, offset[:, 2::2]
    valid = (lower >= 0) & (faster >= 0)
    block = np.where(valid, lower * k_max + faster, 0)  # [n, k]
    return valid, block, np.where(valid, index, 0), param.reshape(k_max * k_max, x.shape[1], param.shape[1])


@register_op("rank_attention", inputs=("X", "RankOffset", "RankParam"), outputs=("Out", "InputHelp", "InsRank"),
             attrs={"MaxRank": 3, "MaxSize": 0}, no_grad_inputs=("RankOffset",),
             infer_shape=lambda attrs, x, offset, param: (((x.shape[0], param.shape[1]), x.dtype),
                                                          ((x.shape[0], attrs["MaxRank"] * x.shape[1]), x.dtype),
                                                          ((x.shape[0], 1), x.dtype)))
def _rank_attention_forward(attrs, x, offset, param):
    valid, block, index, blocks = _rank_blocks(attrs, x, offset, param)
    help_ = x[index] * valid[..., None]  # [n, k, width]
    out = np.einsum("nkc,nkcp->np", help_, blocks[block])
    ins_rank = np.asarray(offset)[:, :1].astype(x.dtype)
    return out.astype(x.dtype, copy=False), help_.reshape(x.shape[0], -1), ins_rank


@register_grad("rank_attention")
def _rank_attention_backward(attrs, ins, outs, douts, need):
    (x, offset, param), dout = ins, douts[0]
    valid, block, index, blocks = _rank_blocks(attrs, x, offset, param)
    n, k = np.nonzero(valid)
    dx = dparam = None
    if need[0]:
        dx = scatter_rows(index[n, k], np.einsum("np,ncp->nc", dout[n], blocks[block[n, k]]), x.shape[0])
    if need[2]:
        dblocks = scatter_rows(block[n, k], np.einsum("nc,np->ncp", x[index[n, k]], dout[n]), blocks.shape[0])
        dparam = dblocks.reshape(param.shape)
    return dx, None, dparam


def _batch_fc_infer(attrs, x, w, bias):
    return (x.shape[0], x.shape[1], w.shape[2]), x.dtype


@register_op("batch_fc", inputs=("Input", "W", "Bias"), outputs=("Out",), infer_shape=_batch_fc_infer)
def _batch_fc_forward(attrs, x, w, bias):
    if x.ndim != 3 or w.shape[:2] != (x.shape[0], x.shape[2]) or bias.shape != (x.shape[0], w.shape[2]):
        raise ValueError(f"batch_fc: Input [slots, rows, in], W [slots, in, out] and Bias [slots, out] do not match: "
                         f"{list(x.shape)}, {list(w.shape)}, {list(bias.shape)}")
    return np.matmul(x, w) + bias[:, None, :]


@register_grad("batch_fc")
def _batch_fc_backward(attrs, ins, outs, douts, need):
    (x, w, _), dout = ins, douts[0]
    return (np.matmul(dout, w.transpose(0, 2, 1)) if need[0] else None,
            np.matmul(x.transpose(0, 2, 1), dout) if need[1] else None,
            dout.sum(axis=1) if need[2] else None)
