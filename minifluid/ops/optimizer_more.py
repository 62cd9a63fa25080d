"""More optimizer update ops: adamax, adadelta, decayed_adagrad, ftrl, lamb, lars_momentum, dpsgd, and
``average_accumulates`` (ModelAverage's running sums). In place like the ops of optimizer.py (NOTE [ In-place
optimizer updates ] there); none has a gradient.
"""
import numpy as np

from .optimizer import _dense_grad, _scalar, _scratch, _update_op
from .registry import array_module
from .tensor import _rng


# --- adamax: m = b1 m + (1 - b1) g; u = max(b2 u + eps, |g|); p -= lr / (1 - b1^t) * m / u -----------
@_update_op("adamax", ("Param", "Grad", "LearningRate", "Moment", "InfNorm", "Beta1Pow"),
            ("ParamOut", "MomentOut", "InfNormOut"), {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8})
def _adamax_forward(attrs, param, grad, lr, moment, inf_norm, beta1_pow):
    xp, tmp = array_module(param), _scratch(param)
    b1 = attrs["beta1"]
    xp.multiply(grad, 1.0 - b1, out=tmp)
    moment *= b1
    moment += tmp
    inf_norm *= attrs["beta2"]
    inf_norm += attrs["epsilon"]
    xp.maximum(inf_norm, xp.abs(grad, out=tmp), out=inf_norm)
    xp.divide(moment, inf_norm, out=tmp)
    with np.errstate(divide="ignore"):  # Beta1Pow 1 (no step yet): an infinite rate, as fluid's float math gives
        rate = float(np.float64(_scalar(lr)) / np.float64(1.0 - _scalar(beta1_pow)))
    tmp *= rate  # a Python float: applied in float32
    param -= tmp
    return param, moment, inf_norm


# --- adadelta: E[g^2] and E[dx^2] running means; dx = -sqrt((E[dx^2] + eps) / (E[g^2] + eps)) g ------
@_update_op("adadelta", ("Param", "Grad", "AvgSquaredGrad", "AvgSquaredUpdate"),
            ("ParamOut", "AvgSquaredGradOut", "AvgSquaredUpdateOut"), {"rho": 0.95, "epsilon": 1e-6})
def _adadelta_forward(attrs, param, grad, avg_sq_grad, avg_sq_update):
    xp, tmp = array_module(param), _scratch(param)
    rho, eps = attrs["rho"], attrs["epsilon"]
    xp.square(grad, out=tmp)
    tmp *= 1.0 - rho
    avg_sq_grad *= rho
    avg_sq_grad += tmp
    denominator = xp.add(avg_sq_grad, eps, out=_scratch(param, 1))
    xp.add(avg_sq_update, eps, out=tmp)  # tmp = the update dx
    tmp /= denominator
    xp.sqrt(tmp, out=tmp)
    tmp *= grad
    xp.negative(tmp, out=tmp)
    param += tmp
    avg_sq_update *= rho
    xp.square(tmp, out=tmp)
    tmp *= 1.0 - rho
    avg_sq_update += tmp
    return param, avg_sq_grad, avg_sq_update


# --- decayed_adagrad: m = decay m + (1 - decay) g^2; p -= lr g / (sqrt(m) + eps) ------------------------
@_update_op("decayed_adagrad", ("Param", "Grad", "Moment", "LearningRate"), ("ParamOut", "MomentOut"),
            {"decay": 0.95, "epsilon": 1e-6})
def _decayed_adagrad_forward(attrs, param, grad, moment, lr):
    xp, tmp = array_module(param), _scratch(param)
    decay = attrs["decay"]
    xp.square(grad, out=tmp)
    tmp *= 1.0 - decay
    moment *= decay
    moment += tmp
    xp.sqrt(moment, out=tmp)
    tmp += attrs["epsilon"]
    xp.divide(grad, tmp, out=tmp)
    tmp *= _scalar(lr)
    param -= tmp
    return param, moment


# --- ftrl (McMahan et al.'s FTRL-proximal, per coordinate) ---------------------------------------------------
@_update_op("ftrl", ("Param", "SquaredAccumulator", "LinearAccumulator", "Grad", "LearningRate"),
            ("ParamOut", "SquaredAccumOut", "LinearAccumOut"), {"l1": 0.0, "l2": 0.0, "lr_power": -0.5})
def _ftrl_forward(attrs, param, squared, linear, grad, lr):
    xp, lr = array_module(param), _scalar(lr)
    l1, l2, power = attrs["l1"], attrs["l2"], attrs["lr_power"]
    new_sq = squared + grad * grad

    def scaled(acc):  # acc^(-lr_power): sqrt for the default -0.5
        return xp.sqrt(acc) if power == -0.5 else xp.power(acc, -power)
    new_scaled = scaled(new_sq)
    linear += grad - (new_scaled - scaled(squared)) / lr * param
    shrunk = (l1 * xp.sign(linear) - linear) / (new_scaled / lr + 2.0 * l2)
    param[...] = xp.where(xp.abs(linear) > l1, shrunk, 0.0)
    squared[...] = new_sq
    return param, squared, linear


# --- lamb: Adam's moments (no bias correction, as fluid's kernel) with a layer-wise trust ratio ----------
@_update_op("lamb", ("Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"),
            ("ParamOut", "Moment1Out", "Moment2Out"),
            {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6, "weight_decay": 0.01})
def _lamb_forward(attrs, param, grad, lr, m1, m2, beta1_pow, beta2_pow):
    grad = _dense_grad(grad, param, "lamb")
    xp, tmp = array_module(param), _scratch(param)
    b1, b2 = attrs["beta1"], attrs["beta2"]
    m1 *= b1
    m1 += (1.0 - b1) * grad
    m2 *= b2
    m2 += (1.0 - b2) * xp.square(grad)
    xp.sqrt(m2, out=tmp)  # r = m1 / (sqrt(m2) + eps) + weight_decay * param
    tmp += attrs["epsilon"]
    xp.divide(m1, tmp, out=tmp)
    tmp += attrs["weight_decay"] * param
    p_norm, r_norm = float(xp.linalg.norm(param)), float(xp.linalg.norm(tmp))
    trust = p_norm / r_norm if p_norm > 0 and r_norm > 0 else 1.0
    tmp *= _scalar(lr) * trust
    param -= tmp
    return param, m1, m2


# --- lars_momentum: momentum with a layer-wise learning rate lr * coeff * |p| / (|g| + wd |p|) -----------
@_update_op("lars_momentum", ("Param", "Grad", "Velocity", "LearningRate"), ("ParamOut", "VelocityOut"),
            {"mu": 0.9, "lars_coeff": 0.001, "lars_weight_decay": 0.0005})
def _lars_momentum_forward(attrs, param, grad, velocity, lr):
    xp, tmp = array_module(param), _scratch(param)
    wd, lr = attrs["lars_weight_decay"], _scalar(lr)
    p_norm, g_norm = float(xp.linalg.norm(param)), float(xp.linalg.norm(grad))
    if p_norm > 0 and g_norm > 0:
        lr = lr * attrs["lars_coeff"] * p_norm / (g_norm + wd * p_norm)
    xp.multiply(param, wd, out=tmp)  # v = mu v + local_lr (g + wd p); p -= v
    tmp += grad
    tmp *= lr
    velocity *= attrs["mu"]
    velocity += tmp
    param -= velocity
    return param, velocity


# --- dpsgd: the gradient clipped to norm ``clip`` plus one Gaussian draw of scale sigma / batch_size -------
@_update_op("dpsgd", ("Param", "Grad", "LearningRate"), ("ParamOut",),
            {"clip": 10.0, "batch_size": 16.0, "sigma": 1.0, "seed": 0})
def _dpsgd_forward(attrs, param, grad, lr):
    """fluid draws one noise value per parameter and step (a seeded op draws the same one every step)."""
    xp = array_module(param)
    norm = float(xp.linalg.norm(grad))
    scale = norm / attrs["clip"] if norm > attrs["clip"] else 1.0
    noise = float(_rng(attrs).normal(0.0, 1.0)) * attrs["sigma"]
    param -= _scalar(lr) * (grad / scale + noise / attrs["batch_size"])
    return param


# --- average_accumulates (ModelAverage) ---------------------------------------------------------------------
_MAX_NUM_ACCUMULATES = 16384  # sum_1 moves into sum_2 this often: fewer float32 additions per running sum


@_update_op("average_accumulates",
            ("param", "in_sum_1", "in_sum_2", "in_sum_3", "in_num_accumulates", "in_old_num_accumulates",
             "in_num_updates"),
            ("out_sum_1", "out_sum_2", "out_sum_3", "out_num_accumulates", "out_old_num_accumulates",
             "out_num_updates"),
            {"average_window": 0.0, "min_average_window": 10000, "max_average_window": 10000})
def _average_accumulates_forward(attrs, param, sum_1, sum_2, sum_3, num_acc, old_num_acc, num_updates):
    """sum_1 collects the parameter after each step; when the window (at least ``min_average_window`` steps,
    at least min(max_average_window, num_updates * average_window)) is full, sum_1 + sum_2 become sum_3
    (the previous window) and the counting restarts. The average is (sum_1 + sum_2 + sum_3) /
    (num_accumulates + old_num_accumulates)."""
    lo, hi = attrs["min_average_window"], attrs["max_average_window"]
    if lo > hi:
        raise ValueError(f"average_accumulates: min_average_window ({lo}) shouldn't be larger than "
                         f"max_average_window ({hi})")
    updates, accumulates = int(num_updates.reshape(-1)[0]) + 1, int(num_acc.reshape(-1)[0]) + 1
    sum_1 += param
    if updates % _MAX_NUM_ACCUMULATES == 0:
        sum_2 += sum_1
        sum_1.fill(0)
    if accumulates >= lo and accumulates >= min(hi, updates * attrs["average_window"]):
        array_module(param).add(sum_1, sum_2, out=sum_3)
        sum_1.fill(0)
        sum_2.fill(0)
        old_num_acc.fill(accumulates)
        accumulates = 0
    num_updates.fill(updates)
    num_acc.fill(accumulates)
    return sum_1, sum_2, sum_3, num_acc, old_num_acc, num_updates

