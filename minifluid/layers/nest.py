"""Nested structures of tensors (lists, tuples, namedtuples, dicts), as fluid's RNN and decoding layers pass
their inputs, states and outputs: leaves in depth-first order, a dict's in key order."""

__all__ = ["assert_same_structure", "flatten", "map_structure", "pack_sequence_as"]


def _is_sequence(x):
    return isinstance(x, (list, tuple, dict))


def _items(x):
    return [x[k] for k in sorted(x)] if isinstance(x, dict) else list(x)


def flatten(structure):
    """The leaves of a nested structure, depth first (a dict's in key order)."""
    if not _is_sequence(structure):
        return [structure]
    return [leaf for item in _items(structure) for leaf in flatten(item)]


def _pack(structure, leaves):
    if not _is_sequence(structure):
        return next(leaves)
    parts = [_pack(item, leaves) for item in _items(structure)]
    if isinstance(structure, dict):
        return type(structure)(zip(sorted(structure), parts))
    if hasattr(structure, "_fields"):  # a namedtuple
        return type(structure)(*parts)
    return type(structure)(parts)


def pack_sequence_as(structure, flat):
    """``flat`` (a list of leaves) in the shape of ``structure``."""
    if len(flatten(structure)) != len(flat):
        raise ValueError(f"The structure has {len(flatten(structure))} leaves but {len(flat)} values were given")
    return _pack(structure, iter(flat))


def assert_same_structure(a, b, what="structures"):
    if _is_sequence(a) != _is_sequence(b) or (_is_sequence(a) and (
            len(a) != len(b) or (isinstance(a, dict) and sorted(a) != sorted(b)))):
        raise ValueError(f"The two {what} don't have the same nested structure: {_sketch(a)} vs {_sketch(b)}")
    if _is_sequence(a):
        for x, y in zip(_items(a), _items(b)):
            assert_same_structure(x, y, what)


def _sketch(s):
    return [_sketch(x) for x in _items(s)] if _is_sequence(s) else "*"


def map_structure(fn, *structures):
    """``fn`` applied to the corresponding leaves of equally nested structures, in their structure."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    leaves = [fn(*args) for args in zip(*(flatten(s) for s in structures))]
    return pack_sequence_as(structures[0], leaves)
