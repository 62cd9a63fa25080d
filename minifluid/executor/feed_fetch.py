"""Normalise what users feed and fetch; check feeds with fluid's exact messages.

Everything here that depends only on the Program is computed once per plan
(``FeedSpec``); the per-call work is a dtype compare and a short shape loop.
"""
import warnings
from types import SimpleNamespace

import numpy as np

from ..dtypes import to_numpy_dtype
from ..lod_tensor import LoDTensor

__all__ = ["FeedSpec", "normalize_feed", "convert_feed_value", "feed_into", "fetch_names", "split_feed",
           "as_lodtensor", "forget_lod", "lod_feed_names"]


class FeedSpec:
    """What a feed variable expects, precomputed from its Variable: the one feed check, for ``exe.run(feed=)``
    and for the ``read`` op of a non-iterable loader (``read_op=True``: fluid's read op words its
    messages a little differently, and checks the first dimension of LoD tensors too)."""

    __slots__ = ("name", "shape", "dtype", "check", "persistable", "read_op")

    def __init__(self, var, read_op=False):
        self.name = var.name
        self.shape = tuple(var.shape) if var.shape is not None else None
        self.dtype = to_numpy_dtype(var.dtype) if var.dtype else None
        self.check = bool(var.need_check_feed) and self.shape is not None
        self.persistable = bool(var.persistable)
        self.read_op = read_op

    def validate(self, array, has_lod=False):
        """Raise fluid's ValueError when a need_check_feed variable gets the wrong shape, then dtype
        (fluid's order; the variable's shape prints as its tuple, the fed one as a list). Dim 0 is not
        checked when the fed tensor carries LoD (``has_lod``): it counts the sequences' rows then."""
        shape = array.shape
        expect = self.shape
        if len(shape) != len(expect):
            self._shape_error(shape)
        start = 1 if has_lod else 0
        for i in range(start, len(expect)):
            e = expect[i]
            if e >= 0 and shape[i] >= 0 and e != shape[i]:
                self._shape_error(shape)
        if array.dtype != self.dtype:
            template = "The data type of fed Variable %s must be %s, but received %s" if self.read_op else \
                "The data type of fed Variable %r must be %r, but received %r"
            raise ValueError(template % (self.name, self.dtype.name, array.dtype.name))

    def _shape_error(self, shape):
        if self.read_op:
            raise ValueError("The fed Variable %s should have dimensions = %d, shape = [%s], but received fed "
                             "shape [%s]" % (self.name, len(self.shape), ", ".join(map(str, self.shape)),
                                             ", ".join(map(str, shape))))
        raise ValueError("The fed Variable %r should have dimensions = %d, shape = %r, but received fed "
                         "shape %r on each device" % (self.name, len(self.shape), self.shape, list(shape)))


def normalize_feed(feed):
    """Fluid's rules for the ``feed`` argument of a plain (non-compiled) Program."""
    if feed is None:
        return {}
    if isinstance(feed, dict):
        return feed
    if isinstance(feed, (list, tuple)):
        if len(feed) != 1:
            raise AssertionError("Not compiled with data parallel")
        if not isinstance(feed[0], dict):
            raise TypeError("Each element of feed list should be a dict")
        return feed[0]
    raise TypeError(f"feed requires dict as its Parameter. But you passed in {type(feed)}")


def convert_feed_value(name, value, spec):
    """Return (array, lod) for one fed value: ndarrays as is, lists/scalars cast to the var dtype."""
    if type(value) is np.ndarray:
        return value, None
    if isinstance(value, LoDTensor):
        return value._array, (value._lod or None)
    if hasattr(value, "__cuda_array_interface__"):
        return value, None
    dtype = spec.dtype if spec is not None else None
    try:
        array = np.array(value, dtype=dtype)
    except ValueError as e:
        raise TypeError(
            f"Faild to convert input data to a regular ndarray for variable {name!r}: {e}. Please check "
            "whether the data is ragged; for sequences use 'fluid.create_lod_tensor' to build a LoDTensor.") from e
    if array.dtype == object:
        raise TypeError(f"Faild to convert input data to a regular ndarray for variable {name!r}: ragged "
                        "data; use 'fluid.create_lod_tensor' to build a LoDTensor.")
    if array.ndim == 0:
        array = array.reshape(1)
    return array, None


def as_lodtensor(data, place, dtype=None):
    """fluid.executor._as_lodtensor: an ndarray (as is), or a list, tuple or scalar cast to ``dtype``,
    as a LoDTensor on ``place``."""
    if not isinstance(data, np.ndarray):
        assert dtype is not None, "The dtype should be given when feed data is not np.ndarray"
        if not (np.isscalar(data) or isinstance(data, (list, tuple))):
            raise TypeError(f"Convert data of type {type(data)} to Tensor is not supported")
        data, _ = convert_feed_value("data", data, SimpleNamespace(dtype=to_numpy_dtype(dtype)))
    tensor = LoDTensor()
    tensor.set(data, place)
    return tensor


def feed_into(specs, feed, env, lods, to_device=None):
    """Convert, check and store each fed value (``specs``: name -> FeedSpec, None for unknown names);
    ``to_device`` moves it to the executor's GPU (None on CPU)."""
    for name, value in feed.items():
        spec = specs.get(name)
        if spec is None:
            continue
        array, lod = convert_feed_value(name, value, spec)
        if spec.check:
            spec.validate(array, bool(lod))
        env[name] = array if to_device is None else to_device(array)
        if lod:
            lods[name] = lod
        else:
            forget_lod(lods, name)


def lod_feed_names(feed):
    """The names in ``feed`` whose values carry LoD (part of a plan's key: executor.py's NOTE)."""
    return tuple(name for name, value in feed.items() if type(value) is not np.ndarray
                 and isinstance(value, LoDTensor) and value._lod)


def forget_lod(lods, name):
    """``name`` holds no LoD from now on. A replica's ``lods`` (CompiledProgram) is a ChainMap over the
    scope's, whose entries only the scope may drop: a stale one is masked with None (readers use ``get``)."""
    if lods.get(name) is not None:
        lods[name] = None


def warn_unknown_feed(name):
    warnings.warn(f"The variable {name} is not found in program. It is not declared or is pruned.",
                  stacklevel=4)


def fetch_names(fetch_list):
    if fetch_list is None:
        return ()
    if not isinstance(fetch_list, (list, tuple)):
        fetch_list = [fetch_list]
    names = []
    for f in fetch_list:
        if isinstance(f, str):
            names.append(f)
        elif hasattr(f, "name"):
            names.append(f.name)
        else:
            raise TypeError(f"fetch_list items must be Variables or names, got {type(f).__name__}")
    return tuple(names)


def split_feed(array, lod, num_places):
    """Split on dim 0 with fluid's rule: step = ceil(N / P), chunks = ceil(N / step).

    LoD tensors are split by top-level sequences. Returns a list of (array, lod) per chunk.
    """
    if lod:
        top = lod[0]
        n = len(top)
        step = -(-n // num_places)
        chunks, row = [], 0
        for s in range(0, n, step):
            seqs = top[s:s + step]
            rows = sum(seqs)
            chunks.append((array[row:row + rows], [list(seqs)] + [list(level) for level in lod[1:]]))
            row += rows
        return chunks
    n = array.shape[0]
    if n == 0:  # nothing to split: the one (empty) part, as a plain Program would get it
        return [(array, None)]
    step = -(-n // num_places)
    return [(array[s:s + step], None) for s in range(0, n, step)]
