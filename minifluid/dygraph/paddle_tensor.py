"""paddle 2.x tensor functions (``paddle.zeros``, ``paddle.concat``, ``paddle.argmax`` ...): creation,
manipulation, math, comparison and random tensors, with paddle 2.0's argument names. Each runs eagerly
whatever the global mode (``eager_api``) on the fluid layers' ops, so gradients flow as in fluid.
compat/paddle_ns.py re-exports them as ``paddle.*``.
"""
import numpy as np

from .. import layers
from ..dtypes import convert_dtype, get_default_dtype
from .base import eager_api
from .tensor import Tensor, apply, default_tracer

__all__ = ["abs", "add", "arange", "argmax", "argmin", "argsort", "cast", "clip", "concat", "divide", "equal", "exp",
           "expand", "eye", "flatten", "full", "full_like", "gather", "greater_equal", "greater_than", "less_equal",
           "less_than", "linspace", "log", "logical_and", "logical_not", "logical_or", "logical_xor", "matmul", "max",
           "maximum", "min", "minimum", "multiply", "normal", "not_equal", "numel", "ones", "ones_like", "pow", "prod",
           "rand", "randint", "randn", "scatter", "shape", "sort", "split", "sqrt", "square", "squeeze", "stack",
           "subtract", "sum", "tanh", "tile", "topk", "transpose", "uniform", "unsqueeze", "unstack", "where", "zeros",
           "zeros_like"]


def _tensor(value):
    return default_tracer().eager_tensor(np.ascontiguousarray(value))


def _dtype(dtype, default=None):
    return convert_dtype(dtype) if dtype is not None else (default or get_default_dtype())


# --- creation -------------------------------------------------------------------------------------------------
@eager_api
def full(shape, fill_value, dtype=None, name=None):
    return layers.fill_constant(list(shape), _dtype(dtype), fill_value)


def zeros(shape, dtype=None, name=None):
    return full(shape, 0.0, dtype)


def ones(shape, dtype=None, name=None):
    return full(shape, 1.0, dtype)


@eager_api
def full_like(x, fill_value, dtype=None, name=None):
    return apply("fill_any_like", {"X": x}, {"value": float(fill_value), "dtype": _dtype(dtype, x.dtype)})


def zeros_like(x, dtype=None, name=None):
    return full_like(x, 0.0, dtype)


def ones_like(x, dtype=None, name=None):
    return full_like(x, 1.0, dtype)


def arange(start=0, end=None, step=1, dtype=None, name=None):
    start, end = (0, start) if end is None else (start, end)
    floats = any(isinstance(v, float) for v in (start, end, step))
    return _tensor(np.arange(start, end, step, dtype=_dtype(dtype, get_default_dtype() if floats else "int64")))


def linspace(start, stop, num, dtype=None, name=None):
    return _tensor(np.linspace(start, stop, num, dtype=_dtype(dtype, "float32")))


def eye(num_rows, num_columns=None, dtype=None, name=None):
    return _tensor(np.eye(num_rows, num_columns, dtype=_dtype(dtype, "float32")))


@eager_api
def rand(shape, dtype=None, name=None):
    return layers.uniform_random(list(shape), _dtype(dtype), 0.0, 1.0)


@eager_api
def uniform(shape, dtype="float32", min=-1.0, max=1.0, seed=0, name=None):
    return layers.uniform_random(list(shape), dtype, min, max, seed)


@eager_api
def normal(mean=0.0, std=1.0, shape=None, name=None):
    return layers.gaussian_random(list(shape or [1]), float(mean), float(std))


def randn(shape, dtype=None, name=None):
    return normal(0.0, 1.0, shape) if dtype is None else cast(normal(0.0, 1.0, shape), dtype)


def randint(low=0, high=None, shape=(1,), dtype=None, name=None):
    low, high = (0, low) if high is None else (low, high)
    if high <= low:
        raise ValueError(f"randint's low must less then high, but received low = {low}, high = {high}")
    return _tensor(np.random.randint(low, high, size=tuple(shape)).astype(_dtype(dtype, "int64")))


# --- manipulation ---------------------------------------------------------------------------------------------
concat = eager_api(lambda x, axis=0, name=None: layers.concat(list(x), axis))
stack = eager_api(lambda x, axis=0, name=None: layers.stack(list(x), axis))
unstack = eager_api(lambda x, axis=0, num=None: layers.unstack(x, axis, num))
transpose = eager_api(lambda x, perm, name=None: layers.transpose(x, list(perm)))
cast = eager_api(lambda x, dtype: layers.cast(x, dtype))
gather = eager_api(lambda x, index, axis=None, name=None: layers.gather(x, index))
scatter = eager_api(lambda x, index, updates, overwrite=True, name=None: layers.scatter(x, index, updates,
                                                                                        overwrite=overwrite))
tile = eager_api(lambda x, repeat_times, name=None: layers.expand(x, list(repeat_times)))


@eager_api
def split(x, num_or_sections, axis=0, name=None):
    return layers.split(x, num_or_sections, dim=axis)


@eager_api
def squeeze(x, axis=None, name=None):
    axes = [i for i, d in enumerate(x.shape) if d == 1] if axis is None else \
        [axis] if isinstance(axis, int) else list(axis)
    return layers.squeeze(x, axes)


@eager_api
def unsqueeze(x, axis, name=None):
    return layers.unsqueeze(x, [axis] if isinstance(axis, int) else list(axis))


@eager_api
def flatten(x, start_axis=0, stop_axis=-1, name=None):
    shape = list(x.shape)
    stop = stop_axis % len(shape)
    return layers.reshape(x, shape[:start_axis] + [-1] + shape[stop + 1:])


@eager_api
def expand(x, shape, name=None):
    """Broadcast ``x`` to ``shape`` (-1 keeps a dimension)."""
    shape = [d if d != -1 else s for d, s in zip(shape, [1] * (len(shape) - len(x.shape)) + list(x.shape))]
    x = layers.reshape(x, [1] * (len(shape) - len(x.shape)) + list(x.shape))
    return layers.expand(x, [t if s == 1 else 1 for s, t in zip(x.shape, shape)])


@eager_api
def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        raise NotImplementedError("paddle.where(condition) (nonzero indices) is not supported by minifluid; use "
                                  "numpy.nonzero(condition.numpy())")
    return apply("where", {"Condition": condition, "X": x, "Y": y})


def _arg(op_type):
    @eager_api
    def fn(x, axis=None, keepdim=False, dtype="int64", name=None):
        flat = axis is None
        return apply(op_type, {"X": x}, {"axis": 0 if flat else axis, "keepdims": keepdim, "flatten": flat,
                                         "dtype": convert_dtype(dtype)})
    fn.__name__ = fn.__qualname__ = op_type.replace("_", "")
    return fn


argmax, argmin = _arg("arg_max"), _arg("arg_min")


@eager_api
def argsort(x, axis=-1, descending=False, name=None):
    return layers.argsort(x, axis, descending)[1]


@eager_api
def sort(x, axis=-1, descending=False, name=None):
    return layers.argsort(x, axis, descending)[0]


@eager_api
def topk(x, k, axis=None, largest=True, sorted=True, name=None):
    """``(values, indices)`` of the k largest entries along the last axis."""
    if axis not in (None, -1, len(x.shape) - 1) or not largest:
        raise NotImplementedError("topk: minifluid takes the k largest along the last axis")
    return layers.topk(x, k)


def shape(input):
    return _tensor(np.array(input.shape, dtype=np.int32))


def numel(x, name=None):
    return _tensor(np.array([int(np.prod(x.shape))], dtype=np.int64))


# --- math -------------------------------------------------------------------------------------------------------
def _reduce(op_type):
    @eager_api
    def fn(x, axis=None, keepdim=False, name=None, dtype=None):
        x = x if dtype is None else layers.cast(x, dtype)
        dims = None if axis is None else [axis] if isinstance(axis, int) else list(axis)
        reduce_all = dims is None or len(dims) == len(x.shape)
        return apply(op_type, {"X": x}, {"dim": dims or [0], "keep_dim": keepdim, "reduce_all": reduce_all})
    fn.__name__ = fn.__qualname__ = op_type[len("reduce_"):]
    return fn


sum, max, min, prod = (_reduce("reduce_" + k) for k in ("sum", "max", "min", "prod"))
add, subtract, multiply, divide, maximum, minimum = (
    eager_api(lambda x, y, name=None, f=f: f(x, y)) for f in (
        layers.elementwise_add, layers.elementwise_sub, layers.elementwise_mul, layers.elementwise_div,
        layers.elementwise_max, layers.elementwise_min))
abs, exp, log, sqrt, square, tanh = (eager_api(lambda x, name=None, f=f: f(x)) for f in (
    layers.abs, layers.exp, layers.log, layers.sqrt, layers.square, layers.tanh))
equal, not_equal, less_than, less_equal, greater_than, greater_equal = (
    eager_api(lambda x, y, name=None, f=f: f(x, y)) for f in (
        layers.equal, layers.not_equal, layers.less_than, layers.less_equal, layers.greater_than,
        layers.greater_equal))
logical_and, logical_or, logical_xor = (eager_api(lambda x, y, out=None, name=None, f=f: f(x, y, out)) for f in (
    layers.logical_and, layers.logical_or, layers.logical_xor))
logical_not = eager_api(lambda x, out=None, name=None: layers.logical_not(x, out))


@eager_api
def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return layers.matmul(x, y, transpose_x, transpose_y)


@eager_api
def pow(x, y, name=None):
    """``x ** y`` for a number ``y`` (pow op) or a tensor ``y`` (elementwise_pow)."""
    return layers.elementwise_pow(x, y) if isinstance(y, Tensor) else layers.pow(x, float(y))


@eager_api
def clip(x, min=None, max=None, name=None):
    lo = float(min) if min is not None else float(np.finfo(np.float32).min)
    hi = float(max) if max is not None else float(np.finfo(np.float32).max)
    return apply("clip", {"X": x}, {"min": lo, "max": hi})
