"""Tensor layers: creation (fill_constant, zeros, ones, create_tensor, create_global_var, assign),
dtype (cast) and shape plumbing (reshape, transpose, flatten, squeeze, unsqueeze, concat, split, sums)."""
import warnings

import numpy as np

from ..dtypes import convert_dtype
from ..errors import check_type
from ..framework import dygraph_mode
from ..framework.variable import Variable, VarType
from ..initializer import Constant, NumpyArrayInitializer
from .helper import LayerHelper, check_variable_and_dtype
from .tensor_attrs import list_attr, shape_attr

__all__ = ["assign", "cast", "concat", "create_global_var", "create_tensor", "fill_constant", "flatten",
           "get_tensor_from_selected_rows", "merge_selected_rows", "ones", "reshape", "split", "squeeze", "sums",
           "transpose", "unsqueeze", "zeros"]


def create_tensor(dtype, name=None, persistable=False):
    """An empty variable of ``dtype`` in the current block."""
    helper = LayerHelper("create_tensor", name=name)
    return helper.create_variable(name=helper.name, dtype=dtype, persistable=persistable)


_GLOBAL_VAR_DTYPES = ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A global-block variable filled with ``value`` (a number, or a one-element array) by the startup
    program."""
    check_type(shape, "shape", (list, tuple, np.ndarray), "create_global_var")
    for item in shape:
        if not isinstance(item, (int, np.integer)) or isinstance(item, bool):
            raise TypeError(f"The item of shape should be int in create_global_var, but received {item!r}")
    if convert_dtype(dtype) not in _GLOBAL_VAR_DTYPES:  # fluid 1.8's dtypes (no complex ones)
        raise ValueError(f"create_global_var's dtype must be one of {list(_GLOBAL_VAR_DTYPES)}, but received {dtype}")
    helper = LayerHelper("global_var", name=name)
    var = helper.create_global_variable(name=helper.name, shape=list(shape), dtype=dtype,
                                        persistable=persistable, stop_gradient=True)
    if isinstance(value, np.ndarray) and value.size == 1:  # float() of one is a TypeError on numpy 2.4
        value = value.item()
    helper.set_variable_initializer(var, Constant(value=float(value), force_cpu=force_cpu))
    return var


_FILL_DTYPES = ("bool", "float16", "float32", "float64", "int32", "int64")


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of ``shape`` filled with ``value`` (written into ``out`` when given). ``shape`` may be a 1-D
    int32 / int64 Variable or hold [1] ones, and ``value`` a [1] Variable: the op reads them when it runs
    (the dimensions they give are -1 until then)."""
    try:
        dtype = convert_dtype(dtype)
    except TypeError:  # fluid's check_dtype: an unknown dtype name is a ValueError
        raise ValueError(f"dtype must be any of [bool, float16, float32, float64, int8, int16, int32, int64, "
                         f"uint8], but received {dtype}") from None
    if dtype not in _FILL_DTYPES:
        raise TypeError(f"The data type of 'dtype' in fill_constant must be {list(_FILL_DTYPES)}, but received "
                        f"{dtype}. ")
    check_type(shape, "shape", (Variable, list, tuple), "fill_constant")
    inputs, attrs = {}, {"force_cpu": force_cpu, "dtype": dtype}
    if isinstance(value, Variable):
        inputs["ValueTensor"] = [value]
    else:
        attrs["value"] = float(value)
        attrs["str_value"] = str(int(value)) if dtype in ("int32", "int64") else str(float(value))
    if out is not None and (not isinstance(out, Variable) or convert_dtype(out.dtype) != dtype):
        raise TypeError(f"The data type of 'out' in fill_constant must be ['{dtype}'], but received "
                        f"{getattr(out, 'dtype', type(out).__name__)}. ")
    shape_attr(shape, "fill_constant", inputs, attrs)
    helper = LayerHelper("fill_constant")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="fill_constant", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


def zeros(shape, dtype, force_cpu=False):
    return fill_constant(shape, dtype, 0.0, force_cpu)


def ones(shape, dtype, force_cpu=False):
    return fill_constant(shape, dtype, 1.0, force_cpu)


def assign(input, output=None):
    """Copy a Variable (``assign``) or a numpy array (``assign_value``) into ``output``."""
    helper = LayerHelper("assign")
    if isinstance(input, Variable):
        output = output if output is not None else helper.create_variable_for_type_inference(input.dtype)
        helper.append_op(type="assign", inputs={"X": [input]}, outputs={"Out": [output]})
        return output
    if not isinstance(input, np.ndarray):
        raise TypeError(f"assign: input must be a Variable or numpy.ndarray, got {type(input).__name__}")
    dtype = convert_dtype(input.dtype)
    if output is None and dygraph_mode._tracer is not None:  # dygraph: the array as a new eager tensor
        return dygraph_mode._tracer.eager_tensor(input.copy())
    output = output if output is not None else helper.create_variable_for_type_inference(dtype)
    output.shape = output.shape if output.shape is not None else tuple(input.shape)
    op_type, attrs = NumpyArrayInitializer(input)._op(output, None)
    helper.append_op(type=op_type, outputs={"Out": [output]}, attrs={**attrs, "shape": list(input.shape),
                                                                     "dtype": dtype})
    return output


_CAST_FROM = ("bool", "float16", "float32", "float64", "int32", "int64", "uint8")


def cast(x, dtype):
    """``x`` converted to ``dtype`` (fluid 1.8's checks: a Variable of and to the dtypes its cast kernel has)."""
    check_type(x, "x", (Variable,), "cast")
    for what, value, kinds in (("x", x.dtype, _CAST_FROM), ("dtype", dtype, _CAST_FROM + ("int8",))):
        if convert_dtype(value) not in kinds:
            raise TypeError(f"The data type of '{what}' in cast must be {list(kinds)}, but received "
                            f"{convert_dtype(value)}. ")
    helper = LayerHelper("cast", x=x)
    dtype = convert_dtype(dtype)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="cast", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"in_dtype": x.dtype, "out_dtype": dtype})
    return out


def _with_xshape(op_type, x, attrs, name=None, act=None, extra_inputs=None):
    helper = LayerHelper(op_type, x=x, name=name, act=act)
    out = helper.create_variable_for_type_inference(x.dtype)
    x_shape = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type=op_type, inputs={"X": [x], **(extra_inputs or {})},
                     outputs={"Out": [out], "XShape": [x_shape]}, attrs=attrs)
    return helper.append_activation(out)


def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """``x`` with a new shape: one dimension may be -1 (inferred), 0 copies the input's dimension.

    ``shape`` may be a 1-D int Variable or hold [1] int Variables, read at run time (those dimensions are -1
    until then); ``actual_shape`` (an int32 Variable) overrides a list of ints at run time; ``inplace`` is
    ignored.
    """
    check_variable_and_dtype(x, "x", ("float16", "float32", "float64", "int32", "int64"), "reshape")
    check_type(shape, "shape", (list, tuple, Variable), "reshape")
    check_type(actual_shape, "actual_shape", (Variable, type(None)), "reshape")
    if not isinstance(shape, Variable):
        assert len(shape) > 0, f"The size of 'shape' in reshape can't be zero, but received {len(shape)}."
        ints = [(i, d) for i, d in enumerate(shape) if not isinstance(d, Variable)]
        assert sum(1 for _, d in ints if d == -1) <= 1, "Only one dimension value of 'shape' in reshape can be -1."
        for i, d in ints:
            assert d != 0 or i < len(x.shape), (
                f"The index of 0 in `shape` must be less than the input tensor X's dimensions. But received "
                f"shape[{i}] = 0, X's dimensions = {len(x.shape)}.")
            assert d >= -1, (f"Each dimension value of 'shape' in reshape must not be negative except one unknown "
                             f"dimension. But received shape[{i}] = {d}.")
    inputs, attrs = {}, {}
    list_attr(shape, "shape", "reshape", inputs, attrs, "Shape", "ShapeTensor", None)
    if actual_shape is not None and not inputs:
        actual_shape.stop_gradient = True
        inputs["Shape"] = [actual_shape]
    return _with_xshape("reshape2", x, attrs, name, act, inputs)


def transpose(x, perm, name=None):
    """``x`` with its dimensions permuted by ``perm``."""
    check_variable_and_dtype(x, "x", ("float16", "float32", "float64", "int32", "int64"), "transpose")
    check_type(perm, "perm", (list, tuple), "transpose")
    if len(perm) != len(x.shape):
        raise ValueError(f"Input(perm) is the permutation of dimensions of Input(x), its length should be equal to "
                         f"dimensions of Input(x), but received dimension of Input(x) is {len(x.shape)}, the length "
                         f"of Input(perm) is {len(perm)}.")
    for i, d in enumerate(perm):
        if d >= len(x.shape):
            raise ValueError(f"Each element in Input(perm) should be less than Input(x)'s dimension, but {i}-th "
                             f"element in Input(perm) is {d} which exceeds Input(x)'s dimension {len(x.shape)}.")
    return _with_xshape("transpose2", x, {"axis": [int(p) for p in perm]}, name)


def flatten(x, axis=1, name=None):
    """``x`` as a 2-D tensor: dimensions before ``axis`` form the rows, the rest the columns."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int8", "int32", "int64"), "flatten")
    if not isinstance(axis, int) or not 0 <= axis <= len(x.shape):
        raise ValueError("The axis should be a int, and in range [0, rank(x)]")
    return _with_xshape("flatten2", x, {"axis": axis}, name)


def squeeze(input, axes, name=None):
    return _with_xshape("squeeze2", input, {"axes": [int(a) for a in axes]}, name)


def unsqueeze(input, axes, name=None):
    """``input`` with size-1 dimensions inserted at ``axes`` (an int, a list of ints and int32 Variables, or
    one int32 Variable, read at run time)."""
    if not isinstance(axes, (int, list, tuple, Variable)):
        raise TypeError(f"The type of 'axes' in unsqueeze must be int, list, tuple or Variable, but received "
                        f"{type(axes)}.")
    inputs, attrs = {}, {}
    list_attr([axes] if isinstance(axes, int) else axes, "axes", "unsqueeze", inputs, attrs, "AxesTensor",
              "AxesTensorList", placeholders=False)
    return _with_xshape("unsqueeze2", input, attrs, name, extra_inputs=inputs)


def concat(input, axis=0, name=None):
    """Join a list of tensors along ``axis`` (an int, or a [1] int Variable read when the op runs); a
    LoDTensorArray (alone in the list) joins its entries."""
    if isinstance(input, tuple):
        input = list(input)
    elif not isinstance(input, list):
        warnings.warn(f"The type of input in concat should be list, but received {type(input)}.")
        input = [input]
    for i, x in enumerate(input):
        check_variable_and_dtype(x, f"input[{i}]", ("float16", "float32", "float64", "int32", "int64"), "concat")
    check_type(axis, "axis", (int, Variable), "concat")
    if input[0].type == VarType.LOD_TENSOR_ARRAY:
        if len(input) != 1:
            raise ValueError(f"If the elements of 'input' in concat are Variable(LoDTensorArray), number of the "
                             f"elements must be 1, but received {len(input)}.")
        from .control_flow import tensor_array_to_tensor  # noqa: PLC0415  (control_flow imports this module)
        return tensor_array_to_tensor(input[0], axis, name)[0]
    helper = LayerHelper("concat", input=input, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    inputs, attrs = {"X": input}, {}
    if isinstance(axis, Variable):
        axis.stop_gradient = True
        inputs["AxisTensor"] = [axis]
    else:
        attrs["axis"] = axis
    helper.append_op(type="concat", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def split(input, num_or_sections, dim=-1, name=None):
    """Split along ``dim`` into ``num_or_sections`` equal parts, or parts of the listed sizes (one may be -1:
    the rest). ``dim`` may be a [1] int Variable and the sizes [1] int Variables, read at run time (the
    dimensions they decide are -1 until then)."""
    if not isinstance(num_or_sections, (int, list, tuple)) or isinstance(num_or_sections, bool):
        raise TypeError(f"The type of 'num_or_sections' in split must be int, list or tuple, but received "
                        f"{type(num_or_sections)}.")
    if not isinstance(dim, (int, Variable)):
        raise TypeError(f"The type of 'dim' in split must be int or Variable, but received {type(dim)}.")
    helper = LayerHelper("split", input=input, name=name)
    inputs, attrs = {"X": [input]}, {"num": num_or_sections if isinstance(num_or_sections, int) else 0}
    if isinstance(dim, Variable):
        dim.stop_gradient = True
        inputs["AxisTensor"] = [dim]
    else:
        dim = dim + len(input.shape) if dim < 0 else dim
        attrs["axis"] = dim
    known = isinstance(dim, int) and input.shape[dim] > 0
    if isinstance(num_or_sections, int):
        assert num_or_sections > 1, "num_or_sections must be more than 1."
        assert not known or input.shape[dim] % num_or_sections == 0, (
            f"The input's size along the split dimension must be evenly divisible by Attr(num_or_sections). But "
            f"{input.shape[dim]} is not evenly divisible by {num_or_sections}. ")
        count = num_or_sections
    else:
        assert not known or len(num_or_sections) <= input.shape[dim], (
            "len(num_or_sections) must not be more than input.shape[dim].")
        assert sum(1 for s in num_or_sections if not isinstance(s, Variable) and s == -1) <= 1, (
            "Only one value of 'num_or_section' in split can be -1.")
        list_attr(num_or_sections, "sections", "split", inputs, attrs, None, "SectionsTensorList", None)
        count = len(num_or_sections)
    outs = [helper.create_variable_for_type_inference(input.dtype) for _ in range(count)]
    helper.append_op(type="split", inputs=inputs, outputs={"Out": outs}, attrs=attrs)
    return outs


def sums(input, out=None):
    """Elementwise sum of a list of tensors."""
    check_type(input, "input", (Variable, tuple, list), "sums")
    for item in input if isinstance(input, (tuple, list)) else [input]:
        check_variable_and_dtype(item, "input", ("float32", "float64", "int32", "int64"), "sums")
    helper = LayerHelper("sum", input=input)
    out = out if out is not None else helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op(type="sum", inputs={"X": helper.multiple_input()}, outputs={"Out": [out]})
    return out


def Print(input, first_n=-1, message=None, summarize=20, print_tensor_name=True, print_tensor_type=True,
          print_tensor_shape=True, print_tensor_lod=True, print_phase="both"):
    """Print ``input`` each time the program runs (``first_n`` times at most, -1: always; the first
    ``summarize`` values, -1: all) and return it unchanged; ``print_phase`` 'forward', 'backward'
    (its gradient) or 'both'."""
    if print_phase not in ("forward", "backward", "both"):
        raise ValueError(f"print_phase must be 'forward', 'backward' or 'both', got {print_phase!r}")
    helper = LayerHelper("print")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="print", inputs={"In": [input]}, outputs={"Out": [out]},
                     attrs={"first_n": int(first_n), "message": message or "", "summarize": int(summarize),
                            "print_tensor_name": print_tensor_name, "print_tensor_type": print_tensor_type,
                            "print_tensor_shape": print_tensor_shape, "print_tensor_lod": print_tensor_lod,
                            "print_phase": print_phase, "var_name": input.name})
    return out


def _selected_rows_op(op_type, x, name):
    check_type(x, "x", (Variable,), op_type)
    if x.type != VarType.SELECTED_ROWS:
        raise TypeError(f"The type of 'x' in {op_type} must be SELECTED_ROWS, but received {x.type}")
    helper = LayerHelper(op_type, x=x, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def merge_selected_rows(x, name=None):
    """The SelectedRows ``x`` with its repeated rows summed, row ids ascending (ops/selected_rows.py)."""
    out = _selected_rows_op("merge_selected_rows", x, name)
    out.type = VarType.SELECTED_ROWS
    return out


def get_tensor_from_selected_rows(x, name=None):
    """The value tensor of the SelectedRows ``x`` (one row per row id, as held)."""
    return _selected_rows_op("get_tensor_from_selected_rows", x, name)
