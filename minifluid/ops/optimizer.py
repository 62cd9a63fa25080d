"""Optimizer update ops: sgd, momentum, adam, adagrad, rmsprop (no gradients).

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

from .registry import array_module, register_op

_scratch_local = threading.local()


def _scratch(like, slot=0):
    """A reusable buffer shaped like ``like`` (per thread and ``slot``; see NOTE [ In-place optimizer updates ])."""
    buffers = getattr(_scratch_local, "buffers", None)
    if buffers is None:
        buffers = _scratch_local.buffers = {}
    key = (type(like), like.shape, like.dtype.str, slot)
    buf = buffers.get(key)
    if buf is None:
        buf = buffers[key] = array_module(like).empty_like(like)
    return buf


def _scalar(a):
    return float(a.reshape(-1)[0])


# --- sgd ------------------------------------------------------------------------------------------
@register_op("sgd", inputs=("Param", "LearningRate", "Grad"), outputs=("ParamOut",), no_gradient=True)
def _sgd_forward(attrs, param, lr, grad):
    tmp = _scratch(param)
    array_module(param).multiply(grad, _scalar(lr), out=tmp)
    param -= tmp
    return param


# --- momentum -------------------------------------------------------------------------------------
@register_op("momentum", inputs=("Param", "Grad", "Velocity", "LearningRate"),
             outputs=("ParamOut", "VelocityOut"), attrs={"mu": 0.9, "use_nesterov": False}, no_gradient=True)
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


# --- adam (fluid 1.8's formula: epsilon added to sqrt(m2) unscaled; Paddle 2.x scales it by sqrt(1 - beta2^t))
@register_op("adam", inputs=("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"),
             outputs=("ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"),
             attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False,
                    "min_row_size_to_use_multithread": 1000}, no_gradient=True)
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
    xp.sqrt(m2, out=tmp)  # param -= lr_t * m1 / (sqrt(m2) + eps)
    tmp += eps
    xp.divide(m1, tmp, out=tmp)
    tmp *= lr_t
    param -= tmp
    beta1_pow *= b1
    beta2_pow *= b2
    return param, m1, m2, beta1_pow, beta2_pow


# --- adagrad --------------------------------------------------------------------------------------
@register_op("adagrad", inputs=("Param", "Grad", "Moment", "LearningRate"), outputs=("ParamOut", "MomentOut"),
             attrs={"epsilon": 1e-6}, no_gradient=True)
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
             attrs={"epsilon": 1e-10, "decay": 0.9, "momentum": 0.0, "centered": False}, no_gradient=True)
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
