"""Attributes a layer may take as Variables, placed as fluid 1.8's layers place them.

A list given as one Variable goes to the op's ``<Name>Tensor`` input; a list holding some Variables goes to
its ``<Name>TensorList`` input, one ``[1]`` int32 tensor per entry (the ints become constants), while the
attribute keeps the ints with -1 where a Variable stands; a list of ints stays the attribute. The op reads
the tensors at run time (ops/tensor_attrs.py).
"""
import numbers

from ..dtypes import convert_dtype
from ..framework.variable import Variable

__all__ = ["contains_variable", "list_attr", "shape_attr"]


def contains_variable(values):
    return isinstance(values, (list, tuple)) and any(isinstance(v, Variable) for v in values)


def _int32(var, name, op_type, dtypes):
    from .tensor import cast
    var.stop_gradient = True
    if dtypes is None:
        return var
    if convert_dtype(var.dtype) not in dtypes:
        raise TypeError(f"The data type of '{name}' in {op_type} must be {list(dtypes)}, but received "
                        f"{convert_dtype(var.dtype)}. ")
    return cast(var, "int32") if convert_dtype(var.dtype) == "int64" else var


def list_attr(value, name, op_type, inputs, attrs, tensor_slot, list_slot, dtypes=("int32", "int64"),
              placeholders=True):
    """Put list ``value`` into ``inputs`` / ``attrs`` (module docstring); a Variable of a dtype outside
    ``dtypes`` is fluid's TypeError, int64 ones are cast to int32 (``dtypes=None``: taken as they are, the
    kernel reads their values as ints); ``placeholders=False`` leaves the attribute
    out when per-entry tensors give the list (fluid's unsqueeze). Returns, per entry, whether a Variable
    gives it (all True for a whole-list Variable, whose entries are then None)."""
    from .tensor import fill_constant
    if isinstance(value, Variable):
        inputs[tensor_slot] = [_int32(value, name, op_type, dtypes)]
        return None
    values = list(value)
    for i, v in enumerate(values):
        if not isinstance(v, (numbers.Integral, Variable)):
            raise TypeError(f"The type of '{name}[{i}]' in {op_type} must be int or Variable, but received "
                            f"{type(v).__name__} ({v!r})")
    if not contains_variable(values):
        attrs[name] = [int(v) for v in values]
        return [False] * len(values)
    inputs[list_slot] = [_int32(v, f"{name}[{i}]", op_type, dtypes) if isinstance(v, Variable)
                         else fill_constant([1], "int32", int(v), force_cpu=True) for i, v in enumerate(values)]
    if placeholders:
        attrs[name] = [-1 if isinstance(v, Variable) else int(v) for v in values]
    return [isinstance(v, Variable) for v in values]


def shape_attr(shape, op_type, inputs, attrs):
    """A creation op's ``shape`` (``list_attr`` into ShapeTensor / ShapeTensorList); fluid asserts that a
    list is not empty."""
    if not isinstance(shape, Variable):
        assert len(shape) > 0, f"The size of 'shape' in {op_type} can't be zero, but received {len(shape)}."
    list_attr(shape, "shape", op_type, inputs, attrs, "ShapeTensor", "ShapeTensorList")
