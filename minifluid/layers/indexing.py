"""N-d indexing and order layers of fluid 1.8: gather_nd, scatter_nd_add, where, reverse, expand_as, cumsum
(ops in ops/nd_index.py)."""
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .creation import check_type
from .manip import _op

__all__ = ["cumsum", "expand_as", "gather_nd", "reverse", "scatter_nd_add", "where"]

_INDEX = ("int32", "int64")


def gather_nd(input, index, name=None):
    """``out[i...] = input[index[i...]]``: ``index``'s last dimension K indexes ``input``'s first K dimensions;
    the result has shape ``index.shape[:-1] + input.shape[K:]``."""
    check_type(input, "input", (Variable,), "gather_nd")
    check_variable_and_dtype(index, "index", _INDEX, "gather_nd")
    return _op("gather_nd", {"X": [input], "Index": [index]}, {}, input.dtype, name)


def scatter_nd_add(ref, index, updates, name=None):
    """``ref`` with ``updates[i...]`` added at ``index[i...]`` (repeated positions add up)."""
    check_type(ref, "ref", (Variable,), "scatter_nd_add")
    check_variable_and_dtype(index, "index", _INDEX, "scatter_nd_add")
    check_type(updates, "updates", (Variable,), "scatter_nd_add")
    if ref.dtype != updates.dtype:
        raise ValueError(f"ref and updates must have same data type, got {ref.dtype} and {updates.dtype}.")
    return _op("scatter_nd_add", {"X": [ref], "Index": [index], "Updates": [updates]}, {}, ref.dtype, name)


def where(condition):
    """The positions of ``condition``'s true elements: int64 ``[N, rank(condition)]`` in row-major order."""
    check_type(condition, "condition", (Variable,), "where")
    return _op("where_index", {"Condition": [condition]}, {}, "int64", stop_gradient=True)


def reverse(x, axis):
    """``x`` flipped along ``axis`` (an int or a list of ints)."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64", "uint8"), "reverse")
    check_type(axis, "axis", (int, tuple, list), "reverse")
    return _op("reverse", {"X": [x]}, {"axis": [axis] if isinstance(axis, int) else list(axis)}, x.dtype)


def expand_as(x, target_tensor, name=None):
    """``x`` tiled to ``target_tensor``'s shape (each of its dimensions a multiple of ``x``'s)."""
    dtypes = ("float32", "float64", "int32", "int64", "bool")
    check_variable_and_dtype(x, "x", dtypes, "expand_as")
    check_variable_and_dtype(target_tensor, "target_tensor", dtypes, "expand_as")
    return _op("expand_as", {"X": [x], "target_tensor": [target_tensor]}, {}, x.dtype, name)


def cumsum(x, axis=None, exclusive=None, reverse=None):
    """Running sums along ``axis`` (default -1); ``exclusive`` leaves each element out of its own sum,
    ``reverse`` sums from the end."""
    check_type(x, "x", (Variable,), "cumsum")
    attrs = {k: v for k, v in (("axis", axis), ("exclusive", exclusive), ("reverse", reverse)) if v is not None}
    return _op("cumsum", {"X": [x]}, attrs, x.dtype)
