"""check_op cases of the sequence (LoD) ops, on uneven sequence lengths and with an empty sequence where
fluid allows one: forward against per-sequence numpy references (loops are fine here), gradients against
float64 central differences with the LoD inputs; tests/ops/test_op_gradients.py runs them."""
import numpy as np
import pytest

from minifluid.lod_tensor import LoDTensor

rng = np.random.default_rng(2468)
CASES = []
LENGTHS = [3, 1, 0, 4, 2]  # uneven, with an empty sequence
DENSE = [3, 1, 4, 2]  # uneven, for ops that need every sequence non-empty


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def lod(array, *lengths):
    return LoDTensor(np.asarray(array), [list(level) for level in lengths])


def distinct(n, *rest):
    """Values with gaps >> eps (no ties for max)."""
    size = n * int(np.prod(rest, dtype=np.int64))
    return rng.permutation(np.arange(size, dtype=np.float64)).reshape((n,) + rest) * 0.1 - 1.0


def split(x, lengths):
    return np.split(np.asarray(x), np.cumsum(lengths)[:-1])


# --- sequence_pool ------------------------------------------------------------------------------------
_POOL = {
    "sum": lambda s: s.sum(axis=0), "average": lambda s: s.mean(axis=0),
    "sqrt": lambda s: s.sum(axis=0) / np.sqrt(len(s)), "max": lambda s: s.max(axis=0),
    "last": lambda s: s[-1], "first": lambda s: s[0],
}


def _pool_reference(kind, lengths, pad=0.0):
    def ref(X):
        return np.stack([_POOL[kind](s) if len(s) else np.full(X.shape[1:], pad) for s in split(X, lengths)])
    return ref


for _kind in _POOL:
    case("sequence_pool", _kind, inputs={"X": lod(distinct(10, 3), LENGTHS)}, outputs=["Out"],
         attrs={"pooltype": _kind.upper(), "pad_value": 0.5}, reference=_pool_reference(_kind, LENGTHS, 0.5))
case("sequence_pool", "two-levels-sum", inputs={"X": lod(distinct(10, 2), [2, 3], LENGTHS)}, outputs=["Out"],
     attrs={"pooltype": "SUM"}, reference=_pool_reference("sum", LENGTHS), output_lods={"Out": [[2, 3]]})
case("sequence_pool", "3d-max", inputs={"X": lod(distinct(10, 2, 2), LENGTHS)}, outputs=["Out"],
     attrs={"pooltype": "MAX"}, reference=_pool_reference("max", LENGTHS))


# --- sequence_softmax ---------------------------------------------------------------------------------
def _softmax_ref(lengths):
    def ref(X):
        parts = [np.exp(s - s.max()) / np.exp(s - s.max()).sum() for s in split(X.reshape(-1), lengths) if len(s)]
        return np.concatenate(parts).reshape(X.shape)
    return ref


case("sequence_softmax", inputs={"X": lod(rng.standard_normal((10, 1)), LENGTHS)},
     reference=_softmax_ref(LENGTHS), output_lods={"Out": [LENGTHS]})


# --- sequence_conv ------------------------------------------------------------------------------------
def _conv_ref(lengths, start, size, trainable):
    def ref(X, Filter, PaddingData=None):
        up = max(0, -start)
        rows = []
        for s in split(X, lengths):
            for t in range(len(s)):
                parts = []
                for k in range(size):
                    src = t + start + k
                    if 0 <= src < len(s):
                        parts.append(s[src])
                    elif trainable:
                        parts.append(PaddingData[src + up if src < 0 else up + src - len(s)])
                    else:
                        parts.append(np.zeros(X.shape[1]))
                rows.append(np.concatenate(parts))
        return np.stack(rows) @ Filter
    return ref


for _start, _size, _trainable in [(-1, 3, False), (-2, 4, True), (0, 2, True), (1, 2, False)]:
    _inputs = {"X": lod(rng.standard_normal((10, 3)), LENGTHS), "Filter": rng.standard_normal((_size * 3, 2))}
    if _trainable:
        _inputs["PaddingData"] = rng.standard_normal((max(0, -_start) + max(0, _start + _size - 1), 3))
    case("sequence_conv", f"start{_start}-len{_size}{'-trainable' if _trainable else ''}", inputs=_inputs,
         attrs={"contextStart": _start, "contextLength": _size, "paddingTrainable": _trainable},
         reference=_conv_ref(LENGTHS, _start, _size, _trainable), output_lods={"Out": [LENGTHS]})


# --- sequence_expand / sequence_expand_as ------------------------------------------------------------
def _expand_ref(x_lengths, repeats):
    def ref(X, Y):
        seqs = split(X, x_lengths) if x_lengths else list(X[:, None])
        return np.concatenate([s for s, r in zip(seqs, repeats) for _ in range(r)])
    return ref


case("sequence_expand", "x-lod", inputs={"X": lod(rng.standard_normal((4, 2)), [1, 0, 3]),
                                         "Y": lod(np.zeros((6, 1)), [2, 3, 1])},
     reference=_expand_ref([1, 0, 3], [2, 3, 1]), output_lods={"Out": [[1, 1, 0, 0, 0, 3]]})
case("sequence_expand", "x-rows-ref0", inputs={"X": rng.standard_normal((3, 2)),
                                               "Y": lod(np.zeros((6, 1)), [2, 0, 1], [1, 2, 3])},
     attrs={"ref_level": 0}, reference=_expand_ref(None, [2, 0, 1]))
case("sequence_expand_as", inputs={"X": rng.standard_normal((5, 2)), "Y": lod(np.zeros((10, 1)), LENGTHS)},
     reference=lambda X, Y: np.repeat(X, LENGTHS, axis=0), output_lods={"Out": [LENGTHS]})


# --- sequence_concat ----------------------------------------------------------------------------------
def _concat_ref(all_lengths):
    def ref(X):
        parts = [split(x, lengths) for x, lengths in zip(X, all_lengths)]
        return np.concatenate([s for group in zip(*parts) for s in group])
    return ref


_B = [1, 2, 0, 0, 3]
case("sequence_concat", inputs={"X": [lod(rng.standard_normal((10, 2)), LENGTHS), lod(rng.standard_normal((6, 2)), _B)]},
     reference=_concat_ref([LENGTHS, _B]), output_lods={"Out": [[a + b for a, b in zip(LENGTHS, _B)]]})


# --- sequence_reshape / sequence_reverse -------------------------------------------------------------
case("sequence_reshape", inputs={"X": lod(rng.standard_normal((10, 4)), LENGTHS)}, attrs={"new_dim": 2},
     reference=lambda X: X.reshape(-1, 2), output_lods={"Out": [[2 * n for n in LENGTHS]]})
case("sequence_reverse", inputs={"X": lod(rng.standard_normal((10, 3)), LENGTHS)},
     reference=lambda X: np.concatenate([s[::-1] for s in split(X, LENGTHS)]), output_lods={"Y": [LENGTHS]})


# --- sequence_pad / sequence_unpad / sequence_slice / lod_reset ---------------------------------------
def _pad_ref(lengths, width, value):
    def ref(X, PadValue):
        out = np.full((len(lengths), width) + X.shape[1:], value)
        for i, s in enumerate(split(X, lengths)):
            out[i, :len(s)] = s
        return out, np.asarray(lengths)
    return ref


case("sequence_pad", inputs={"X": lod(rng.standard_normal((10, 2)), LENGTHS), "PadValue": np.array([-1.0])},
     attrs={"padded_length": 5}, reference=_pad_ref(LENGTHS, 5, -1.0))
case("sequence_unpad", inputs={"X": rng.standard_normal((5, 4, 2)), "Length": np.array(DENSE + [0], np.int64)},
     reference=lambda X, Length: np.concatenate([X[i, :n] for i, n in enumerate(Length)]),
     output_lods={"Out": [DENSE + [0]]})
case("sequence_slice", inputs={"X": lod(rng.standard_normal((10, 2)), LENGTHS),
                               "Offset": np.array([[1], [0], [0], [2], [0]], np.int64),
                               "Length": np.array([[2], [1], [0], [1], [2]], np.int64)},
     reference=lambda X, Offset, Length: np.concatenate(
         [s[o:o + n] for s, o, n in zip(split(X, LENGTHS), Offset[:, 0], Length[:, 0])]),
     output_lods={"Out": [[2, 1, 0, 1, 2]]})
case("lod_reset", "target", inputs={"X": lod(rng.standard_normal((10, 2)), LENGTHS)},
     attrs={"target_lod": [0, 4, 10]}, reference=lambda X: X, output_lods={"Out": [[4, 6]]})
case("lod_reset", "append", inputs={"X": lod(rng.standard_normal((4, 2)), [1, 3])},
     attrs={"target_lod": [0, 1, 2, 3, 4], "append": True}, reference=lambda X: X,
     output_lods={"Out": [[1, 3], [1, 1, 1, 1]]})


# --- embedding on LoD ids -----------------------------------------------------------------------------
_IDS = lod(rng.integers(0, 6, (10, 1)).astype(np.int64), LENGTHS)
_W = rng.standard_normal((6, 3))
case("lookup_table", "lod-ids", inputs={"W": _W, "Ids": _IDS}, attrs={"padding_idx": 2},
     reference=lambda W, Ids: np.where(Ids == 2, 0.0, W[Ids[:, 0]]), output_lods={"Out": [LENGTHS]})
case("lookup_table_v2", "lod-ids", inputs={"W": _W, "Ids": lod(np.asarray(_IDS)[:, 0], LENGTHS)},
     reference=lambda W, Ids: W[Ids], output_lods={"Out": [LENGTHS]})
case("lookup_table_v2", "2d-ids", inputs={"W": _W, "Ids": rng.integers(0, 6, (2, 3)).astype(np.int64)},
     reference=lambda W, Ids: W[Ids])
