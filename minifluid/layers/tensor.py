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

__all__ = ["assign", "cast", "concat", "create_global_var", "create_tensor", "fill_constant", "flatten", "ones",
           "reshape", "split", "squeeze", "sums", "transpose", "unsqueeze", "zeros"]


def create_tensor(dtype, name=None, persistable=False):
    """An empty variable of ``dtype`` in the current block."""
    helper = LayerHelper("create_tensor", name=name)
    return helper.create_variable(name=helper.name, dtype=dtype, persistable=persistable)


_GLOBAL_VAR_DTYPES = ("bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A global-block variable filled with ``value`` by the startup program."""
    check_type(shape, "shape", (list, tuple, np.ndarray), "create_global_var")
    for item in shape:
        if not isinstance(item, (int, np.integer)) or isinstance(item, bool):
            raise TypeError(f"The item of shape should be int in create_global_var, but received {item!r}")
    if convert_dtype(dtype) not in _GLOBAL_VAR_DTYPES:  # fluid 1.8's dtypes (no complex ones)
        raise ValueError(f"create_global_var's dtype must be one of {list(_GLOBAL_VAR_DTYPES)}, but received {dtype}")
    helper = LayerHelper("global_var", name=name)
    var = helper.create_global_variable(name=helper.name, shape=list(shape), dtype=dtype,
                                        persistable=persistable, stop_gradient=True)
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

    ``actual_shape`` (an int32 Variable) overrides ``shape`` at run time; ``inplace`` is ignored.
    """
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"reshape: shape must be a list or tuple, got {type(shape).__name__}")
    if sum(1 for d in shape if d == -1) > 1:
        raise ValueError("Only one dimension value of 'shape' in reshape can be -1.")
    extra = {"Shape": [actual_shape]} if actual_shape is not None else None
    return _with_xshape("reshape2", x, {"shape": [int(d) for d in shape]}, name, act, extra)


def transpose(x, perm, name=None):
    """``x`` with its dimensions permuted by ``perm``."""
    if len(perm) != len(x.shape):
        raise ValueError(f"transpose: perm {list(perm)} must have one entry per dimension of x "
                         f"(shape {list(x.shape)})")
    return _with_xshape("transpose2", x, {"axis": [int(p) for p in perm]}, name)


def flatten(x, axis=1, name=None):
    """``x`` as a 2-D tensor: dimensions before ``axis`` form the rows, the rest the columns."""
    return _with_xshape("flatten2", x, {"axis": int(axis)}, name)


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
    """Split along ``dim`` into ``num_or_sections`` equal parts, or parts of the listed sizes."""
    helper = LayerHelper("split", input=input, name=name)
    if isinstance(num_or_sections, int):
        num, sections = num_or_sections, []
        count = num
    else:
        num, sections = 0, [int(s) for s in num_or_sections]
        count = len(sections)
    outs = [helper.create_variable_for_type_inference(input.dtype) for _ in range(count)]
    helper.append_op(type="split", inputs={"X": [input]}, outputs={"Out": outs},
                     attrs={"num": num, "sections": sections, "axis": dim})
    return outs


def sums(input, out=None):
    """Elementwise sum of a list of tensors."""
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
