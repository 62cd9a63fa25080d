"""Reading Paddle's pickled files (``.pdparams``, ``.pdopt``, ``paddle.save`` output) without running code.

NOTE [ Restricted unpickling ]
A pickle is a program: each global it names is imported and may be called with arguments the file
chooses, so ``pickle.load`` on someone else's checkpoint can run anything. Paddle's files need only a
few globals, and ``RestrictedUnpickler.find_class`` hands out exactly those, each one a guard that
checks its arguments:

    numpy's ndarray reconstruction, dtype and scalar   arrays and numbers (never dtype object)
    collections.OrderedDict, builtins containers        dict/list/tuple/set/frozenset/bytearray/complex
    _codecs.encode(text, "latin1")                      how pickle protocol 2 writes bytes
    builtins.eval("data", {"data": array})              how paddle.save writes a bare LoDTensor; no
                                                        other expression is evaluated

Any other global is an ``UnsafePickleError`` naming it and the file, before anything from it is
called. The result is checked once more: it may hold only containers, strings, numbers, None and
non-object numpy arrays.
"""
import codecs
import collections
import io
import pickle

import numpy as np

__all__ = ["UnsafePickleError", "RestrictedUnpickler", "load", "loads", "is_pickle"]


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle that names something other than numpy arrays, numbers, strings and containers."""


def _checked_dtype(spec, *args):
    dtype = np.dtype(spec, *args)
    if dtype.hasobject:
        raise UnsafePickleError(f"refusing a numpy array of dtype {dtype} (it would hold arbitrary objects)")
    return dtype


def _ndarray(shape, dtype=float, *args, **kwargs):
    """What ``numpy.ndarray`` resolves to: an array of a checked dtype."""
    return np.ndarray(shape, _checked_dtype(dtype), *args, **kwargs)


def _reconstruct(subtype, shape, dtype):
    if subtype is not _ndarray:
        raise UnsafePickleError(f"refusing to rebuild an array of type {subtype!r}")
    return np.ndarray.__new__(np.ndarray, shape, _checked_dtype(dtype))


def _scalar(dtype, data=None):
    dtype = _checked_dtype(dtype)
    return np.frombuffer(data, dtype=dtype, count=1)[0] if data is not None else dtype.type()


def _frombuffer(buffer, dtype, shape, order):
    return np.frombuffer(buffer, dtype=_checked_dtype(dtype)).reshape(shape, order=order).copy()


def _encode(text, encoding="utf-8"):
    if not isinstance(text, str) or encoding != "latin1":
        raise UnsafePickleError("refusing _codecs.encode other than pickle's latin1 bytes")
    return codecs.encode(text, encoding)


def _paddle_lodtensor(expression, namespace=None):
    """paddle.save pickles a LoDTensor as eval('data', {'data': array}): return the array, nothing else."""
    if expression != "data" or not isinstance(namespace, dict) or set(namespace) != {"data"}:
        raise UnsafePickleError(f"refusing builtins.eval({expression!r}, ...): only paddle.save's "
                                "eval('data', {'data': array}) is read")
    return namespace["data"]


_ALLOWED = {
    ("builtins", "dict"): dict, ("builtins", "list"): list, ("builtins", "tuple"): tuple,
    ("builtins", "set"): set, ("builtins", "frozenset"): frozenset, ("builtins", "bytearray"): bytearray,
    ("builtins", "complex"): complex, ("builtins", "eval"): _paddle_lodtensor,
    ("__builtin__", "eval"): _paddle_lodtensor,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("_codecs", "encode"): _encode,
    ("numpy", "ndarray"): _ndarray, ("numpy", "dtype"): _checked_dtype,
}
for _core in ("numpy.core", "numpy._core"):
    _ALLOWED[(f"{_core}.multiarray", "_reconstruct")] = _reconstruct
    _ALLOWED[(f"{_core}.multiarray", "scalar")] = _scalar
    _ALLOWED[(f"{_core}.numeric", "_frombuffer")] = _frombuffer

_LEAVES = (str, bytes, bytearray, int, float, complex, bool, type(None), np.generic, np.ndarray, np.dtype)


class RestrictedUnpickler(pickle.Unpickler):
    """An Unpickler that resolves only the globals of NOTE [ Restricted unpickling ]."""

    def __init__(self, file, source="the file"):
        super().__init__(file, encoding="latin1")
        self.source = source

    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise UnsafePickleError(
                f"{self.source} asks to load {module}.{name}, which could run code: minifluid reads only numpy "
                "arrays, numbers, strings and containers from pickles (Paddle's .pdparams/.pdopt)") from None

    def persistent_load(self, pid):
        raise UnsafePickleError(f"{self.source} uses pickle persistent ids, which minifluid does not read")


def _check_tree(obj, source, depth=0):
    if depth > 200:
        raise UnsafePickleError(f"{source} nests containers more than 200 deep")
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise UnsafePickleError(f"{source} holds an array of Python objects")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            _check_tree(key, source, depth + 1)
            _check_tree(value, source, depth + 1)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for item in obj:
            _check_tree(item, source, depth + 1)
    elif not isinstance(obj, _LEAVES):
        raise UnsafePickleError(f"{source} holds a {type(obj).__name__}, which minifluid does not read")


def load(f, source=None):
    """Unpickle from the binary file ``f`` through ``RestrictedUnpickler``."""
    source = source or getattr(f, "name", "the pickle")
    try:
        obj = RestrictedUnpickler(f, source).load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as e:
        raise pickle.UnpicklingError(f"{source} is not a readable pickle: {e}") from None
    _check_tree(obj, source)
    return obj


def loads(data, source="the pickle"):
    return load(io.BytesIO(data), source)


def is_pickle(head):
    """Whether a file starting with the bytes ``head`` looks like a pickle (protocol 2 or later)."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5
