"""check_op cases of the CTC family (ops/ctc.py) on uneven LoD with empty sequences and on padded batches:
warpctc's loss against a brute-force sum over every alignment and its gradient against float64 central
differences; edit_distance, ctc_align and sequence_erase against plain per-sequence references (loops are
fine here). tests/ops/test_op_gradients.py runs them; tests/ops/test_ctc.py holds the other CTC tests."""
import itertools

import numpy as np
import pytest

from minifluid.lod_tensor import LoDTensor

rng = np.random.default_rng(2468)
CASES = []


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def lod(array, *lengths):
    return LoDTensor(np.asarray(array), [list(level) for level in lengths])


def split(x, lengths):
    return np.split(np.asarray(x), np.cumsum(lengths)[:-1])


# --- references ------------------------------------------------------------------------------------------
def collapse(path, blank):
    """A CTC alignment's labelling: repeats merged, then blanks dropped."""
    return [k for i, k in enumerate(path) if k != blank and (i == 0 or k != path[i - 1])]


def brute_ctc(logits, label, blank):
    """-log of the summed probability of every alignment of ``logits`` [T, C] that collapses to ``label``;
    0 where none does (warp-ctc's cost for an impossible alignment)."""
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    total = sum(np.prod(probs[np.arange(len(path)), path]) for path in
                itertools.product(range(logits.shape[1]), repeat=len(logits)) if collapse(path, blank) == list(label))
    return -np.log(total) if total > 0 else 0.0


def levenshtein_ref(a, b):
    dist = np.zeros((len(a) + 1, len(b) + 1))
    dist[:, 0], dist[0, :] = np.arange(len(a) + 1), np.arange(len(b) + 1)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            dist[i, j] = min(dist[i - 1, j] + 1, dist[i, j - 1] + 1, dist[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return dist[-1, -1]


def align_ref(tokens, blank, merge=True):
    out, prev = [], None
    for k in tokens:
        if k != blank and not (merge and k == prev):
            out.append(k)
        prev = k
    return out


# --- warpctc ---------------------------------------------------------------------------------------------
T_LENS, L_LENS = [4, 2, 3, 0, 5], [2, 1, 0, 0, 3]  # uneven, an empty input and an empty label
LOGITS = rng.standard_normal((sum(T_LENS), 4))
LABELS = np.array([[1], [3], [2], [1], [1], [3]], np.int32)  # the last has a repeat (1, 1): needs a blank


def warpctc_lod_ref(Logits, Label):
    return {"Loss": np.array([[brute_ctc(x, y.reshape(-1), 0)] for x, y in
                              zip(split(Logits, T_LENS), split(Label, L_LENS))])}


case("warpctc", "lod", inputs={"Logits": lod(LOGITS, T_LENS), "Label": lod(LABELS, L_LENS)},
     outputs=["Loss"], reference=warpctc_lod_ref, grad_outputs=["Loss"])

# time-major [T, B, C], blank 2; sequence 1 cannot be aligned (labels 1, 1 need 3 frames, it has 2)
PAD_LOGITS = rng.standard_normal((4, 3, 3))
PAD_LABELS = np.array([[0, 1, 0], [1, 1, 0], [1, 0, 1]], np.int32)
PAD_T, PAD_L = np.array([4, 2, 3], np.int64), np.array([2, 2, 3], np.int64)


def warpctc_padded_ref(Logits, Label, LogitsLength, LabelLength):
    return {"Loss": np.array([[brute_ctc(Logits[:t, b], Label[b, :n], 2)]
                              for b, (t, n) in enumerate(zip(LogitsLength, LabelLength))])}


case("warpctc", "padded-blank2-impossible", inputs={"Logits": PAD_LOGITS, "Label": PAD_LABELS,
                                                    "LogitsLength": PAD_T, "LabelLength": PAD_L},
     attrs={"blank": 2}, outputs=["Loss"], reference=warpctc_padded_ref, grad_outputs=["Loss"])


# --- edit_distance ---------------------------------------------------------------------------------------
H_LENS, R_LENS = [3, 0, 4, 2, 0, 5], [2, 3, 4, 0, 0, 5]
HYPS, REFS = rng.integers(0, 3, (sum(H_LENS), 1)), rng.integers(0, 3, (sum(R_LENS), 1))


def edit_lod_ref(Hyps, Refs):
    dist = [levenshtein_ref(a.reshape(-1), b.reshape(-1)) for a, b in zip(split(Hyps, H_LENS), split(Refs, R_LENS))]
    return {"Out": np.array(dist, np.float32).reshape(-1, 1), "SequenceNum": np.array([len(H_LENS)])}


case("edit_distance", "lod-empty", inputs={"Hyps": lod(HYPS, H_LENS), "Refs": lod(REFS, R_LENS)},
     reference=edit_lod_ref)
PAD_HYPS, PAD_REFS = rng.integers(0, 4, (4, 5)), rng.integers(0, 4, (4, 6))
HL, RL = np.array([5, 0, 3, 2]), np.array([6, 2, 1, 4])


def edit_padded_ref(Hyps, Refs, HypsLength, RefsLength):
    dist = [levenshtein_ref(a[:m], b[:n]) / n for a, b, m, n in zip(Hyps, Refs, HypsLength, RefsLength)]
    return {"Out": np.array(dist, np.float32).reshape(-1, 1), "SequenceNum": np.array([4])}


case("edit_distance", "padded-normalized", inputs={"Hyps": PAD_HYPS, "Refs": PAD_REFS, "HypsLength": HL,
                                                   "RefsLength": RL},
     attrs={"normalized": True}, reference=edit_padded_ref)


# --- ctc_align and sequence_erase ------------------------------------------------------------------------
A_LENS = [6, 0, 3, 4]
A_TOKENS = np.array([[0], [1], [1], [0], [1], [2], [3], [3], [3], [3], [0], [0], [2]], np.int64)  # 3 | 3: kept


def align_lod_ref(Input, merge=True):
    seqs = [align_ref(s.reshape(-1).tolist(), 0, merge) for s in split(Input, A_LENS)]
    return {"Output": np.array(sum(seqs, []), np.int64).reshape(-1, 1)}


case("ctc_align", "lod", inputs={"Input": lod(A_TOKENS, A_LENS)}, reference=align_lod_ref,
     outputs=["Output"], output_lods={"Output": [[3, 0, 1, 2]]})
case("ctc_align", "lod-no-merge", inputs={"Input": lod(A_TOKENS, A_LENS)}, attrs={"merge_repeated": False},
     reference=lambda Input: align_lod_ref(Input, False), outputs=["Output"],
     output_lods={"Output": [[4, 0, 3, 2]]})
case("ctc_align", "lod-all-blank", inputs={"Input": lod(np.zeros((3, 1), np.int64), [2, 1])},
     reference=lambda Input: {"Output": np.array([[-1]])}, outputs=["Output"], output_lods={"Output": [[0, 0]]})
PAD_TOKENS = np.array([[0, 1, 2, 2, 0, 4], [0, 4, 5, 0, 6, 0], [0, 7, 7, 7, 0, 3], [3, 3, 0, 3, 9, 9]], np.int64)
PAD_LENGTH = np.array([[6], [5], [4], [3]], np.int64)


def align_padded_ref(Input, InputLength):
    seqs = [align_ref(row[:n].tolist(), 0) for row, (n,) in zip(Input, InputLength)]
    out = np.full(Input.shape, -2, np.int64)
    for row, s in zip(out, seqs):
        row[:len(s)] = s
    return {"Output": out, "OutputLength": np.array([[len(s)] for s in seqs])}


case("ctc_align", "padded", inputs={"Input": PAD_TOKENS, "InputLength": PAD_LENGTH},
     attrs={"padding_value": -2}, reference=align_padded_ref)
case("sequence_erase", inputs={"X": lod(A_TOKENS, A_LENS)}, attrs={"tokens": [0, 3]},
     reference=lambda X: np.array([k for k in X.reshape(-1) if k not in (0, 3)]).reshape(-1, 1),
     output_lods={"Out": [[4, 0, 0, 1]]})
