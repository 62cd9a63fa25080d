"""Initializers: each puts the op that fills a parameter into the **startup** program.

``init(var, block)`` creates ``var`` in ``block`` (by default the startup program's global block)
when it is not there yet and *prepends* one op writing it, as fluid does (the op made last runs
first): fill_constant, uniform_random, gaussian_random, truncated_gaussian_random or assign_value.
A float16 variable is filled as fluid fills it: the op writes a float32 temporary and a ``cast``
appended to the block writes the variable. A seed of 0 means "use the
program's ``random_seed``", as in fluid; when that is 0 too the op draws from numpy's global
random state, so ``np.random.seed`` makes a run reproducible.
"""
import math

import numpy as np

from .dtypes import convert_dtype
from .framework import unique_name
from .framework.program import default_startup_program
from .framework.variable import VarType

__all__ = ["Bilinear", "BilinearInitializer", "Constant", "ConstantInitializer", "Initializer", "MSRA",
           "MSRAInitializer", "Normal", "NormalInitializer", "NumpyArrayInitializer", "TruncatedNormal", "TruncatedNormalInitializer",
           "Uniform", "UniformInitializer", "Xavier", "XavierInitializer"]


def _compute_fans(shape):
    """fluid's rule: [in, out] for matrices; [out_c, in_c, *kernel] for conv filters."""
    shape = list(shape)
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """Base class: subclasses say which op (type, attrs) writes the variable."""

    _tmp_prefix = "init"  # fluid's name for the float32 temporary of a float16 variable: <prefix>.<var>.tmp_<n>

    def _op(self, var, block):
        raise NotImplementedError

    def __call__(self, var, block=None):
        """Prepend the init op for ``var`` to ``block`` (default: the startup program's global block)."""
        block = block if block is not None else default_startup_program().global_block()
        if not block.has_var(var.name):
            block.create_var(name=var.name, shape=var.shape, dtype=var.dtype, persistable=True)
        op_type, attrs = self._op(var, block)
        half = convert_dtype(var.dtype) == "float16"
        out = var
        if half:
            out = block.create_var(name=unique_name.generate(f"{self._tmp_prefix}.{var.name}.tmp"), shape=var.shape,
                                   dtype="float32", persistable=False)
        attrs.update(shape=list(var.shape), dtype=out.dtype)
        op = block._prepend_op(type=op_type, outputs={"Out": [out.name]}, attrs=attrs)
        if half:
            block.append_op(type="cast", inputs={"X": [out.name]}, outputs={"Out": [var.name]},
                            attrs={"in_dtype": VarType.FP32, "out_dtype": VarType.FP16})
        return op

    @staticmethod
    def _seed(seed, block):
        return seed if seed else block.program.random_seed

    def __repr__(self):
        fields = ", ".join(f"{k.lstrip('_')}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Constant(Initializer):
    """Fill with ``value``."""

    _tmp_prefix = "constant_init"

    def __init__(self, value=0.0, force_cpu=False):
        self._value = float(value)
        self._force_cpu = force_cpu

    def _op(self, var, block):
        return "fill_constant", {"value": self._value, "force_cpu": self._force_cpu}


class Uniform(Initializer):
    """Uniform in [low, high); with ``diag_num`` > 0 the flat positions ``i * (diag_step + 1)`` for
    ``i < diag_num`` hold ``diag_val`` instead."""

    _tmp_prefix = "uniform_random"

    def __init__(self, low=-1.0, high=1.0, seed=0, diag_num=0, diag_step=0, diag_val=1.0):
        if not high >= low:
            raise ValueError(f"Uniform initializer: high ({high}) must be at least low ({low})")
        if (diag_num > 0 or diag_step > 0) and not (diag_num > 0 and diag_step > 0):
            raise ValueError(f"Uniform initializer: diag_num ({diag_num}) and diag_step ({diag_step}) must both be "
                             "positive when either is")
        self._low, self._high, self._seed_value = float(low), float(high), seed
        self._diag = {"diag_num": int(diag_num), "diag_step": int(diag_step), "diag_val": float(diag_val)}

    def _op(self, var, block):
        return "uniform_random", {"min": self._low, "max": self._high, "seed": self._seed(self._seed_value, block),
                                  **self._diag}


class Normal(Initializer):
    """Gaussian with mean ``loc`` and standard deviation ``scale``."""

    _tmp_prefix = "gaussian_random"

    def __init__(self, loc=0.0, scale=1.0, seed=0):
        self._mean, self._std, self._seed_value = float(loc), float(scale), seed

    def _op(self, var, block):
        return "gaussian_random", {"mean": self._mean, "std": self._std, "seed": self._seed(self._seed_value, block)}


class TruncatedNormal(Normal):
    """Gaussian with resampled tails beyond two standard deviations."""

    _tmp_prefix = "truncated_gaussian_random"

    def _op(self, var, block):
        return "truncated_gaussian_random", Normal._op(self, var, block)[1]


class Xavier(Initializer):
    """Glorot: uniform in ±sqrt(6/(fan_in+fan_out)), or normal with std sqrt(2/(fan_in+fan_out))."""

    _tmp_prefix = "xavier_init"

    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        self._uniform, self._fan_in, self._fan_out, self._seed_value = uniform, fan_in, fan_out, seed

    def _op(self, var, block):
        f_in, f_out = _compute_fans(var.shape)
        f_in = f_in if self._fan_in is None else self._fan_in
        f_out = f_out if self._fan_out is None else self._fan_out
        seed = self._seed(self._seed_value, block)
        if self._uniform:
            limit = math.sqrt(6.0 / float(f_in + f_out))
            return "uniform_random", {"min": -limit, "max": limit, "seed": seed}
        return "gaussian_random", {"mean": 0.0, "std": math.sqrt(2.0 / float(f_in + f_out)), "seed": seed}


class MSRA(Initializer):
    """He/Kaiming: uniform in ±sqrt(6/fan_in), or normal with std sqrt(2/fan_in)."""

    _tmp_prefix = "masra_init"

    def __init__(self, uniform=True, fan_in=None, seed=0):
        self._uniform, self._fan_in, self._seed_value = uniform, fan_in, seed

    def _op(self, var, block):
        f_in = _compute_fans(var.shape)[0] if self._fan_in is None else self._fan_in
        seed = self._seed(self._seed_value, block)
        if self._uniform:
            limit = math.sqrt(6.0 / float(f_in))
            return "uniform_random", {"min": -limit, "max": limit, "seed": seed}
        return "gaussian_random", {"mean": 0.0, "std": math.sqrt(2.0 / float(f_in)), "seed": seed}


class NumpyArrayInitializer(Initializer):
    """Copy a numpy array (its values are stored in the op's attributes, as fluid does)."""

    _tmp_prefix = "numpy_array_init"

    _VALUE_ATTR = {"float16": "fp32_values", "float32": "fp32_values", "float64": "fp32_values",
                   "int32": "int32_values", "int64": "int64_values", "bool": "bool_values"}

    def __init__(self, value):
        if not isinstance(value, np.ndarray):
            raise TypeError(f"NumpyArrayInitializer needs a numpy.ndarray, got {type(value).__name__}")
        self._value = value

    def _op(self, var, block):
        if tuple(self._value.shape) != tuple(var.shape):
            raise ValueError(f"NumpyArrayInitializer: array shape {self._value.shape} does not match "
                             f"{var.name!r} of shape {tuple(var.shape)}")
        attr = self._VALUE_ATTR.get(convert_dtype(var.dtype))
        if attr is None:
            raise ValueError(f"NumpyArrayInitializer: unsupported dtype {var.dtype}")
        return "assign_value", {attr: self._value.reshape(-1).tolist()}


class Bilinear(Initializer):
    """The bilinear-interpolation kernel for a [C_out, C_in, k, k] conv2d_transpose filter, so that the layer
    upsamples by ``ceil(k / 2)`` (each [k, k] slice is the same kernel). fluid 1.8 computes the kernel's row
    coordinate with Python 3's true division, which smears the rows; this uses the whole row index."""

    _tmp_prefix = "bilinear_init"

    def _op(self, var, block):
        shape = tuple(var.shape)
        if len(shape) != 4:
            raise ValueError("the length of shape must be 4.")
        if shape[2] != shape[3]:
            raise ValueError("shape[2] must be equal to shape[3].")
        if math.prod(shape) > 1024 * 1024:
            raise ValueError("The size of input is too big. ")
        size = shape[3]
        f = math.ceil(size / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        taps = 1 - np.abs(np.arange(size) / f - c)
        weight = np.broadcast_to(np.outer(taps, taps), shape)
        return "assign_value", {"fp32_values": weight.astype(np.float32).reshape(-1).tolist()}


ConstantInitializer = Constant
UniformInitializer = Uniform
NormalInitializer = Normal
TruncatedNormalInitializer = TruncatedNormal
XavierInitializer = Xavier
MSRAInitializer = MSRA
BilinearInitializer = Bilinear
