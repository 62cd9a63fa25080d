"""Optimizer update ops (sgd, momentum, adam, adagrad, rmsprop) and the small ops that parameter
setup, regularization, gradient clipping and backward append (assign_value, sign, clip,
clip_by_norm, squared_l2_norm, fill_zeros_like, fill_any_like), and learning-rate schedules use
(increment, floor).

NOTE [ In-place optimizer updates ]
An update op's ``ParamOut`` (and ``Moment1Out``, ``VelocityOut`` ...) names the same variable as
its ``Param`` (``Moment1``, ``Velocity`` ...) input. The kernels write into those arrays with
in-place numpy operations (``out=``) and return the very same arrays, so a step never replaces a
parameter array and the Executor stores the object it already holds. The one temporary the
formulas need lives in a per-thread scratch buffer per (shape, dtype), so after the first step an
update allocates nothing. The learning rate arrives as a shape-[1] array and is turned into a
Python float, which numpy applies as a weak scalar (float32 stays float32).
"""
import math
import threading

import numpy as np

from ..framework.dtypes import to_numpy_dtype
from .registry import array_module, register_grad, register_op, same_as

_scratch_local = threading.local()


def _scratch(like):
    """A reusable buffer shaped like ``like`` (per thread; see NOTE [ In-place optimizer updates ])."""
    buffers = getattr(_scratch_local, "buffers", None)
    if buffers is None:
        buffers = _scratch_local.buffers = {}
    key = (type(like), like.shape, like.dtype.str)
    buf = buffers.get(key)
    if buf is None:
        buf = buffers[key] = array_module(like).empty_like(like)
    return buf


def _scalar(a):
    return float(a.reshape(-1)[0])


# --- sgd ------------------------------------------------------------------------------------------
@register_op("sgd", inputs=("Param", "LearningRate", "Grad"), outputs=("ParamOut",), stateful=True)
def _sgd_forward(attrs, param, lr, grad):
    tmp = _scratch(param)
    array_module(param).multiply(grad, _scalar(lr), out=tmp)
    param -= tmp
    return param


# --- momentum -------------------------------------------------------------------------------------
@register_op("momentum", inputs=("Param", "Grad", "Velocity", "LearningRate"),
             outputs=("ParamOut", "VelocityOut"), attrs={"mu": 0.9, "use_nesterov": False}, stateful=True)
def _momentum_forward(attrs, param, grad, velocity, lr):
    xp, tmp = array_module(param), _scratch(param)
    mu, lr = attrs["mu"], _scalar(lr)
    velocity *= mu
    velocity += grad
    if attrs["use_nesterov"]:  # param -= (grad + mu * velocity) * lr
        xp.multiply(velocity, mu, out=tmp)
        tmp += grad
        tmp *= lr
    else:  # param -= lr * velocity
        xp.multiply(velocity, lr, out=tmp)
    param -= tmp
    return param, velocity


# --- adam (fluid's formula: epsilon scaled by sqrt(1 - beta2^t)) -----------------------------------
@register_op("adam", inputs=("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"),
             outputs=("ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"),
             attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False,
                    "min_row_size_to_use_multithread": 1000}, stateful=True)
def _adam_forward(attrs, param, grad, lr, m1, m2, beta1_pow, beta2_pow):
    xp, tmp = array_module(param), _scratch(param)
    b1, b2, eps = attrs["beta1"], attrs["beta2"], attrs["epsilon"]
    b1p, b2p = _scalar(beta1_pow), _scalar(beta2_pow)
    lr_t = _scalar(lr) * math.sqrt(1.0 - b2p) / (1.0 - b1p)
    xp.multiply(grad, 1.0 - b1, out=tmp)  # m1 = b1 * m1 + (1 - b1) * g
    m1 *= b1
    m1 += tmp
    xp.square(grad, out=tmp)  # m2 = b2 * m2 + (1 - b2) * g^2
    tmp *= 1.0 - b2
    m2 *= b2
    m2 += tmp
    xp.sqrt(m2, out=tmp)  # param -= lr_t * m1 / (sqrt(m2) + eps * sqrt(1 - b2^t))
    tmp += eps * math.sqrt(1.0 - b2p)
    xp.divide(m1, tmp, out=tmp)
    tmp *= lr_t
    param -= tmp
    beta1_pow *= b1
    beta2_pow *= b2
    return param, m1, m2, beta1_pow, beta2_pow


# --- adagrad --------------------------------------------------------------------------------------
@register_op("adagrad", inputs=("Param", "Grad", "Moment", "LearningRate"), outputs=("ParamOut", "MomentOut"),
             attrs={"epsilon": 1e-6}, stateful=True)
def _adagrad_forward(attrs, param, grad, moment, lr):
    xp, tmp = array_module(param), _scratch(param)
    xp.square(grad, out=tmp)  # moment += g^2
    moment += tmp
    xp.sqrt(moment, out=tmp)  # param -= lr * g / (sqrt(moment) + epsilon)
    tmp += attrs["epsilon"]
    xp.divide(grad, tmp, out=tmp)
    tmp *= _scalar(lr)
    param -= tmp
    return param, moment


# --- rmsprop --------------------------------------------------------------------------------------
@register_op("rmsprop", inputs=("Param", "MeanSquare", "Grad", "Moment", "LearningRate", "MeanGrad"),
             outputs=("ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut"), optional=("MeanGrad",),
             attrs={"epsilon": 1e-10, "decay": 0.9, "momentum": 0.0, "centered": False}, stateful=True)
def _rmsprop_forward(attrs, param, mean_square, grad, moment, lr, mean_grad):
    xp, tmp = array_module(param), _scratch(param)
    rho, eps = attrs["decay"], attrs["epsilon"]
    xp.square(grad, out=tmp)  # ms = rho * ms + (1 - rho) * g^2
    tmp *= 1.0 - rho
    mean_square *= rho
    mean_square += tmp
    if attrs["centered"]:  # mg = rho * mg + (1 - rho) * g; denominator sqrt(ms - mg^2 + eps)
        xp.multiply(grad, 1.0 - rho, out=tmp)
        mean_grad *= rho
        mean_grad += tmp
        xp.square(mean_grad, out=tmp)
        xp.subtract(mean_square, tmp, out=tmp)
    else:  # denominator sqrt(ms + eps)
        tmp[...] = mean_square
    tmp += eps
    xp.sqrt(tmp, out=tmp)
    xp.divide(grad, tmp, out=tmp)  # moment = momentum * moment + lr * g / denominator; param -= moment
    tmp *= _scalar(lr)
    moment *= attrs["momentum"]
    moment += tmp
    param -= moment
    return param, moment, mean_square, mean_grad


# --- assign_value: a constant array stored in the op's attributes ----------------------------------
_VALUE_ATTRS = ("fp32_values", "int32_values", "int64_values", "bool_values")


@register_op("assign_value", inputs=(), outputs=("Out",),
             attrs={"shape": [1], "dtype": "float32", **{k: [] for k in _VALUE_ATTRS}},
             infer_shape=lambda attrs: (tuple(attrs["shape"]), attrs["dtype"]))
def _assign_value_forward(attrs):
    values = next((attrs[k] for k in _VALUE_ATTRS if attrs[k]), [])
    return np.array(values, dtype=to_numpy_dtype(attrs["dtype"])).reshape(attrs["shape"])


# --- ops used by regularizers and gradient clipping ------------------------------------------------
@register_op("sign", inputs=("X",), outputs=("Out",), infer_shape=same_as(0))
def _sign_forward(attrs, x):
    return array_module(x).sign(x)


@register_op("clip", inputs=("X",), outputs=("Out",), attrs={"min": -1.0, "max": 1.0}, infer_shape=same_as(0))
def _clip_forward(attrs, x):
    return array_module(x).clip(x, attrs["min"], attrs["max"])


@register_grad("clip")
def _clip_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    return (douts[0] * ((x > attrs["min"]) & (x < attrs["max"])),)


@register_op("clip_by_norm", inputs=("X",), outputs=("Out",), attrs={"max_norm": 1.0}, infer_shape=same_as(0))
def _clip_by_norm_forward(attrs, x):
    norm = math.sqrt(float((x * x).sum()))
    max_norm = attrs["max_norm"]
    return x * (max_norm / norm) if norm > max_norm else x.copy()


@register_op("squared_l2_norm", inputs=("X",), outputs=("Out",),
             infer_shape=lambda attrs, x: ((1,), x.dtype))
def _squared_l2_norm_forward(attrs, x):
    flat = x.reshape(-1)
    return flat.dot(flat).reshape(1)


@register_grad("squared_l2_norm")
def _squared_l2_norm_backward(attrs, ins, outs, douts, need):
    return (ins[0] * (2.0 * _scalar(douts[0])),)


# --- fill_zeros_like / fill_any_like: gradients backward creates at run time ----------------------
@register_op("fill_zeros_like", inputs=("X",), outputs=("Out",), infer_shape=same_as(0))
def _fill_zeros_like_forward(attrs, x):
    return array_module(x).zeros_like(x)


@register_op("fill_any_like", inputs=("X",), outputs=("Out",), attrs={"value": 0.0, "dtype": -1},
             infer_shape=lambda attrs, x: (x.shape, x.dtype if attrs["dtype"] == -1 else attrs["dtype"]))
def _fill_any_like_forward(attrs, x):
    dtype = x.dtype if attrs["dtype"] == -1 else to_numpy_dtype(attrs["dtype"])
    return array_module(x).full(x.shape, attrs["value"], dtype=dtype)


# --- ops of learning-rate schedules (layers/learning_rate_scheduler.py) ----------------------------
@register_op("increment", inputs=("X",), outputs=("Out",), attrs={"step": 1.0}, infer_shape=same_as(0))
def _increment_forward(attrs, x):
    """``X + step`` (the step counter: X and Out are the same variable, so it counts across runs)."""
    return x + np.asarray(attrs["step"]).astype(x.dtype)


@register_op("floor", inputs=("X",), outputs=("Out",), infer_shape=same_as(0))
def _floor_forward(attrs, x):
    return array_module(x).floor(x)
