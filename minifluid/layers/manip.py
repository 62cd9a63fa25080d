"""Tensor manipulation and creation layers: argmax/argmin/argsort/topk, slice, shape, one_hot, gather,
scatter, expand, stack/unstack, clip/clip_by_norm, increment, fill_constant_batch_size_like and the
random tensors uniform_random/gaussian_random, with fluid 1.8's signatures and argument checks.

Shapes, expand times and slice bounds may be Variables (fluid's *Tensor / *TensorList inputs, read when the op
runs: layers/tensor_attrs.py).
"""
from ..dtypes import convert_dtype
from ..errors import check_type
from ..framework.variable import Variable, VarType
from .activation import check_variable_and_dtype
from .helper import LayerHelper
from .tensor_attrs import list_attr, shape_attr

__all__ = ["argmax", "argmin", "argsort", "clip", "clip_by_norm", "expand", "fill_constant_batch_size_like",
           "gather", "gaussian_random", "increment", "one_hot", "scatter", "shape", "slice", "stack", "topk",
           "uniform_random", "unstack"]

_ALL = ("bool", "float16", "float32", "float64", "int32", "int64", "uint8")
_NUM = ("float16", "float32", "float64", "int32", "int64", "uint8", "int16", "int8")


def _op(op_type, inputs, attrs, out_dtype, name=None, n_out=1, stop_gradient=False):
    helper = LayerHelper(op_type, name=name)
    dtypes = out_dtype if isinstance(out_dtype, tuple) else (out_dtype,) * n_out
    outs = [helper.create_variable_for_type_inference(d, stop_gradient=stop_gradient) for d in dtypes]
    helper.append_op(type=op_type, inputs=inputs, outputs=dict(zip(_OUT_SLOTS.get(op_type, ("Out",)), outs)),
                     attrs=attrs)
    return outs[0] if len(outs) == 1 else tuple(outs)


_OUT_SLOTS = {"argsort": ("Out", "Indices"), "top_k": ("Out", "Indices"), "stack": ("Y",), "unique": ("Out", "Index"),
              "unique_with_counts": ("Out", "Index", "Count")}


def argmax(x, axis=0):
    """Indices (int64) of the largest values along ``axis``."""
    check_variable_and_dtype(x, "x", _NUM, "argmax")
    return _op("arg_max", {"X": [x]}, {"axis": axis}, "int64", stop_gradient=True)


def argmin(x, axis=0):
    """Indices (int64) of the smallest values along ``axis``."""
    check_variable_and_dtype(x, "x", _NUM, "argmin")
    return _op("arg_min", {"X": [x]}, {"axis": axis}, "int64", stop_gradient=True)


def argsort(input, axis=-1, descending=False, name=None):
    """``(sorted values, their int64 indices)`` along ``axis``; a stable sort."""
    check_variable_and_dtype(input, "input", ("float32", "float64", "int16", "int32", "int64", "uint8"), "argsort")
    return _op("argsort", {"X": [input]}, {"axis": axis, "descending": descending}, (input.dtype, "int64"), name)


def topk(input, k, name=None):
    """``(values, int64 indices)`` of the ``k`` largest entries along the last axis; ``k`` may be a Variable."""
    inputs = {"X": [input]}
    attrs = {}
    if isinstance(k, Variable):
        inputs["K"] = [k]
    else:
        attrs["k"] = int(k)
    values, indices = _op("top_k", inputs, attrs, (input.dtype, "int64"), name)
    indices.stop_gradient = True
    return values, indices


def slice(input, axes, starts, ends):
    """``input[starts[i]:ends[i]]`` along each of ``axes``; negative bounds count from the end and bounds past a
    dimension are clipped to it (fluid's slice op). ``starts`` / ``ends`` may be int32 Variables (a 1-D one, or
    [1] ones in the list), read at run time; the dimensions they bound are then -1 when the program is built."""
    if not isinstance(starts, (list, tuple, Variable)):
        raise ValueError("Input starts must be an Variable, python list or tuple.")
    if not isinstance(ends, (list, tuple, Variable)):
        raise ValueError("Input ends must be an Variable, python list or tuple.")
    return slice_op("slice", input, axes, {"starts": starts, "ends": ends})


def slice_op(op_type, input, axes, bounds, decrease_axis=None, dtypes=None):
    """The slice / strided_slice op over ``bounds`` (name -> list or Variable: starts, ends, strides); a bound
    given by a Variable gets infer_flags -1 (its dimension is -1 until the op runs). ``dtypes``: those a
    Variable bound may have (None: any, as fluid's slice)."""
    inputs, attrs = {"Input": [input]}, {"axes": list(axes)}
    if decrease_axis is not None:
        attrs["decrease_axis"] = list(decrease_axis)
    flags = [1] * len(axes)
    for name, value in bounds.items():
        given = list_attr(value, name, op_type, inputs, attrs, name.title() + "Tensor", name.title() + "TensorList",
                          dtypes)
        flags = [-1] * len(axes) if given is None else [-1 if g else f for f, g in zip(flags, given)]
    attrs["infer_flags"] = flags
    return _op(op_type, inputs, attrs, input.dtype)


def shape(input):
    """The shape of ``input`` at run time, an int32 tensor of rank 1."""
    check_variable_and_dtype(input, "input", _ALL, "shape")
    return _op("shape", {"Input": [input]}, {}, "int32", stop_gradient=True)


def one_hot(input, depth, allow_out_of_range=False):
    """One-hot float32 rows of ``depth`` for ids of shape [..., 1] (int32/int64); out-of-range ids raise unless
    ``allow_out_of_range``, which gives them all-zero rows. ``depth`` may be a Variable of one int (the op's
    depth_tensor, read when it runs; the last dimension is -1 until then)."""
    check_variable_and_dtype(input, "input", ("int32", "int64"), "one_hot")
    return _op("one_hot", *one_hot_args(input, depth, allow_out_of_range, "one_hot"), "float32", stop_gradient=True)


def one_hot_args(input, depth, allow_out_of_range, op_type):
    """(inputs, attrs) of a one_hot / one_hot_v2 op: an int depth is the attribute, a Variable the depth_tensor
    input."""
    check_type(depth, "depth", (int, Variable), op_type)
    if isinstance(depth, Variable):
        depth.stop_gradient = True
        return {"X": [input], "depth_tensor": [depth]}, {"allow_out_of_range": allow_out_of_range}
    return {"X": [input]}, {"depth": int(depth), "allow_out_of_range": allow_out_of_range}


def gather(input, index, overwrite=True):
    """Rows ``input[index]`` (index: int32/int64 of shape [N] or [N, 1])."""
    check_variable_and_dtype(index, "index", ("int32", "int64"), "gather")
    return _op("gather", {"X": [input], "Index": [index]}, {"overwrite": overwrite}, input.dtype)


def scatter(input, index, updates, name=None, overwrite=True):
    """A copy of ``input`` whose rows ``index`` are ``updates`` (``overwrite``) or, with ``overwrite=False``,
    the sum of the updates naming them."""
    return _op("scatter", {"X": [input], "Ids": [index], "Updates": [updates]}, {"overwrite": overwrite},
               input.dtype, name)


def expand(x, expand_times, name=None):
    """``x`` tiled ``expand_times[i]`` times along each dimension i; ``expand_times`` may be a 1-D int Variable
    or hold [1] ones, read at run time (those dimensions are -1 when the program is built)."""
    check_variable_and_dtype(x, "x", ("bool", "float32", "float64", "int32", "int64"), "expand")
    check_type(expand_times, "expand_times", (list, tuple, Variable), "expand")
    if convert_dtype(x.dtype) == "bool" and x.stop_gradient:
        raise ValueError("expand op bool date type must set the stop_gradient to be False")
    if not isinstance(expand_times, Variable) and any(not isinstance(t, Variable) and t <= 0 for t in expand_times):
        raise AssertionError("Each element given in expand_times must not be negative.")
    inputs, attrs = {"X": [x]}, {}
    list_attr(expand_times, "expand_times", "expand", inputs, attrs, "ExpandTimes", "expand_times_tensor", None)
    return _op("expand", inputs, attrs, x.dtype, name)


def stack(x, axis=0):
    """Join same-shaped tensors along a new ``axis``; a LoDTensorArray (alone in the list) stacks its entries."""
    axis = 0 if axis is None else axis
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    if xs[0].type == VarType.LOD_TENSOR_ARRAY:
        if len(xs) != 1:
            raise ValueError(f"If the elements of 'x' in stack are Variable(LoDTensorArray), number of the elements "
                             f"must be 1, but received {len(xs)}.")
        check_variable_and_dtype(xs[0], "x", ("float16", "float32", "float64", "int32", "int64"), "stack")
        from .control_flow import tensor_array_to_tensor  # noqa: PLC0415  (control_flow imports this module)
        return tensor_array_to_tensor(xs[0], axis, use_stack=True)[0]
    return _op("stack", {"X": xs}, {"axis": axis}, xs[0].dtype)


def unstack(x, axis=0, num=None):
    """Split ``x`` along ``axis`` into ``x.shape[axis]`` (or ``num``) tensors of one rank less."""
    num = x.shape[axis] if num is None else num
    if num is None or num < 0:
        raise ValueError(f"unstack: the size of axis {axis} of {x.name!r} is unknown; pass num")
    helper = LayerHelper("unstack")
    outs = [helper.create_variable_for_type_inference(x.dtype) for _ in range(num)]
    helper.append_op(type="unstack", inputs={"X": [x]}, outputs={"Y": outs}, attrs={"axis": axis, "num": num})
    return outs


def clip(x, min, max, name=None):
    """Values of ``x`` limited to [min, max]."""
    check_variable_and_dtype(x, "x", ("float32", "float64"), "clip")
    return _op("clip", {"X": [x]}, {"min": float(min), "max": float(max)}, x.dtype, name)


def clip_by_norm(x, max_norm, name=None):
    """``x * max_norm / ||x||_2`` when the L2 norm of ``x`` exceeds ``max_norm``, else ``x``."""
    return _op("clip_by_norm", {"X": [x]}, {"max_norm": float(max_norm)}, x.dtype, name)


def increment(x, value=1.0, in_place=True):
    """``x + value`` for a one-element ``x``; in place by default (the counter of a loop or a step)."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), "increment")
    if x.shape is not None and len(x.shape) and x.shape != (1,) and list(x.shape) != [1]:
        raise ValueError(f"increment: the input must have exactly one element, got shape {list(x.shape)}")
    helper = LayerHelper("increment")
    out = x if in_place else helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="increment", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"step": float(value)})
    return out


def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0, output_dim_idx=0, force_cpu=False):
    """A tensor of ``shape`` filled with ``value`` whose dimension ``output_dim_idx`` is the run-time size of
    ``input``'s dimension ``input_dim_idx`` (the batch size)."""
    dtype = convert_dtype(dtype)
    attrs = {"shape": [int(d) for d in shape], "dtype": dtype, "value": float(value), "input_dim_idx": input_dim_idx,
             "output_dim_idx": output_dim_idx, "force_cpu": force_cpu}
    return _op("fill_constant_batch_size_like", {"Input": [input]}, attrs, dtype, stop_gradient=True)


def _random(op_type, shape, dtype, attrs, name=None):
    dtype = convert_dtype(dtype)
    if dtype not in ("float16", "float32", "float64"):
        raise TypeError(f"The data type of 'dtype' in {op_type} must be ['float32', 'float64'], but received "
                        f"{dtype}. ")
    if not isinstance(shape, (list, tuple, Variable)):
        raise TypeError(f"The type of 'shape' in {op_type} must be Variable, list or tuple, but received "
                        f"{type(shape).__name__}. ")
    inputs, attrs = {}, {**attrs, "dtype": dtype}
    shape_attr(shape, op_type, inputs, attrs)
    return _op(op_type, inputs, attrs, dtype, name, stop_gradient=True)


def uniform_random(shape, dtype="float32", min=-1.0, max=1.0, seed=0, name=None):
    """Uniform samples in [min, max); ``seed`` 0 draws fresh numbers each run, another seed the same each run."""
    return _random("uniform_random", shape, dtype, {"min": float(min), "max": float(max), "seed": int(seed)}, name)


def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype="float32", name=None):
    """Normal samples N(mean, std^2); ``seed`` as in uniform_random."""
    return _random("gaussian_random", shape, dtype, {"mean": float(mean), "std": float(std), "seed": int(seed)}, name)
