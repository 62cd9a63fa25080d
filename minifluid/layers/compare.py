"""Comparison and logical layers: less_than ... not_equal (fluid's control_flow.py family) and logical_*.

Each appends one op whose boolean output has no gradient (``stop_gradient`` is set).
"""
from ..errors import check_type
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .helper import LayerHelper

__all__ = ["elementwise_equal", "equal", "greater_equal", "greater_than", "less_equal", "less_than", "logical_and",
           "logical_not", "logical_or", "logical_xor", "not_equal"]

_NUMERIC = ("float32", "float64", "int32", "int64")


def _compare(op_type, x, y, cond=None, force_cpu=None):
    check_variable_and_dtype(x, "x", _NUMERIC, op_type)
    check_variable_and_dtype(y, "y", _NUMERIC, op_type)
    if force_cpu is not None and not isinstance(force_cpu, bool):
        raise TypeError(f"The type of 'force_cpu' in {op_type} must be bool, but received "
                        f"{type(force_cpu).__name__}. ")
    if cond is not None:
        check_type(cond, "cond", (Variable,), op_type)
    helper = LayerHelper(op_type, x=x, y=y)
    if cond is None:
        cond = helper.create_variable_for_type_inference("bool", stop_gradient=True)
    helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [cond]},
                     attrs={} if force_cpu is None else {"force_cpu": force_cpu})
    return cond


def less_than(x, y, force_cpu=None, cond=None):
    """``x < y`` elementwise (y broadcast onto x), a bool tensor."""
    return _compare("less_than", x, y, cond, force_cpu)


def less_equal(x, y, cond=None):
    """``x <= y`` elementwise, a bool tensor."""
    return _compare("less_equal", x, y, cond)


def greater_than(x, y, cond=None):
    """``x > y`` elementwise, a bool tensor."""
    return _compare("greater_than", x, y, cond)


def greater_equal(x, y, cond=None):
    """``x >= y`` elementwise, a bool tensor."""
    return _compare("greater_equal", x, y, cond)


def equal(x, y, cond=None):
    """``x == y`` elementwise, a bool tensor."""
    return _compare("equal", x, y, cond)


def elementwise_equal(x, y, name=None):
    """``x == y`` elementwise, a bool tensor (fluid 1.8's second name for ``equal``)."""
    return _compare("equal", x, y, None, False)


def not_equal(x, y, cond=None):
    """``x != y`` elementwise, a bool tensor."""
    return _compare("not_equal", x, y, cond)


def _logical(op_type, x, y=None, out=None, name=None):
    check_variable_and_dtype(x, "x", ("bool",), op_type)
    inputs = {"X": [x]}
    if y is not None:
        check_variable_and_dtype(y, "y", ("bool",), op_type)
        inputs["Y"] = [y]
    if out is not None:
        check_type(out, "out", (Variable,), op_type)
    helper = LayerHelper(op_type, x=x, name=name)
    if out is None:
        out = helper.create_variable_for_type_inference("bool", stop_gradient=True)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]})
    return out


def logical_and(x, y, out=None, name=None):
    """Elementwise ``x and y`` of two bool tensors."""
    return _logical("logical_and", x, y, out, name)


def logical_or(x, y, out=None, name=None):
    """Elementwise ``x or y`` of two bool tensors."""
    return _logical("logical_or", x, y, out, name)


def logical_xor(x, y, out=None, name=None):
    """Elementwise ``x xor y`` of two bool tensors."""
    return _logical("logical_xor", x, y, out, name)


def logical_not(x, out=None, name=None):
    """Elementwise ``not x`` of a bool tensor."""
    return _logical("logical_not", x, None, out, name)
