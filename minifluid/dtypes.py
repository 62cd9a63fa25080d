"""Fluid dtype names <-> numpy dtypes: the single source of dtype truth."""
import numpy as np

__all__ = ["convert_dtype", "to_numpy_dtype", "is_float_dtype", "SUPPORTED_DTYPES"]

SUPPORTED_DTYPES = ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
                    "uint8", "complex64", "complex128")
_ALIASES = {"float": "float32", "double": "float64", "int": "int64", "long": "int64",
            "fp16": "float16", "fp32": "float32", "fp64": "float64", "bool_": "bool"}
_NP = {name: np.dtype(name) for name in SUPPORTED_DTYPES}


def convert_dtype(dtype):
    """Return fluid's string name for ``dtype`` (a string, numpy dtype or numpy type)."""
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
        if name in _NP:
            return name
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name in _NP:
            return name
    raise TypeError(
        "dtype must be any of [bool, float16, float32, float64, int8, int16, int32, int64, uint8, "
        f"complex64, complex128], but received {dtype}")


def to_numpy_dtype(dtype):
    return _NP[convert_dtype(dtype)]


def is_float_dtype(dtype):
    return convert_dtype(dtype) in ("float16", "float32", "float64")
