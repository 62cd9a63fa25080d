"""Collate: a list of samples -> one batch, a list of stacked ndarrays (one per field).

Dispatch goes through ``COLLATE_FN_MAP`` (type -> collate function, looked up along the sample's
MRO), so a new kind of field is supported by registering it, not by editing branches.
"""
import numbers
from collections.abc import Mapping, Sequence
from operator import attrgetter

import numpy as np

from .feeder import defer_stack

__all__ = ["COLLATE_FN_MAP", "default_collate_fn", "default_convert_fn", "describe_samples"]


def _collate_arrays(fields):
    shapes = {np.shape(f) for f in fields}
    if len(shapes) > 1:
        raise ValueError(f"default_collate_fn cannot stack arrays of different shapes {sorted(shapes)}; "
                         "pad them to one shape, or pass a collate_fn that handles them")
    return np.stack(fields, axis=0)


def _collate_python_floats(fields):
    return np.asarray(fields, dtype=np.float32)  # paddle's choice: Python float -> float32


def _collate_python_ints(fields):
    return np.asarray(fields, dtype=np.int64)


def _collate_bools(fields):
    return np.asarray(fields, dtype=np.bool_)


def _collate_numpy_scalars(fields):
    return np.asarray(fields)  # keeps the scalars' own dtype (np.float64 stays float64)


def _collate_nested_sequences(fields):
    """A field that is itself a Python list/tuple of numbers, e.g. a label ``[3]``: becomes an array."""
    try:
        arr = np.asarray(fields)
    except ValueError as exc:  # ragged
        raise ValueError(f"default_collate_fn cannot batch ragged nested lists ({exc})") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"default_collate_fn cannot batch nested lists holding {_leaf_types(fields)}")
    return arr.astype(np.float32) if arr.dtype == np.float64 else arr


COLLATE_FN_MAP = {
    np.ndarray: _collate_arrays,
    np.generic: _collate_numpy_scalars,   # before float/int: np.float64 subclasses float
    bool: _collate_bools,                 # before int: bool subclasses int
    int: _collate_python_ints,
    float: _collate_python_floats,
    list: _collate_nested_sequences,
    tuple: _collate_nested_sequences,
}
"""Field type -> function(list of fields) -> ndarray. Looked up along ``type(field).__mro__``."""


def _lookup(field):
    for cls in type(field).__mro__:
        fn = COLLATE_FN_MAP.get(cls)
        if fn is not None:
            return fn
    return None


def _collate_field(fields, position):
    kinds = {type(f) for f in fields}
    fn = _lookup(fields[0])
    if fn is None or any(_lookup(f) is not fn for f in fields):
        names = ", ".join(sorted(t.__name__ for t in kinds))
        raise TypeError(f"default_collate_fn cannot batch {position} of type(s) {names}: each field must be "
                        "a numpy.ndarray, a number (int, float, bool, numpy scalar) or a list of numbers")
    return fn(fields)


def _sample_fields(sample):
    """The fields of one sample, in order: the sample itself if it is a leaf, else its items/values."""
    if isinstance(sample, Mapping):
        return list(sample.values())
    if isinstance(sample, Sequence) and not isinstance(sample, (str, bytes)):
        return list(sample)
    return [sample]


_FAST_KINDS = frozenset("biufc")
_dtype_of = attrgetter("dtype")


def _stack_uniform(column, defer=False):
    """``column`` stacked when its items are plain ndarrays of one native numeric dtype and shape, else None.
    ``defer``: big items come back as a DeferredField (stacked later, straight into shared memory)."""
    first = column[0]
    if type(first) is not np.ndarray or first.dtype.kind not in _FAST_KINDS or not first.dtype.isnative:
        return None
    if len(set(map(type, column))) != 1 or len(set(map(_dtype_of, column))) != 1:
        return None
    deferred = defer_stack(column, first.dtype) if defer else None
    if deferred is not None:
        return deferred
    try:
        arr = np.array(column, dtype=first.dtype)  # = np.stack for equal shapes, without its Python loop
    except ValueError:  # ragged: the general path raises the descriptive error
        return None
    return arr if arr.shape == (len(column),) + first.shape else None


def _collate_uniform_arrays(batch, defer=False):
    """Fast path for the common case: every sample a tuple/list of plain ndarrays (or a plain ndarray),
    each field of one numeric dtype and shape: one ``np.array`` per field, no per-sample dispatch.
    None otherwise (the general path then decides, and raises its errors); results are equal."""
    first = type(batch[0])
    if first is np.ndarray:
        arr = _stack_uniform(batch, defer)
        return None if arr is None else [arr]
    if first is not tuple and first is not list:
        return None
    if len(set(map(type, batch))) != 1 or len(set(map(len, batch))) != 1:
        return None
    out = []
    for column in zip(*batch):
        arr = _stack_uniform(column, defer)
        if arr is None:
            return None
        out.append(arr)
    return out


def default_collate_fn(batch):
    """Stack each field of a list of samples into one ndarray.

    Args:
        batch (list): samples from ``Dataset.__getitem__``; each is an ndarray or number (one field), a
            tuple/list of them, or a dict (fields in the key order of the first sample).

    Returns:
        list of ndarrays, one per field, each with the batch as dim 0. Python ints become int64, Python
        floats float32, bools bool; numpy arrays and scalars keep their dtype.

    Raises:
        TypeError: a field's type cannot be batched (names the field and types), or samples differ in
            their number of fields. ValueError: arrays of one field differ in shape.
    """
    if not batch:
        raise ValueError("default_collate_fn got an empty batch")
    fast = _collate_uniform_arrays(batch)
    if fast is not None:
        return fast
    per_sample = [_sample_fields(s) for s in batch]
    counts = {len(f) for f in per_sample}
    if len(counts) > 1:
        raise TypeError(f"default_collate_fn: samples have different numbers of fields {sorted(counts)}")
    single = len(per_sample[0]) == 1 and per_sample[0][0] is batch[0]
    return [_collate_field(list(column), "the sample" if single else f"field {i}")
            for i, column in enumerate(zip(*per_sample))]


def default_collate_deferred(batch):
    """``default_collate_fn`` for a worker process: big uniform fields come back as DeferredFields that
    its shared-memory writer stacks straight into the slot (data/shm.py)."""
    if batch:
        fast = _collate_uniform_arrays(batch, defer=True)
        if fast is not None:
            return fast
    return default_collate_fn(batch)


def default_convert_fn(sample):
    """One sample -> list of ndarrays (no batch dim): what the loader yields when ``batch_size=None``."""
    return [np.asarray(_collate_field([f], f"field {i}"))[0] for i, f in enumerate(_sample_fields(sample))]


def _describe(obj):
    if isinstance(obj, np.ndarray):
        return f"ndarray({obj.dtype}, {tuple(obj.shape)})"
    if isinstance(obj, Mapping):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)) and len(obj) <= 8 and not all(isinstance(x, numbers.Number) for x in obj):
        inner = ", ".join(_describe(x) for x in obj)
        return f"({inner})" if isinstance(obj, tuple) else f"[{inner}]"
    return type(obj).__name__


def _leaf_types(fields):
    return ", ".join(sorted({type(x).__name__ for f in fields for x in np.ravel(np.asarray(f, dtype=object))}))


def describe_samples(indices, samples, what="dataset index", limit=4):
    """'dataset index 7 returned (ndarray(float32, (64,)), str)'-style lines, one per distinct structure."""
    groups = {}
    for index, sample in zip(indices, samples):
        groups.setdefault(_describe(sample), []).append(index)
    lines = []
    for text, idx in list(groups.items())[:limit]:
        shown = ", ".join(map(str, idx[:8])) + (f", ... ({len(idx)} samples)" if len(idx) > 8 else "")
        plural = what[:-5] + "indices" if what.endswith("index") else what + "s"
        where = f"{what if len(idx) == 1 else plural} {shown}"
        lines.append(f"{where} returned {text}")
    if len(groups) > limit:
        lines.append(f"... and {len(groups) - limit} more sample structures")
    return "\n".join(lines)
