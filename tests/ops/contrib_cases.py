"""check_op cases of fluid.contrib's ops (ops/fused_elemwise.py, ops/partial.py, ops/shuffle_batch.py,
ops/fused_embedding.py): the forward against numpy written out here (explicit loops where the kernel vectorises),
the gradients against float64 central differences; tests/ops/test_op_gradients.py runs them."""
import numpy as np
import pytest

from minifluid.lod_tensor import LoDTensor

rng = np.random.default_rng(4242)
CASES = []


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


# --- fused_elemwise_activation: (functors, unary reference, binary reference) -----------------------------------
_UNARY = {"scale": lambda v: v * 0.3, "relu": lambda v: np.maximum(v, 0), "tanh": np.tanh, "sigmoid": _sigmoid}
_BINARY = {"elementwise_add": np.add, "elementwise_mul": np.multiply}
_SHAPES = {  # name: (x shape, y shape, axis, how the smaller one is viewed for numpy)
    "same": ((3, 4), (3, 4), -1, None),
    "y-axis1": ((2, 3, 4), (3,), 1, (1, 3, 1)),
    "y-trailing": ((2, 3, 4), (3, 4), -1, (1, 3, 4)),
    "x-smaller": ((2,), (2, 3, 4), 0, (2, 1, 1)),
}


def _away(shape):
    """Values kept away from relu's kink, for finite differences."""
    v = rng.uniform(-2, 2, shape)
    v[np.abs(v) < 0.2] += 0.5
    return v


for _unary, _u in _UNARY.items():
    for _binary, _b in _BINARY.items():
        for _sname, (_xs, _ys, _axis, _view) in _SHAPES.items():
            def _ref(X, Y, u=_u, b=_b, view=_view, xs=_xs, ys=_ys, unary_first=False):
                xv = X.reshape(view) if view is not None and len(xs) < len(ys) else X
                if unary_first:
                    yv = Y.reshape(view) if view is not None and len(ys) < len(xs) else Y
                    mid = b(xv, yv)
                    return u(mid), mid
                mid = u(Y)
                mv = mid.reshape(view) if view is not None and len(ys) < len(xs) else mid
                return b(xv, mv), mid
            for _order in ("binary-first", "unary-first"):
                functors = [_binary, _unary] if _order == "binary-first" else [_unary, _binary]
                case("fused_elemwise_activation", f"{'-'.join(functors)}-{_sname}",
                     inputs={"X": _away(_xs), "Y": _away(_ys)},
                     attrs={"functor_list": functors, "axis": _axis, "scale": 0.3},
                     reference=lambda X, Y, r=_ref, first=_order == "unary-first": r(X, Y, unary_first=first),
                     outputs=["Out", "IntermediateOut"], grad_outputs=["Out"])


# --- partial_concat / partial_sum ---------------------------------------------------------------------------------
def _cols(width, start, length):
    start = start + width if start < 0 else start
    return list(range(start, width if length < 0 else start + length))


for _start, _length in ((0, 2), (1, -1), (-3, 2)):
    _xs = [rng.standard_normal((4, 5)) for _ in range(3)]
    case("partial_concat", f"{_start}-{_length}", inputs={"X": _xs}, attrs={"start_index": _start, "length": _length},
         reference=lambda X, s=_start, n=_length: np.concatenate([x[:, _cols(5, s, n)] for x in X], axis=1))
    case("partial_sum", f"{_start}-{_length}", inputs={"X": _xs}, attrs={"start_index": _start, "length": _length},
         reference=lambda X, s=_start, n=_length: sum(x[:, _cols(5, s, n)] for x in X))


# --- shuffle_batch ---------------------------------------------------------------------------------------------
def _shuffle_ref(X, Seed):
    rows = X.reshape(-1, X.shape[-1])
    order = np.random.RandomState(int(Seed[0]) & 0xFFFFFFFF).permutation(rows.shape[0])
    return {"Out": np.stack([rows[i] for i in order]).reshape(X.shape), "ShuffleIdx": order}


case("shuffle_batch", inputs={"X": rng.standard_normal((3, 4, 2)), "Seed": np.array([-17], np.int64)},
     outputs=["Out", "ShuffleIdx"], grad_outputs=["Out"], reference=_shuffle_ref)


# --- fused_embedding_seq_pool ------------------------------------------------------------------------------------
def _embedding_pool_ref(lengths, padding_idx):
    def ref(W, Ids):
        ids, out, row = np.asarray(Ids).reshape(-1), np.zeros((len(lengths), W.shape[1])), 0
        for s, n in enumerate(lengths):
            for i in ids[row:row + n]:
                if i != padding_idx:
                    out[s] += W[i]
            row += n
        return out
    return ref


for _pad, _lengths in ((-1, [2, 0, 3]), (3, [1, 4])):
    _ids = LoDTensor(rng.integers(0, 6, (sum(_lengths), 1)).astype(np.int64), [_lengths])
    case("fused_embedding_seq_pool", f"pad{_pad}", inputs={"W": rng.standard_normal((6, 4)), "Ids": _ids},
         attrs={"padding_idx": _pad}, reference=_embedding_pool_ref(_lengths, _pad))


# --- match_matrix_tensor -----------------------------------------------------------------------------------------
def _match_ref(lx, ly):
    def ref(X, Y, W):
        out, xo, yo = [], 0, 0
        for nx, ny in zip(lx, ly):
            for t in range(W.shape[1]):
                for i in range(nx):
                    for j in range(ny):
                        out.append(X[xo + i] @ W[:, t, :] @ Y[yo + j])
            xo, yo = xo + nx, yo + ny
        return {"Out": np.array(out).reshape(-1, 1), "Tmp": (X @ W.reshape(W.shape[0], -1)).reshape(-1, 1)}
    return ref


for _lx, _ly, _t in (([1, 2, 2], [3, 1, 4], 2), ([3, 0], [2, 2], 3)):
    case("match_matrix_tensor", f"t{_t}", inputs={"X": LoDTensor(rng.standard_normal((sum(_lx), 4)), [_lx]),
                                                   "Y": LoDTensor(rng.standard_normal((sum(_ly), 4)), [_ly]),
                                                   "W": rng.standard_normal((4, _t, 4))},
         attrs={"dim_t": _t}, reference=_match_ref(_lx, _ly), grad_outputs=["Out"],
         output_lods={"Out": [[_t * a * b for a, b in zip(_lx, _ly)]]})


# --- sequence_topk_avg_pooling ---------------------------------------------------------------------------------------
def _topk_ref(rows, cols, channels, topks):
    def ref(X, ROW, COLUMN):
        flat, out, pos, offset = np.asarray(X).reshape(-1), [], [], 0
        for r_n, c_n in zip(rows, cols):
            block = flat[offset:offset + channels * r_n * c_n].reshape(channels, r_n, c_n)
            for r in range(r_n):
                feats = []
                for c in range(channels):
                    ranked = sorted(range(c_n), key=lambda j: -block[c, r, j])
                    feats += [sum(block[c, r, j] for j in ranked[:k]) / k for k in topks]
                    pos += (ranked + [-1] * topks[-1])[:topks[-1]]
                out.append(feats)
            offset += channels * r_n * c_n
        return {"Out": np.array(out), "pos": np.array(pos)}
    return ref


for _rows, _widths, _ch, _topks in (([2, 3], [4, 2], 2, [1, 3]), ([1, 2], [5, 3], 3, [2, 4, 6])):
    _n = [_ch * r * c for r, c in zip(_rows, _widths)]
    case("sequence_topk_avg_pooling", f"c{_ch}-k{_topks[-1]}",
         inputs={"X": LoDTensor(rng.permutation(sum(_n)).reshape(-1, 1) * 0.1, [_n]),
                 "ROW": LoDTensor(np.zeros((sum(_rows), 1)), [_rows]),
                 "COLUMN": LoDTensor(np.zeros((sum(_widths), 1)), [_widths])},
         attrs={"topks": _topks, "channel_num": _ch}, reference=_topk_ref(_rows, _widths, _ch, _topks),
         outputs=["Out", "pos"], grad_outputs=["Out"], output_lods={"Out": [_rows]})


# --- var_conv_2d -------------------------------------------------------------------------------------------------------
def _var_conv_ref(rows, cols, c_in, kh, kw, sh, sw):
    def ref(X, ROW, COLUMN, W):
        flat, outs, col_all, offset = np.asarray(X).reshape(-1), [], [], 0
        for h, w in zip(rows, cols):
            img = flat[offset:offset + c_in * h * w].reshape(c_in, h, w)
            offset += c_in * h * w
            th, tw = (h - 1) // sh + 1 if h else 0, (w - 1) // sw + 1 if w else 0
            col = np.zeros((c_in * kh * kw, th * tw))
            for c in range(c_in):
                for ty in range(th):
                    for tx in range(tw):
                        for ky in range(kh):
                            for kx in range(kw):
                                y, x = ty * sh + ky - kh // 2, tx * sw + kx - kw // 2
                                if 0 <= y < h and 0 <= x < w:
                                    col[(c * kh + ky) * kw + kx, ty * tw + tx] = img[c, y, x]
            outs.append((W @ col).reshape(-1))
            col_all.append(col.reshape(-1))
        return {"Out": np.concatenate(outs).reshape(-1, 1), "Col": np.concatenate(col_all).reshape(-1, 1)}
    return ref


for _rows, _widths, _cin, _cout, _k, _s in (([3, 5], [4, 2], 2, 3, (3, 3), (1, 1)),
                                          ([4, 1], [5, 3], 1, 2, (2, 3), (2, 1))):
    _n = [_cin * r * c for r, c in zip(_rows, _widths)]
    case("var_conv_2d", f"k{_k[0]}{_k[1]}-s{_s[0]}{_s[1]}",
         inputs={"X": LoDTensor(rng.standard_normal((sum(_n), 1)), [_n]),
                 "ROW": LoDTensor(np.zeros((sum(_rows), 1)), [_rows]),
                 "COLUMN": LoDTensor(np.zeros((sum(_widths), 1)), [_widths]),
                 "W": rng.standard_normal((_cout, _cin * _k[0] * _k[1]))},
         attrs={"InputChannel": _cin, "OutputChannel": _cout, "KernelH": _k[0], "KernelW": _k[1],
                "StrideH": _s[0], "StrideW": _s[1]},
         reference=_var_conv_ref(_rows, _widths, _cin, _k[0], _k[1], _s[0], _s[1]), grad_outputs=["Out"])


# --- rank_attention / batch_fc ---------------------------------------------------------------------------------------
def _rank_attention_ref(max_rank):
    def ref(X, RankOffset, RankParam):
        width = X.shape[1]
        out = np.zeros((X.shape[0], RankParam.shape[1]))
        for i, row in enumerate(RankOffset):
            for k in range(max_rank):
                lower, faster, index = row[0] - 1, row[2 * k + 1] - 1, row[2 * k + 2]
                if lower >= 0 and faster >= 0:
                    start = (lower * max_rank + faster) * width
                    out[i] += X[index] @ RankParam[start:start + width]
        return out
    return ref


# 5 instances, max rank 3: instance 3 has no rank (nothing), instance 1 two ranked neighbours, one of them twice
_OFFSET = np.array([[1, 1, 0, 2, 1, 0, 0], [2, 1, 0, 2, 1, 3, 4], [3, 3, 2, 0, 0, 1, 1], [0, 1, 3, 0, 0, 0, 0],
                    [1, 2, 4, 2, 4, 0, 0]], np.int32)
case("rank_attention", inputs={"X": rng.standard_normal((5, 2)), "RankOffset": _OFFSET,
                               "RankParam": rng.standard_normal((3 * 3 * 2, 4))},
     attrs={"MaxRank": 3}, outputs=["Out"], reference=_rank_attention_ref(3))
case("batch_fc", inputs={"Input": rng.standard_normal((3, 4, 5)), "W": rng.standard_normal((3, 5, 2)),
                         "Bias": rng.standard_normal((3, 2))},
     reference=lambda Input, W, Bias: np.stack([Input[s] @ W[s] + Bias[s] for s in range(3)]))
