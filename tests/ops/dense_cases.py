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
case("log_softmax", "axis1", inputs={"X": normal(2, 3, 4)}, attrs={"axis": 1}, reference=lambda X: log_softmax_ref(X, 1))
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
_BX, _BY = rng.integers(0, 2, (3, 4)).astype(bool), rng.integers(0, 2, (3, 4)).astype(bool)
for _op, _f in {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}.items():
    case(_op, inputs={"X": _BX, "Y": _BY}, reference=lambda X, Y, f=_f: f(X, Y))
case("logical_not", inputs={"X": _BX}, reference=lambda X: np.logical_not(X))
