"""fluid 1.8's probability distributions (``fluid.layers.distributions``): Uniform, Normal, Categorical and
MultivariateNormalDiag, each a small builder of existing ops, so its samples, entropies, log-probabilities and
KL divergences are Variables of the program being built and differentiate like any other layer.

Parameters are floats, lists, numpy arrays (turned into float32 constants broadcast against each other) or
Variables (all of them Variables then; their leading dimension may be the unknown batch size). ``sample(shape)``
prepends ``shape`` to the parameters' batch shape; its ``seed`` works as in ``uniform_random``, and a seed of 0
takes the program's ``random_seed`` when that is set (as ``dropout`` does), so a seeded program draws the same
numbers run after run. Beyond fluid 1.8, Categorical also samples and gives log-probabilities, and
MultivariateNormalDiag (whose ``scale`` is the diagonal covariance matrix, as its entropy and KL divergence
read it) samples and gives log-densities.
"""
import math
import warnings

import numpy as np

from ..framework.program import default_main_program
from ..framework.variable import Variable
from .activation import check_variable_and_dtype, exp, log, sqrt
from .compare import less_than
from .creation import (check_type, diag, gaussian_random_batch_size_like, sampling_id,
                       uniform_random_batch_size_like)
from .loss import softmax_with_cross_entropy
from .manip import expand, fill_constant_batch_size_like, gaussian_random, uniform_random
from .math import elementwise_pow, matmul, reduce_max, reduce_prod, reduce_sum
from .nn import softmax
from .tensor import assign, cast, create_tensor, ones, reshape

__all__ = ["Categorical", "MultivariateNormalDiag", "Normal", "Uniform"]

_PARAM_TYPES = (float, list, np.ndarray, Variable)


class Distribution:
    """The base class: a distribution says how to sample it, its entropy, log-probability and KL divergence."""

    def sample(self):
        """Sampling from the distribution."""
        raise NotImplementedError

    def entropy(self):
        """The entropy of the distribution."""
        raise NotImplementedError

    def kl_divergence(self, other):
        """The KL-divergence between self distributions and other."""
        raise NotImplementedError

    def log_prob(self, value):
        """Log probability density/mass function."""
        raise NotImplementedError

    def _validate_args(self, *args):
        """True when the arguments are Variables, False when none is; a mix is fluid's ValueError."""
        kinds = {isinstance(a, Variable) for a in args}
        if len(kinds) > 1:
            raise ValueError("if one argument is Variable, all arguments should be Variable")
        return kinds == {True}

    def _to_variable(self, *args):
        """float32 constants holding ``args`` broadcast against each other."""
        arrays = []
        for arg in args:
            if not isinstance(arg, (float, list, np.ndarray)):
                raise AssertionError("type of input args must be float, list, numpy.ndarray or Variable.")
            value = np.asarray(arg)
            if isinstance(arg, np.ndarray) and value.dtype != np.float32:
                warnings.warn("data type of argument only support float32, your argument will be convert to float32.")
            arrays.append(np.atleast_1d(value).astype(np.float32))
        result = []
        for value in np.broadcast_arrays(*arrays):
            var = create_tensor(dtype="float32")
            assign(np.ascontiguousarray(value), var)
            result.append(var)
        return tuple(result)

    def _params(self, names, values, api):
        """Check the parameters' types and keep them as Variables (``self.batch_size_unknown`` when given so)."""
        for name, value in zip(names, values):
            check_type(value, name, self._types, api)
        self.all_arg_is_float = all(isinstance(v, float) for v in values)
        self.batch_size_unknown = self._validate_args(*values)
        return values if self.batch_size_unknown else self._to_variable(*values)


def _seed(seed):
    check_type(seed, "seed", (int,), "sample")
    return seed or default_main_program().random_seed


def _draw(kind, shape, params, seed):
    """Standard uniform or normal draws of ``shape + batch shape`` (the batch shape of ``params``' sum); a run-time
    batch size comes from the first parameter's leading dimension."""
    check_type(shape, "shape", (list,), "sample")
    seed = _seed(seed)
    batch_shape = list((params[0] + params[1]).shape)
    out_shape = list(shape) + batch_shape
    if batch_shape and batch_shape[0] < 0:
        like = uniform_random_batch_size_like if kind == "uniform" else gaussian_random_batch_size_like
        bounds = {"min": 0.0, "max": 1.0} if kind == "uniform" else {"mean": 0.0, "std": 1.0}
        return like(params[0], [1 if d < 0 else d for d in out_shape], output_dim_idx=len(shape), seed=seed,
                    **bounds)
    if kind == "uniform":
        return uniform_random(out_shape, min=0.0, max=1.0, seed=seed)
    return gaussian_random(out_shape, mean=0.0, std=1.0, seed=seed)


def _batch_zeros(a, b):
    """Zeros shaped like ``a + b`` (run-time batch size included)."""
    return fill_constant_batch_size_like(a + b, list((a + b).shape), a.dtype, 0.0)


class Uniform(Distribution):
    """The uniform distribution on [low, high): density ``1 / (high - low)`` inside, 0 outside."""
    _types = _PARAM_TYPES

    def __init__(self, low, high):
        self.low, self.high = self._params(("low", "high"), (low, high), "Uniform")

    def sample(self, shape, seed=0):
        """Samples of ``shape + batch shape`` (just ``shape`` when both bounds were floats), float32."""
        out = _draw("uniform", shape, (self.low, self.high), seed) * (self.high - self.low) + self.low
        return reshape(out, shape) if self.all_arg_is_float else out

    def log_prob(self, value):
        """``log(1 / (high - low))`` where low < value < high, -inf elsewhere."""
        check_variable_and_dtype(value, "value", ("float32", "float64"), "log_prob")
        inside = cast(less_than(self.low, value), value.dtype) * cast(less_than(value, self.high), value.dtype)
        return log(inside) - log(self.high - self.low)

    def entropy(self):
        """``log(high - low)`` nats."""
        return log(self.high - self.low)


class Normal(Distribution):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``."""
    _types = _PARAM_TYPES

    def __init__(self, loc, scale):
        self.loc, self.scale = self._params(("loc", "scale"), (loc, scale), "Normal")

    def sample(self, shape, seed=0):
        """Samples of ``shape + batch shape`` (just ``shape`` when both parameters were floats), float32."""
        out = _draw("normal", shape, (self.loc, self.scale), seed) * self.scale + self.loc
        return reshape(out, shape) if self.all_arg_is_float else out

    def entropy(self):
        """``0.5 + 0.5 log(2 pi) + log(scale)`` nats, shaped like ``loc + scale``."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + log(self.scale + _batch_zeros(self.loc, self.scale))

    def log_prob(self, value):
        """``-(value - loc)^2 / (2 scale^2) - log(scale) - log(sqrt(2 pi))``."""
        check_variable_and_dtype(value, "value", ("float32", "float64"), "log_prob")
        diff = value - self.loc
        return -1.0 * (diff * diff) / (2.0 * (self.scale * self.scale)) - log(self.scale) - \
            math.log(math.sqrt(2.0 * math.pi))

    def kl_divergence(self, other):
        """KL(self || other) of two normal distributions."""
        check_type(other, "other", (Normal,), "kl_divergence")
        ratio = self.scale / other.scale
        ratio = ratio * ratio
        t1 = (self.loc - other.loc) / other.scale
        return 0.5 * (ratio + t1 * t1 - 1.0 - log(ratio))


def _log_softmax_parts(logits):
    """(logits shifted by their row max, log of the shifted rows' sum of exps) along the last axis."""
    shifted = logits - reduce_max(logits, dim=-1, keep_dim=True)
    return shifted, log(reduce_sum(exp(shifted), dim=-1, keep_dim=True))


class Categorical(Distribution):
    """The categorical distribution over the last axis of ``logits`` (probabilities ``softmax(logits)``)."""
    _types = (list, np.ndarray, Variable)

    def __init__(self, logits):
        check_type(logits, "logits", self._types, "Categorical")
        self.logits = logits if self._validate_args(logits) else self._to_variable(logits)[0]

    def kl_divergence(self, other):
        """KL(self || other), summed over the categories (the last axis kept as 1)."""
        check_type(other, "other", (Categorical,), "kl_divergence")
        logits, log_z = _log_softmax_parts(self.logits)
        other_logits, other_log_z = _log_softmax_parts(other.logits)
        prob = exp(logits - log_z)
        return reduce_sum(prob * (logits - log_z - other_logits + other_log_z), dim=-1, keep_dim=True)

    def entropy(self):
        """``-sum(p log p)`` over the categories (the last axis kept as 1)."""
        logits, log_z = _log_softmax_parts(self.logits)
        log_p = logits - log_z
        return -1.0 * reduce_sum(exp(log_p) * log_p, dim=-1, keep_dim=True)

    def sample(self, shape, seed=0):
        """Category ids (int64) of ``shape + batch shape``, the batch shape being ``logits``' without its last
        axis (beyond fluid 1.8)."""
        check_type(shape, "shape", (list,), "sample")
        dims = list(self.logits.shape)
        if any(d < 0 for d in dims):
            raise ValueError(f"Categorical.sample needs logits of a known shape, got {dims}")
        n = int(np.prod(shape, dtype=np.int64))
        rows = reshape(softmax(self.logits), [-1, dims[-1]])  # [B, K]
        ids = sampling_id(expand(rows, [n, 1]), seed=_seed(seed))  # draw i of row b at i * B + b
        return reshape(ids, list(shape) + dims[:-1])

    def log_prob(self, value):
        """``log p[value]`` for int64 category ids ``value`` shaped like ``logits`` with a last axis of 1
        (beyond fluid 1.8)."""
        check_variable_and_dtype(value, "value", ("int64",), "log_prob")
        return -1.0 * softmax_with_cross_entropy(self.logits, value)


class MultivariateNormalDiag(Distribution):
    """The k-variate normal distribution with mean ``loc`` [k] and diagonal covariance matrix ``scale`` [k, k]."""
    _types = (list, np.ndarray, Variable)

    def __init__(self, loc, scale):
        for name, value in (("loc", loc), ("scale", scale)):
            check_type(value, name, self._types, "MultivariateNormalDiag")
        if self._validate_args(loc, scale):
            self.loc, self.scale = loc, scale
        else:  # each on its own: broadcasting the [k] mean against the [k, k] matrix would make it a matrix
            (self.loc,), (self.scale,) = self._to_variable(loc), self._to_variable(scale)

    def _eye_parts(self, value):
        """(ones, identity) shaped like the [k, k] matrix ``value``."""
        k = list(value.shape)[0]
        return ones(list(value.shape), self.loc.dtype), diag(np.ones(k, dtype=self.loc.dtype))

    def _det(self, value):
        """The determinant of the diagonal matrix ``value``: the product of its diagonal, [1]."""
        all_ones, eye = self._eye_parts(value)
        return reduce_prod(value + all_ones - eye)

    def _inv(self, value):
        """The inverse of the diagonal matrix ``value``: its diagonal entries to the power -1, zeros elsewhere."""
        all_ones, eye = self._eye_parts(value)
        return elementwise_pow(value, all_ones - 2.0 * eye)

    def entropy(self):
        """``0.5 (k (1 + log(2 pi)) + log det(scale))`` nats, [1]."""
        return 0.5 * (self.scale.shape[0] * (1.0 + math.log(2 * math.pi)) + log(self._det(self.scale)))

    def kl_divergence(self, other):
        """KL(self || other) of two diagonal multivariate normal distributions, [1]."""
        check_type(other, "other", (MultivariateNormalDiag,), "kl_divergence")
        other_inv = self._inv(other.scale)
        trace = reduce_sum(other_inv * self.scale)
        diff = other.loc - self.loc
        mahalanobis = matmul(matmul(diff, other_inv), diff)
        k = list(self.scale.shape)[0]
        log_ratio = log(self._det(other.scale)) - log(self._det(self.scale))
        return 0.5 * (trace + mahalanobis - k + log_ratio)

    def _std(self):
        """The standard deviations: the square root of ``scale``'s diagonal, [k]."""
        _, eye = self._eye_parts(self.scale)
        return sqrt(reduce_sum(self.scale * eye, dim=-1))

    def sample(self, shape, seed=0):
        """Samples of ``shape + [k]``, float32 (beyond fluid 1.8)."""
        k = list(self.loc.shape)[-1]
        check_type(shape, "shape", (list,), "sample")
        return gaussian_random(list(shape) + [k], seed=_seed(seed)) * self._std() + self.loc

    def log_prob(self, value):
        """The log-density at ``value`` [..., k], one per vector: [...] (beyond fluid 1.8)."""
        check_variable_and_dtype(value, "value", ("float32", "float64"), "log_prob")
        z = (value - self.loc) / self._std()
        k = list(self.loc.shape)[-1]
        return -0.5 * reduce_sum(z * z, dim=-1) - 0.5 * log(self._det(self.scale)) - 0.5 * k * math.log(2 * math.pi)
