"""Arithmetic operators on static Variables (fluid's ``monkey_patch_variable``): ``a + b``, ``x * 0.5``,
``1 - p``, ``x ** 2``, ``-x``.

A Python number on either side becomes one ``scale`` op (or ``pow`` for ``x ** n``), so no constant
variable is made; two Variables become the ``elementwise_*`` op, the right operand broadcast onto the
left from the trailing dimensions, as ``fluid.layers.elementwise_*`` do. A number on the left of ``/``
or ``**`` is first filled out to the Variable's shape (``fill_any_like``). The ordering comparisons
``<``, ``<=``, ``>``, ``>=`` append fluid's compare ops (a number becomes a [1] ``fill_constant``);
``==`` and ``!=`` are not patched: ``==`` stays identity, which the graph code relies on.
"""
import numbers

from ..framework.variable import Variable
from .helper import LayerHelper
from .math import elementwise_add, elementwise_div, elementwise_mul, elementwise_pow, elementwise_sub, scale
from .tensor import fill_constant

__all__ = ["monkey_patch_variable"]


def _number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _filled_like(var, value):
    """A tensor shaped like ``var`` holding ``value`` everywhere (a number on the left of / or **)."""
    helper = LayerHelper("fill_any_like", x=var)
    out = helper.create_variable_for_type_inference(var.dtype)
    helper.append_op(type="fill_any_like", inputs={"X": [var]}, outputs={"Out": [out]},
                     attrs={"value": float(value), "dtype": -1})
    return out


def _power(var, exponent):
    helper = LayerHelper("pow", x=var)
    out = helper.create_variable_for_type_inference(var.dtype)
    helper.append_op(type="pow", inputs={"X": [var]}, outputs={"Out": [out]}, attrs={"factor": float(exponent)})
    return out


# name: (Variable op Variable, Variable op number, number op Variable)
_OPERATORS = {
    "add": (elementwise_add, lambda x, n: scale(x, 1.0, n), lambda x, n: scale(x, 1.0, n)),
    "sub": (elementwise_sub, lambda x, n: scale(x, 1.0, -n), lambda x, n: scale(x, -1.0, n)),
    "mul": (elementwise_mul, lambda x, n: scale(x, n), lambda x, n: scale(x, n)),
    "truediv": (elementwise_div, lambda x, n: scale(x, 1.0 / n), lambda x, n: elementwise_div(_filled_like(x, n), x)),
    "pow": (elementwise_pow, _power, lambda x, n: elementwise_pow(_filled_like(x, n), x)),
}


def _operator(both, with_number, reflected):
    """``self <op> other`` (or ``other <op> self`` when ``reflected``)."""
    def method(self, other):
        if isinstance(other, Variable):
            return both(other, self) if reflected else both(self, other)
        if _number(other):
            return with_number(self, other)
        return NotImplemented
    return method


def monkey_patch_variable():
    """Give ``Variable`` the arithmetic operators (idempotent)."""
    for name, (both, with_number, number_with) in _OPERATORS.items():
        setattr(Variable, f"__{name}__", _operator(both, with_number, reflected=False))
        setattr(Variable, f"__r{name}__", _operator(both, number_with, reflected=True))
    Variable.__div__, Variable.__rdiv__ = Variable.__truediv__, Variable.__rtruediv__  # fluid's py2 names
    Variable.__neg__ = lambda self: scale(self, -1.0)
    for name, op_type in (("lt", "less_than"), ("le", "less_equal"), ("gt", "greater_than"), ("ge", "greater_equal")):
        setattr(Variable, f"__{name}__", _comparison(op_type))


def _comparison(op_type):
    def method(self, other):
        if _number(other):
            other = fill_constant([1], self.dtype, other)
        elif not isinstance(other, Variable):
            return NotImplemented
        helper = LayerHelper(op_type, x=self)
        out = helper.create_variable_for_type_inference("bool", stop_gradient=True)
        helper.append_op(type=op_type, inputs={"X": [self], "Y": [other]}, outputs={"Out": [out]})
        return out
    return method
