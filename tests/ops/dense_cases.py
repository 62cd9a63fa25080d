"""check_op cases of the dense ops of fluid's everyday API (activations, comparisons, tensor manipulation,
losses, image ops, metric ops); tests/ops/test_op_gradients.py runs them with its own cases."""
import math

import numpy as np
import pytest

rng = np.random.default_rng(4321)
CASES = []


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def normal(*shape):
    return rng.standard_normal(shape)


def spread(*shape, lo=-3.0, hi=3.0, gap=0.1, kinks=(0.0,)):
    """Uniform values at least ``gap`` from every kink (finite differences never straddle one)."""
    x = rng.uniform(lo, hi, shape)
    for k in kinks:
        near = np.abs(x - k) < gap
        x[near] = k + np.where(x[near] >= k, gap, -gap) * 1.5
    return x


def sigm(x):
    return 1 / (1 + np.exp(-x))


_erf = np.vectorize(math.erf)
SELU_SCALE, SELU_ALPHA = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717

# --- activations -------------------------------------------------------------------------------------
ACTIVATIONS = {  # name: (input, attrs, reference, atol)
    "selu": (spread(3, 4), {}, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * (np.exp(x) - 1)), 1e-6),
    "gelu": (normal(3, 4), {}, lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), 1e-6),
    "hard_swish": (spread(3, 5, lo=-5, hi=5, kinks=(-3.0, 3.0)), {},
                   lambda x: x * np.clip(x + 3, 0, 6) / 6, 1e-6),
    "thresholded_relu": (spread(3, 4, kinks=(0.5,)), {"threshold": 0.5}, lambda x: np.where(x > 0.5, x, 0), 1e-6),
    "soft_relu": (spread(3, 4, kinks=(-2.0, 2.0)), {"threshold": 2.0},
                  lambda x: np.log1p(np.exp(np.clip(x, -2, 2))), 1e-6),
    "softshrink": (spread(3, 4, kinks=(-0.5, 0.5)), {},
                   lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0)), 1e-6),
    "hard_shrink": (spread(3, 4, kinks=(-0.5, 0.5)), {}, lambda x: np.where(np.abs(x) > 0.5, x, 0), 1e-6),
    "tanh_shrink": (normal(3, 4), {}, lambda x: x - np.tanh(x), 1e-6),
    "atan": (normal(3, 4), {}, np.arctan, 1e-6),
    "ceil": (spread(3, 4, kinks=(-2.0, -1.0, 0.0, 1.0, 2.0)), {}, np.ceil, 1e-6),
    "round": (spread(3, 4, kinks=(-1.5, -0.5, 0.5, 1.5, 2.5)), {}, np.round, 1e-6),
}
for _op, (_x, _attrs, _ref, _atol) in ACTIVATIONS.items():
    case(_op, inputs={"X": _x}, attrs=_attrs, reference=lambda X, f=_ref: f(X), atol=_atol)
case("gelu", "approximate", inputs={"X": normal(3, 4)}, attrs={"approximate": True},
     reference=lambda X: 0.5 * X * (1 + np.tanh(np.sqrt(2 / np.pi) * (X + 0.044715 * X ** 3))))


def log_softmax_ref(x, axis):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


case("log_softmax", inputs={"X": normal(3, 5)}, reference=lambda X: log_softmax_ref(X, -1))
case("log_softmax", "axis1", inputs={"X": normal(2, 3, 4)}, attrs={"axis": 1},
     reference=lambda X: log_softmax_ref(X, 1))
_PX = spread(2, 3, 2, 2)
case("prelu", "all", inputs={"X": _PX, "Alpha": np.array([0.3])},
     reference=lambda X, Alpha: np.where(X > 0, X, 0.3 * X))
case("prelu", "channel", inputs={"X": _PX, "Alpha": np.array([0.1, 0.2, 0.3]).reshape(1, 3, 1, 1)},
     attrs={"mode": "channel"}, reference=lambda X, Alpha: np.where(X > 0, X, Alpha * X))
case("prelu", "element", inputs={"X": _PX, "Alpha": rng.uniform(0, 1, (1, 3, 2, 2))}, attrs={"mode": "element"},
     reference=lambda X, Alpha: np.where(X > 0, X, Alpha * X))

# --- comparisons and logical ops (no gradient) --------------------------------------------------------
_CX, _CY = rng.integers(0, 3, (2, 3, 4)).astype(np.float64), rng.integers(0, 3, (2, 3, 4)).astype(np.float64)
for _op, _f in {"less_than": np.less, "less_equal": np.less_equal, "greater_than": np.greater,
                "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal}.items():
    case(_op, inputs={"X": _CX, "Y": _CY}, reference=lambda X, Y, f=_f: f(X, Y))
    case(_op, "y3-axis1", inputs={"X": _CX, "Y": np.array([0.0, 1.0, 2.0])}, attrs={"axis": 1},
         reference=lambda X, Y, f=_f: f(X, Y.reshape(1, 3, 1)))
case("equal_reduce", "equal-y-broadcast", inputs={"X": np.tile(np.arange(3.0)[None, :, None], (2, 1, 4)),
                                                  "Y": np.arange(3.0)}, attrs={"axis": 1},
     reference=lambda X, Y: np.array([True]))
case("equal_reduce", "one-differs", inputs={"X": np.arange(6.0).reshape(2, 3), "Y": np.arange(6.0).reshape(2, 3) % 5},
     reference=lambda X, Y: np.array([False]))
_BX, _BY = rng.integers(0, 2, (3, 4)).astype(bool), rng.integers(0, 2, (3, 4)).astype(bool)
for _op, _f in {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}.items():
    case(_op, inputs={"X": _BX, "Y": _BY}, reference=lambda X, Y, f=_f: f(X, Y))
case("logical_not", inputs={"X": _BX}, reference=lambda X: np.logical_not(X))

# --- indexing and manipulation ------------------------------------------------------------------------


def distinct(*shape):
    """Values with gaps >> eps (no ties for sorts)."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1 - 1.0


_AX = distinct(3, 4, 5)
for _op, _f in {"arg_max": np.argmax, "arg_min": np.argmin}.items():
    case(_op, inputs={"X": _AX}, attrs={"axis": 1}, reference=lambda X, f=_f: f(X, axis=1))
    case(_op, "keepdims-neg", inputs={"X": _AX}, attrs={"axis": -1, "keepdims": True},
         reference=lambda X, f=_f: f(X, axis=-1)[..., None])
    case(_op, "flatten", inputs={"X": _AX}, attrs={"flatten": True}, reference=lambda X, f=_f: np.array([f(X)]))
case("argsort", inputs={"X": distinct(3, 4)}, reference=lambda X: (np.sort(X, -1), np.argsort(X, -1)))
case("argsort", "descending-axis0", inputs={"X": distinct(3, 4)}, attrs={"axis": 0, "descending": True},
     reference=lambda X: (-np.sort(-X, 0), np.argsort(-X, 0)))
SLICES = {  # name: (attrs, numpy index, result reshape or None)
    "plain": ({"axes": [0, 2], "starts": [1, 0], "ends": [3, 2]}, np.s_[1:3, :, 0:2], None),
    "negative": ({"axes": [1], "starts": [-3], "ends": [-1]}, np.s_[:, 1:3], None),
    "clipped": ({"axes": [0, 1], "starts": [-10, 2], "ends": [1000, 100]}, np.s_[:, 2:], None),
    "decrease_axis": ({"axes": [1], "starts": [2], "ends": [3], "decrease_axis": [1]}, np.s_[:, 2], None),
    "decrease-all": ({"axes": [0, 1, 2], "starts": [1, 1, 1], "ends": [2, 2, 2], "decrease_axis": [0, 1, 2]},
                     np.s_[1:2, 1, 1], (1,)),
}
for _name, (_attrs, _index, _shape) in SLICES.items():
    case("slice", _name, inputs={"Input": normal(3, 4, 5)}, attrs=_attrs,
         reference=lambda Input, i=_index, s=_shape: Input[i] if s is None else Input[i].reshape(s))
case("shape", inputs={"Input": normal(2, 3, 4)}, reference=lambda Input: np.array([2, 3, 4], np.int32))
_IDS = np.array([[1], [0], [3], [1]], dtype=np.int64)
case("one_hot", inputs={"X": _IDS}, attrs={"depth": 4}, reference=lambda X: np.eye(4, dtype=np.float32)[X[:, 0]])
case("one_hot", "allow_out_of_range", inputs={"X": np.array([[1], [5], [-1]])},
     attrs={"depth": 3, "allow_out_of_range": True},
     reference=lambda X: np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]], np.float32))
case("one_hot_v2", inputs={"X": np.array([[1, 0], [3, 2]], np.int64)}, attrs={"depth": 4},
     reference=lambda X: np.eye(4, dtype=np.float32)[X])
_GI = np.array([2, 0, 2], dtype=np.int64)  # row 2 twice: its gradient adds up
case("gather", inputs={"X": normal(4, 3), "Index": _GI}, reference=lambda X, Index: X[Index])
case("gather", "index-n1", inputs={"X": normal(4, 2, 3), "Index": _GI[:, None].astype(np.int32)},
     reference=lambda X, Index: X[Index[:, 0]])


def scatter_ref(x, ids, updates, overwrite):
    out = x.copy()
    if overwrite:
        for i, u in zip(ids, updates):
            out[i] = u
        return out
    out[ids] = 0
    for i, u in zip(ids, updates):
        out[i] += u
    return out


case("scatter", inputs={"X": normal(4, 3), "Ids": np.array([3, 1]), "Updates": normal(2, 3)},
     reference=lambda X, Ids, Updates: scatter_ref(X, Ids, Updates, True))
case("scatter", "accumulate", inputs={"X": normal(4, 3), "Ids": np.array([2, 0, 2]), "Updates": normal(3, 3)},
     attrs={"overwrite": False}, reference=lambda X, Ids, Updates: scatter_ref(X, Ids, Updates, False))
case("expand", inputs={"X": normal(2, 1, 3)}, attrs={"expand_times": [2, 3, 1]},
     reference=lambda X: np.tile(X, (2, 3, 1)))
case("fill_constant_batch_size_like", inputs={"Input": normal(5, 2)},
     attrs={"shape": [-1, 3], "value": 1.5}, reference=lambda Input: np.full((5, 3), 1.5, np.float32))
case("fill_constant_batch_size_like", "dims", inputs={"Input": normal(2, 7)},
     attrs={"shape": [4, 1, 2], "value": 3, "dtype": "int64", "input_dim_idx": 1, "output_dim_idx": 2},
     reference=lambda Input: np.full((4, 1, 7), 3, np.int64))

# --- losses --------------------------------------------------------------------------------------------


def sce_ref(x, label, ignore=-100, normalize=False):
    loss = np.log1p(np.exp(-x)) + (1 - label) * x
    keep = label != ignore
    return np.where(keep, loss, 0) / (keep.sum() if normalize else 1)


_SL = rng.uniform(0, 1, (4, 3))
_SL[1, 2] = _SL[3, 0] = -1  # ignored entries
case("sigmoid_cross_entropy_with_logits", inputs={"X": normal(4, 3), "Label": rng.uniform(0, 1, (4, 3))},
     reference=lambda X, Label: sce_ref(X, Label))
case("sigmoid_cross_entropy_with_logits", "ignore-normalize", inputs={"X": normal(4, 3) * 5, "Label": _SL},
     attrs={"ignore_index": -1, "normalize": True}, reference=lambda X, Label: sce_ref(X, Label, -1, True))


def smooth_l1_ref(x, y, inside=None, outside=None, sigma=1.0):
    d = (x - y) * (1 if inside is None else inside)
    e = np.where(np.abs(d) < 1 / sigma ** 2, 0.5 * (sigma * d) ** 2, np.abs(d) - 0.5 / sigma ** 2)
    e = e * (1 if outside is None else outside)
    return d, e.reshape(len(x), -1).sum(1, keepdims=True)


_X1, _Y1 = rng.uniform(-2, 2, (4, 3)), rng.uniform(-2, 2, (4, 3))
_Y1 = np.where(np.abs(np.abs(_X1 - _Y1) - 0.25) < 0.05, _Y1 + 0.2, _Y1)  # away from the kink at 1/sigma^2
case("smooth_l1_loss", inputs={"X": _X1, "Y": _Y1}, grad_outputs=["Out"], reference=lambda X, Y: smooth_l1_ref(X, Y))
case("smooth_l1_loss", "weights-sigma2",
     inputs={"X": _X1, "Y": _Y1, "InsideWeight": np.ones((4, 3)), "OutsideWeight": rng.uniform(0, 1, (4, 3))},
     attrs={"sigma": 2.0}, grad_inputs=["X", "Y"], grad_outputs=["Out"],
     reference=lambda X, Y, InsideWeight, OutsideWeight: smooth_l1_ref(X, Y, InsideWeight, OutsideWeight, 2.0))
case("log_loss", inputs={"Predicted": rng.uniform(0.1, 0.9, (5, 1)), "Labels": rng.integers(0, 2, (5, 1)) * 1.0},
     reference=lambda Predicted, Labels: (-Labels * np.log(Predicted + 1e-4) -
                                          (1 - Labels) * np.log(1 - Predicted + 1e-4)))
_HX = rng.uniform(-3, 3, (5, 1))
_HY = _HX + spread(5, 1, kinks=(-1.0, 1.0))


def huber_ref(x, y, delta):
    r = y - x
    return r, np.where(np.abs(r) <= delta, 0.5 * r * r, delta * (np.abs(r) - 0.5 * delta))


case("huber_loss", inputs={"X": _HX, "Y": _HY}, grad_outputs=["Out"], reference=lambda X, Y: huber_ref(X, Y, 1.0))
_ONE_HOT = np.eye(4)[[0, 2, 3]]
case("label_smooth", inputs={"X": _ONE_HOT}, attrs={"epsilon": 0.1}, reference=lambda X: 0.9 * X + 0.025)
case("label_smooth", "prior", inputs={"X": _ONE_HOT, "PriorDist": np.array([[0.1, 0.2, 0.3, 0.4]])},
     attrs={"epsilon": 0.2}, reference=lambda X, PriorDist: 0.8 * X + 0.2 * PriorDist)

# --- normalisation ---------------------------------------------------------------------------------------


def ln_ref(x, scale, bias, axis, eps=1e-5):
    left = int(np.prod(x.shape[:axis]))
    x2 = x.reshape(left, -1)
    mean, var = x2.mean(1), x2.var(1)
    y = (x2 - mean[:, None]) / np.sqrt(var[:, None] + eps)
    y = y * (1 if scale is None else scale) + (0 if bias is None else bias)
    return y.reshape(x.shape), mean, var


case("layer_norm", inputs={"X": normal(3, 4, 2), "Scale": normal(8), "Bias": normal(8)}, grad_outputs=["Y"],
     reference=lambda X, Scale, Bias: ln_ref(X, Scale, Bias, 1))
case("layer_norm", "axis2-no-bias", inputs={"X": normal(2, 3, 4), "Scale": normal(4)}, grad_outputs=["Y"],
     attrs={"begin_norm_axis": 2, "epsilon": 1e-3}, reference=lambda X, Scale: ln_ref(X, Scale, None, 2, 1e-3))
case("norm", inputs={"X": normal(3, 4)}, attrs={"axis": 1}, grad_outputs=["Out"],
     reference=lambda X: (X / np.sqrt((X ** 2).sum(1, keepdims=True) + 1e-10),
                          np.sqrt((X ** 2).sum(1, keepdims=True) + 1e-10)))


def lrn_ref(x, n, k, alpha, beta):
    c = x.shape[1]
    pre = (n - 1) // 2
    mid = np.full(x.shape, k)
    for ch in range(c):
        for j in range(max(ch - pre, 0), min(ch + n - pre, c)):
            mid[:, ch] += alpha * x[:, j] ** 2
    return x * mid ** -beta, mid


case("lrn", inputs={"X": normal(2, 6, 3, 2)}, attrs={"n": 3, "k": 1.0, "alpha": 0.5, "beta": 0.75},
     grad_outputs=["Out"], reference=lambda X: lrn_ref(X, 3, 1.0, 0.5, 0.75))
case("lrn", "n4-NHWC", inputs={"X": normal(2, 3, 2, 5)},
     attrs={"n": 4, "k": 2.0, "alpha": 0.3, "beta": 0.5, "data_format": "NHWC"}, grad_outputs=["Out"],
     reference=lambda X: tuple(a.transpose(0, 2, 3, 1) for a in lrn_ref(X.transpose(0, 3, 1, 2), 4, 2.0, 0.3, 0.5)))

# --- conv2d_transpose --------------------------------------------------------------------------------------


def conv_transpose_ref(x, w, stride, pads, dil, groups, out_hw=None):
    n, c, h, wd = x.shape
    _, m, kh, kw = w.shape
    oh = (h - 1) * stride[0] - pads[0] - pads[1] + dil[0] * (kh - 1) + 1
    ow = (wd - 1) * stride[1] - pads[2] - pads[3] + dil[1] * (kw - 1) + 1
    oh, ow = out_hw or (oh, ow)
    full = np.zeros((n, m * groups, oh + pads[0] + pads[1] + stride[0], ow + pads[2] + pads[3] + stride[1]))
    cg = c // groups
    for ch in range(c):
        g = ch // cg
        for i in range(kh):
            for j in range(kw):
                r0, c0 = i * dil[0], j * dil[1]
                full[:, g * m:(g + 1) * m, r0:r0 + stride[0] * (h - 1) + 1:stride[0],
                     c0:c0 + stride[1] * (wd - 1) + 1:stride[1]] += x[:, ch, None] * w[ch, :, i, j][None, :, None, None]
    return full[:, :, pads[0]:pads[0] + oh, pads[2]:pads[2] + ow]


CONV_TRANSPOSES = {  # name: (x shape, w shape, attrs, pads [t, b, l, r], output size or None)
    "3x3-stride1": ((2, 3, 4, 4), (3, 2, 3, 3), {}, [0, 0, 0, 0], None),
    "3x3-pad1": ((2, 3, 4, 5), (3, 4, 3, 3), {"paddings": [1, 1]}, [1, 1, 1, 1], None),
    "stride2-pad1": ((2, 2, 3, 3), (2, 3, 4, 4), {"strides": [2, 2], "paddings": [1, 1]}, [1, 1, 1, 1], None),
    "stride2-output_size": ((1, 2, 3, 3), (2, 2, 3, 3), {"strides": [2, 2], "paddings": [1, 1], "output_size": [6, 6]},
                            [1, 1, 1, 1], (6, 6)),
    "dilation2-asym-pads": ((1, 2, 4, 3), (2, 2, 2, 3), {"dilations": [2, 2], "paddings": [1, 0, 0, 2]},
                            [1, 0, 0, 2], None),
    "groups2-stride-hw": ((2, 4, 3, 3), (4, 1, 3, 2), {"groups": 2, "strides": [1, 2]}, [0, 0, 0, 0], None),
}
for _name, (_xs, _ws, _attrs, _pads, _out) in CONV_TRANSPOSES.items():
    case("conv2d_transpose", _name, inputs={"Input": normal(*_xs), "Filter": normal(*_ws)}, attrs=_attrs,
         reference=lambda Input, Filter, a=_attrs, p=_pads, o=_out: conv_transpose_ref(
             Input, Filter, a.get("strides", [1, 1]), p, a.get("dilations", [1, 1]), a.get("groups", 1), o))
case("conv2d_transpose", "NHWC-SAME-stride2", inputs={"Input": normal(1, 3, 3, 2), "Filter": normal(2, 3, 3, 3)},
     attrs={"data_format": "NHWC", "padding_algorithm": "SAME", "strides": [2, 2]},
     reference=lambda Input, Filter: conv_transpose_ref(Input.transpose(0, 3, 1, 2), Filter, [2, 2], [1, 1, 1, 1],
                                                        [1, 1], 1).transpose(0, 2, 3, 1))
case("depthwise_conv2d_transpose", inputs={"Input": normal(2, 3, 3, 3), "Filter": normal(3, 1, 3, 3)},
     attrs={"groups": 3, "strides": [2, 2]},
     reference=lambda Input, Filter: conv_transpose_ref(Input, Filter, [2, 2], [0, 0, 0, 0], [1, 1], 3))

# --- resize and pad ------------------------------------------------------------------------------------------


def resize_ref(x, oh, ow, method, align_corners=True, align_mode=1):
    """Loops over output pixels, written from fluid's formulas (float32 positions)."""
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow))

    def ratio(i, o):
        if o <= 1:
            return np.float32(0)
        return np.float32((i - 1) / (o - 1)) if align_corners else np.float32(i) / np.float32(o)
    rh, rw = ratio(h, oh), ratio(w, ow)
    half = align_mode == 0 and not align_corners
    for k in range(oh):
        for m in range(ow):
            if method == "nearest":
                add = np.float32(0.5) if align_corners else 0
                out[:, :, k, m] = x[:, :, int(rh * np.float32(k) + add), int(rw * np.float32(m) + add)]
                continue
            sy = rh * np.float32(k + 0.5) - np.float32(0.5) if half else rh * np.float32(k)
            sx = rw * np.float32(m + 0.5) - np.float32(0.5) if half else rw * np.float32(m)
            y0, x0 = max(int(sy), 0), max(int(sx), 0)
            y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            dy, dx = float(max(sy, 0) - y0), float(max(sx, 0) - x0)
            out[:, :, k, m] = (x[:, :, y0, x0] * (1 - dy) * (1 - dx) + x[:, :, y1, x0] * dy * (1 - dx) +
                               x[:, :, y0, x1] * (1 - dy) * dx + x[:, :, y1, x1] * dy * dx)
    return out


RESIZES = {  # name: (op, x shape, attrs, (oh, ow))
    "up-align_corners": ("bilinear_interp", (2, 2, 3, 4), {"out_h": 5, "out_w": 7}, (5, 7)),
    "down-align_mode0": ("bilinear_interp", (1, 2, 5, 6), {"out_h": 3, "out_w": 4, "align_corners": False,
                                                           "align_mode": 0}, (3, 4)),
    "scale-align_mode1": ("bilinear_interp", (1, 2, 3, 3), {"scale": 2.0, "align_corners": False}, (6, 6)),
    "nearest-up": ("nearest_interp", (2, 2, 3, 4), {"out_h": 6, "out_w": 5}, (6, 5)),
    "nearest-no-align": ("nearest_interp", (1, 3, 4, 4), {"out_h": 3, "out_w": 7, "align_corners": False}, (3, 7)),
}
for _name, (_op, _xs, _attrs, _size) in RESIZES.items():
    case(_op, _name, inputs={"X": normal(*_xs)}, attrs=_attrs,
         reference=lambda X, m=_op[:-7], a=_attrs, s=_size: resize_ref(X, *s, m, a.get("align_corners", True),
                                                                        a.get("align_mode", 1)))
case("bilinear_interp", "NHWC-OutSize", inputs={"X": normal(1, 3, 3, 2), "OutSize": np.array([4, 2], np.int32)},
     attrs={"data_layout": "NHWC", "out_h": 4, "out_w": 2},
     reference=lambda X, OutSize: resize_ref(X.transpose(0, 3, 1, 2), 4, 2, "bilinear").transpose(0, 2, 3, 1))
case("pad", inputs={"X": normal(2, 3)}, attrs={"paddings": [1, 0, 2, 3], "pad_value": 0.5},
     reference=lambda X: np.pad(X, ((1, 0), (2, 3)), constant_values=0.5))
for _mode in ("constant", "reflect", "edge"):
    case("pad2d", _mode, inputs={"X": normal(2, 2, 4, 3)}, attrs={"paddings": [1, 2, 2, 1], "mode": _mode},
         reference=lambda X, m=_mode: np.pad(X, ((0, 0), (0, 0), (1, 2), (2, 1)), mode=m))
case("pad2d", "NHWC-value", inputs={"X": normal(1, 3, 3, 2)},
     attrs={"paddings": [0, 1, 1, 0], "pad_value": -1.0, "data_format": "NHWC"},
     reference=lambda X: np.pad(X, ((0, 0), (0, 1), (1, 0), (0, 0)), constant_values=-1.0))

# --- metric ops (no gradient) ---------------------------------------------------------------------------------


def roc_auc(scores, labels):
    """Exact ROC AUC by counting ordered (positive, negative) pairs (ties count one half)."""
    pos, neg = scores[labels > 0], scores[labels == 0]
    return ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (len(pos) * len(neg))


_AUC_P = np.stack([1 - np.linspace(0.05, 0.95, 10), np.linspace(0.05, 0.95, 10)], axis=1)
_AUC_L = np.array([0, 0, 1, 0, 1, 0, 1, 1, 1, 1], dtype=np.int64)[:, None]
case("auc", "global", inputs={"Predict": _AUC_P, "Label": _AUC_L, "StatPos": np.zeros((1, 1001), np.int64),
                              "StatNeg": np.zeros((1, 1001), np.int64)},
     attrs={"num_thresholds": 1000, "slide_steps": 0},
     reference=lambda Predict, Label, StatPos, StatNeg: {"AUC": np.array([roc_auc(Predict[:, 1], Label[:, 0])])})
case("mean_iou", inputs={"Predictions": np.array([[0, 1, 2], [2, 2, 1]], np.int32),
                         "Labels": np.array([[0, 1, 1], [2, 0, 1]], np.int32)}, attrs={"num_classes": 4},
     reference=lambda Predictions, Labels: (np.array([(1 / 2 + 2 / 3 + 1 / 3) / 3], np.float32),
                                            np.array([1, 1, 2, 0], np.int32), np.array([1, 2, 1, 0], np.int32)))
_WC = rng.integers(0, 2, (3, 4)).astype(bool)
case("where", inputs={"Condition": _WC, "X": normal(3, 4), "Y": normal(3, 4)},
     reference=lambda Condition, X, Y: np.where(Condition, X, Y))

# --- squared_l2_distance (fixed inputs: appended cases leave the generator's sequence above unchanged) ----------
_SQX = np.sin(np.arange(24.0)).reshape(4, 2, 3)
case("squared_l2_distance", "rows", inputs={"X": _SQX, "Y": np.cos(np.arange(24.0)).reshape(4, 2, 3)},
     grad_outputs=["Out"], reference=lambda X, Y: ((X - Y).reshape(4, 6),
                                                   ((X - Y) ** 2).reshape(4, 6).sum(1, keepdims=True)))
case("squared_l2_distance", "y-one-row", inputs={"X": _SQX.reshape(4, 6), "Y": np.linspace(-1, 1, 6)[None]},
     grad_outputs=["Out"], reference=lambda X, Y: (X - Y, ((X - Y) ** 2).sum(1, keepdims=True)))
# fc, the fused inference op (no gradient): Input flattened at in_num_col_dims, a [1, O] or [O] bias, relu
_FCX, _FCW = np.cos(np.arange(24.0)).reshape(2, 3, 4), np.sin(np.arange(60.0)).reshape(12, 5)
case("fc", "relu-bias", inputs={"Input": _FCX, "W": _FCW, "Bias": np.linspace(-1, 1, 5)[None]},
     attrs={"activation_type": "relu"}, reference=lambda Input, W, Bias: np.maximum(Input.reshape(2, 12) @ W + Bias, 0))
case("fc", "num-col-dims2", inputs={"Input": _FCX, "W": _FCW[:4]}, attrs={"in_num_col_dims": 2},
     reference=lambda Input, W: Input @ W)
case("fc", "padding_weights", inputs={"Input": _FCX.reshape(2, 12), "W": np.pad(_FCW, ((0, 4), (0, 4)), constant_values=9),
                                      "Bias": np.ones(5)}, attrs={"padding_weights": True},
     reference=lambda Input, W, Bias: Input @ W[:-4, :-4] + 1)
# rank_loss reads its [N] / [N, 1] inputs as flat vectors; Out takes Label's shape
_RL = np.cos(np.arange(5.0))
case("rank_loss", "label-1d", inputs={"Label": (np.arange(5) % 2) * 1.0, "Left": _RL[:, None], "Right": _RL[::-1, None]},
     reference=lambda Label, Left, Right: np.log1p(np.exp(Left[:, 0] - Right[:, 0])) - Label * (Left - Right)[:, 0])
case("rank_loss", "right-1d", inputs={"Label": (np.arange(5)[:, None] % 2) * 1.0, "Left": _RL[:, None], "Right": _RL},
     reference=lambda Label, Left, Right: np.log1p(np.exp(Left - Right[:, None])) - Label * (Left - Right[:, None]))
case("pow", "factor-tensor", inputs={"X": np.linspace(0.5, 2.0, 12).reshape(3, 4), "FactorTensor": np.array([2.5])},
     attrs={"factor": 7.0}, reference=lambda X, FactorTensor: X ** 2.5)
# hinge_loss / modified_huber_loss (margins kept off their kinks at 1 and -1), minus, l1_norm, bmm
_HL_X, _HL_Y = np.array([[-2.3], [-0.4], [0.3], [1.6], [0.7], [-1.4]]), np.array([[0.0], [1.0], [1.0], [0.0], [0.0], [1.0]])
case("hinge_loss", inputs={"Logits": _HL_X, "Labels": _HL_Y},
     reference=lambda Logits, Labels: np.maximum(1 - Logits * (2 * Labels - 1), 0))
case("modified_huber_loss", inputs={"X": _HL_X, "Y": _HL_Y}, grad_outputs=["Out"],
     reference=lambda X, Y: (X * (2 * Y - 1), np.where(X * (2 * Y - 1) < -1, -4 * X * (2 * Y - 1),
                                                       np.where(X * (2 * Y - 1) < 1, (1 - X * (2 * Y - 1)) ** 2, 0))))
case("minus", inputs={"X": _SQX, "Y": _SQX[::-1].copy()}, reference=lambda X, Y: X - Y)
case("l1_norm", inputs={"X": _SQX}, reference=lambda X: np.array([np.abs(X).sum()]))
case("bmm", inputs={"X": _SQX, "Y": np.cos(np.arange(24.0)).reshape(4, 3, 2)}, reference=lambda X, Y: X @ Y)
# integer elementwise_div truncates toward zero in the inputs' dtype, as C's / does
case("elementwise_div", "int-truncates", inputs={"X": np.array([[7, -7], [6, -1]], np.int32),
                                                 "Y": np.array([[2, 2], [-4, 3]], np.int32)},
     reference=lambda X, Y: np.array([[3, -3], [-1, 0]], np.int32))
# the fused inference ops (no gradient)
case("fusion_squared_mat_sub", inputs={"X": _FCW[:3, :4], "Y": _FCW[4:8]}, attrs={"scalar": -0.5}, outputs=["Out"],
     reference=lambda X, Y: -0.5 * ((X @ Y) ** 2 - (X * X) @ (Y * Y)))
case("fusion_repeated_fc_relu", inputs={"X": _FCX.reshape(2, 12), "W": [_FCW, _FCW[:5, :3]],
                                        "Bias": [np.linspace(-1, 1, 5), np.ones(3)]},
     reference=lambda X, W, Bias: ([np.maximum(X @ W[0] + Bias[0], 0)],
                                   np.maximum(np.maximum(X @ W[0] + Bias[0], 0) @ W[1] + Bias[1], 0)))
# sign's gradient is zeros (a scale by 0 in a Program), values kept off 0
case("sign", inputs={"X": np.where(np.abs(_SQX) < 0.1, 0.5, _SQX)}, reference=lambda X: np.sign(X))
# cross_entropy2 with a label without the class axis: Y takes the label's shape, MatchX keeps X's rank
_XE = np.abs(np.sin(np.arange(24.0))).reshape(2, 3, 4) + 0.1
case("cross_entropy2", "label-without-class-axis", inputs={"X": _XE, "Label": np.array([[0, 3, 1], [2, 2, 0]])},
     outputs=["Y", "MatchX"],
     reference=lambda X, Label: {"Y": -np.log(np.take_along_axis(X, Label[..., None], -1))[..., 0],
                                 "MatchX": np.take_along_axis(X, Label[..., None], -1)})
# bce_loss: probabilities kept off 0 and 1 (where the -100 clip and the 1e-12 floor act)
_BCE_X = 0.05 + 0.9 * np.abs(np.sin(np.arange(12.0))).reshape(3, 4)
case("bce_loss", inputs={"X": _BCE_X, "Label": (np.arange(12.0).reshape(3, 4) % 3 == 0) * 1.0},
     reference=lambda X, Label: -(Label * np.log(X) + (1 - Label) * np.log(1 - X)))
# center_loss takes a [N] label as fluid's kernel does (it reads the labels flat)
case("center_loss", "label-1d", inputs={"X": _SQX.reshape(4, 6)[:, :3], "Label": np.array([1, 0, 1, 2]),
                                        "Centers": np.cos(np.arange(9.0)).reshape(3, 3), "CenterUpdateRate": np.array([0.5])},
     attrs={"cluster_num": 3}, grad_inputs=("X",), grad_outputs=("Loss",), outputs=["SampleCenterDiff", "Loss"],
     reference=lambda X, Label, Centers, CenterUpdateRate: (X - Centers[Label],
                                                            0.5 * ((X - Centers[Label]) ** 2).sum(1, keepdims=True)))
