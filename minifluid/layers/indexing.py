"""Indexing and order layers of fluid 1.8: gather_nd, scatter_nd_add, scatter_nd, where, nonzero, reverse, flip,
roll, tril, triu, expand_as, cumsum (ops in ops/nd_index.py); index_select, index_sample, unique,
unique_with_counts, strided_slice, multiplex, shard_index (ops/select.py)."""
from ..dtypes import convert_dtype
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .creation import check_type
from .manip import _op, slice, slice_op
from .tensor import reshape, zeros

__all__ = ["cumsum", "expand_as", "flip", "gather_nd", "index_sample", "index_select", "multiplex", "nonzero",
           "reverse", "roll", "scatter_nd", "scatter_nd_add", "shard_index", "strided_slice", "tril", "triu", "unique",
           "unique_with_counts", "where"]

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


def scatter_nd(index, updates, shape, name=None):
    """A zero tensor of ``shape`` with ``updates[i...]`` added at ``index[i...]`` (``scatter_nd_add`` on zeros)."""
    check_type(updates, "updates", (Variable,), "scatter_nd")
    return scatter_nd_add(zeros(shape, updates.dtype), index, updates, name)


def where(condition):
    """The positions of ``condition``'s true elements: int64 ``[N, rank(condition)]`` in row-major order."""
    check_type(condition, "condition", (Variable,), "where")
    return _op("where_index", {"Condition": [condition]}, {}, "int64", stop_gradient=True)


def nonzero(input, as_tuple=False):
    """``where(input)``; with ``as_tuple``, one ``[N, 1]`` column of positions per dimension."""
    positions = where(input)
    if not as_tuple:
        return positions
    rank = len(input.shape)
    return tuple(slice(positions, axes=[1], starts=[i], ends=[i + 1]) for i in range(rank)) if rank > 1 else \
        (positions,)


def index_select(input, index, dim=0):
    """The slices of ``input`` at ``index`` (1-D int) along ``dim``."""
    check_variable_and_dtype(input, "x", ("float32", "float64", "int32", "int64"), "index_select")
    check_variable_and_dtype(index, "index", _INDEX, "index_select")
    return _op("index_select", {"X": [input], "Index": [index]}, {"dim": dim}, input.dtype)


def index_sample(x, index):
    """``out[i, j] = x[i, index[i, j]]`` for a 2-D ``x`` and a 2-D int ``index`` with as many rows."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), "fluid.layers.index_sample")
    check_variable_and_dtype(index, "index", _INDEX, "fluid.layers.index_sample")
    return _op("index_sample", {"X": [x], "Index": [index]}, {}, x.dtype)


def _unique(x, dtype, api, counts):
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), api)
    if convert_dtype(dtype) not in _INDEX:
        raise TypeError(f"Op {api}, index dtype must be int32 or int64, got {dtype}")
    dtype = convert_dtype(dtype)
    return _op(api, {"X": [x]}, {"dtype": dtype}, (x.dtype,) + (dtype,) * (1 + counts), stop_gradient=True)


def unique(x, dtype="int32"):
    """``(out, index)``: the distinct values of ``x`` in order of first appearance, and for each element of ``x``
    the position of its value in ``out``."""
    return _unique(x, dtype, "unique", False)


def unique_with_counts(x, dtype="int32"):
    """``unique``'s ``(out, index)`` and ``count``, how many times each value of ``out`` appears (``x`` 1-D)."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), "unique_with_counts")
    if len(x.shape) != 1:
        raise ValueError(f"Op unique_with_counts, x must not be null and size of dim must be 1, got shape "
                         f"{list(x.shape)}")
    return _unique(x, dtype, "unique_with_counts", True)


def reverse(x, axis):
    """``x`` flipped along ``axis`` (an int or a list of ints)."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64", "uint8"), "reverse")
    check_type(axis, "axis", (int, tuple, list), "reverse")
    return _op("reverse", {"X": [x]}, {"axis": [axis] if isinstance(axis, int) else list(axis)}, x.dtype)


def flip(input, dims, name=None):
    """``input`` flipped along each of ``dims`` (a list or tuple)."""
    check_variable_and_dtype(input, "X", ("float16", "float32", "float64", "int32", "int64", "bool"), "flip")
    check_type(dims, "dims", (list, tuple), "flip")
    if not dims:
        raise ValueError("flip: len(dims) must be greater than 0.")
    return _op("flip", {"X": [input]}, {"dims": list(dims)}, input.dtype, name)


def roll(input, shifts, dims=None):
    """``input`` rolled by ``shifts`` along ``dims`` (ints or lists); with no ``dims``, over its flattened
    elements."""
    shifts, dims = [shifts] if isinstance(shifts, int) else shifts, [dims] if isinstance(dims, int) else dims
    check_type(shifts, "shifts", (list, tuple), "roll")
    if dims:
        check_type(dims, "dims", (list, tuple), "roll")
    x = input if dims else reshape(input, [-1, 1])
    out = _op("roll", {"X": [x]}, {"shifts": list(shifts), "dims": list(dims) if dims else [0]}, input.dtype)
    return out if dims else reshape(out, list(input.shape))


def _triangle(input, diagonal, name, lower):
    api = "tril" if lower else "triu"
    check_variable_and_dtype(input, "x", ("float32", "float64", "int32", "int64"), api)
    if len(input.shape) < 2:
        raise ValueError(f"input shape in {api} must be at least 2-D, got {list(input.shape)}")
    if not isinstance(diagonal, int) or isinstance(diagonal, bool):
        raise TypeError(f"diagonal in {api} must be a python Int, got {type(diagonal).__name__}")
    return _op("tril_triu", {"X": [input]}, {"diagonal": diagonal, "lower": lower}, input.dtype, name)


def tril(input, diagonal=0, name=None):
    """``input`` with the elements above diagonal ``diagonal`` of its last two dimensions set to 0."""
    return _triangle(input, diagonal, name, True)


def triu(input, diagonal=0, name=None):
    """``input`` with the elements below diagonal ``diagonal`` of its last two dimensions set to 0."""
    return _triangle(input, diagonal, name, False)


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


def strided_slice(input, axes, starts, ends, strides):
    """``input[start:end:stride]`` along each of ``axes`` (Python's slice rules); ``starts``, ``ends`` and
    ``strides`` are lists of ints and [1] int32 Variables, or 1-D int32 Variables (read at run time)."""
    check_variable_and_dtype(input, "input", ("float32", "float64", "int32", "int64"), "strided_slice")
    check_type(axes, "axes", (list, tuple), "strided_slice")
    bounds = {"starts": starts, "ends": ends, "strides": strides}
    for name, value in bounds.items():
        check_type(value, name, (list, tuple, Variable), "strided_slice")
    return slice_op("strided_slice", input, axes, bounds, dtypes=("int32",))


def multiplex(inputs, index):
    """Row i of the result is row i of ``inputs[index[i]]`` (``index``: int ``[N, 1]``)."""
    check_type(inputs, "inputs", (list,), "multiplex")
    if len(inputs) < 2:
        raise ValueError("inputs should be a list object with at least 2 elements.")
    for i, x in enumerate(inputs):
        check_variable_and_dtype(x, f"input[{i}]", ("float32", "float64", "int32", "int64"), "multiplex")
    check_variable_and_dtype(index, "index", _INDEX, "multiplex")
    return _op("multiplex", {"X": list(inputs), "Ids": [index]}, {}, inputs[0].dtype)


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):
    """Each index's offset inside shard ``shard_id`` of ``nshards`` equal shards of ``[0, index_num)``, or
    ``ignore_value`` where the index lies in another shard."""
    check_variable_and_dtype(input, "input", ("int64",), "shard_index")
    if shard_id < 0 or shard_id >= nshards:
        raise ValueError(f"The shard_id({shard_id}) should be in [0, {nshards})")
    return _op("shard_index", {"X": [input]}, {"index_num": index_num, "nshards": nshards, "shard_id": shard_id,
                                              "ignore_value": ignore_value}, input.dtype, stop_gradient=True)
