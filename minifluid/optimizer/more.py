"""fluid 1.8's other update rules: Adamax, Adadelta, DecayedAdagrad, Ftrl, Lamb, LarsMomentum, Dpsgd.

Each is an ``Optimizer`` of base.py (same minimize / apply_gradients / dygraph path) whose update op
lives in ops/optimizer_more.py. Accumulator names follow fluid's (``<param>_moment_0``,
``<param>_inf_norm_0`` ...), so checkpoints name the same variables.
"""
from ..framework.variable import Variable
from ..ops.registry import OpRole
from .base import AdagradOptimizer, AdamOptimizer, MomentumOptimizer, Optimizer

__all__ = ["Adadelta", "AdadeltaOptimizer", "Adamax", "AdamaxOptimizer", "DecayedAdagrad",
           "DecayedAdagradOptimizer", "Dpsgd", "DpsgdOptimizer", "Ftrl", "FtrlOptimizer", "Lamb", "LambOptimizer",
           "LarsMomentum", "LarsMomentumOptimizer"]


def _require(api, **values):
    for name, value in values.items():
        if value is None:
            raise ValueError(f"{api}: {name} is not set.")
        if not isinstance(value, (int, float, Variable)) or isinstance(value, bool):
            raise TypeError(f"{api}: {name} must be a float, got {type(value).__name__}")


class AdamaxOptimizer(Optimizer):
    """``m = b1 m + (1 - b1) g``; ``u = max(b2 u + eps, |g|)``; ``param -= lr / (1 - b1^t) * m / u``."""

    type = "adamax"
    _moment_acc_str, _inf_norm_acc_str, _beta1_pow_acc_str = "moment", "inf_norm", "beta1_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        _require("AdamaxOptimizer", beta1=beta1, beta2=beta2, epsilon=epsilon)
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._beta1, self._beta2, self._epsilon = float(beta1), float(beta2), float(epsilon)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("moment", p)
            self._add_accumulator("inf_norm", p)
            self._add_accumulator("beta1_pow_acc", p, fill_value=self._beta1, shape=[1])

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        moment, inf_norm, b1p = (self._get_accumulator(n, param) for n in ("moment", "inf_norm", "beta1_pow_acc"))
        op = self._optimize_op(block, param, grad, {"Moment": [moment], "InfNorm": [inf_norm], "Beta1Pow": [b1p]},
                               {"MomentOut": [moment], "InfNormOut": [inf_norm]},
                               {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon})
        block.append_op(type="scale", inputs={"X": [b1p]}, outputs={"Out": [b1p]},  # beta1^t for the next step
                        attrs={"scale": self._beta1, "op_role": OpRole.Optimize})
        return op


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler 2012): running means of g^2 and of the update; the learning rate is not used by
    the update op, as in fluid."""

    type = "adadelta"
    _avg_squared_grad_acc_str, _avg_squared_update_acc_str = "_avg_squared_grad", "_avg_squared_update"

    def __init__(self, learning_rate, epsilon=1.0e-6, rho=0.95, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        if learning_rate is None:
            raise ValueError("learning_rate is not set.")
        _require("AdadeltaOptimizer", epsilon=epsilon, rho=rho)
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._epsilon, self._rho = float(epsilon), float(rho)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("_avg_squared_grad", p)
            self._add_accumulator("_avg_squared_update", p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        sq_grad, sq_update = (self._get_accumulator(n, param) for n in ("_avg_squared_grad", "_avg_squared_update"))
        return self._optimize_op(block, param, grad, {"AvgSquaredGrad": [sq_grad], "AvgSquaredUpdate": [sq_update]},
                                 {"AvgSquaredGradOut": [sq_grad], "AvgSquaredUpdateOut": [sq_update]},
                                 {"epsilon": self._epsilon, "rho": self._rho}, learning_rate=False)


class DecayedAdagradOptimizer(AdagradOptimizer):
    """``m = decay m + (1 - decay) g^2``; ``param -= lr g / (sqrt(m) + epsilon)`` (Adagrad's accumulator and op
    slots, another update rule)."""

    type = "decayed_adagrad"

    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        _require("DecayedAdagradOptimizer", decay=decay, epsilon=epsilon)
        super().__init__(learning_rate, epsilon, parameter_list, regularization, grad_clip, name)
        self._decay = float(decay)

    def _op_attrs(self):
        return {"epsilon": self._epsilon, "decay": self._decay}


class FtrlOptimizer(Optimizer):
    """FTRL-proximal with L1 / L2 strengths and ``lr_power``. (fluid 1.8 passes ``l1`` as the op's ``l2``;
    here ``l2`` is the one given.)"""

    type = "ftrl"
    _squared_acc_str, _linear_acc_str = "squared", "linear"

    def __init__(self, learning_rate, l1=0.0, l2=0.0, lr_power=-0.5, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        if learning_rate is None:
            raise ValueError("learning_rate is not set.")
        _require("FtrlOptimizer", l1=l1, l2=l2, lr_power=lr_power)
        super().__init__(learning_rate, parameter_list, regularization, grad_clip, name)
        self._l1, self._l2, self._lr_power = float(l1), float(l2), float(lr_power)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator("squared", p)
            self._add_accumulator("linear", p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        squared, linear = self._get_accumulator("squared", param), self._get_accumulator("linear", param)
        return self._optimize_op(block, param, grad,
                                 {"SquaredAccumulator": [squared], "LinearAccumulator": [linear]},
                                 {"SquaredAccumOut": [squared], "LinearAccumOut": [linear]},
                                 {"l1": self._l1, "l2": self._l2, "lr_power": self._lr_power})


class LambOptimizer(AdamOptimizer):
    """LAMB (You et al. 2019): Adam's moments, ``r = m / (sqrt(v) + eps) + wd * param``, and
    ``param -= lr * (|param| / |r|) * r`` per parameter; ``exclude_from_weight_decay_fn(param)`` True gives
    that parameter wd = 0. Like fluid's kernel, the moments are not bias-corrected."""

    type = "lamb"

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 parameter_list=None, regularization=None, grad_clip=None, exclude_from_weight_decay_fn=None,
                 name=None):
        _require("LambOptimizer", lamb_weight_decay=lamb_weight_decay, beta1=beta1, beta2=beta2, epsilon=epsilon)
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list, regularization, grad_clip, name)
        self._weight_decay = float(lamb_weight_decay)
        self._exclude_from_weight_decay_fn = exclude_from_weight_decay_fn

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        m1, m2, b1p, b2p = (self._get_accumulator(n, param)
                            for n in ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"))
        exclude = self._exclude_from_weight_decay_fn
        decay = 0.0 if exclude is not None and exclude(param) else self._weight_decay
        return self._optimize_op(
            block, param, grad, {"Moment1": [m1], "Moment2": [m2], "Beta1Pow": [b1p], "Beta2Pow": [b2p]},
            {"Moment1Out": [m1], "Moment2Out": [m2]},
            {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon, "weight_decay": decay})


class LarsMomentumOptimizer(MomentumOptimizer):
    """Momentum with LARS's layer-wise rate ``lr * lars_coeff * |p| / (|g| + lars_weight_decay * |p|)``:
    ``v = mu v + local_lr (g + lars_weight_decay p)``; ``param -= v`` (Momentum's accumulator and op slots)."""

    type = "lars_momentum"

    def __init__(self, learning_rate, momentum, lars_coeff=0.001, lars_weight_decay=0.0005, parameter_list=None,
                 regularization=None, grad_clip=None, name=None):
        _require("LarsMomentumOptimizer", momentum=momentum)
        super().__init__(learning_rate, momentum, parameter_list, False, regularization, grad_clip, name)
        self._lars_coeff, self._lars_weight_decay = float(lars_coeff), float(lars_weight_decay)

    def _op_attrs(self):
        return {"mu": self._momentum, "lars_coeff": self._lars_coeff, "lars_weight_decay": self._lars_weight_decay}


class DpsgdOptimizer(Optimizer):
    """Differentially private SGD (Abadi et al. 2016): each gradient clipped to L2 norm ``clip``, plus
    Gaussian noise of scale ``sigma / batch_size``."""

    type = "dpsgd"

    def __init__(self, learning_rate=0.001, clip=0.9, batch_size=0.999, sigma=1e-8, parameter_list=None):
        _require("DpsgdOptimizer", clip=clip, batch_size=batch_size, sigma=sigma)
        super().__init__(learning_rate, parameter_list)
        self._clip, self._batch_size, self._sigma = float(clip), float(batch_size), float(sigma)
        self._seed = 0  # 0: a new draw each step; set for a fixed draw (debugging, as in fluid)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        return self._optimize_op(block, param, grad, {}, {},
                                 {"clip": self._clip, "batch_size": self._batch_size, "sigma": self._sigma,
                                  "seed": int(self._seed)})


Adamax = AdamaxOptimizer
Adadelta = AdadeltaOptimizer
DecayedAdagrad = DecayedAdagradOptimizer
Ftrl = FtrlOptimizer
Lamb = LambOptimizer
LarsMomentum = LarsMomentumOptimizer
Dpsgd = DpsgdOptimizer
