"""fused_elemwise_activation (fluid.contrib.layers): a binary elementwise op and a unary one in one op.

``functor_list`` [binary, unary] computes ``Out = Binary(X, Unary(Y))`` with ``IntermediateOut = Unary(Y)``;
[unary, binary] computes ``Out = Unary(Binary(X, Y))`` with ``IntermediateOut = Binary(X, Y)``. Binary:
elementwise_add, elementwise_mul; unary: scale (by attr ``scale``), relu, tanh, sigmoid. The operand of lower rank
(X or Y) is aligned with the other from ``axis`` (-1: at its trailing dimensions), as the elementwise ops do.
"""
import numpy as np

from .math import _unbroadcast, _y_view
from .registry import register_grad, register_op

BINARY = {"elementwise_add": np.add, "elementwise_mul": np.multiply}
UNARY = {"scale": lambda v, s: v * s, "relu": lambda v, s: np.maximum(v, 0), "tanh": lambda v, s: np.tanh(v),
         "sigmoid": lambda v, s: 1.0 / (1.0 + np.exp(-v))}
# each unary's derivative from its output (the scale's from its factor)
_UNARY_GRAD = {"scale": lambda out, s: s, "relu": lambda out, s: out > 0, "tanh": lambda out, s: 1.0 - out * out,
               "sigmoid": lambda out, s: out * (1.0 - out)}


def split_functors(functor_list):
    """(binary, unary, binary_first) of a two-entry functor list; ValueError naming what is wrong."""
    functors = list(functor_list)
    if len(functors) == 2:
        if functors[0] in BINARY and functors[1] in UNARY:
            return functors[0], functors[1], True
        if functors[0] in UNARY and functors[1] in BINARY:
            return functors[1], functors[0], False
    raise ValueError(f"fused_elemwise_activation: functor_list must be one binary functor ({', '.join(BINARY)}) "
                     f"and one unary functor ({', '.join(UNARY)}) in either order, got {functors}")


def _views(x, y, axis):
    """x and y broadcastable against each other: the lower-rank one aligned from ``axis``."""
    return (x, _y_view(x, y, axis)) if x.ndim >= y.ndim else (_y_view(y, x, axis), y)


def _infer(attrs, x, y):
    binary, _, binary_first = split_functors(attrs["functor_list"])
    big = x if len(x.shape) >= len(y.shape) else y
    return (big.shape, x.dtype), ((y.shape if binary_first else big.shape), x.dtype)


@register_op("fused_elemwise_activation", inputs=("X", "Y"), outputs=("Out", "IntermediateOut"),
             attrs={"axis": -1, "scale": 0.0, "save_intermediate_out": True, "functor_list": []},
             infer_shape=_infer, share_lod={"Out": "X"})
def _fused_forward(attrs, x, y):
    binary, unary, binary_first = split_functors(attrs["functor_list"])
    s = attrs["scale"]
    if binary_first:
        mid = UNARY[unary](y, s).astype(y.dtype, copy=False)
        xv, mv = _views(x, mid, attrs["axis"])
        return BINARY[binary](xv, mv).astype(x.dtype, copy=False), mid
    xv, yv = _views(x, y, attrs["axis"])
    mid = BINARY[binary](xv, yv)
    return UNARY[unary](mid, s).astype(x.dtype, copy=False), mid.astype(x.dtype, copy=False)


@register_grad("fused_elemwise_activation")
def _fused_backward(attrs, ins, outs, douts, need):
    (x, y), (out, mid), dout = ins, outs, douts[0]
    binary, unary, binary_first = split_functors(attrs["functor_list"])
    s = attrs["scale"]
    if mid is None or not attrs["save_intermediate_out"]:
        mid = _fused_forward(attrs, x, y)[1]
    if binary_first:  # out = B(x, U(y))
        xv, mv = _views(x, mid, attrs["axis"])
        dx = dout if binary == "elementwise_add" else dout * mv
        dmid = dout if binary == "elementwise_add" else dout * xv
        dy = _unbroadcast(dmid, mv.shape).reshape(y.shape) * _UNARY_GRAD[unary](mid, s)
        return (_unbroadcast(dx, xv.shape).reshape(x.shape).astype(x.dtype, copy=False) if need[0] else None,
                dy.astype(y.dtype, copy=False) if need[1] else None)
    xv, yv = _views(x, y, attrs["axis"])  # out = U(B(x, y))
    dmid = dout * _UNARY_GRAD[unary](UNARY[unary](mid, s) if out is None else out, s)
    dx = dmid if binary == "elementwise_add" else dmid * yv
    dy = dmid if binary == "elementwise_add" else dmid * xv
    return (_unbroadcast(dx, xv.shape).reshape(x.shape).astype(x.dtype, copy=False) if need[0] else None,
            _unbroadcast(dy, yv.shape).reshape(y.shape).astype(y.dtype, copy=False) if need[1] else None)
