"""Fluid dtype names <-> numpy dtypes: the single source of dtype truth."""
import numpy as np

__all__ = ["convert_dtype", "to_numpy_dtype", "is_float_dtype", "get_default_dtype", "set_default_dtype",
           "SUPPORTED_DTYPES", "PROTO_DTYPES", "UnknownDtypeError", "to_proto_dtype", "from_proto_dtype"]

SUPPORTED_DTYPES = ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
                    "uint8", "complex64", "complex128")
_ALIASES = {"float": "float32", "double": "float64", "int": "int64", "long": "int64",
            "fp16": "float16", "fp32": "float32", "fp64": "float64", "bool_": "bool"}
_NP = {name: np.dtype(name) for name in SUPPORTED_DTYPES}
# fluid's VarType.Type code of each element type (framework/proto/framework.proto): how program files
# and parameter files name a tensor's dtype
PROTO_DTYPES = {"bool": 0, "int16": 1, "int32": 2, "int64": 3, "float16": 4, "float32": 5, "float64": 6,
                "uint8": 20, "int8": 21, "complex64": 23, "complex128": 24}
_FROM_PROTO = {code: name for name, code in PROTO_DTYPES.items()}
_UNSUPPORTED_PROTO = {19: "size_t", 22: "bfloat16"}


class UnknownDtypeError(ValueError, TypeError):
    """A dtype minifluid does not know. fluid 1.8's ``convert_dtype`` raised ValueError, its argument checks
    TypeError: this is both, so either ``except`` catches it."""


def convert_dtype(dtype):
    """Return fluid's string name for ``dtype`` (a string, numpy dtype or numpy type, or fluid's VarType code as
    an int: how an op's dtype attribute holds it, e.g. ``int(core.VarDesc.VarType.FP64)``)."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, (bool, np.bool_)):
        if int(dtype) in _FROM_PROTO:
            return _FROM_PROTO[int(dtype)]
    elif isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
        if name in _NP:
            return str(name)  # a plain str, also for fluid's VarDesc.VarType.FP32 and the like
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name in _NP:
            return name
    raise UnknownDtypeError(
        "dtype must be any of [bool, float16, float32, float64, int8, int16, int32, int64, uint8, "
        f"complex64, complex128], but received {dtype}")


def to_numpy_dtype(dtype):
    return _NP[convert_dtype(dtype)]


def is_float_dtype(dtype):
    return convert_dtype(dtype) in ("float16", "float32", "float64")


_default_dtype = "float32"


def set_default_dtype(d):
    """paddle.set_default_dtype: the float dtype of ``paddle.static.data`` (and Python floats in
    ``paddle.to_tensor``) when none is given; float16, float32 or float64."""
    global _default_dtype
    name = getattr(d, "__name__", d) if isinstance(d, type) else d
    if name not in ("float16", "float32", "float64"):
        raise TypeError(f"set_default_dtype only supports [float16, float32, float64] , but received {name}")
    _default_dtype = str(name)


def get_default_dtype():
    """The dtype ``set_default_dtype`` set (float32 at start)."""
    return _default_dtype


def to_proto_dtype(dtype):
    """fluid's VarType.Type code of ``dtype`` (anything ``convert_dtype`` takes)."""
    return PROTO_DTYPES[convert_dtype(dtype)]


def from_proto_dtype(code):
    """The dtype name of fluid's VarType.Type ``code``; ValueError for a code that is not an element type
    minifluid has."""
    try:
        return _FROM_PROTO[code]
    except KeyError:
        what = _UNSUPPORTED_PROTO.get(code, "not an element type")
        raise ValueError(f"data type code {code} ({what}) is not supported: minifluid reads "
                         f"{sorted(PROTO_DTYPES, key=PROTO_DTYPES.get)}") from None
