"""Every registered op: forward vs a numpy reference, gradient vs central differences (check_op).

CASES must name every registered op that has a gradient, so a new op without a test fails here.
"""
import numpy as np
import pytest

import minifluid  # noqa: F401  (registers every op)
from minifluid.ops.registry import registered_ops
from minifluid.lod_tensor import LoDTensor
from minifluid.testing import call_grad, call_kernel, check_op

from . import ctc_cases, dense_cases, rnn_cases, sequence_cases, sequence_window_cases, vision_cases
from . import tensor_cases  # noqa: F401  (adds its cases to dense_cases.CASES)
from . import sampled_loss_cases  # noqa: F401  (adds its cases to dense_cases.CASES; after tensor_cases: one rng)
from . import vision_misc_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import misc_nn_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import conv3d_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import pool2d_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import deformable_cases, roi_cases, yolo_cases
from . import tree_conv_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import contrib_cases

rng = np.random.default_rng(1234)


def normal(*shape):
    return rng.standard_normal(shape)


def positive(*shape, lo=0.5, hi=2.0):
    return rng.uniform(lo, hi, shape)


def away(*shape, kinks=(0.0,), lo=-2.0, hi=2.0, gap=0.1):
    """Uniform values kept at least ``gap`` from every kink, so finite differences never straddle one."""
    x = rng.uniform(lo, hi, shape)
    for k in kinks:
        near = np.abs(x - k) < gap
        x[near] = k + np.where(x[near] >= k, gap, -gap) * 1.5
    return x


def distinct(*shape):
    """Values with gaps >> eps (no ties for max / top_k)."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1 - 1.0


def labels(n, c, shape=None):
    return rng.integers(0, c, size=shape or (n, 1)).astype(np.int64)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


CASES = []


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def sigm(x):
    return 1 / (1 + np.exp(-x))


# --- activations -----------------------------------------------------------------------------
ACTIVATIONS = {  # name: (input, attrs, reference)
    "relu": (away(3, 4), {}, lambda x: np.maximum(x, 0)),
    "sigmoid": (normal(3, 4), {}, sigm),
    "logsigmoid": (normal(3, 4), {}, lambda x: np.log(sigm(x))),
    "tanh": (normal(3, 4), {}, np.tanh),
    "exp": (normal(3, 4), {}, np.exp),
    "log": (positive(3, 4), {}, np.log),
    "sqrt": (positive(3, 4), {}, np.sqrt),
    "rsqrt": (positive(3, 4), {}, lambda x: 1 / np.sqrt(x)),
    "square": (normal(3, 4), {}, np.square),
    "abs": (away(3, 4), {}, np.abs),
    "reciprocal": (positive(3, 4), {}, lambda x: 1 / x),
    "sin": (normal(3, 4), {}, np.sin),
    "cos": (normal(3, 4), {}, np.cos),
    "softplus": (normal(3, 4), {}, lambda x: np.log1p(np.exp(x))),
    "softsign": (away(3, 4), {}, lambda x: x / (1 + np.abs(x))),
    "leaky_relu": (away(3, 4), {"alpha": 0.1}, lambda x: np.where(x > 0, x, 0.1 * x)),
    "relu6": (away(3, 4, kinks=(0.0, 1.0)), {"threshold": 1.0}, lambda x: np.clip(x, 0, 1)),
    "brelu": (away(3, 4, kinks=(-0.5, 1.0)), {"t_min": -0.5, "t_max": 1.0}, lambda x: np.clip(x, -0.5, 1)),
    "elu": (away(3, 4), {"alpha": 1.5}, lambda x: np.where(x > 0, x, 1.5 * (np.exp(x) - 1))),
    "hard_sigmoid": (away(3, 4, kinks=(-2.5, 2.5), lo=-3, hi=3), {}, lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    "swish": (normal(3, 4), {"beta": 1.5}, lambda x: x * sigm(1.5 * x)),
    "pow": (positive(3, 4), {"factor": 2.5}, lambda x: x ** 2.5),
    "stanh": (normal(3, 4), {}, lambda x: 1.7159 * np.tanh(0.67 * x)),
}
for _op, (_x, _attrs, _ref) in ACTIVATIONS.items():
    case(_op, inputs={"X": _x}, attrs=_attrs, reference=lambda X, f=_ref: f(X))
case("relu", "default-dims", inputs={"X": away(2, 3, 4)}, reference=lambda X: np.maximum(X, 0))
case("softmax", inputs={"X": normal(3, 5)}, reference=lambda X: np_softmax(X))
case("softmax", "axis1", inputs={"X": normal(2, 3, 4)}, attrs={"axis": 1}, reference=lambda X: np_softmax(X, 1))
case("clip", inputs={"X": away(3, 4, kinks=(-0.5, 0.5))}, attrs={"min": -0.5, "max": 0.5},
     reference=lambda X: np.clip(X, -0.5, 0.5))
case("squared_l2_norm", inputs={"X": normal(3, 4)}, reference=lambda X: np.array([(X * X).sum()]))

# --- elementwise (fluid axis broadcasting) ------------------------------------------------------
ELEMENTWISE = {
    "elementwise_add": (normal, normal, np.add),
    "elementwise_sub": (normal, normal, np.subtract),
    "elementwise_mul": (normal, normal, np.multiply),
    "elementwise_div": (normal, positive, np.divide),
    "elementwise_max": (normal, normal, np.maximum),
    "elementwise_min": (normal, normal, np.minimum),
    "elementwise_pow": (positive, lambda *s: rng.uniform(-1.5, 1.5, s), np.power),
}
BROADCASTS = {  # name: (x shape, y shape, axis, y reshaped for numpy)
    "same": ((2, 3, 4), (2, 3, 4), -1, (2, 3, 4)),
    "y3-axis1": ((2, 3, 4), (3,), 1, (1, 3, 1)),
    "y34-axis-1": ((2, 3, 4), (3, 4), -1, (3, 4)),
    "y23-axis0": ((2, 3, 4), (2, 3), 0, (2, 3, 1)),
    "y31-axis1": ((2, 3, 4), (3, 1), 1, (1, 3, 1)),
}
for _op, (_xgen, _ygen, _f) in ELEMENTWISE.items():
    for _bname, (_xs, _ys, _axis, _yview) in BROADCASTS.items():
        case(_op, _bname, inputs={"X": _xgen(*_xs), "Y": _ygen(*_ys)}, attrs={"axis": _axis},
             reference=lambda X, Y, f=_f, v=_yview: f(X, Y.reshape(v)))

# --- scale, mul, matmul, mean, sum, assign, cast ------------------------------------------------
case("scale", inputs={"X": normal(3, 4)}, attrs={"scale": 2.0, "bias": 0.5}, reference=lambda X: 2 * X + 0.5)
case("scale", "bias-first", inputs={"X": normal(3, 4)}, attrs={"scale": -3.0, "bias": 0.5, "bias_after_scale": False},
     reference=lambda X: -3 * (X + 0.5))
case("mul", inputs={"X": normal(2, 3, 4), "Y": normal(12, 5)}, reference=lambda X, Y: X.reshape(2, 12) @ Y)
case("mul", "x_num_col_dims2", inputs={"X": normal(2, 3, 4), "Y": normal(4, 5)}, attrs={"x_num_col_dims": 2},
     reference=lambda X, Y: X @ Y)
case("mul", "y_num_col_dims2", inputs={"X": normal(3, 6), "Y": normal(2, 3, 5)}, attrs={"y_num_col_dims": 2},
     reference=lambda X, Y: (X @ Y.reshape(6, 5)).reshape(3, 5))
MATMULS = {  # name: (x shape, y shape, attrs, reference)
    "plain": ((3, 4), (4, 5), {}, lambda X, Y: X @ Y),
    "transpose_X": ((4, 3), (4, 5), {"transpose_X": True}, lambda X, Y: X.T @ Y),
    "transpose_Y": ((3, 4), (5, 4), {"transpose_Y": True}, lambda X, Y: X @ Y.T),
    "transpose_both-alpha": ((4, 3), (5, 4), {"transpose_X": True, "transpose_Y": True, "alpha": 2.0},
                             lambda X, Y: 2 * X.T @ Y.T),
    "batched": ((2, 3, 4), (2, 4, 5), {}, lambda X, Y: X @ Y),
    "batched-transpose_Y": ((2, 3, 4), (2, 5, 4), {"transpose_Y": True}, lambda X, Y: X @ Y.transpose(0, 2, 1)),
    "broadcast-y": ((2, 3, 4), (4, 5), {}, lambda X, Y: X @ Y),
    "vector-y": ((2, 3, 4), (4,), {}, lambda X, Y: X @ Y),
    # fluid's rules (ops/matmul.py): two vectors give [1]; a transposed vector X is a column
    "vector-vector": ((4,), (4,), {}, lambda X, Y: np.array([X @ Y])),
    "vector-x-transposed": ((3,), (1, 5), {"transpose_X": True}, lambda X, Y: X[:, None] @ Y),
    "vector-y-transposed": ((3, 1), (5,), {"transpose_Y": True}, lambda X, Y: X @ Y[None, :]),
    "broadcast-x": ((3, 4), (2, 4, 5), {"transpose_Y": False}, lambda X, Y: X @ Y),
    "4d-transposed": ((2, 2, 4, 3), (2, 2, 5, 4), {"transpose_X": True, "transpose_Y": True},
                      lambda X, Y: X.swapaxes(-1, -2) @ Y.swapaxes(-1, -2)),
    "heads-split-rows": ((2, 3, 8), (2, 8, 5), {"head_number": 4},
                         lambda X, Y: np.concatenate([X[..., 2 * h:2 * h + 2] @ Y[:, 2 * h:2 * h + 2]
                                                      for h in range(4)], axis=-1)),
    "heads-split-columns": ((3, 8), (2, 12), {"head_number": 4},
                            lambda X, Y: np.concatenate([X[:, 2 * h:2 * h + 2] @ Y[:, 3 * h:3 * h + 3]
                                                         for h in range(4)], axis=-1)),
}
for _name, (_xs, _ys, _attrs, _ref) in MATMULS.items():
    case("matmul", _name, inputs={"X": normal(*_xs), "Y": normal(*_ys)}, attrs=_attrs, reference=_ref)
case("addmm", inputs={"Input": normal(3, 5), "X": normal(3, 4), "Y": normal(4, 5)}, attrs={"Alpha": 0.5, "Beta": 2.0},
     reference=lambda Input, X, Y: 2 * Input + 0.5 * X @ Y)
case("addmm", "input-row-broadcast", inputs={"Input": normal(1, 5), "X": normal(3, 4), "Y": normal(4, 5)},
     attrs={"Beta": -1.0}, reference=lambda Input, X, Y: X @ Y - Input)
case("addmm", "input-one", inputs={"Input": normal(1, 1), "X": normal(3, 4), "Y": normal(4, 5)},
     reference=lambda Input, X, Y: X @ Y + Input)
_NLL_LABEL = np.array([2, 0, -100, 1, 2], dtype=np.int64)
_NLL_W = np.array([0.5, 1.5, 2.0])
case("nll_loss", "mean-weight-ignored", inputs={"X": normal(5, 3), "Label": _NLL_LABEL, "Weight": _NLL_W},
     outputs=["Out"], reference=lambda X, Label, Weight: np.array(
         [-sum(X[i, c] * Weight[c] for i, c in enumerate(Label) if c >= 0) / (2.0 + 0.5 + 1.5 + 2.0)]))
case("nll_loss", "none-4d", inputs={"X": normal(2, 3, 2, 2), "Label": np.array([[[0, 1], [2, 1]], [[1, 1], [0, 2]]])},
     attrs={"reduction": "none"}, outputs=["Out"],
     reference=lambda X, Label: -np.take_along_axis(X, Label[:, None], 1)[:, 0])
case("nll_loss", "sum", inputs={"X": normal(4, 3), "Label": np.array([0, 2, 2, 1])}, attrs={"reduction": "sum"},
     outputs=["Out"], reference=lambda X, Label: np.array([-X[np.arange(4), Label].sum()]))
case("mean", inputs={"X": normal(3, 4)}, reference=lambda X: np.array([X.mean()]))
case("sum", inputs={"X": [normal(3, 4), normal(3, 4), normal(3, 4)]}, reference=lambda X: X[0] + X[1] + X[2])
case("assign", inputs={"X": normal(3, 4)}, reference=lambda X: X)
case("cast", inputs={"X": normal(3, 4)}, attrs={"in_dtype": "float64", "out_dtype": "float64"},
     reference=lambda X: X)
case("cast", "to-int32", inputs={"X": normal(3, 4) * 5}, attrs={"in_dtype": "float64", "out_dtype": "int32"},
     reference=lambda X: X.astype(np.int32), grad_inputs=())

# --- reduce ---------------------------------------------------------------------------------------
REDUCES = {"reduce_sum": (normal, np.sum), "reduce_mean": (normal, np.mean), "reduce_max": (distinct, np.max),
           "reduce_min": (distinct, np.min), "reduce_prod": (positive, np.prod),
           "frobenius_norm": (positive, lambda X, axis, keepdims: np.sqrt((X * X).sum(axis=axis, keepdims=keepdims)))}
REDUCE_ATTRS = {  # name: (attrs, numpy axis, keepdims)
    "dim1": ({"dim": [1]}, 1, False),
    "dim-1-keep": ({"dim": [-1], "keep_dim": True}, -1, True),
    "dims02": ({"dim": [0, 2]}, (0, 2), False),
    "all": ({"reduce_all": True}, None, False),
}
for _op, (_gen, _f) in REDUCES.items():
    for _name, (_attrs, _axis, _keep) in REDUCE_ATTRS.items():
        case(_op, _name, inputs={"X": _gen(2, 3, 4)}, attrs=_attrs,
             reference=lambda X, f=_f, a=_axis, k=_keep: np.reshape(f(X, axis=a, keepdims=k),
                                                                    np.shape(f(X, axis=a, keepdims=k)) or (1,)))
case("reduce_sum", "1d-to-[1]", inputs={"X": normal(5)}, reference=lambda X: np.array([X.sum()]))
case("reduce_sum", "out_dtype", inputs={"X": np.arange(12, dtype=np.int32).reshape(3, 4)},
     attrs={"dim": [1], "out_dtype": 6}, reference=lambda X: X.sum(axis=1).astype(np.float64))
for _p, _axis, _keep in ((2.0, 1, False), (3.0, -1, True), (1.5, 0, False)):
    case("p_norm", f"p{_p}-axis{_axis}", inputs={"X": positive(2, 3, 4)},
         attrs={"porder": _p, "axis": _axis, "keepdim": _keep},
         reference=lambda X, p=_p, a=_axis, k=_keep: (np.abs(X) ** p).sum(axis=a, keepdims=k) ** (1 / p))

# --- shape ops ------------------------------------------------------------------------------------
case("reshape2", "0-and-minus1", inputs={"X": normal(2, 3, 4)}, attrs={"shape": [0, -1]},
     reference=lambda X: X.reshape(2, 12))
case("reshape2", "00-2-minus1", inputs={"X": normal(2, 3, 4)}, attrs={"shape": [0, 0, 2, -1]},
     reference=lambda X: X.reshape(2, 3, 2, 2))
case("reshape2", "shape-tensor", inputs={"X": normal(2, 3, 4), "Shape": np.array([6, 4], dtype=np.int32)},
     attrs={"shape": [-1, 4]}, reference=lambda X, Shape: X.reshape(6, 4))
case("transpose2", inputs={"X": normal(2, 3, 4)}, attrs={"axis": [2, 0, 1]},
     reference=lambda X: X.transpose(2, 0, 1))
case("squeeze2", inputs={"X": normal(2, 1, 3)}, attrs={"axes": [1]}, reference=lambda X: X.reshape(2, 3))
case("squeeze2", "all-ones", inputs={"X": normal(1, 2, 1, 3)}, reference=lambda X: X.reshape(2, 3))
case("unsqueeze2", inputs={"X": normal(2, 3)}, attrs={"axes": [0, -1]}, reference=lambda X: X.reshape(1, 2, 3, 1))
case("flatten2", inputs={"X": normal(2, 3, 4, 2)}, attrs={"axis": 2}, reference=lambda X: X.reshape(6, 8))
case("flatten2", "axis0", inputs={"X": normal(2, 3)}, attrs={"axis": 0}, reference=lambda X: X.reshape(1, 6))
case("squeeze", inputs={"X": normal(2, 1, 3)}, attrs={"axes": [1]}, reference=lambda X: X.reshape(2, 3))
case("unsqueeze", inputs={"X": normal(2, 3)}, attrs={"axes": [1]}, reference=lambda X: X.reshape(2, 1, 3))
case("flatten", inputs={"X": normal(2, 3, 4)}, attrs={"axis": 2}, reference=lambda X: X.reshape(6, 4))
case("unbind", inputs={"X": normal(2, 3, 4)}, attrs={"axis": -1},
     reference=lambda X: {"Out": [X[..., i] for i in range(4)]})
case("concat", inputs={"X": [normal(2, 3), normal(2, 1), normal(2, 2)]}, attrs={"axis": 1},
     reference=lambda X: np.concatenate(X, axis=1))
case("concat", "axis-neg", inputs={"X": [normal(1, 2, 3), normal(2, 2, 3)]}, attrs={"axis": -3},
     reference=lambda X: np.concatenate(X, axis=0))
case("split", "sections", inputs={"X": normal(2, 6, 3)}, attrs={"sections": [1, -1, 2], "axis": 1},
     reference=lambda X: {"Out": [X[:, :1], X[:, 1:4], X[:, 4:]]})
case("split", "num", inputs={"X": normal(3, 4)}, attrs={"num": 3, "axis": 0},
     reference=lambda X: {"Out": [X[:1], X[1:2], X[2:]]})
case("stack", inputs={"X": [normal(2, 3), normal(2, 3), normal(2, 3)]}, attrs={"axis": 1},
     reference=lambda X: np.stack(X, axis=1))
case("unstack", inputs={"X": normal(2, 3, 4)}, attrs={"axis": 1},
     reference=lambda X: {"Y": [X[:, i] for i in range(3)]})


# --- losses and metrics ---------------------------------------------------------------------------
def swce_ref(logits, label, soft=False, ignore=-100, axis=-1):
    logp = np.log(np_softmax(logits, axis))
    if soft:
        loss = -(label * logp).sum(axis=axis, keepdims=True)
    else:
        loss = -np.take_along_axis(logp, np.where(label == ignore, 0, label), axis=axis)
        loss[label == ignore] = 0
    return np_softmax(logits, axis), loss


case("softmax_with_cross_entropy", "hard", inputs={"Logits": normal(4, 5), "Label": labels(4, 5)},
     reference=lambda Logits, Label: swce_ref(Logits, Label))
case("softmax_with_cross_entropy", "hard-loss-only", inputs={"Logits": normal(4, 5), "Label": labels(4, 5)},
     grad_outputs=["Loss"], reference=lambda Logits, Label: swce_ref(Logits, Label))
case("softmax_with_cross_entropy", "soft", inputs={"Logits": normal(4, 5), "Label": np_softmax(normal(4, 5))},
     attrs={"soft_label": True}, reference=lambda Logits, Label: swce_ref(Logits, Label, soft=True))
case("softmax_with_cross_entropy", "ignore_index",
     inputs={"Logits": normal(4, 5), "Label": np.array([[1], [3], [1], [0]], dtype=np.int64)},
     attrs={"ignore_index": 1}, reference=lambda Logits, Label: swce_ref(Logits, Label, ignore=1))
case("softmax_with_cross_entropy", "axis1", inputs={"Logits": normal(2, 3, 4), "Label": labels(2, 3, (2, 1, 4))},
     attrs={"axis": 1}, reference=lambda Logits, Label: swce_ref(Logits, Label, axis=1))


def xent_ref(x, label, ignore=-100):
    y = -np.log(np.take_along_axis(x, np.where(label == ignore, 0, label), axis=-1))
    y[label == ignore] = 0
    return y


case("cross_entropy", "hard", inputs={"X": np_softmax(normal(4, 5)), "Label": labels(4, 5)},
     reference=lambda X, Label: xent_ref(X, Label))
case("cross_entropy", "soft", inputs={"X": np_softmax(normal(4, 5)), "Label": np_softmax(normal(4, 5))},
     attrs={"soft_label": True}, reference=lambda X, Label: -(Label * np.log(X)).sum(-1, keepdims=True))
case("cross_entropy", "ignore_index", inputs={"X": np_softmax(normal(4, 5)), "Label": np.array([[2], [0], [2], [4]])},
     attrs={"ignore_index": 2}, reference=lambda X, Label: xent_ref(X, Label, ignore=2))
case("cross_entropy2", inputs={"X": np_softmax(normal(4, 5)), "Label": np.array([[2], [0], [-100], [4]])},
     reference=lambda X, Label: {"Y": xent_ref(X, Label),
                                 "MatchX": np.where(Label >= 0, np.take_along_axis(X, np.maximum(Label, 0), -1), 0)})
case("print", inputs={"In": normal(2, 3)}, attrs={"var_name": "x", "first_n": 0}, reference=lambda In: In)  # silent
_EMB_W, _EMB_IDS = normal(6, 3), np.array([[1], [4], [1], [0]], dtype=np.int64)  # id 1 twice: grads add up
case("lookup_table", inputs={"W": _EMB_W, "Ids": _EMB_IDS}, reference=lambda W, Ids: W[Ids[:, 0]])
case("lookup_table", "padding", inputs={"W": _EMB_W, "Ids": _EMB_IDS}, attrs={"padding_idx": 1},
     reference=lambda W, Ids: np.where(Ids == 1, 0.0, W[Ids[:, 0]]))
case("top_k", inputs={"X": distinct(3, 5)}, attrs={"k": 2},
     reference=lambda X: (-np.sort(-X, axis=-1)[:, :2], np.argsort(-X, axis=-1)[:, :2]))
case("accuracy", inputs={"Out": normal(4, 2), "Indices": np.array([[1, 2], [0, 3], [4, 1], [2, 2]]),
                         "Label": np.array([[2], [1], [4], [0]])},
     reference=lambda Out, Indices, Label: (np.array([0.5], np.float32), np.array([2], np.int32),
                                            np.array([4], np.int32)))


# --- conv2d / pool2d (naive loop references: fine for tiny shapes) ---------------------------------
def conv_ref(x, w, stride, pads, dil, groups):
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    n, c, h, wd = xp.shape
    cout, cg, kh, kw = w.shape
    oh = (h - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, cout, oh, ow))
    per = cout // groups
    for o in range(cout):
        g = o // per
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                           j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                out[:, o, i, j] = (patch * w[o]).sum(axis=(1, 2, 3))
    return out


CONVS = {  # name: (x shape, w shape, attrs, pads [t, b, l, r])
    "stride2-pad1-groups2": ((2, 4, 5, 5), (4, 2, 3, 3), {"strides": [2, 2], "paddings": [1, 1], "groups": 2},
                             [1, 1, 1, 1]),
    "dilation2-pad4": ((1, 3, 6, 5), (2, 3, 3, 2), {"dilations": [2, 2], "paddings": [1, 0, 2, 1]}, [1, 0, 2, 1]),
    "stride-hw": ((2, 2, 5, 6), (3, 2, 2, 3), {"strides": [1, 2], "paddings": [0, 1]}, [0, 0, 1, 1]),
    # stride 1: the input gradient is the transposed convolution (NOTE [ conv2d formulations ])
    "3x3-pad1": ((2, 3, 5, 4), (4, 3, 3, 3), {"paddings": [1, 1]}, [1, 1, 1, 1]),
    "pad-wider-than-kernel": ((1, 2, 4, 4), (3, 2, 2, 2), {"paddings": [2, 0, 3, 1]}, [2, 0, 3, 1]),
    "1x1": ((2, 3, 4, 5), (2, 3, 1, 1), {}, [0, 0, 0, 0]),
    "1x1-stride2": ((2, 3, 5, 5), (4, 3, 1, 1), {"strides": [2, 2]}, [0, 0, 0, 0]),
    "groups3-stride1": ((2, 6, 4, 4), (3, 2, 3, 3), {"groups": 3, "paddings": [1, 1]}, [1, 1, 1, 1]),
    # few channels in NCHW memory, output rows longer than kw*C: the channels-first im2col
    # (NOTE [ Channels-first im2col for few channels ] in ops/im2col.py)
    "channels-first-rgb": ((2, 3, 4, 9), (4, 3, 3, 2), {"paddings": [1, 1]}, [1, 1, 1, 1]),
    "channels-first-gray-strided": ((2, 1, 6, 12), (3, 1, 3, 3), {"strides": [2, 1], "dilations": [1, 2],
                                                                   "paddings": [1, 2, 0, 1]}, [1, 2, 0, 1]),
}
for _name, (_xs, _ws, _attrs, _pads) in CONVS.items():
    case("conv2d", _name, inputs={"Input": normal(*_xs), "Filter": normal(*_ws)}, attrs=_attrs,
         reference=lambda Input, Filter, a=_attrs, p=_pads: conv_ref(
             Input, Filter, a.get("strides", [1, 1]), p, a.get("dilations", [1, 1]), a.get("groups", 1)))
case("conv2d", "NHWC-SAME", inputs={"Input": normal(1, 5, 5, 2), "Filter": normal(3, 2, 3, 3)},
     attrs={"data_format": "NHWC", "padding_algorithm": "SAME", "strides": [2, 2]},
     reference=lambda Input, Filter: conv_ref(Input.transpose(0, 3, 1, 2), Filter, [2, 2], [1, 1, 1, 1], [1, 1],
                                              1).transpose(0, 2, 3, 1))
case("conv2d", "NHWC-SAME-stride1", inputs={"Input": normal(2, 4, 5, 3), "Filter": normal(2, 3, 3, 3)},
     attrs={"data_format": "NHWC", "padding_algorithm": "SAME"},  # both gradients from one im2col of dout
     reference=lambda Input, Filter: conv_ref(Input.transpose(0, 3, 1, 2), Filter, [1, 1], [1, 1, 1, 1], [1, 1],
                                              1).transpose(0, 2, 3, 1))
case("depthwise_conv2d", inputs={"Input": normal(2, 3, 4, 4), "Filter": normal(3, 1, 3, 3)},
     attrs={"groups": 3, "paddings": [1, 1]},
     reference=lambda Input, Filter: conv_ref(Input, Filter, [1, 1], [1, 1, 1, 1], [1, 1], 3))
case("depthwise_conv2d", "multiplier2-stride2", inputs={"Input": normal(2, 3, 5, 5), "Filter": normal(6, 1, 3, 3)},
     attrs={"groups": 3, "paddings": [1, 1], "strides": [2, 2]},
     reference=lambda Input, Filter: conv_ref(Input, Filter, [2, 2], [1, 1, 1, 1], [1, 1], 3))


def pool_ref(x, k, s, pads, kind, exclusive=True, ceil=False):
    n, c, h, w = x.shape
    size = [(h + pads[0] + pads[1] - k[0] + (s[0] - 1 if ceil else 0)) // s[0] + 1,
            (w + pads[2] + pads[3] - k[1] + (s[1] - 1 if ceil else 0)) // s[1] + 1]
    out = np.zeros((n, c, *size))
    for i in range(size[0]):
        for j in range(size[1]):
            h0, w0 = i * s[0] - pads[0], j * s[1] - pads[2]
            win = x[:, :, max(h0, 0):min(h0 + k[0], h), max(w0, 0):min(w0 + k[1], w)]
            if kind == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                out[:, :, i, j] = win.sum(axis=(2, 3)) / (win.shape[2] * win.shape[3] if exclusive else k[0] * k[1])
    return out


POOLS = {  # name: (attrs, reference args (k, s, pads, kind, exclusive, ceil))
    "max-pad1-stride2": ({"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]},
                         ([3, 3], [2, 2], [1, 1, 1, 1], "max", True, False)),
    "avg-pad1-exclusive": ({"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]},
                           ([3, 3], [2, 2], [1, 1, 1, 1], "avg", True, False)),
    "avg-pad1-inclusive": ({"pooling_type": "avg", "ksize": [2, 3], "strides": [1, 2], "paddings": [1, 1],
                            "exclusive": False}, ([2, 3], [1, 2], [1, 1, 1, 1], "avg", False, False)),
    "max-ceil": ({"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2], "ceil_mode": True},
                 ([3, 3], [2, 2], [0, 0, 0, 0], "max", True, True)),
    "avg-ceil": ({"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2], "ceil_mode": True},
                 ([2, 2], [2, 2], [0, 0, 0, 0], "avg", True, True)),
    "global-avg": ({"pooling_type": "avg", "ksize": [1, 1], "global_pooling": True},
                   ([6, 5], [1, 1], [0, 0, 0, 0], "avg", True, False)),
    "global-max": ({"pooling_type": "max", "ksize": [1, 1], "global_pooling": True},
                   ([6, 5], [1, 1], [0, 0, 0, 0], "max", True, False)),
    "adaptive-avg": ({"pooling_type": "avg", "ksize": [3, 1], "adaptive": True},
                     ([2, 5], [2, 5], [0, 0, 0, 0], "avg", True, False)),
}
for _name, (_attrs, _args) in POOLS.items():
    case("pool2d", _name, inputs={"X": distinct(2, 2, 6, 5)}, attrs=_attrs,
         reference=lambda X, a=_args: pool_ref(X, *a))


def adaptive_ref(x, out_hw, kind):
    """fluid's adaptive windows [floor(i*n/m), ceil((i+1)*n/m)) one output at a time."""
    out = np.zeros(x.shape[:2] + tuple(out_hw))
    for i in range(out_hw[0]):
        for j in range(out_hw[1]):
            h0, h1 = i * x.shape[2] // out_hw[0], -(-(i + 1) * x.shape[2] // out_hw[0])
            w0, w1 = j * x.shape[3] // out_hw[1], -(-(j + 1) * x.shape[3] // out_hw[1])
            win = x[:, :, h0:h1, w0:w1]
            out[:, :, i, j] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
    return out


for _kind in ("avg", "max"):  # uneven, overlapping windows (6 -> 4, 5 -> 3) and more outputs than inputs
    for _out in ([4, 3], [7, 2]):
        case("pool2d", f"adaptive-{_kind}-{_out[0]}x{_out[1]}", inputs={"X": distinct(2, 3, 6, 5)},
             attrs={"pooling_type": _kind, "ksize": _out, "adaptive": True},
             reference=lambda X, o=_out, k=_kind: adaptive_ref(X, o, k))
    case("pool2d", f"adaptive-{_kind}-NHWC", inputs={"X": distinct(2, 5, 7, 3)},
         attrs={"pooling_type": _kind, "ksize": [3, 4], "adaptive": True, "data_format": "NHWC"},
         reference=lambda X, k=_kind: adaptive_ref(X.transpose(0, 3, 1, 2), [3, 4], k).transpose(0, 2, 3, 1))
case("pool2d", "max-NHWC", inputs={"X": distinct(1, 4, 4, 2)},
     attrs={"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2], "data_format": "NHWC"},
     reference=lambda X: pool_ref(X.transpose(0, 3, 1, 2), [2, 2], [2, 2], [0] * 4, "max").transpose(0, 2, 3, 1))


# --- batch_norm -----------------------------------------------------------------------------------
def bn_ref(x, scale, bias, mean, var, axes, bshape, eps=1e-5, momentum=0.9, use_batch=True):
    mu, v = (x.mean(axis=axes), x.var(axis=axes)) if use_batch else (mean, var)
    y = (x - mu.reshape(bshape)) / np.sqrt(v.reshape(bshape) + eps) * scale.reshape(bshape) + bias.reshape(bshape)
    if not use_batch:
        return {"Y": y, "MeanOut": mean, "VarianceOut": var}
    return {"Y": y, "MeanOut": momentum * mean + (1 - momentum) * mu,
            "VarianceOut": momentum * var + (1 - momentum) * v, "SavedMean": mu, "SavedVariance": 1 / np.sqrt(v + eps)}


def bn_inputs(x, c):
    return {"X": x, "Scale": normal(c), "Bias": normal(c), "Mean": normal(c), "Variance": positive(c)}


case("batch_norm", "train-4d", inputs=bn_inputs(normal(2, 3, 3, 4), 3), grad_outputs=["Y"],
     reference=lambda X, Scale, Bias, Mean, Variance: bn_ref(X, Scale, Bias, Mean, Variance, (0, 2, 3), (1, 3, 1, 1)))
case("batch_norm", "train-2d", inputs=bn_inputs(normal(5, 3), 3), grad_outputs=["Y"], attrs={"momentum": 0.8},
     reference=lambda X, Scale, Bias, Mean, Variance: bn_ref(X, Scale, Bias, Mean, Variance, (0,), (1, 3),
                                                             momentum=0.8))
case("batch_norm", "train-NHWC", inputs=bn_inputs(normal(2, 3, 2, 4), 4), grad_outputs=["Y"],
     attrs={"data_layout": "NHWC"},
     reference=lambda X, Scale, Bias, Mean, Variance: bn_ref(X, Scale, Bias, Mean, Variance, (0, 1, 2), (1, 1, 1, 4)))
case("batch_norm", "is_test", inputs=bn_inputs(normal(2, 3, 2, 2), 3), grad_outputs=["Y"], attrs={"is_test": True},
     outputs=["Y", "MeanOut", "VarianceOut"],
     reference=lambda X, Scale, Bias, Mean, Variance: bn_ref(X, Scale, Bias, Mean, Variance, (0, 2, 3), (1, 3, 1, 1),
                                                             use_batch=False))
case("batch_norm", "use_global_stats", inputs=bn_inputs(normal(4, 3), 3), grad_outputs=["Y"],
     attrs={"use_global_stats": True}, outputs=["Y", "MeanOut", "VarianceOut"],
     reference=lambda X, Scale, Bias, Mean, Variance: bn_ref(X, Scale, Bias, Mean, Variance, (0,), (1, 3),
                                                             use_batch=False))


# --- dropout ------------------------------------------------------------------------------------------
def dropout_train_rule(scale):
    def post(inputs, fetched):
        x, out, mask = inputs["X"], fetched["Out"], fetched["Mask"]
        assert mask.dtype == np.uint8 and set(np.unique(mask)) <= {0, 1}
        assert 0 < mask.mean() < 1, "with p=0.4 on 200 units some are kept and some dropped"
        np.testing.assert_allclose(out, x * mask * scale)
    return post


case("dropout", "test-downgrade", inputs={"X": normal(4, 5)}, attrs={"is_test": True, "dropout_prob": 0.3},
     reference=lambda X: X * 0.7)
case("dropout", "test-upscale", inputs={"X": normal(4, 5)},
     attrs={"is_test": True, "dropout_prob": 0.3, "dropout_implementation": "upscale_in_train"},
     reference=lambda X: X)
case("dropout", "train-downgrade", inputs={"X": normal(10, 20)},
     attrs={"dropout_prob": 0.4, "fix_seed": True, "seed": 7}, post=dropout_train_rule(1.0))
case("dropout", "train-upscale", inputs={"X": normal(10, 20)},
     attrs={"dropout_prob": 0.4, "fix_seed": True, "seed": 7, "dropout_implementation": "upscale_in_train"},
     post=dropout_train_rule(1 / 0.6))


# --- row routing of IfElse and cond (ops/lod_routing.py) ---------------------------------------------
_MASK = np.array([[True], [False], [False], [True], [False]])
case("split_lod_tensor", inputs={"X": normal(5, 3), "Mask": _MASK},
     reference=lambda X, Mask: (X[Mask[:, 0]], X[~Mask[:, 0]]))
case("merge_lod_tensor", inputs={"X": _MASK, "Mask": _MASK, "InTrue": normal(2, 3), "InFalse": normal(3, 3)},
     reference=lambda X, Mask, InTrue, InFalse: np.stack([InTrue[0], InFalse[0], InFalse[1], InTrue[1], InFalse[2]]))
case("select_input", inputs={"X": [normal(2, 3), normal(2, 3)], "Mask": np.array([1], "int32")},
     reference=lambda X, Mask: X[1])


# --- the tests ----------------------------------------------------------------------------------------
CASES += dense_cases.CASES + sequence_cases.CASES + rnn_cases.CASES + vision_cases.CASES + sequence_window_cases.CASES
CASES += ctc_cases.CASES
CASES += roi_cases.CASES + yolo_cases.CASES + deformable_cases.CASES
CASES += contrib_cases.CASES
# ops whose inputs check_op cannot build (a LoD rank table), their gradients checked against the same
# computation written out by hand in the file named
GRADIENTS_CHECKED_ELSEWHERE = dict.fromkeys(("lod_tensor_to_array", "shrink_rnn_memory", "reorder_lod_tensor_by_rank"),
                                            "tests/control_flow/test_dynamic_rnn.py")
GRADIENTS_CHECKED_ELSEWHERE["select_output"] = "tests/control_flow/test_routing.py"  # its outputs live in the scope
COVERED = {p.values[0] for p in CASES} | set(GRADIENTS_CHECKED_ELSEWHERE)
FORWARD_OPS = {name: spec for name, spec in registered_ops().items() if spec.forward is None}


@pytest.mark.parametrize("op_type, kwargs, post", CASES)
def test_op(op_type, kwargs, post):
    fetched = check_op(op_type, **kwargs)
    if post is not None:
        post(kwargs["inputs"], fetched)


@pytest.mark.parametrize("op_type", sorted(n for n, s in FORWARD_OPS.items() if s.grad is not None))
def test_every_differentiable_op_has_a_case(op_type):
    assert op_type in COVERED, f"op {op_type!r} has a gradient but no case in tests/ops/test_op_gradients.py"


@pytest.mark.parametrize("op_type", sorted(FORWARD_OPS))
def test_registered_op_has_a_gradient_or_says_it_has_none(op_type):
    spec = FORWARD_OPS[op_type]
    if spec.no_gradient:
        assert op_type + "_grad" not in registered_ops()
        return
    assert spec.has_grad, (f"op {op_type!r} (registered at {spec.source}) has no gradient; register one or "
                           "register the op with no_gradient=True")
    if spec.grad is not None and spec.grad_builder is None:  # a grad kernel (not a builder's eager one):
        # backward appends <type>_grad, whose spec is derived from it
        grad_spec = registered_ops()[op_type + "_grad"]
        assert grad_spec.forward is spec and (grad_spec.kernel is None) != spec.context  # context: ExecutionContext


def _to32(value):
    if isinstance(value, list):
        return [_to32(v) for v in value]
    value = np.asarray(value)
    return value.astype(np.float32) if value.dtype == np.float64 else value


def _lods(inputs):
    """(slot, index) -> LoD of the LoDTensor inputs of a case (what a context kernel reads)."""
    return {(slot, i): a.recursive_sequence_lengths() for slot, v in inputs.items()
            for i, a in enumerate(v if isinstance(v, list) else [v]) if isinstance(a, LoDTensor)}


@pytest.mark.parametrize("op_type, kwargs, post",  # cast, auc (a float64 AUC) and an out_dtype choose theirs;
                         [p for p in CASES if p.values[0] not in ("cast", "auc")  # integer-only cases have none
                          and "out_dtype" not in p.values[1].get("attrs", {})
                          and any(np.asarray(v).dtype.kind == "f" for v in p.values[1]["inputs"].values()
                                  if not isinstance(v, list))])
def test_float32_inputs_give_float32_outputs_and_grads(op_type, kwargs, post):
    spec = registered_ops()[op_type]
    attrs = {**spec.attrs, **kwargs.get("attrs", {})}
    ins = tuple(_to32(kwargs["inputs"][s]) if s in kwargs["inputs"] else None for s in spec.inputs)
    lods = _lods(kwargs["inputs"])
    outs = call_kernel(spec, attrs, ins, lods)
    outs = (outs,) if len(spec.outputs) == 1 else tuple(outs)
    flat = [a for o in outs if o is not None for a in (o if isinstance(o, list) else [o])]
    assert all(a.dtype != np.float64 for a in flat), [a.dtype for a in flat]
    if spec.grad is None:
        return
    douts = tuple(None if o is None or (not isinstance(o, list) and o.dtype.kind != "f") else
                  [np.ones_like(a) for a in o] if isinstance(o, list) else np.ones_like(o) for o in outs)
    need = tuple(i is not None and s not in spec.no_grad_inputs for s, i in zip(spec.inputs, ins))
    grads = call_grad(spec, attrs, ins, outs, douts, need, lods)
    flat = [a for g in grads if g is not None for a in (g if isinstance(g, list) else [g])]
    assert flat and all(a.dtype == np.float32 for a in flat), [a.dtype for a in flat]


def test_dropout_train_mask_changes_between_runs_without_fix_seed():
    x = np.ones((50, 40))
    a = check_op("dropout", inputs={"X": x}, attrs={"dropout_prob": 0.5}, grad_inputs=())
    b = check_op("dropout", inputs={"X": x}, attrs={"dropout_prob": 0.5}, grad_inputs=())
    assert not np.array_equal(a["Mask"], b["Mask"])


def test_check_op_reports_a_wrong_gradient():
    from minifluid.ops.registry import get_op_spec
    spec = get_op_spec("tanh")
    good = spec.grad
    spec.grad = lambda attrs, ins, outs, douts, need: (douts[0],)  # wrong on purpose
    try:
        with pytest.raises(AssertionError, match=r"tanh: gradient of input X mismatch at flat index \d+"):
            check_op("tanh", inputs={"X": normal(2, 3)})
    finally:
        spec.grad = good


@pytest.mark.parametrize("case_id", ["split-sections", "reshape2-0-and-minus1", "concat", "batch_norm-train-4d",
                                     "conv2d-stride2-pad1-groups2", "softmax_with_cross_entropy-ignore_index",
                                     "pool2d-max-pad1-stride2", "sum", "relu"])
def test_grad_op_runs_through_the_executor(case_id):
    """The derived ``<type>_grad`` spec, run by the Executor, matches the grad kernel called directly."""
    from minifluid.executor import Executor, Scope
    from minifluid.framework import Program
    from minifluid.ops.registry import grad_var_name
    op_type, kwargs, _ = next(p.values for p in CASES if p.id == case_id)
    spec = registered_ops()[op_type]
    attrs = {**spec.attrs, **kwargs.get("attrs", {})}
    values = {s: kwargs["inputs"].get(s) for s in spec.inputs}
    outs = spec.kernel(attrs, *values.values())
    outs = dict(zip(spec.outputs, (outs,) if len(spec.outputs) == 1 else outs))
    prog, feed = Program(), {}
    block = prog.global_block()

    def wire(slot, value):
        if value is None:
            return None
        arrays = value if isinstance(value, list) else [value]
        names = [f"{slot}.{i}" for i in range(len(arrays))]
        for name, a in zip(names, arrays):
            block.create_var(name=name, shape=a.shape, dtype=a.dtype)
            feed[name] = a
        return names
    douts = {s: ([np.ones_like(a) for a in v] if isinstance(v, list) else np.ones_like(v))
             for s, v in outs.items() if v is not None and (isinstance(v, list) or v.dtype.kind == "f")}
    grad_in = {**{s: wire(s, v) for s, v in {**values, **outs}.items()},
               **{grad_var_name(s): wire(grad_var_name(s), v) for s, v in douts.items()}}
    need = [s for s in spec.inputs if values[s] is not None and s not in spec.no_grad_inputs]
    grad_out = {grad_var_name(s): [f"d{s}.{i}" for i in range(len(values[s]) if isinstance(values[s], list) else 1)]
                for s in need}
    for names in grad_out.values():
        for n in names:
            block.create_var(name=n)
    block.append_op(type=op_type + "_grad", inputs={k: v for k, v in grad_in.items() if v},
                    outputs=grad_out, attrs=attrs)
    fetch = [n for names in grad_out.values() for n in names]
    got = Executor().run(prog, feed=feed, fetch_list=fetch, scope=Scope())
    expected = spec.grad(attrs, tuple(values.values()), tuple(outs.get(s) for s in spec.outputs),
                         tuple(douts.get(s) for s in spec.outputs), tuple(s in need for s in spec.inputs))
    flat = [a for s, e in zip(spec.inputs, expected) if s in need for a in (e if isinstance(e, list) else [e])]
    assert len(flat) == len(got)
    for g, e in zip(got, flat):
        np.testing.assert_allclose(g, e)


INFER_CASES = {  # op: (input shapes (dtype float32 unless int64 listed), attrs, expected output shapes)
    "reshape2": ({"X": (-1, 3, 4)}, {"shape": [0, -1]}, {"Out": (-1, 12)}),
    "flatten2": ({"X": (-1, 3, 4, 2)}, {"axis": 1}, {"Out": (-1, 24)}),
    "conv2d": ({"Input": (-1, 4, 9, 9), "Filter": (6, 2, 3, 3)}, {"strides": [2, 2], "paddings": [1, 1], "groups": 2},
               {"Output": (-1, 6, 5, 5)}),
    "pool2d": ({"X": (-1, 3, 7, 7)}, {"ksize": [2, 2], "strides": [2, 2], "ceil_mode": True}, {"Out": (-1, 3, 4, 4)}),
    "softmax_with_cross_entropy": ({"Logits": (-1, 10), "Label": (-1, 1)}, {},
                                   {"Softmax": (-1, 10), "Loss": (-1, 1)}),
    "top_k": ({"X": (-1, 10)}, {"k": 3}, {"Out": (-1, 3), "Indices": (-1, 3)}),
    "reduce_mean": ({"X": (-1, 3, 4)}, {"dim": [1, 2]}, {"Out": (-1,)}),
    "transpose2": ({"X": (-1, 3, 4)}, {"axis": [1, 2, 0]}, {"Out": (3, 4, -1)}),
    "unsqueeze2": ({"X": (-1, 3)}, {"axes": [1]}, {"Out": (-1, 1, 3)}),
    "batch_norm": ({"X": (-1, 3, 4, 4), "Scale": (3,), "Bias": (3,), "Mean": (3,), "Variance": (3,)}, {},
                   {"Y": (-1, 3, 4, 4), "SavedMean": (3,)}),
    "dropout": ({"X": (-1, 5)}, {}, {"Out": (-1, 5), "Mask": (-1, 5)}),
}


@pytest.mark.parametrize("op_type", sorted(INFER_CASES))
def test_infer_shape_keeps_unknown_batch(op_type):
    from minifluid.framework import Program
    ins, attrs, expected = INFER_CASES[op_type]
    block = Program().global_block()
    inputs = {s: block.create_var(name=s, shape=shape, dtype="int64" if s == "Label" else "float32")
              for s, shape in ins.items()}
    outputs = {s: block.create_var(name="out_" + s, shape=None, dtype=None) for s in expected}
    block.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    assert {s: v.shape for s, v in outputs.items()} == expected
