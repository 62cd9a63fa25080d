"""Comparison and logical ops (fluid's compare_op and logical_op families): boolean outputs, no gradient;
equal_reduce, whether two tensors are equal everywhere; and where, which picks between two tensors by a boolean one.

Comparisons broadcast Y onto X from ``axis`` as the elementwise ops do (ops/math.py); X must have at
least as many dimensions as Y, as in fluid.
"""
import numpy as np

from .math import _y_view
from .registry import array_module, register_grad, register_op

_COMPARE = {"less_than": np.less, "less_equal": np.less_equal, "greater_than": np.greater,
            "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal}


def _compare_infer(attrs, x, y):
    if len(x.shape) < len(y.shape):
        raise ValueError(f"The size of dim_y should not be greater than dim_x's, but received dim_y: "
                         f"{len(y.shape)} > dim_x: {len(x.shape)}")
    return (x.shape, "bool")


def _register_compare(name, ufunc):
    def kernel(attrs, x, y):
        if x.ndim < y.ndim:
            _compare_infer(attrs, x, y)
        return ufunc(x, _y_view(x, y, attrs["axis"]))
    register_op(name, inputs=("X", "Y"), outputs=("Out",), attrs={"axis": -1, "force_cpu": False},
                infer_shape=_compare_infer, no_gradient=True, share_lod={"Out": "X"})(kernel)


for _name, _ufunc in _COMPARE.items():
    _register_compare(_name, _ufunc)



@register_op("equal_reduce", inputs=("X", "Y"), outputs=("Out",), attrs={"axis": -1}, no_gradient=True,
             infer_shape=lambda attrs, x, y: (_compare_infer(attrs, x, y) and (1,), "bool"), share_lod={"Out": "X"})
def _equal_reduce_forward(attrs, x, y):
    """Whether X equals Y (broadcast onto X from ``axis``) everywhere: one bool, shape [1]."""
    if x.ndim < y.ndim:
        _compare_infer(attrs, x, y)
    return array_module(x).equal(x, _y_view(x, y, attrs["axis"])).all().reshape(1)


_LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}


def _register_logical(name, ufunc):
    register_op(name, inputs=("X", "Y"), outputs=("Out",), no_gradient=True,
                infer_shape=lambda attrs, x, y: (x.shape if len(x.shape) >= len(y.shape) else y.shape, "bool"))(
        lambda attrs, x, y: ufunc(x, y))


for _name, _ufunc in _LOGICAL.items():
    _register_logical(_name, _ufunc)


@register_op("logical_not", inputs=("X",), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, x: (x.shape, "bool"))
def _logical_not_forward(attrs, x):
    return array_module(x).logical_not(x)


# --- where: elementwise choice between X and Y -------------------------------------------------------------
@register_op("where", inputs=("Condition", "X", "Y"), outputs=("Out",), no_grad_inputs=("Condition",),
             infer_shape=lambda attrs, c, x, y: (x.shape, x.dtype))
def _where_forward(attrs, cond, x, y):
    return array_module(x).where(cond, x, y)


@register_grad("where")
def _where_backward(attrs, ins, outs, douts, need):
    (cond, x, y), dout = ins, douts[0]
    zero = array_module(dout).zeros_like(dout)
    return (None, array_module(dout).where(cond, dout, zero) if need[1] else None,
            array_module(dout).where(cond, zero, dout) if need[2] else None)
