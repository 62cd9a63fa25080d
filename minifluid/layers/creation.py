"""Tensor-making layers of fluid 1.8: ones_like, zeros_like, full, full_like, create_parameter, range, arange,
linspace, eye, diag, size, rank, uniform_random_batch_size_like,
gaussian_random_batch_size_like, randint, randn, randperm, sampling_id. Their outputs need no gradient, as in fluid."""
import numbers

import numpy as np

from ..dtypes import convert_dtype
from ..errors import check_type  # noqa: F401  (layers modules import it from here)
from ..framework.scopes import device_guard
from ..framework.variable import Variable
from ..initializer import Initializer
from ..param_attr import ParamAttr
from .activation import check_variable_and_dtype
from .helper import LayerHelper
from .manip import _op, gaussian_random, stack
from .tensor import assign, cast, fill_constant

__all__ = ["arange", "create_parameter", "diag", "eye", "full", "full_like", "gaussian_random_batch_size_like",
           "linspace", "ones_like", "randint", "randn", "randperm", "range", "rank", "sampling_id", "size",
           "uniform_random_batch_size_like", "zeros_like"]

_LIKE = ("bool", "float32", "float64", "int32", "int64")
_RANGE = ("float32", "float64", "int32", "int64")


def check_dtype(dtype, name, dtypes, api):
    if convert_dtype(dtype) not in dtypes:
        raise TypeError(f"The data type of '{name}' in {api} must be {list(dtypes)}, but received {dtype}. ")
    return convert_dtype(dtype)


def _fill_like(x, out, api, op_type, attrs):
    check_variable_and_dtype(x, "x", _LIKE, api)
    if out is not None:
        check_variable_and_dtype(out, "out", _LIKE, api)
    helper = LayerHelper(api)
    out = out if out is not None else helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


def ones_like(x, out=None):
    """A tensor of ones shaped and typed like ``x`` (written into ``out`` when given)."""
    return _fill_like(x, out, "ones_like", "fill_any_like", {"value": 1.0})


def zeros_like(x, out=None):
    """A tensor of zeros shaped and typed like ``x`` (written into ``out`` when given)."""
    return _fill_like(x, out, "zeros_like", "fill_zeros_like", {})


_FULL = ("bool", "float16", "float32", "float64", "int32", "int64")


def full(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """A tensor of ``shape`` and ``dtype`` (float32 by default) filled with ``fill_value``; ``shape`` and
    ``fill_value`` may be Variables as in fill_constant; ``device`` is accepted and ignored (one place)."""
    dtype = check_dtype("float32" if dtype is None else dtype, "create data type", _FULL, "full")
    check_type(shape, "shape", (list, tuple, Variable), "full")
    if out is not None:
        check_type(out, "out", (Variable,), "full")
    out = fill_constant(shape, dtype, fill_value, out=out)
    out.stop_gradient = stop_gradient
    return out


def full_like(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """A tensor shaped like ``input`` filled with ``fill_value``, of ``dtype`` (``input``'s by default)."""
    check_type(input, "input", (Variable,), "full_like")
    dtype = input.dtype if dtype is None else check_dtype(dtype, "dtype", _FULL, "full_like")
    helper = LayerHelper("full_like")
    out = out if out is not None else helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="fill_any_like", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"value": float(fill_value), "dtype": dtype})
    out.stop_gradient = stop_gradient
    return out


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """A learnable parameter of ``shape`` and ``dtype`` (initialised in the startup program by ``attr``'s
    initializer, else ``default_initializer``, else Xavier / zeros for a bias)."""
    check_type(shape, "shape", (list, tuple, np.ndarray), "create_parameter")
    for item in shape:
        check_type(item, "item of shape", (int, np.integer), "create_parameter")
    dtype = check_dtype(dtype, "dtype", ("bool", "float16", "float32", "float64", "int8", "int16", "int32",
                                         "int64", "uint8"), "create_parameter")
    check_type(attr, "attr", (type(None), ParamAttr), "create_parameter")
    check_type(default_initializer, "default_initializer", (type(None), Initializer), "create_parameter")
    helper = LayerHelper("create_parameter")
    return helper.create_parameter(attr if attr is not None else ParamAttr(name=name), [int(d) for d in shape],
                                   dtype, is_bias, default_initializer)


def _range(start, end, step, dtype, api):
    dtype = check_dtype(dtype, "create data type", _RANGE, api)
    bounds = []
    for value, name in ((start, "start"), (end, "end"), (step, "step")):
        check_type(value, name, (numbers.Real, Variable), api)
        if not isinstance(value, Variable):
            value = fill_constant([1], dtype, value)
        elif convert_dtype(value.dtype) != dtype:
            value = cast(value, dtype)
        bounds.append(value)
    return _op("range", {"Start": [bounds[0]], "End": [bounds[1]], "Step": [bounds[2]]}, {}, dtype,
               stop_gradient=True)


def range(start, end, step, dtype):
    """``[start, start + step, ...)`` up to ``end`` (excluded), a 1-D tensor of ``dtype``; each bound a number
    or a [1] Variable."""
    return _range(start, end, step, dtype, "range")


def arange(start, end, step=1, dtype=None, name=None):
    """``range`` with ``step`` 1 and ``dtype`` float32 by default."""
    return _range(start, end, step, "float32" if dtype is None else dtype, "range")


def linspace(start, stop, num, dtype):
    """``num`` evenly spaced values from ``start`` to ``stop`` (both included), a 1-D tensor of ``dtype``."""
    dtype = check_dtype(dtype, "dtype", ("float32", "float64"), "linspace")
    bounds = []
    for value, name, dtypes in ((start, "start", (dtype,)), (stop, "stop", (dtype,)), (num, "num", ("int32",))):
        check_type(value, name, (numbers.Real, Variable), "linspace")
        if isinstance(value, Variable):
            check_variable_and_dtype(value, name, dtypes, "linspace")
        else:
            value = fill_constant([1], dtypes[0], value)
        bounds.append(value)
    return _op("linspace", {"Start": [bounds[0]], "Stop": [bounds[1]], "Num": [bounds[2]]}, {}, dtype)


def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32"):
    """A ``[num_rows, num_columns]`` identity matrix (square by default), stacked to ``batch_shape + [r, c]``."""
    if not isinstance(num_rows, int) or isinstance(num_rows, bool) or num_rows < 0:
        raise TypeError(f"num_rows should be a non-negative int, got {num_rows!r}")
    if num_columns is not None and (not isinstance(num_columns, int) or isinstance(num_columns, bool)
                                    or num_columns < 0):
        raise TypeError(f"num_columns should be a non-negative int, got {num_columns!r}")
    out = _op("eye", {}, {"num_rows": num_rows, "num_columns": num_rows if num_columns is None else num_columns,
                          "dtype": convert_dtype(dtype)}, convert_dtype(dtype), stop_gradient=True)
    if batch_shape is not None:
        if not isinstance(batch_shape, list):
            raise TypeError(f"batch_shape should be a list, got {type(batch_shape).__name__}")
        if any(not isinstance(b, int) or b <= 0 for b in batch_shape):
            raise TypeError(f"batch_shape should be a positive int list, got {batch_shape}")
        for count in reversed(batch_shape):
            out = stack([out] * count, axis=0)
        out.stop_gradient = True
    return out


def diag(diagonal):
    """A square matrix with the 1-D ``diagonal`` (a Variable or numpy array) on its main diagonal."""
    check_type(diagonal, "diagonal", (Variable, np.ndarray), "diag")
    check_dtype(diagonal.dtype, "diagonal", _RANGE, "diag")
    if not isinstance(diagonal, Variable):
        diagonal = assign(diagonal)
    return _op("diag", {"Diagonal": [diagonal]}, {}, diagonal.dtype, stop_gradient=True)


def size(input):
    """The number of elements of ``input``: int64, shape [1]."""
    check_type(input, "input", (Variable,), "size")
    return _op("size", {"Input": [input]}, {}, "int64", stop_gradient=True)


def rank(input):
    """The number of dimensions of ``input`` as an int32 constant tensor."""
    check_type(input, "input", (Variable,), "rank")
    return assign(np.array([len(input.shape)], "int32"))


def _random_batch_size_like(op_type, input, shape, dtype, input_dim_idx, output_dim_idx, seed, attrs, dtypes):
    check_variable_and_dtype(input, "Input", ("float32", "float64"), op_type)
    check_type(shape, "shape", (list, tuple), op_type)
    dtype = check_dtype(dtype, "dtype", dtypes, op_type)
    return _op(op_type, {"Input": [input]}, {"shape": [int(d) for d in shape], "dtype": dtype, "seed": int(seed),
                                             "input_dim_idx": input_dim_idx, "output_dim_idx": output_dim_idx, **attrs},
               dtype, stop_gradient=True)


def uniform_random_batch_size_like(input, shape, dtype="float32", input_dim_idx=0, output_dim_idx=0, min=-1.0,
                                   max=1.0, seed=0):
    """Uniform samples in [min, max) of ``shape`` whose dimension ``output_dim_idx`` is ``input``'s
    ``input_dim_idx`` (the batch size); ``seed`` 0 draws fresh numbers each run."""
    return _random_batch_size_like("uniform_random_batch_size_like", input, shape, dtype, input_dim_idx,
                                   output_dim_idx, seed, {"min": float(min), "max": float(max)},
                                   ("float32", "float64"))


def gaussian_random_batch_size_like(input, shape, input_dim_idx=0, output_dim_idx=0, mean=0.0, std=1.0, seed=0,
                                    dtype="float32"):
    """Normal samples N(mean, std^2) of ``shape`` with ``input``'s batch size (as uniform_random_batch_size_like)."""
    return _random_batch_size_like("gaussian_random_batch_size_like", input, shape, dtype, input_dim_idx,
                                   output_dim_idx, seed, {"mean": float(mean), "std": float(std)},
                                   ("float16", "float32", "float64"))


def _shape_list(shape, api):
    check_type(shape, "shape", (list, tuple), api)
    if not shape:
        raise AssertionError(f"The size of argument(shape) can't be zero. ({api})")  # fluid's assert
    if any(not isinstance(d, (int, np.integer)) or d <= 0 for d in shape):
        raise ValueError(f"{api}: 'shape' must be a list of positive ints, got {list(shape)}")
    return [int(d) for d in shape]


def _maybe_into(out, result):
    return result if out is None else assign(result, out)


def randint(low, high=None, shape=None, out=None, dtype=None, device=None, stop_gradient=False, seed=0, name=None):
    """Integers drawn uniformly from ``[low, high)`` (``[0, low)`` when ``high`` is None), of ``shape`` ([1] by
    default) and ``dtype`` (int64 by default); ``seed`` 0 draws fresh numbers each run."""
    dtype = check_dtype("int64" if dtype is None else dtype, "dtype", ("int32", "int64"), "randint")
    shape = _shape_list([1] if shape is None else shape, "randint")
    low, high = (0, low) if high is None else (low, high)
    if low >= high:
        raise ValueError(f"randint's low must less then high, but received low = {low}, high = {high}")
    result = _op("randint", {}, {"shape": shape, "low": int(low), "high": int(high), "dtype": dtype,
                                 "seed": int(seed)}, dtype, name)
    result = _maybe_into(out, result)
    result.stop_gradient = stop_gradient
    return result


def randn(shape, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """Standard normal samples of ``shape`` and ``dtype`` (float32 by default)."""
    dtype = check_dtype("float32" if dtype is None else dtype, "dtype", ("float32", "float64"), "randn")
    result = _maybe_into(out, gaussian_random(_shape_list(shape, "randn"), dtype=dtype, name=name))
    result.stop_gradient = stop_gradient
    return result


def randperm(n, out=None, dtype="int64", device=None, stop_gradient=True, seed=0):
    """A random permutation of ``0 .. n-1``."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"The input n should be greater than 0 in randperm op, got {n!r}")
    dtype = check_dtype(dtype, "dtype", ("int64", "int32"), "randperm")
    if device not in (None, "cpu", "gpu"):
        raise ValueError(f"The input device should in [None, 'cpu', 'gpu'], got {device!r}")
    check_type(stop_gradient, "stop_gradient", (bool,), "randperm")
    if out is not None:
        check_variable_and_dtype(out, "out", (dtype,), "randperm")
    with device_guard(device):  # fluid's rule: the op carries op_device
        result = _maybe_into(out, _op("randperm", {}, {"n": n, "dtype": dtype, "seed": int(seed)}, dtype))
    result.stop_gradient = stop_gradient
    return result


def sampling_id(x, min=0.0, max=1.0, seed=0, dtype="float32"):
    """For each row of probabilities ``x`` ([N, K]), an id drawn from it (int64 [N], whatever ``dtype`` says, as
    fluid's kernel writes); draws are uniform in [min, max), ``seed`` as in uniform_random."""
    check_variable_and_dtype(x, "x", ("float32", "float64"), "sampling_id")
    return _op("sampling_id", {"X": [x]}, {"min": float(min), "max": float(max), "seed": int(seed)}, "int64",
               stop_gradient=True)
