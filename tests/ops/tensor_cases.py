"""check_op cases of fluid 1.8's tensor-making, N-d indexing and integer-division ops (ops/creation.py,
ops/nd_index.py, the floordiv / mod / log1p / reduce_all / reduce_any rows), added to dense_cases.CASES, which
tests/ops/test_op_gradients.py runs. Each reference is written with numpy, independently of the kernels."""
import numpy as np

from .dense_cases import case, normal, rng


def _gather_nd(x, index):
    k = index.shape[-1]
    flat = index.reshape(-1, k)
    rows = np.stack([x[tuple(i)] for i in flat]) if len(flat) else np.zeros((0,) + x.shape[k:])
    return rows.reshape(index.shape[:-1] + x.shape[k:])


def _scatter_nd_add(x, index, updates):
    out = x.copy()
    k = index.shape[-1]
    for i, u in zip(index.reshape(-1, k), updates.reshape((-1,) + x.shape[k:])):
        out[tuple(i)] += u  # one at a time: repeated positions add up
    return out


IDX_FULL = np.array([[0, 1, 2], [1, 0, 3], [0, 1, 2]], dtype=np.int64)     # K = rank: single elements
IDX_ROWS = np.array([[[1], [0]], [[1], [1]]], dtype=np.int32)              # K = 1: whole rows, repeated
IDX_PAIRS = np.array([[1, 2], [-1, 0]], dtype=np.int64)                     # K = 2, a negative index
X = normal(2, 3, 4)
for _name, _idx in (("full", IDX_FULL), ("rows", IDX_ROWS), ("pairs", IDX_PAIRS)):
    case("gather_nd", _name, inputs={"X": X, "Index": _idx}, reference=lambda X, Index: _gather_nd(X, Index))
    case("scatter_nd_add", _name, inputs={"X": X, "Index": _idx,
                                          "Updates": normal(*(_idx.shape[:-1] + X.shape[_idx.shape[-1]:]))},
         reference=lambda X, Index, Updates: _scatter_nd_add(X, Index, Updates))

case("reverse", "axis0", inputs={"X": normal(3, 4)}, attrs={"axis": [0]}, reference=lambda X: X[::-1])
case("reverse", "axes-1-0", inputs={"X": normal(2, 3, 4)}, attrs={"axis": [-1, 0]},
     reference=lambda X: X[::-1, :, ::-1])
case("expand_as", inputs={"X": normal(2, 1, 3), "target_tensor": normal(4, 3, 6)},
     reference=lambda X, target_tensor: np.tile(X, (2, 3, 2)))
for _name, _attrs, _ref in (
        ("axis-1", {}, lambda X: np.cumsum(X, axis=-1)),
        ("axis0-exclusive", {"axis": 0, "exclusive": True},
         lambda X: np.concatenate([np.zeros_like(X[:1]), np.cumsum(X, axis=0)[:-1]])),
        ("axis1-reverse", {"axis": 1, "reverse": True}, lambda X: np.cumsum(X[:, ::-1], axis=1)[:, ::-1]),
        ("axis1-exclusive-reverse", {"axis": 1, "exclusive": True, "reverse": True},
         lambda X: np.cumsum(X[:, ::-1], axis=1)[:, ::-1] - X),
        ("flatten", {"flatten": True}, lambda X: np.cumsum(X.reshape(-1)))):
    case("cumsum", _name, inputs={"X": normal(3, 4)}, attrs=_attrs, reference=_ref)
case("log1p", inputs={"X": rng.uniform(-0.5, 2.0, (3, 4))}, reference=lambda X: np.log1p(X))

# --- no gradient: forward only ----------------------------------------------------------------------------
BOOLS = rng.random((2, 3, 4)) > 0.5
for _op, _f in (("reduce_all", np.all), ("reduce_any", np.any)):
    case(_op, "dim1", inputs={"X": BOOLS}, attrs={"dim": [1]}, reference=lambda X, f=_f: f(X, axis=1))
    case(_op, "keep", inputs={"X": BOOLS}, attrs={"dim": [0, -1], "keep_dim": True},
         reference=lambda X, f=_f: f(X, axis=(0, 2), keepdims=True))
    case(_op, "all", inputs={"X": BOOLS}, attrs={"reduce_all": True}, reference=lambda X, f=_f: np.array([f(X)]))
case("where_index", inputs={"Condition": BOOLS}, reference=lambda Condition: np.array(
    [[i, j, k] for i in range(2) for j in range(3) for k in range(4) if Condition[i, j, k]], dtype=np.int64))
case("where_index", "none-true", inputs={"Condition": np.zeros((3, 2), bool)},
     reference=lambda Condition: np.zeros((0, 2), np.int64))
INTS = np.array([[7, -7, 7, -7, 0, 5]], dtype=np.int64)
DIVS = np.array([2, 2, -2, -2, 3, 5], dtype=np.int64)
# C's truncating / and %, written out: 7/2=3, -7/2=-3, 7/-2=-3, -7/-2=3; 7%2=1, -7%2=-1, 7%-2=1, -7%-2=-1
case("elementwise_floordiv", inputs={"X": INTS, "Y": DIVS}, reference=lambda X, Y: np.array([[3, -3, -3, 3, 0, 1]]))
case("elementwise_mod", inputs={"X": INTS, "Y": DIVS}, reference=lambda X, Y: np.array([[1, -1, 1, -1, 0, 0]]))
case("elementwise_mod", "float-divisor-sign", inputs={"X": np.array([7.5, -7.5, 7.5, -7.5]),
                                                       "Y": np.array([2.0, 2.0, -2.0, -2.0])},
     reference=lambda X, Y: np.array([1.5, 0.5, -0.5, -1.5]))
case("elementwise_floordiv", "axis", inputs={"X": np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 12,
                                             "Y": np.array([1, 2, 5], np.int32)}, attrs={"axis": 1},
     reference=lambda X, Y: np.trunc(X / Y.reshape(1, 3, 1)).astype(np.int32))
for _name, (_s, _e, _st, _dt, _ref) in {
        "int": (0, 10, 3, np.int64, [0, 3, 6, 9]),
        "int-down": (5, -2, -2, np.int32, [5, 3, 1, -1]),
        "float": (1.0, 2.0, 0.25, np.float32, [1.0, 1.25, 1.5, 1.75]),
        "empty": (3, 3, 1, np.int64, [])}.items():
    case("range", _name,
         inputs={"Start": np.array([_s], _dt), "End": np.array([_e], _dt), "Step": np.array([_st], _dt)},
         reference=lambda Start, End, Step, r=_ref, d=_dt: np.array(r, dtype=d))
case("eye", inputs={}, attrs={"num_rows": 2, "num_columns": 3, "dtype": "int32"},
     reference=lambda: np.array([[1, 0, 0], [0, 1, 0]], np.int32))
case("diag", inputs={"Diagonal": np.array([1.5, -2.0, 3.0])},
     reference=lambda Diagonal: np.array([[1.5, 0, 0], [0, -2.0, 0], [0, 0, 3.0]]))
case("size", inputs={"Input": normal(2, 3, 5)}, reference=lambda Input: np.array([30], np.int64))

# --- flip / roll / tril_triu / erf (differentiable), linspace / isinf / isnan / isfinite (forward only) ---------
case("flip", inputs={"X": normal(2, 3, 4)}, attrs={"dims": [0, -1]}, reference=lambda X: X[::-1, :, ::-1])
case("roll", inputs={"X": normal(3, 4)}, attrs={"shifts": [1, -3], "dims": [0, 1]},
     reference=lambda X: np.concatenate([X[-1:], X[:-1]])[:, [3, 0, 1, 2]])
for _diag in (-1, 0, 2):
    case("tril_triu", f"lower{_diag}", inputs={"X": normal(2, 3, 4)}, attrs={"diagonal": _diag, "lower": True},
         reference=lambda X, k=_diag: np.array([[[v if j <= i + k else 0.0 for j, v in enumerate(row)]
                                                 for i, row in enumerate(m)] for m in X]))
    case("tril_triu", f"upper{_diag}", inputs={"X": normal(3, 4)}, attrs={"diagonal": _diag, "lower": False},
         reference=lambda X, k=_diag: np.array([[v if j >= i + k else 0.0 for j, v in enumerate(row)]
                                                for i, row in enumerate(X)]))
# erf's values written out (Abramowitz & Stegun's table); the fit is float32-exact (2e-7: test_tensor_layers.py),
# so its finite differences need a wider step and tolerance
case("erf", inputs={"X": np.array([[0.0, 0.5, 1.0], [-0.5, -1.0, 2.0]])}, atol=1e-5, eps=1e-3,
     reference=lambda X: np.array([[0.0, 0.5204998778, 0.8427007929], [-0.5204998778, -0.8427007929, 0.9953222650]]))
case("linspace", inputs={"Start": np.array([1.0]), "Stop": np.array([2.0]), "Num": np.array([5], np.int32)},
     reference=lambda Start, Stop, Num: np.array([1.0, 1.25, 1.5, 1.75, 2.0]))
case("linspace", "one", inputs={"Start": np.array([3.0], np.float32), "Stop": np.array([9.0], np.float32),
                                "Num": np.array([1], np.int32)}, reference=lambda Start, Stop, Num: np.array([3.0]))
WITH_INF, WITH_NAN = np.array([[1.0, np.inf], [2.0, 3.0]]), np.array([1.0, np.nan, 2.0])
for _name, _x in (("inf", WITH_INF), ("nan", WITH_NAN), ("finite", np.ones(3))):
    case("isinf", _name, inputs={"X": _x}, reference=lambda X, n=_name: np.array([float(n == "inf")]))
    case("isnan", _name, inputs={"X": _x}, reference=lambda X, n=_name: np.array([float(n == "nan")]))
    case("isfinite", _name, inputs={"X": _x}, reference=lambda X, n=_name: np.array([n == "finite"]))

# --- index_select / index_sample / dot (differentiable), unique / unique_with_counts (forward only) ------------
case("index_select", inputs={"X": normal(3, 4, 2), "Index": np.array([2, 0, 2, 3], np.int64)}, attrs={"dim": 1},
     reference=lambda X, Index: X[:, [2, 0, 2, 3]])
case("index_select", "dim0-int32", inputs={"X": normal(3, 2), "Index": np.array([1, 1], np.int32)},
     reference=lambda X, Index: X[[1, 1]])
case("index_sample", inputs={"X": normal(3, 4), "Index": np.array([[0, 3, 3], [1, 1, 0], [2, 0, 1]], np.int64)},
     reference=lambda X, Index: np.array([[X[i, j] for j in row] for i, row in enumerate(Index)]))
case("dot", inputs={"X": normal(3, 4), "Y": normal(3, 4)}, reference=lambda X, Y: np.einsum("ij,ij->i", X, Y)[:, None])
case("dot", "1d", inputs={"X": normal(5), "Y": normal(5)}, reference=lambda X, Y: np.array([X @ Y]))
UNIQ = np.array([5, 2, 5, 7, 2, 2, 9], np.int64)
case("unique", inputs={"X": UNIQ},
     reference=lambda X: (np.array([5, 2, 7, 9]), np.array([0, 1, 0, 2, 1, 1, 3], np.int32)))
case("unique_with_counts", inputs={"X": UNIQ.astype(np.float64)}, attrs={"dtype": "int64"},
     reference=lambda X: (np.array([5.0, 2.0, 7.0, 9.0]), np.array([0, 1, 0, 2, 1, 1, 3]), np.array([2, 3, 1, 1])))

# --- strided_slice / multiplex / trace / kron (differentiable), shard_index / allclose (forward only) ------------
case("strided_slice", inputs={"Input": normal(4, 5, 3)},
     attrs={"axes": [0, 1, 2], "starts": [1, -1, 0], "ends": [4, -6, 3], "strides": [2, -2, 1]},
     reference=lambda Input: Input[1:4:2, -1:-6:-2, 0:3])
case("strided_slice", "clamped", inputs={"Input": normal(4, 5)},
     attrs={"axes": [1], "starts": [-100], "ends": [100], "strides": [3]}, reference=lambda Input: Input[:, ::3])
case("multiplex", inputs={"X": [normal(4, 3), normal(4, 3), normal(4, 3)], "Ids": np.array([[2], [0], [2], [1]])},
     reference=lambda X, Ids: np.stack([X[k][i] for i, k in enumerate(Ids[:, 0])]))
case("trace", inputs={"Input": normal(3, 4)},
     reference=lambda Input: np.array([Input[0, 0] + Input[1, 1] + Input[2, 2]]))
case("trace", "offset-dims", inputs={"Input": normal(2, 3, 4)}, attrs={"offset": -1, "dim1": 2, "dim2": 0},
     reference=lambda Input: Input[0, :, 1] + Input[1, :, 2])  # axis-0 index = axis-2 index - 1
case("kron", inputs={"X": normal(2, 3), "Y": normal(3, 2)},
     reference=lambda X, Y: np.block([[X[i, j] * Y for j in range(3)] for i in range(2)]))
case("kron", "ranks", inputs={"X": normal(3), "Y": normal(2, 2)},
     reference=lambda X, Y: np.block([[X[j] * Y for j in range(3)]]))
case("shard_index", inputs={"X": np.array([[1], [6], [12], [19]], np.int64)},
     attrs={"index_num": 20, "nshards": 2, "shard_id": 0, "ignore_value": -1},
     reference=lambda X: np.array([[1], [6], [-1], [-1]]))
case("shard_index", "shard1", inputs={"X": np.array([[1], [6], [12], [19]], np.int64)},
     attrs={"index_num": 20, "nshards": 2, "shard_id": 1, "ignore_value": -5},
     reference=lambda X: np.array([[-5], [-5], [2], [9]]))
case("allclose", inputs={"Input": np.array([1.0, np.nan]), "Other": np.array([1.0 + 1e-9, np.nan])},
     attrs={"equal_nan": True}, reference=lambda Input, Other: np.array([True]))
case("allclose", "far", inputs={"Input": np.array([1.0, 2.0]), "Other": np.array([1.0, 2.1])},
     reference=lambda Input, Other: np.array([False]))

# --- asin / acos / cross / dist (differentiable), diag_embed / sampling_id (forward only) -----------------------
case("asin", inputs={"X": rng.uniform(-0.8, 0.8, (3, 4))}, reference=lambda X: np.arcsin(X))
case("acos", inputs={"X": rng.uniform(-0.8, 0.8, (3, 4))}, reference=lambda X: np.arccos(X))
case("cross", inputs={"X": normal(2, 3, 4), "Y": normal(2, 3, 4)},  # dim unset: the first of size 3
     reference=lambda X, Y: np.stack([X[:, 1] * Y[:, 2] - X[:, 2] * Y[:, 1], X[:, 2] * Y[:, 0] - X[:, 0] * Y[:, 2],
                                      X[:, 0] * Y[:, 1] - X[:, 1] * Y[:, 0]], axis=1))
case("cross", "dim-1", inputs={"X": normal(4, 3), "Y": normal(4, 3)}, attrs={"dim": -1},
     reference=lambda X, Y: np.stack([X[:, 1] * Y[:, 2] - X[:, 2] * Y[:, 1], X[:, 2] * Y[:, 0] - X[:, 0] * Y[:, 2],
                                      X[:, 0] * Y[:, 1] - X[:, 1] * Y[:, 0]], axis=1))
for _p, _ref in ((2.0, lambda d: np.sqrt((d * d).sum())), (3.0, lambda d: (np.abs(d) ** 3).sum() ** (1 / 3)),
                 (np.inf, lambda d: np.abs(d).max()), (-np.inf, lambda d: np.abs(d).min()),
                 (0.0, lambda d: float((d != 0).sum()))):
    case("dist", f"p{_p}", inputs={"X": normal(2, 3), "Y": normal(3)}, attrs={"p": _p},
         reference=lambda X, Y, f=_ref: np.array([f(X - Y)]))
case("diag_embed", inputs={"Input": np.array([[1.0, 2.0], [3.0, 4.0]])}, attrs={"offset": 1},
     reference=lambda Input: np.array([[[0, 1, 0], [0, 0, 2], [0, 0, 0]], [[0, 3, 0], [0, 0, 4], [0, 0, 0]]], float))
case("diag_embed", "dims", inputs={"Input": np.array([[1.0, 2.0], [3.0, 4.0]])}, attrs={"dim1": 0, "dim2": 2},
     reference=lambda Input: np.array([[[1, 0], [3, 0]], [[0, 2], [0, 4]]], float))  # out[i, b, j] = (i == j) * x[b, i]
case("sampling_id", inputs={"X": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])},
     reference=lambda X: np.array([0, 2, 1], np.int64))

# --- ranking and divergence losses ------------------------------------------------------------------------------
PAIR_LABEL = rng.integers(0, 2, (5, 1)).astype(np.float64)
case("rank_loss", inputs={"Label": PAIR_LABEL, "Left": normal(5, 1), "Right": normal(5, 1)},
     reference=lambda Label, Left, Right: np.log1p(np.exp(Left - Right)) - Label * (Left - Right))
case("margin_rank_loss", inputs={"Label": np.array([[1.0], [-1.0], [1.0], [-1.0]]),
                                 "X1": np.array([[0.5], [0.5], [-0.3], [2.0]]),
                                 "X2": np.array([[0.1], [0.9], [0.4], [1.0]])},
     attrs={"margin": 0.2}, outputs=["Out"],
     reference=lambda Label, X1, X2: np.maximum(0, -Label * (X1 - X2) + 0.2))
case("bpr_loss", inputs={"X": normal(4, 5), "Label": np.array([[0], [4], [2], [2]], np.int64)},
     reference=lambda X, Label: np.array([[np.mean([np.log1p(np.exp(X[i, j] - X[i, Label[i, 0]])) for j in range(5)
                                                    if j != Label[i, 0]])] for i in range(4)]))
KL_TARGET = np.array([[0.2, 0.0, 0.8], [0.5, 0.5, 0.0]])
for _how, _red in (("none", lambda v: v), ("sum", lambda v: np.array([v.sum()])),
                   ("mean", lambda v: np.array([v.mean()])), ("batchmean", lambda v: np.array([v.sum() / 2]))):
    case("kldiv_loss", _how, inputs={"X": normal(2, 3), "Target": KL_TARGET}, attrs={"reduction": _how},
         reference=lambda X, Target, r=_red: r(np.where(Target > 0, Target * (np.log(np.where(Target > 0, Target, 1))
                                                                               - X), 0.0)))
