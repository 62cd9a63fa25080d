"""Activation ops: a table of elementwise unary functions (fluid's activation_op family) plus softmax.

Each table row is one op: forward ``f(xp, x, attrs)``, gradient ``g(xp, x, out, dout, attrs)``
and the op's own attributes with fluid's defaults. ``square`` is here so that
``square_error_cost`` composes as elementwise_sub + square.
"""
import numpy as np

from .parallel import elementwise, into, zeros_for
from .registry import array_module, register_grad, register_op, same_as

_COMMON = {"use_mkldnn": False, "use_cudnn": False, "is_test": False}


def _sigmoid(xp, x):
    return 0.5 * (1.0 + xp.tanh(0.5 * x))  # overflow-free logistic


def _between(x, lo, hi):
    return (x > lo) & (x < hi)


# name: (forward, backward, attrs)
_UNARY = {
    "sigmoid": (lambda xp, x, a: _sigmoid(xp, x), lambda xp, x, y, d, a: d * y * (1 - y), {}),
    "logsigmoid": (lambda xp, x, a: -xp.logaddexp(0, -x), lambda xp, x, y, d, a: d * _sigmoid(xp, -x), {}),
    "tanh": (lambda xp, x, a: xp.tanh(x), lambda xp, x, y, d, a: d * (1 - y * y), {}),
    "exp": (lambda xp, x, a: xp.exp(x), lambda xp, x, y, d, a: d * y, {}),
    "log": (lambda xp, x, a: xp.log(x), lambda xp, x, y, d, a: d / x, {}),
    "log1p": (lambda xp, x, a: xp.log1p(x), lambda xp, x, y, d, a: d / (1 + x), {}),
    "erf": (lambda xp, x, a: _erf(xp, x), lambda xp, x, y, d, a: d * 1.1283791670955126 * xp.exp(-x * x), {}),
    "sqrt": (lambda xp, x, a: xp.sqrt(x), lambda xp, x, y, d, a: d * 0.5 / y, {}),
    "rsqrt": (lambda xp, x, a: 1 / xp.sqrt(x), lambda xp, x, y, d, a: d * -0.5 * y * y * y, {}),
    "square": (lambda xp, x, a: x * x, lambda xp, x, y, d, a: d * 2 * x, {}),
    "abs": (lambda xp, x, a: xp.abs(x), lambda xp, x, y, d, a: d * xp.sign(x), {}),
    "reciprocal": (lambda xp, x, a: 1 / x, lambda xp, x, y, d, a: -d * y * y, {}),
    "sin": (lambda xp, x, a: xp.sin(x), lambda xp, x, y, d, a: d * xp.cos(x), {}),
    "cos": (lambda xp, x, a: xp.cos(x), lambda xp, x, y, d, a: -d * xp.sin(x), {}),
    "softplus": (lambda xp, x, a: xp.logaddexp(0, x), lambda xp, x, y, d, a: d * _sigmoid(xp, x), {}),
    "softsign": (lambda xp, x, a: x / (1 + xp.abs(x)), lambda xp, x, y, d, a: d / (1 + xp.abs(x)) ** 2, {}),
    "leaky_relu": (lambda xp, x, a: xp.where(x > 0, x, a["alpha"] * x),
                   lambda xp, x, y, d, a: xp.where(x > 0, d, a["alpha"] * d), {"alpha": 0.02}),
    "relu6": (lambda xp, x, a: xp.clip(x, 0, a["threshold"]),
              lambda xp, x, y, d, a: d * _between(x, 0, a["threshold"]), {"threshold": 6.0}),
    "brelu": (lambda xp, x, a: xp.clip(x, a["t_min"], a["t_max"]),
              lambda xp, x, y, d, a: d * _between(x, a["t_min"], a["t_max"]), {"t_min": 0.0, "t_max": 24.0}),
    "elu": (lambda xp, x, a: xp.where(x > 0, x, a["alpha"] * (xp.exp(xp.minimum(x, 0)) - 1)),
            lambda xp, x, y, d, a: xp.where(x > 0, d, d * (y + a["alpha"])), {"alpha": 1.0}),
    "hard_sigmoid": (lambda xp, x, a: xp.clip(a["slope"] * x + a["offset"], 0, 1),
                     lambda xp, x, y, d, a: d * a["slope"] * _between(y, 0, 1), {"slope": 0.2, "offset": 0.5}),
    "swish": (lambda xp, x, a: x * _sigmoid(xp, a["beta"] * x),
              lambda xp, x, y, d, a: d * _swish_grad(xp, x, a["beta"]), {"beta": 1.0}),
    "stanh": (lambda xp, x, a: a["scale_b"] * xp.tanh(a["scale_a"] * x),
              lambda xp, x, y, d, a: d * a["scale_a"] * a["scale_b"] * (1 - xp.tanh(a["scale_a"] * x) ** 2),
              {"scale_a": 0.67, "scale_b": 1.7159}),
    "selu": (lambda xp, x, a: a["scale"] * xp.where(x > 0, x, a["alpha"] * (xp.exp(xp.minimum(x, 0)) - 1)),
             lambda xp, x, y, d, a: d * xp.where(x > 0, a["scale"], y + a["scale"] * a["alpha"]),
             {"scale": 1.0507009873554804934193349852946, "alpha": 1.6732632423543772848170429916717}),
    "gelu": (lambda xp, x, a: _gelu(xp, x, a["approximate"]),
             lambda xp, x, y, d, a: d * _gelu_grad(xp, x, a["approximate"]), {"approximate": False}),
    "hard_swish": (lambda xp, x, a: x * xp.clip(x + a["offset"], 0, a["threshold"]) / a["scale"],
                   lambda xp, x, y, d, a: d * xp.where(x + a["offset"] >= a["threshold"], a["threshold"] / a["scale"],
                                                       xp.where(x + a["offset"] > 0, (2 * x + a["offset"]) / a["scale"],
                                                                0.0)),
                   {"threshold": 6.0, "scale": 6.0, "offset": 3.0}),
    "thresholded_relu": (lambda xp, x, a: xp.where(x > a["threshold"], x, 0.0),
                         lambda xp, x, y, d, a: d * (x > a["threshold"]), {"threshold": 1.0}),
    "soft_relu": (lambda xp, x, a: xp.logaddexp(0, xp.clip(x, -a["threshold"], a["threshold"])),
                  lambda xp, x, y, d, a: d * _sigmoid(xp, x) * _between(x, -a["threshold"], a["threshold"]),
                  {"threshold": 40.0}),
    "softshrink": (lambda xp, x, a: xp.where(x > a["lambda"], x - a["lambda"], xp.where(x < -a["lambda"],
                                                                                       x + a["lambda"], 0.0)),
                   lambda xp, x, y, d, a: d * (xp.abs(x) > a["lambda"]), {"lambda": 0.5}),
    "hard_shrink": (lambda xp, x, a: xp.where(xp.abs(x) > a["threshold"], x, 0.0),
                    lambda xp, x, y, d, a: d * (xp.abs(x) > a["threshold"]), {"threshold": 0.5}),
    "tanh_shrink": (lambda xp, x, a: x - xp.tanh(x), lambda xp, x, y, d, a: d * xp.tanh(x) ** 2, {}),
    "atan": (lambda xp, x, a: xp.arctan(x), lambda xp, x, y, d, a: d / (1 + x * x), {}),
    "asin": (lambda xp, x, a: xp.arcsin(x), lambda xp, x, y, d, a: d / xp.sqrt(1 - x * x), {}),
    "acos": (lambda xp, x, a: xp.arccos(x), lambda xp, x, y, d, a: -d / xp.sqrt(1 - x * x), {}),
    "ceil": (lambda xp, x, a: xp.ceil(x), lambda xp, x, y, d, a: d * 0, {}),
    "round": (lambda xp, x, a: xp.round(x), lambda xp, x, y, d, a: d * 0, {}),
}


def _erf(xp, x):
    """erf in vectorised calls (numpy has none), to the precision of x's dtype: float64 by _erf64; otherwise
    Numerical Recipes' erfc Chebyshev fit, fractional error under 1.2e-7 in a few calls."""
    if x.dtype == np.float64:
        return _erf64(xp, x)
    z = xp.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    c = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
         -0.82215223, 0.17087277)
    poly = c[-1]
    for k in c[-2::-1]:  # Horner over the ten coefficients, each step one multiply-add on the whole array
        poly = k + t * poly
    return xp.sign(x) * (1.0 - t * xp.exp(-z * z + poly))


def _erf64(xp, x):
    """erf to float64 precision: below |x| = 3 the all-positive series 2/sqrt(pi) exp(-x^2) sum (2x^2)^n x / (2n+1)!!
    (64 terms), above it 1 - erfc by erfc's continued fraction (60 levels, evaluated from the bottom up)."""
    z = xp.abs(x)
    small = z < 3.0
    zs, zl = xp.where(small, z, 0.0), xp.where(small, 3.0, z)
    term, total, two_z2 = zs.copy(), zs.copy(), 2.0 * zs * zs
    for n in range(1, 65):
        term = term * two_z2 / (2 * n + 1)
        total = total + term
    series = 1.1283791670955126 * xp.exp(-zs * zs) * total
    frac = zl.copy()
    for k in range(60, 0, -1):
        frac = zl + (0.5 * k) / frac
    tail = 1.0 - xp.exp(-zl * zl) / (1.7724538509055159 * frac)
    return xp.sign(x) * xp.where(small, series, tail)


_SQRT_2_OVER_PI = 0.7978845608028654


def _gelu(xp, x, approximate):
    if approximate:
        return 0.5 * x * (1 + xp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(xp, x * 0.7071067811865476))


def _gelu_grad(xp, x, approximate):
    if approximate:
        u = _SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)
        th = xp.tanh(u)
        return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
    return 0.5 * (1 + _erf(xp, x * 0.7071067811865476)) + x * xp.exp(-0.5 * x * x) * 0.3989422804014327


def _swish_grad(xp, x, beta):
    s = _sigmoid(xp, beta * x)
    return s + beta * x * s * (1 - s)


def _register_unary(name, forward, backward, attrs):
    """One table row as an op; large numpy tensors run in blocks on the intra-op threads (parallel.py)."""
    def kernel(a, x):
        xp = array_module(x)
        return elementwise(lambda xb: forward(xp, xb, a).astype(x.dtype, copy=False), x)

    def grad(a, ins, outs, douts, need):
        values = (ins[0], outs[0], douts[0])  # x is not kept for _GRAD_FROM_OUT (register_grad(reads=...))
        kept = [i for i, v in enumerate(values) if v is not None]
        xp, dtype = array_module(values[2]), values[2].dtype

        def blocks(*parts):  # the same pieces of whichever of x, out, dout are there
            args = [None] * 3
            for i, part in zip(kept, parts):
                args[i] = part
            return backward(xp, *args, a).astype(dtype, copy=False)
        return (elementwise(blocks, *(values[i] for i in kept)),)
    register_op(name, inputs=("X",), outputs=("Out",), attrs={**_COMMON, **attrs}, infer_shape=same_as(0),
                share_lod={"Out": "X"})(kernel)
    register_grad(name, reads=("Out",) if name in _GRAD_FROM_OUT else None)(grad)


_GRAD_FROM_OUT = {"relu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt", "reciprocal"}  # their gradients read Out only


for _name, (_fwd, _bwd, _attrs) in _UNARY.items():
    _register_unary(_name, _fwd, _bwd, _attrs)


# --- pow: x ** factor, the factor an attribute or the one value of FactorTensor (read at run time) -----------
def _pow_factor(attrs, factor_t):
    return attrs["factor"] if factor_t is None else float(factor_t.reshape(-1)[0])


@register_op("pow", inputs=("X", "FactorTensor"), outputs=("Out",), optional=("FactorTensor",),
             no_grad_inputs=("FactorTensor",), attrs={**_COMMON, "factor": 1.0}, infer_shape=same_as(0),
             share_lod={"Out": "X"})
def _pow_forward(attrs, x, factor_t=None):
    p = _pow_factor(attrs, factor_t)
    return elementwise(lambda xb: (xb ** p).astype(x.dtype, copy=False), x)


@register_grad("pow")
def _pow_backward(attrs, ins, outs, douts, need):
    x, p = ins[0], _pow_factor(attrs, ins[1])
    return elementwise(lambda xb, db: (db * p * xb ** (p - 1)).astype(x.dtype, copy=False), x, douts[0]), None


# --- relu: out = max(x, 0), dx = dout * (out > 0) -----------------------------------------------
# Written into the output a block at a time (parallel.into) against a zero array: numpy's maximum against
# the scalar 0 is not vectorised (ResNet-20's 8 MB activations: 1.5 -> 0.6 ms on two threads), and the
# multiply by a block's bool mask in cache beats d * sign(out) (sign is not vectorised either). A NaN
# output passes 0 back, as fluid's relu_grad (dout * (out > 0)) does.
def _relu_block(out, x):
    np.maximum(x, zeros_for(x), out=out)


def _relu_grad_block(dx, out, dout):
    np.multiply(dout, np.greater(out, zeros_for(out)), out=dx)


@register_op("relu", inputs=("X",), outputs=("Out",), attrs=dict(_COMMON), infer_shape=same_as(0),
             share_lod={"Out": "X"})
def _relu_forward(attrs, x):
    if array_module(x) is not np:
        return array_module(x).maximum(x, 0)
    return into(_relu_block, np.empty_like(x), x)


@register_grad("relu", reads=("Out",))
def _relu_backward(attrs, ins, outs, douts, need):
    out, dout = outs[0], douts[0]
    if array_module(dout) is not np:
        return (dout * (out > 0),)
    return (into(_relu_grad_block, np.empty_like(dout), out, dout),)


# --- softmax over one axis ----------------------------------------------------------------
@register_op("softmax", inputs=("X",), outputs=("Out",), infer_shape=same_as(0), share_lod={"Out": "X"},
             attrs={**_COMMON, "axis": -1, "data_format": "AnyLayout"})
def _softmax_forward(attrs, x):
    xp = array_module(x)
    e = xp.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return e / e.sum(axis=attrs["axis"], keepdims=True)


@register_grad("softmax")
def _softmax_backward(attrs, ins, outs, douts, need):
    out, dout = outs[0], douts[0]
    return (out * (dout - (dout * out).sum(axis=attrs["axis"], keepdims=True)),)


@register_op("log_softmax", inputs=("X",), outputs=("Out",), infer_shape=same_as(0), attrs={"axis": -1})
def _log_softmax_forward(attrs, x):
    shifted = x - x.max(axis=attrs["axis"], keepdims=True)
    return shifted - array_module(x).log(array_module(x).exp(shifted).sum(axis=attrs["axis"], keepdims=True))


@register_grad("log_softmax")
def _log_softmax_backward(attrs, ins, outs, douts, need):
    out, dout = outs[0], douts[0]
    return (dout - array_module(out).exp(out) * dout.sum(axis=attrs["axis"], keepdims=True),)


# --- prelu: a learned slope for x < 0, one for all, per channel or per element ------------------
def _prelu_alpha(attrs, x, alpha):
    if attrs["mode"] == "channel":
        return alpha.reshape((1, -1) + (1,) * (x.ndim - 2))
    return alpha.reshape((1,) + x.shape[1:]) if attrs["mode"] == "element" else alpha.reshape(())


@register_op("prelu", inputs=("X", "Alpha"), outputs=("Out",), attrs={"mode": "all"}, infer_shape=same_as(0))
def _prelu_forward(attrs, x, alpha):
    return array_module(x).where(x > 0, x, x * _prelu_alpha(attrs, x, alpha))


@register_grad("prelu")
def _prelu_backward(attrs, ins, outs, douts, need):
    (x, alpha), dout = ins, douts[0]
    xp = array_module(x)
    neg = x <= 0
    dx = xp.where(neg, dout * _prelu_alpha(attrs, x, alpha), dout) if need[0] else None
    dalpha = None
    if need[1]:
        g = dout * x * neg
        axes = {"all": None, "channel": (0,) + tuple(range(2, x.ndim)), "element": (0,)}[attrs["mode"]]
        dalpha = g.sum(axis=axes).reshape(alpha.shape).astype(alpha.dtype, copy=False)
    return dx, dalpha
