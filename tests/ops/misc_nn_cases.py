"""check_op cases of ops/ctr.py, ops/spectral_norm.py, ops/center_loss.py and ops/vision_select.py: forwards against
element-by-element numpy references, gradients against float64 central differences (cvm's "gradient" is fluid's
rule, not a derivative: tests/numerics/test_misc_nn_layers.py checks it); they join vision_cases.CASES, which
tests/ops/test_op_gradients.py runs."""
import math

import numpy as np

from minifluid.lod_tensor import LoDTensor
from minifluid.ops.registry import get_op_spec
from minifluid.testing import call_grad

from .vision_cases import case, normal, rng


# --- teacher_student_sigmoid_loss --------------------------------------------------------------------------------
def tssl_ref(x, label):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        v, z = float(x[i, 0]), float(label[i, 0])
        sp = math.log1p(math.exp(v))
        if z < -1:
            out[i, 0] = sp
        elif z < 0:
            out[i, 0] = sp - v
        elif z < 1:
            out[i, 0] = 2 * sp - v * z
        else:
            out[i, 0] = 2 * sp - v - v * (z - 1)
    return out


_labels = np.array([[-2.0], [-1.0], [0.0], [0.35], [1.0], [1.8]])
case("teacher_student_sigmoid_loss", inputs={"X": normal(6, 1) * 3, "Label": _labels},
     reference=lambda X, Label: tssl_ref(X, Label))


def tssl_grad_is_cut_outside_the_bounds(inputs, fetched):
    """Outside [lower, upper] fluid's gradient is 0 (the forward is not clipped, so no central difference)."""
    spec = get_op_spec("teacher_student_sigmoid_loss")
    x, label = inputs["X"], inputs["Label"]
    dx = call_grad(spec, {**spec.attrs, **_NARROW}, (x, label), (None,), (np.ones_like(x),), (True, False))[0]
    pred = 1 / (1 + np.exp(-x))
    inside = np.where(label < -1, pred, np.where(label < 0, pred - 1, 2 * pred - label))
    np.testing.assert_allclose(dx, np.where(np.abs(x) >= 2.0, 0.0, inside), rtol=1e-12)


_NARROW = {"soft_max_up_bound": 2.0, "soft_max_lower_bound": -2.0}
case("teacher_student_sigmoid_loss", "narrow-bounds", inputs={"X": np.array([[-3.0], [2.5], [0.4], [-0.2]]),
                                                             "Label": np.array([[-2.0], [-1.0], [0.6], [1.2]])},
     attrs=_NARROW, grad_inputs=(), reference=lambda X, Label: tssl_ref(X, Label),
     post=tssl_grad_is_cut_outside_the_bounds)


# --- cvm ----------------------------------------------------------------------------------------------------------
def cvm_ref(x, use_cvm):
    y = x.copy()
    if not use_cvm:
        return y[:, 2:]
    y[:, 0] = np.log(x[:, 0] + 1)
    y[:, 1] = np.log(x[:, 1] + 1) - np.log(x[:, 0] + 1)
    return y


_counts = rng.uniform(0, 5, (4, 6))
case("cvm", inputs={"X": _counts, "CVM": rng.uniform(0, 5, (4, 2))}, grad_inputs=(),
     reference=lambda X, CVM: cvm_ref(X, True))
case("cvm", "no-cvm", inputs={"X": _counts, "CVM": rng.uniform(0, 5, (4, 2))}, attrs={"use_cvm": False},
     grad_inputs=(), reference=lambda X, CVM: cvm_ref(X, False))


# --- spectral_norm ------------------------------------------------------------------------------------------------
def spectral_norm_ref(weight, u, v, dim, iters, eps=1e-12):
    perm = [dim] + [i for i in range(weight.ndim) if i != dim]
    mat = weight.transpose(perm).reshape(weight.shape[dim], -1)
    for _ in range(iters):
        v = mat.T @ u
        v = v / (np.linalg.norm(v) + eps)
        u = mat @ v
        u = u / (np.linalg.norm(u) + eps)
    return weight / (u @ mat @ v)


for _name, _shape, _dim, _iters in (("dim0-no-iteration", (3, 4), 0, 0), ("dim1-4d-no-iteration", (2, 3, 2, 2), 1, 0),
                                    ("dim0-3d-no-iteration", (4, 2, 3), 0, 0)):
    _w = normal(*_shape)
    _h = _shape[_dim]
    case("spectral_norm", _name, inputs={"Weight": _w, "U": normal(_h), "V": normal(_w.size // _h)},
         attrs={"dim": _dim, "power_iters": _iters},
         reference=lambda Weight, U, V, d=_dim, n=_iters: spectral_norm_ref(Weight, U, V, d, n))
# with power iteration the forward is checked; the gradient holds u and v fixed, so only the forward compares
_w = normal(4, 3, 2)
case("spectral_norm", "dim1-five-iterations", inputs={"Weight": _w, "U": normal(3), "V": normal(8)},
     attrs={"dim": 1, "power_iters": 5}, grad_inputs=(),
     reference=lambda Weight, U, V: spectral_norm_ref(Weight, U, V, 1, 5))


# --- center_loss --------------------------------------------------------------------------------------------------
def center_loss_ref(x, label, centers, rate, update):
    diff = np.stack([x[i] - centers[label[i, 0]] for i in range(x.shape[0])])
    loss = np.array([[0.5 * float(d @ d)] for d in diff])
    new = centers.copy()
    if update:
        for k in range(centers.shape[0]):
            members = [i for i in range(x.shape[0]) if label[i, 0] == k]
            new[k] += rate[0] * sum((diff[i] for i in members), np.zeros(x.shape[1])) / (1 + len(members))
    return diff, loss, new


for _update in (True, False):
    case("center_loss", "update" if _update else "no-update",
         inputs={"X": normal(5, 3), "Label": np.array([[0], [2], [0], [3], [2]]), "Centers": normal(4, 3),
                 "CenterUpdateRate": np.array([0.3])},
         attrs={"cluster_num": 4, "need_update": _update}, grad_inputs=("X",), grad_outputs=("Loss",),
         reference=lambda X, Label, Centers, CenterUpdateRate, u=_update: center_loss_ref(X, Label, Centers,
                                                                                        CenterUpdateRate, u))


# --- similarity_focus ---------------------------------------------------------------------------------------------
def similarity_focus_ref(x, axis, indexes):
    """fluid's walk: sort a plane's entries, descending; take each whose row and column are both still free."""
    out = np.zeros_like(x)
    for n in range(x.shape[0]):
        for index in indexes:
            plane = np.take(x[n], index, axis=axis - 1)
            rows, cols = set(), set()
            for flat in np.argsort(-plane, axis=None, kind="stable"):
                r, c = divmod(int(flat), plane.shape[1])
                if r in rows or c in cols:
                    continue
                rows.add(r)
                cols.add(c)
                where = [n, slice(None), slice(None), slice(None)]
                others = [a for a in (1, 2, 3) if a != axis]
                where[others[0]], where[others[1]] = r, c
                out[tuple(where)] = 1
    return out


for _axis, _indexes in ((1, [0, 2]), (2, [1]), (3, [0, 3, 1])):
    case("similarity_focus", f"axis{_axis}", inputs={"X": normal(2, 3, 4, 5)},
         attrs={"axis": _axis, "indexes": _indexes},
         reference=lambda X, a=_axis, i=_indexes: similarity_focus_ref(X, a, i))


# --- inplace_abn: batch_norm then identity / leaky_relu / elu ------------------------------------------------------
def abn_ref(x, scale, bias, mean, var, act, alpha, axes, bshape, use_batch=True, eps=1e-5):
    mu, v = (x.mean(axis=axes), x.var(axis=axes)) if use_batch else (mean, var)
    z = (x - mu.reshape(bshape)) / np.sqrt(v.reshape(bshape) + eps) * scale.reshape(bshape) + bias.reshape(bshape)
    if act == "leaky_relu":
        return np.where(z > 0, z, alpha * z)
    if act == "elu":
        return np.where(z > 0, z, alpha * (np.exp(z) - 1))
    return z


for _act, _alpha, _layout, _test in (("leaky_relu", 0.1, "NCHW", False), ("elu", 1.0, "NCHW", False),
                                     ("elu", 0.7, "NHWC", False), ("", 0.1, "NCHW", False),
                                     ("leaky_relu", 0.2, "NCHW", True)):
    _c = 4 if _layout == "NHWC" else 3
    _axes, _bshape = ((0, 1, 2), (1, 1, 1, 4)) if _layout == "NHWC" else ((0, 2, 3), (1, 3, 1, 1))
    case("inplace_abn", f"{_act or 'identity'}-{_layout}{'-test' if _test else ''}",
         inputs={"X": normal(2, 3, 3, 4), "Scale": rng.uniform(0.5, 1.5, _c), "Bias": normal(_c) * 0.3,
                 "Mean": normal(_c), "Variance": rng.uniform(0.5, 2.0, _c)},
         attrs={"activation": _act, "alpha": _alpha, "data_layout": _layout, "is_test": _test}, grad_outputs=["Y"],
         outputs=["Y"], reference=lambda X, Scale, Bias, Mean, Variance, a=_act, al=_alpha, ax=_axes, b=_bshape,
         t=_test: abn_ref(X, Scale, Bias, Mean, Variance, a, al, ax, b, use_batch=not t))


# --- data_norm (its gradient and statistics update: tests/numerics/test_misc_nn_layers.py) -------------------------
def data_norm_ref(x, size, total, square, scale_w=None, bias=None, slot=-1):
    y = (x - total / size) * np.sqrt(size / square)
    if scale_w is not None:
        y = y * scale_w + bias
    if slot > 0:
        for n in range(x.shape[0]):
            for s in range(0, x.shape[1], slot):
                if abs(x[n, s]) < 1e-7:
                    y[n, s:s + slot] = 0
    return y


_x = normal(5, 4)
_x[1, 0] = _x[3, 2] = 0.0
_stats = {"BatchSize": rng.uniform(5, 10, 4), "BatchSum": normal(4), "BatchSquareSum": rng.uniform(5, 10, 4)}
case("data_norm", inputs={"X": _x, **_stats}, outputs=["Y"],
     reference=lambda X, BatchSize, BatchSum, BatchSquareSum: data_norm_ref(X, BatchSize, BatchSum, BatchSquareSum))
case("data_norm", "slots-scale-shift", inputs={"X": _x, **_stats, "scale_w": normal(4), "bias": normal(4)},
     attrs={"slot_dim": 2, "enable_scale_and_shift": True}, outputs=["Y"],
     reference=lambda X, BatchSize, BatchSum, BatchSquareSum, scale_w, bias: data_norm_ref(
         X, BatchSize, BatchSum, BatchSquareSum, scale_w, bias, slot=2))


# --- hash: XXH64 written out byte by byte here, from the algorithm's description ----------------------------------
def xxh64_ref(data, seed):
    mask = (1 << 64) - 1
    p1, p2, p3, p4, p5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                          0x27D4EB2F165667C5)

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & mask

    def mix(acc, lane):
        return rotl((acc + lane * p2) & mask, 31) * p1 & mask

    def word(at, size):
        return int.from_bytes(data[at:at + size], "little")
    i, n = 0, len(data)
    if n >= 32:
        v = [(seed + p1 + p2) & mask, (seed + p2) & mask, seed, (seed - p1) & mask]
        while i + 32 <= n:
            v = [mix(v[k], word(i + 8 * k, 8)) for k in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & mask
        for lane in v:
            h = ((h ^ mix(0, lane)) * p1 + p4) & mask
    else:
        h = (seed + p5) & mask
    h = (h + n) & mask
    while i + 8 <= n:
        h = (rotl(h ^ mix(0, word(i, 8)), 27) * p1 + p4) & mask
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (word(i, 4) * p1 & mask), 23) * p2 + p3) & mask
        i += 4
    while i < n:
        h = rotl(h ^ (data[i] * p5 & mask), 11) * p1 & mask
        i += 1
    h = (h ^ (h >> 33)) * p2 & mask
    h = (h ^ (h >> 29)) * p3 & mask
    return h ^ (h >> 32)


def hash_ref(x, num_hash, mod_by):
    return np.array([[[xxh64_ref(row.tobytes(), seed) % mod_by] for seed in range(num_hash)] for row in x],
                    dtype=x.dtype)


assert xxh64_ref(b"", 0) == 0xEF46DB3751D8E999 and xxh64_ref(b"abc", 0) == 0x44BC2CF5AD770999  # published vectors
for _name, _x, _n, _mod in (("int64-rows", rng.integers(-10 ** 12, 10 ** 12, (5, 3)), 3, 100000),  # 24 bytes
                            ("int32-long-rows", rng.integers(0, 1000, (4, 11)).astype(np.int32), 2, 977),  # 44 bytes
                            ("int64-wide", rng.integers(0, 50, (3, 9)), 1, 10 ** 9)):  # 72 bytes: two stripes
    case("hash", _name, inputs={"X": _x}, attrs={"num_hash": _n, "mod_by": _mod},
         reference=lambda X, n=_n, m=_mod: hash_ref(X, n, m))


# --- filter_by_instag --------------------------------------------------------------------------------------------
def instag_ref(ins, ins_lens, tags, tag_lens, wanted):
    rows, lens, index, start, tag_at, out_at = [], [], [], 0, 0, 0
    for n_rows, n_tags in zip(ins_lens, tag_lens):
        if set(tags[tag_at:tag_at + n_tags, 0]) & set(wanted):
            rows += list(ins[start:start + n_rows])
            lens.append(n_rows)
            index.append([out_at, start, n_rows])
            out_at += n_rows
        start, tag_at = start + n_rows, tag_at + n_tags
    return {"Out": np.array(rows), "LossWeight": np.ones((len(lens), 1), np.float32), "IndexMap": np.array(index)}


_ins_lens, _tag_lens = [2, 1, 3, 2], [2, 1, 2, 1]
_ins = LoDTensor(normal(8, 3), [_ins_lens])
_tags = LoDTensor(np.array([[1], [5], [2], [7], [3], [9]]), [_tag_lens])
case("filter_by_instag", inputs={"Ins": _ins, "Ins_tag": _tags, "Filter_tag": np.array([3, 9, 4])},
     output_lods={"Out": [[3, 2]]}, grad_outputs=("Out",),
     reference=lambda Ins, Ins_tag, Filter_tag: instag_ref(Ins, _ins_lens, Ins_tag, _tag_lens, Filter_tag))
