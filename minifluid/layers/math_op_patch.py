"""Arithmetic operators on static Variables (fluid's ``monkey_patch_variable``): ``a + b``, ``x * 0.5``,
``1 - p``, ``x ** 2``, ``-x``, ``i % 2``, ``i // 2``.

A Python number on either side becomes one ``scale`` op (or ``pow`` for ``x ** n``), so no constant
variable is made; two Variables become the ``elementwise_*`` op, the right operand broadcast onto the
left from the trailing dimensions, as ``fluid.layers.elementwise_*`` do. A number on the left of ``/``
or ``**`` is first filled out to the Variable's shape (``fill_any_like``). ``%`` and ``//``
append ``elementwise_mod`` / ``elementwise_floordiv`` (a number becomes a [1] ``fill_constant`` of the
Variable's dtype). The comparisons ``<``, ``<=``, ``>``, ``>=`` append fluid's compare ops
(a number becomes a [1] ``fill_constant``), as fluid 1.8 does; so do ``==`` and ``!=`` with a number
(``(i % 2) == 0``). Between two static Variables ``==`` stays identity, so ``var in some_list`` and
``list.index(var)`` keep working (fluid appends an op there too: write ``fluid.layers.equal(a, b)``);
Variables hash by identity.
Indexing (``x[0]``, ``x[:, 1:3]``, ``x[::2]``) appends fluid's ``slice`` op (``strided_slice`` for a step
other than 1); an int index drops its dimension (a result with none left has shape [1], as in fluid).
"""
import numbers

from ..framework.variable import Variable
from .helper import LayerHelper
from .math import (elementwise_add, elementwise_div, elementwise_floordiv, elementwise_mod, elementwise_mul,
                   elementwise_pow, elementwise_sub, scale)
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
    "mod": (elementwise_mod, lambda x, n: elementwise_mod(x, fill_constant([1], x.dtype, n)), None),
    "floordiv": (elementwise_floordiv, lambda x, n: elementwise_floordiv(x, fill_constant([1], x.dtype, n)), None),
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
        if number_with is not None:  # fluid has no reflected % and //
            setattr(Variable, f"__r{name}__", _operator(both, number_with, reflected=True))
    Variable.__div__, Variable.__rdiv__ = Variable.__truediv__, Variable.__rtruediv__  # fluid's py2 names
    Variable.__neg__ = lambda self: scale(self, -1.0)
    Variable.__getitem__ = _getitem
    for name, op_type in (("lt", "less_than"), ("le", "less_equal"), ("gt", "greater_than"), ("ge", "greater_equal")):
        setattr(Variable, f"__{name}__", _comparison(op_type))
    for name, op_type in (("eq", "equal"), ("ne", "not_equal")):  # NOTE in the module docstring
        setattr(Variable, f"__{name}__", _comparison(op_type, numbers_only=True))
    Variable.__hash__ = object.__hash__  # a Variable is still a dict key / set member by identity


def _comparison(op_type, numbers_only=False):
    def method(self, other):
        if _number(other):
            other = fill_constant([1], self.dtype, other)
        elif not isinstance(other, Variable) or numbers_only:
            return NotImplemented
        helper = LayerHelper(op_type, x=self)
        out = helper.create_variable_for_type_inference("bool", stop_gradient=True)
        helper.append_op(type=op_type, inputs={"X": [self], "Y": [other]}, outputs={"Out": [out]})
        return out
    return method


_END = 2 ** 31 - 1


def _getitem(self, item):
    """``self[item]`` for ints, int Variables and slices (one per leading dimension; a bound may be a Variable,
    read at run time)."""
    items = item if isinstance(item, tuple) else (item,)
    if len(items) > len(self.shape):
        raise IndexError(f"too many indices ({len(items)}) for Variable {self.name!r} of shape {list(self.shape)}")
    axes, starts, ends, steps, decrease = [], [], [], [], []
    for axis, index in enumerate(items):
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            index, dim = int(index), self.shape[axis]
            if dim >= 0 and not -dim <= index < dim:
                raise IndexError(f"index {index} is out of bounds for axis {axis} of Variable {self.name!r} "
                                 f"(size {dim})")
            axes.append(axis), starts.append(index), ends.append(index + 1 if index != -1 else _END), steps.append(1)
            decrease.append(axis)
        elif isinstance(index, Variable):  # fluid's rule: [index, index + 1), the axis dropped
            axes.append(axis), starts.append(index), ends.append(index + 1), steps.append(1)
            decrease.append(axis)
        elif isinstance(index, slice):
            step = 1 if index.step is None else index.step
            if not isinstance(step, Variable) and step == 0:
                raise ValueError("slice step cannot be zero")
            if index.start is None and index.stop is None and index.step is None:
                continue
            forward = isinstance(step, Variable) or step > 0  # a Variable step: fluid's defaults
            default_start, default_end = (0, _END) if forward else (-1, -_END)
            axes.append(axis), steps.append(step)
            starts.append(default_start if index.start is None else index.start)
            ends.append(default_end if index.stop is None else index.stop)
        else:
            raise TypeError(f"Variable {self.name!r} can be indexed by ints and slices only, got "
                            f"{type(index).__name__}")
    if not axes:
        return self
    from .manip import slice_op  # noqa: PLC0415  (manip imports this module's neighbours)
    if any(isinstance(step, Variable) or step != 1 for step in steps):
        return slice_op("strided_slice", self, axes, {"starts": starts, "ends": ends, "strides": steps}, decrease)
    return slice_op("slice", self, axes, {"starts": starts, "ends": ends}, decrease)
