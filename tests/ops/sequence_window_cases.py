"""check_op cases of row_conv, add_position_encoding, sequence_scatter and im2sequence on uneven LoD with an
empty sequence (and the padded forms row_conv / add_position_encoding also take): forward against
per-sequence numpy references (loops are fine here), gradients against float64 central differences;
tests/ops/test_op_gradients.py runs them."""
import numpy as np
import pytest

from minifluid.lod_tensor import LoDTensor

rng = np.random.default_rng(8642)
CASES = []
LENGTHS = [3, 1, 0, 4, 2]  # uneven, with an empty sequence


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def lod(array, *lengths):
    return LoDTensor(np.asarray(array), [list(level) for level in lengths])


def split(x, lengths):
    return np.split(np.asarray(x), np.cumsum(lengths)[:-1])


# --- row_conv -----------------------------------------------------------------------------------------
def row_conv_ref(x, filt, lengths):
    out = []
    for s in split(x, lengths):
        for t in range(len(s)):
            out.append(sum(s[t + k] * filt[k] for k in range(len(filt)) if t + k < len(s)))
    return np.array(out).reshape(x.shape)


case("row_conv", inputs={"X": lod(rng.standard_normal((10, 3)), LENGTHS), "Filter": rng.standard_normal((3, 3))},
     reference=lambda X, Filter: row_conv_ref(X, Filter, LENGTHS), output_lods={"Out": [LENGTHS]})
case("row_conv", "context-longer-than-sequences", inputs={"X": lod(rng.standard_normal((10, 2)), LENGTHS),
                                                           "Filter": rng.standard_normal((6, 2))},
     reference=lambda X, Filter: row_conv_ref(X, Filter, LENGTHS), output_lods={"Out": [LENGTHS]})
case("row_conv", "padded-3d", inputs={"X": rng.standard_normal((2, 4, 3)), "Filter": rng.standard_normal((2, 3))},
     reference=lambda X, Filter: row_conv_ref(X.reshape(8, 3), Filter, [4, 4]).reshape(2, 4, 3))


# --- add_position_encoding ----------------------------------------------------------------------------
def position_ref(x, lengths, alpha, beta):
    half = x.shape[1] // 2
    out = np.empty_like(x)
    row = 0
    for n in lengths:
        for j in range(n):
            for k in range(half):
                val = j / 10000.0 ** (k / (half - 1)) if half > 1 else j / 10000.0
                out[row, k] = alpha * x[row, k] + beta * np.sin(val)
                out[row, half + k] = alpha * x[row, half + k] + beta * np.cos(val)
            row += 1
    return out


case("add_position_encoding", inputs={"X": lod(rng.standard_normal((10, 6)), LENGTHS)},
     attrs={"alpha": 0.5, "beta": 2.0}, reference=lambda X: position_ref(X, LENGTHS, 0.5, 2.0),
     output_lods={"Out": [LENGTHS]})
case("add_position_encoding", "padded-width2", inputs={"X": rng.standard_normal((2, 3, 2))},
     attrs={"alpha": 1.5, "beta": 0.5}, reference=lambda X: position_ref(X.reshape(6, 2), [3, 3], 1.5, 0.5).reshape(X.shape))


# --- sequence_scatter ---------------------------------------------------------------------------------
def scatter_ref(x, ids, updates, lengths):
    out = x.copy().reshape(x.shape[0], -1)
    row = 0
    for i, n in enumerate(lengths):
        for _ in range(n):
            out[i, ids[row, 0]] += updates[row, 0]
            row += 1
    return out.reshape(x.shape)


_IDS = np.array([[0], [2], [0], [5], [1], [1], [3], [4], [0], [5]], np.int64)  # repeats within a sequence
_UPD = rng.standard_normal((10, 1))
case("sequence_scatter", inputs={"X": rng.standard_normal((5, 6)), "Ids": lod(_IDS, LENGTHS),
                                 "Updates": lod(_UPD, LENGTHS)},
     reference=lambda X, Ids, Updates: scatter_ref(X, Ids, Updates, LENGTHS))
case("sequence_scatter", "3d-x-fewer-sequences", inputs={"X": rng.standard_normal((4, 2, 3)),
                                                         "Ids": lod(_IDS[:7], [3, 0, 4]),
                                                         "Updates": lod(_UPD[:7], [3, 0, 4])},
     reference=lambda X, Ids, Updates: scatter_ref(X, Ids, Updates, [3, 0, 4]))


# --- im2sequence --------------------------------------------------------------------------------------
def im2seq_ref(x, kernels, strides, paddings, real=None):
    (kh, kw), (sh, sw), (up, left, down, right) = kernels, strides, paddings
    padded = np.pad(x, ((0, 0), (0, 0), (up, down), (left, right)))
    rows, lengths = [], []
    for n in range(x.shape[0]):
        h, w = (x.shape[2], x.shape[3]) if real is None else real[n]
        oh, ow = int((h + up + down - kh) / sh) + 1, int((w + left + right - kw) / sw) + 1  # C's truncation
        for i in range(oh):
            for j in range(ow):
                rows.append(padded[n, :, i * sh:i * sh + kh, j * sw:j * sw + kw].reshape(-1))
        lengths.append(oh * ow)
    return np.array(rows), lengths


case("im2sequence", inputs={"X": rng.standard_normal((2, 2, 4, 5))},
     attrs={"kernels": [2, 3], "strides": [1, 2], "paddings": [1, 0, 0, 1]},
     reference=lambda X: im2seq_ref(X, [2, 3], [1, 2], [1, 0, 0, 1])[0], output_lods={"Out": [[8, 8]]})
case("im2sequence", "real-sizes-out-stride", inputs={"X": rng.standard_normal((3, 1, 5, 5)),
                                                     "Y": np.array([[8, 10], [2, 3], [9, 6]], np.float64)},
     attrs={"kernels": [2, 2], "strides": [1, 2], "paddings": [0, 0, 0, 0], "out_stride": [2, 2]},
     reference=lambda X, Y: im2seq_ref(X, [2, 2], [1, 2], [0] * 4, [(4, 5), (1, 2), (5, 3)])[0],
     output_lods={"Out": [[6, 0, 4]]})
