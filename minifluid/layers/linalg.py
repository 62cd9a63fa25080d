"""Matrix-shaped layers of fluid 1.8: trace, kron, allclose, meshgrid (ops in ops/linalg.py)."""
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .creation import check_dtype
from .manip import _op, expand
from .tensor import assign, reshape

__all__ = ["allclose", "kron", "meshgrid", "trace"]

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
