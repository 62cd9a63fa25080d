"""Optimizer update ops: sgd, momentum, adam, adagrad, rmsprop (no gradients).

NOTE [ In-place optimizer updates ]
An update op's ``ParamOut`` (and ``Moment1Out``, ``VelocityOut`` ...) names the same variable as
its ``Param`` (``Moment1``, ``Velocity`` ...) input. The kernels write into those arrays with
in-place numpy operations (``out=``) and return the very same arrays, so a step never replaces a
parameter array and the Executor stores the object it already holds. The one temporary the
formulas need lives in a per-thread scratch buffer per (shape, dtype), so after the first step an
update allocates nothing. Each op declares those (output, input) pairs (``inplace`` in registry.py): when
a program names another variable as the output (fluid's op tests do), or feeds the input, the Executor
(executor.py ``_compile_op``) and the dygraph tracer give the kernel a copy of the input, so an array the
caller holds is never changed. The learning rate arrives as a shape-[1] array and is turned into a
Python float, which numpy applies as a weak scalar (float32 stays float32).
"""
import math
import threading

import numpy as np

from .registry import array_module, register_op
from .selected_rows import check_rows, is_selected_rows, merged, positions, to_dense

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


_RENAMED = {"SquaredAccumOut": "SquaredAccumulator", "LinearAccumOut": "LinearAccumulator"}  # ftrl's


def in_place_pairs(inputs, outputs):
    """{output slot: the input slot whose array the kernel updates for it}: ``XOut`` <- ``X``, ``out_x`` <- ``in_x``
    (registry.py's ``inplace``: the Executor copies such an input when the output is another variable)."""
    pairs = {}
    for out in outputs:
        source = _RENAMED.get(out) or (out[:-3] if out.endswith("Out") else "in_" + out[4:] if out[:4] == "out_" else None)
        if source in inputs:
            pairs[out] = source
    return pairs


def _update_op(name, inputs, outputs, attrs=None, optional=()):
    return register_op(name, inputs=inputs, outputs=outputs, attrs=attrs, optional=optional, no_gradient=True,
                       inplace=in_place_pairs(inputs, outputs))


def _dense_grad(grad, param, op_type):
    """A SelectedRows gradient as the dense one it stands for (the updates that touch every row)."""
    return to_dense(grad, param.shape[0], op_type) if is_selected_rows(grad) else grad


def _scalar(a):
    return float(a.reshape(-1)[0])


# --- sgd ------------------------------------------------------------------------------------------
@_update_op("sgd", ("Param", "LearningRate", "Grad"), ("ParamOut",))
def _sgd_forward(attrs, param, lr, grad):
    if is_selected_rows(grad) or is_selected_rows(param):
        return _sparse_sgd(param, _scalar(lr), grad)
    tmp = _scratch(param)
    array_module(param).multiply(grad, _scalar(lr), out=tmp)
    param -= tmp
    return param


def _sparse_sgd(param, lr, grad):
    """sgd on the gradient's rows only (NOTE [ Merging rows ] in selected_rows.py). A SelectedRows parameter
    is updated at the value rows holding the gradient's ids."""
    if not is_selected_rows(grad):
        raise TypeError("sgd: a SelectedRows Param takes a SelectedRows Grad")
    ids, value = merged(grad, "sgd")
    table = param.value if is_selected_rows(param) else param
    if is_selected_rows(param):
        ids = positions(param, ids, "sgd")
    else:
        check_rows(ids, table.shape[0], "sgd")
    table[ids] -= value * lr
    return param


# --- momentum -------------------------------------------------------------------------------------
@_update_op("momentum", ("Param", "Grad", "Velocity", "LearningRate"), ("ParamOut", "VelocityOut"),
            {"mu": 0.9, "use_nesterov": False})
def _momentum_forward(attrs, param, grad, velocity, lr):
    grad = _dense_grad(grad, param, "momentum")
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
# Beta1Tensor / Beta2Tensor: one-element tensors that replace the beta1 / beta2 attributes (betas that a
# program changes as it trains, AdamOptimizer(beta1=Variable)).
@_update_op("adam", ("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow", "Beta1Tensor",
                    "Beta2Tensor"), ("ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"),
            {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False, "min_row_size_to_use_multithread": 1000},
            optional=("Beta1Tensor", "Beta2Tensor"))
def _adam_forward(attrs, param, grad, lr, m1, m2, beta1_pow, beta2_pow, beta1_t, beta2_t):
    xp, tmp = array_module(param), _scratch(param)
    b1 = attrs["beta1"] if beta1_t is None else _beta_tensor("Beta1Tensor", beta1_t)
    b2 = attrs["beta2"] if beta2_t is None else _beta_tensor("Beta2Tensor", beta2_t)
    # the betas in the parameter's precision, as fluid's kernel holds them (1 - beta is then exact): a float32
    # moment update rounds as fluid's does
    b1, b2 = float(param.dtype.type(b1)), float(param.dtype.type(b2))
    eps = attrs["epsilon"]
    b1p, b2p = _scalar(beta1_pow), _scalar(beta2_pow)
    lr_t = _scalar(lr) * math.sqrt(1.0 - b2p) / (1.0 - b1p)
    if is_selected_rows(grad) and attrs["lazy_mode"]:  # only the gradient's rows move
        ids, g = merged(grad, "adam")
        m1[ids] = m1[ids] * b1 + g * (1.0 - b1)
        m2[ids] = m2[ids] * b2 + g * g * (1.0 - b2)
        param[ids] -= m1[ids] * lr_t / (np.sqrt(m2[ids]) + eps)
        beta1_pow *= b1
        beta2_pow *= b2
        return param, m1, m2, beta1_pow, beta2_pow
    grad = _dense_grad(grad, param, "adam")
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


def _beta_tensor(slot, t):
    if t.size != 1:
        raise ValueError(f"adam: Input({slot}) size must be 1, but get {t.size}")
    return float(t.reshape(-1)[0])


# --- adagrad --------------------------------------------------------------------------------------
@_update_op("adagrad", ("Param", "Grad", "Moment", "LearningRate"), ("ParamOut", "MomentOut"), {"epsilon": 1e-6})
def _adagrad_forward(attrs, param, grad, moment, lr):
    if is_selected_rows(grad):  # the gradient's rows only
        ids, g = merged(grad, "adagrad")
        moment[ids] += g * g
        param[ids] -= g * _scalar(lr) / (np.sqrt(moment[ids]) + attrs["epsilon"])
        return param, moment
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
@_update_op("rmsprop", ("Param", "MeanSquare", "Grad", "Moment", "LearningRate", "MeanGrad"),
            ("ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut"),
            {"epsilon": 1e-10, "decay": 0.9, "momentum": 0.0, "centered": False}, optional=("MeanGrad",))
def _rmsprop_forward(attrs, param, mean_square, grad, moment, lr, mean_grad):
    grad = _dense_grad(grad, param, "rmsprop")
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
