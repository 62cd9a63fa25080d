"""Collate: a list of samples -> one batch, a list of stacked ndarrays (one per field).

Dispatch goes through ``COLLATE_FN_MAP`` (type -> collate function, looked up along the sample's
MRO), so a new kind of field is supported by registering it, not by editing branches.

NOTE [ Nested batches: dicts and lists of fields ]
Samples that are dicts, or lists/tuples holding dicts, strings or further lists of arrays, collate
as paddle 2.x does: key-wise and position-wise, recursively (``{'image': x, 'label': 3}`` samples
give ``{'image': stacked, 'label': stacked}``; strings stay a list of str). The feeding runtime moves
flat lists of arrays only (a thread queue, shared-memory slots), so ``flatten_batch`` turns such a
batch into a ``StructuredBatch``: its arrays in order, plus ``structure``, the same nesting with each
array replaced by its ``_Leaf`` index and strings kept. ``structure`` crosses with the arrays (in the
slot's ``BatchMeta`` for workers) and ``restore_batch`` rebuilds the user's dicts and lists at the end.
A flat batch (a list of arrays, the common case) stays a plain list and pays nothing.
"""
import numbers
from collections.abc import Mapping, Sequence
from operator import attrgetter

import numpy as np

from ..lod_tensor import LoDTensor
from .feeder import DeferredField, defer_stack

__all__ = ["COLLATE_FN_MAP", "StructuredBatch", "default_collate_fn", "default_convert_fn", "describe_samples",
           "flatten_batch", "restore_batch"]


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
            tuple/list of them, or a dict; dicts and lists may nest (NOTE [ Nested batches ... ]).

    Returns:
        list of ndarrays, one per field, each with the batch as dim 0; a dict of them, key-wise, for dict
        samples, and the same nesting for nested samples (strings stay lists of str). Python ints become
        int64, Python floats float32, bools bool; numpy arrays and scalars keep their dtype.

    Raises:
        TypeError: a field's type cannot be batched (names the field and types), or samples differ in
            their number of fields or keys. ValueError: arrays of one field differ in shape.
    """
    if not batch:
        raise ValueError("default_collate_fn got an empty batch")
    fast = _collate_uniform_arrays(batch)
    if fast is not None:
        return fast
    if _is_nested(batch[0]):
        return _collate_nested(batch, "the sample")
    per_sample = [_sample_fields(s) for s in batch]
    counts = {len(f) for f in per_sample}
    if len(counts) > 1:
        raise TypeError(f"default_collate_fn: samples have different numbers of fields {sorted(counts)}")
    single = len(per_sample[0]) == 1 and per_sample[0][0] is batch[0]
    return [_collate_field(list(column), "the sample" if single else f"field {i}")
            for i, column in enumerate(zip(*per_sample))]


def _is_numbers(obj):
    """A number, or a (nested) list/tuple of numbers only: one array field (``[3]`` as a label)."""
    if isinstance(obj, (list, tuple)):
        return all(map(_is_numbers, obj))
    return isinstance(obj, (numbers.Number, np.generic))


_FIELD_TYPES = (np.ndarray, LoDTensor, DeferredField)  # one field each (a DeferredField is a tuple)


def _is_container(obj):
    """A dict, or a list/tuple that is not a field and not numbers only."""
    if isinstance(obj, Mapping):
        return True
    return isinstance(obj, (list, tuple)) and not isinstance(obj, _FIELD_TYPES) and not _is_numbers(obj)


def _is_nested(sample):
    """A sample that is not a flat list of fields: a dict, a string, or a list/tuple holding one of
    those or a list of arrays."""
    if isinstance(sample, (Mapping, str, bytes)):
        return True
    return _is_container(sample) and any(isinstance(f, (str, bytes)) or _is_container(f) for f in sample)


def _collate_nested(samples, where):
    """paddle 2.x's recursive collate: dicts key-wise (the first sample's keys, in its order), lists and
    tuples position-wise (as lists), strings as lists of str, anything else through ``_collate_field``."""
    first = samples[0]
    if isinstance(first, Mapping):
        keys = list(first)
        for i, sample in enumerate(samples):
            if not isinstance(sample, Mapping) or set(sample) != set(keys):
                got = sorted(sample) if isinstance(sample, Mapping) else type(sample).__name__
                raise TypeError(f"default_collate_fn: {where} is a dict with keys {keys} in the batch's first "
                                f"sample but {got} in its sample {i}")
        return {k: _collate_nested([s[k] for s in samples], f"{where}[{k!r}]") for k in keys}
    if isinstance(first, (str, bytes)):
        if not all(isinstance(s, type(first)) for s in samples):
            raise TypeError(f"default_collate_fn cannot batch {where} of type(s) "
                            f"{', '.join(sorted({type(s).__name__ for s in samples}))}")
        return list(samples)
    if _is_container(first):
        lengths = {len(s) if isinstance(s, (list, tuple)) else -1 for s in samples}
        if len(lengths) > 1:
            raise TypeError(f"default_collate_fn: {where} is a list of {len(first)} fields in the batch's first "
                            "sample but not in every sample (different lengths or types)")
        return [_collate_nested(list(column), f"{where}[{i}]") for i, column in enumerate(zip(*samples))]
    return _collate_field(samples, where)


class _Leaf(int):
    """In a ``StructuredBatch.structure``: the index of an array among the batch's fields."""


class StructuredBatch(list):
    """A nested batch as the feeding runtime moves it: its arrays in order (this list) and ``structure``,
    the user's dicts and lists with ``_Leaf`` indices in the arrays' places (NOTE [ Nested batches ... ])."""
    __slots__ = ("structure",)

    def __init__(self, fields, structure):
        super().__init__(fields)
        self.structure = structure


def flatten_batch(batch, as_field):
    """What a collate function returned -> a list of fields (``as_field(x)`` each), or a
    ``StructuredBatch`` when ``batch`` is a dict or holds dicts, strings or lists of arrays."""
    if isinstance(batch, (list, tuple)) and not _is_nested(batch):
        return [as_field(f) for f in batch]
    if not isinstance(batch, (Mapping, list, tuple)):
        return [as_field(batch)]
    fields = []

    def walk(node):
        if isinstance(node, Mapping):
            return {k: walk(v) for k, v in node.items()}
        if _is_container(node):
            return [walk(v) for v in node]
        if node is None or isinstance(node, (str, bytes)) or type(node) in (int, float, bool):
            return node  # kept as they are, like paddle 2.x (a collate_fn's own Python values)
        fields.append(as_field(node))
        return _Leaf(len(fields) - 1)
    return StructuredBatch(fields, walk(batch))


def restore_batch(fields, convert=None):
    """A batch's fields -> what the user gets: the same list, or the dicts and lists of a
    ``StructuredBatch``; ``convert`` (e.g. to eager tensors) is applied to every array."""
    structure = getattr(fields, "structure", None)
    if structure is None:
        return fields if convert is None else [convert(f) for f in fields]
    convert = convert or (lambda f: f)

    def build(node):
        if type(node) is _Leaf:
            return convert(fields[node])
        if isinstance(node, dict):
            return {k: build(v) for k, v in node.items()}
        if isinstance(node, list):
            return [build(v) for v in node]
        return node
    return build(structure)


def default_collate_deferred(batch):
    """``default_collate_fn`` for a worker process: big uniform fields come back as DeferredFields that
    its shared-memory writer stacks straight into the slot (data/shm.py)."""
    if batch:
        fast = _collate_uniform_arrays(batch, defer=True)
        if fast is not None:
            return fast
    return default_collate_fn(batch)


def default_convert_fn(sample):
    """One sample -> its fields as ndarrays (no batch dim): what the loader yields when ``batch_size=None``.
    A list of arrays, or for a nested sample (a dict ...) the same nesting."""
    if _is_nested(sample):
        return _unbatch(_collate_nested([sample], "the sample"))
    return [np.asarray(_collate_field([f], f"field {i}"))[0] for i, f in enumerate(_sample_fields(sample))]


def _unbatch(node):
    if isinstance(node, dict):
        return {k: _unbatch(v) for k, v in node.items()}
    if isinstance(node, list):
        return node[0] if node and isinstance(node[0], (str, bytes)) else [_unbatch(v) for v in node]
    return node[0]


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
