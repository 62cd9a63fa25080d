"""Matrix-shaped and small math layers of fluid 1.8: trace, kron, allclose, meshgrid, cross, dist, diag_embed
(ops in ops/linalg.py), clamp, addmm, addcmul."""
import math

from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .creation import check_dtype
from .manip import _op, clip, expand
from .math import elementwise_add, elementwise_max, elementwise_min, elementwise_mul, scale
from .tensor import assign, reshape

__all__ = ["addcmul", "addmm", "allclose", "clamp", "cross", "diag_embed", "dist", "kron", "meshgrid", "trace"]

_NUMBERS = ("float16", "float32", "float64", "int32", "int64")


def _into(op_type, inputs, attrs, x, out, name):
    if out is None:
        return _op(op_type, inputs, attrs, x.dtype, name)
    check_variable_and_dtype(out, "out", _NUMBERS, op_type)
    return assign(_op(op_type, inputs, attrs, x.dtype, name), out)


def trace(input, offset=0, dim1=0, dim2=1, out=None, name=None):
    """Sums along diagonal ``offset`` of dimensions ``dim1`` and ``dim2`` (the other dimensions kept)."""
    check_dtype(input.dtype, "Input", ("int32", "int64", "float16", "float32", "float64"), "trace")
    return _into("trace", {"Input": [input]}, {"offset": offset, "dim1": dim1, "dim2": dim2}, input, out, name)


def kron(x, y, out=None, name=None):
    """The Kronecker product of ``x`` and ``y`` (the lower-rank one padded with leading 1s)."""
    check_variable_and_dtype(x, "x", _NUMBERS, "kron")
    check_variable_and_dtype(y, "y", _NUMBERS, "kron")
    return _into("kron", {"X": [x], "Y": [y]}, {}, x, out, name)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """Whether ``|input - other| <= atol + rtol * |other|`` everywhere: bool, shape [1]."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "allclose")
    check_variable_and_dtype(other, "other", ("float32", "float64"), "allclose")
    return _op("allclose", {"Input": [input], "Other": [other]},
               {"rtol": float(rtol), "atol": float(atol), "equal_nan": bool(equal_nan)}, "bool", name,
               stop_gradient=True)


def meshgrid(input, name=None):
    """N-D grids from N 1-D tensors: output k repeats input k along dimension k over the shape ``[N1, ..., Nn]``."""
    if not isinstance(input, list):
        raise TypeError("The type of input in meshgrid should be list.")
    sizes = []
    for x in input:
        if not isinstance(x, Variable) or len(x.shape) != 1 or x.shape[0] < 0:
            raise ValueError(f"meshgrid: every input must be a 1-D Variable of known size, got "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        check_dtype(x.dtype, "create data type", _NUMBERS, "meshgrid")
        sizes.append(x.shape[0])
    grids = []
    for k, x in enumerate(input):
        shape = [1] * len(sizes)
        shape[k] = sizes[k]
        grids.append(expand(reshape(x, shape), [1 if i == k else n for i, n in enumerate(sizes)]))
    return grids


def clamp(input, min=None, max=None, output=None, name=None):
    """``input`` limited to [min, max] (floats or [1] Variables; an unset bound does not limit)."""
    if min is None and max is None:
        raise ValueError("either min or max should be defined.")
    for bound, label in ((min, "min"), (max, "max")):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, (float, int, Variable))):
            raise TypeError(f"The type of '{label}' in clamp must be (float, Variable), but received "
                            f"{type(bound).__name__}. ")
    numbers = [-math.inf if min is None or isinstance(min, Variable) else float(min),
               math.inf if max is None or isinstance(max, Variable) else float(max)]
    out = clip(input, numbers[0], numbers[1], name)
    if isinstance(min, Variable):
        out = elementwise_max(out, min)
    if isinstance(max, Variable):
        out = elementwise_min(out, max)
    return out if output is None else assign(out, output)


def addmm(input, x, y, alpha=1.0, beta=1.0, name=None):
    """``beta * input + alpha * (x @ y)`` (``input`` broadcast onto the product)."""
    for v, label in ((input, "Input"), (x, "X"), (y, "Y")):
        check_variable_and_dtype(v, label, ("float32", "float64"), "addmm")
    return _op("addmm", {"Input": [input], "X": [x], "Y": [y]}, {"Alpha": float(alpha), "Beta": float(beta)},
               x.dtype, name)


def addcmul(input, tensor1, tensor2, value=1.0, out=None, name=None):
    """``input + value * tensor1 * tensor2`` (written into ``out`` when given)."""
    for v, label in ((input, "input"), (tensor1, "tensor1"), (tensor2, "tensor2")):
        check_variable_and_dtype(v, label, ("float32", "float64", "int32", "int64"), "addcmul")
    kind = float if input.dtype in ("float32", "float64") else int
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"The type of 'value' in addcmul must be {kind.__name__}, but received "
                        f"{type(value).__name__}. ")
    result = elementwise_add(input, scale(elementwise_mul(tensor1, tensor2), value))
    return result if out is None else assign(result, out)


def dist(x, y, p=2):
    """The p-norm of ``x - y`` (numpy broadcasting): p = 0 counts non-zeros, inf / -inf take max / min |x - y|."""
    check_variable_and_dtype(x, "dtype", ("float32", "float64"), "dist")
    check_variable_and_dtype(y, "dtype", ("float32", "float64"), "dist")
    if isinstance(p, bool) or not isinstance(p, (float, int)):
        raise TypeError(f"The type of 'p' in dist must be (float, int), but received {type(p).__name__}. ")
    return _op("dist", {"X": [x], "Y": [y]}, {"p": float(p)}, x.dtype)


def cross(input, other, dim=None):
    """Cross products of 3-vectors along ``dim`` (the first dimension of size 3 when None)."""
    return _op("cross", {"X": [input], "Y": [other]}, {"dim": dim} if dim is not None else {}, input.dtype)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices with ``input``'s last dimension on diagonal ``offset`` of the new dimensions ``dim1``, ``dim2``."""
    if not isinstance(input, Variable):
        input = assign(input)
    check_dtype(input.dtype, "Input", _NUMBERS, "diag_embed")
    return _op("diag_embed", {"Input": [input]}, {"offset": offset, "dim1": dim1, "dim2": dim2}, input.dtype,
               stop_gradient=True)
