"""Gradients of gradient ops (a gradient of a gradient: ``fluid.gradients`` over a program that already
holds a backward pass, as in gradient penalties). Each is the ``<type>_grad`` op's own gradient kernel,
so append_backward / gradients walk through a first pass's grad ops like any other op and emit
``<type>_grad_grad`` ops (fluid's names): elementwise mul / add / sub, and the reductions and scale whose
gradient is linear in the incoming one.

Slots, for ``elementwise_mul_grad`` (inputs X, Y, Out@GRAD; outputs X@GRAD, Y@GRAD): the kernel gets
the gradients flowing into X@GRAD and Y@GRAD (ddX, ddY; None where none flows) and returns those of
X, Y, Out (none: the gradient does not read it) and Out@GRAD, zeros for a wanted one nothing reaches.
"""
import numpy as np

from .math import _unbroadcast, _y_view
from .registry import get_op_spec, register_grad


def _grad_of_grad(type, reads, constant=("Out",)):
    """register_grad for the grad op ``type``, whose result never depends on the values of ``constant``
    (the forward output Out, which it does not read; a shape it only looks at): no gradient flows there."""
    get_op_spec(type).no_grad_inputs = frozenset(constant)
    return register_grad(type, reads=reads)


def _zeros_or(value, like):
    return value if value is not None else np.zeros_like(like)


@_grad_of_grad("elementwise_mul_grad", ("X", "Y", "Out@GRAD"))
def _elementwise_mul_grad_grad(attrs, ins, outs, douts, need):
    """dX = dOut * Y and dY = dOut * X (each summed back to its shape) are bilinear: with ddX, ddY flowing
    in, X gets dOut * ddY, Y gets dOut * ddX and dOut gets ddX * Y + X * ddY."""
    x, y, _, dout = ins
    ddx, ddy = douts
    axis = attrs["axis"]
    yv = _y_view(x, y, axis)
    ddyv = None if ddy is None else _y_view(x, ddy, axis)
    gx = gy = gdout = None
    if need[0]:
        gx = _zeros_or(None if ddyv is None else _unbroadcast(dout * ddyv, x.shape), x)
    if need[1]:
        gy = _zeros_or(None if ddx is None else _unbroadcast(dout * ddx, yv.shape).reshape(y.shape), y)
    if need[3]:
        gdout = _zeros_or(None if ddx is None else ddx * yv, dout)
        if ddyv is not None:
            gdout = gdout + x * ddyv
    return gx, gy, None, gdout


def _linear_grad_grad(sign):
    """elementwise_add / sub: dX = dOut, dY = sign * dOut (summed back): only dOut gets ddX + sign * ddY."""
    def kernel(attrs, ins, outs, douts, need):
        dout = ins[3]
        ddx, ddy = douts
        gdout = None
        if need[3]:
            gdout = _zeros_or(ddx, dout)
            if ddy is not None:
                gdout = gdout + sign * _y_view(dout, ddy, attrs["axis"])
        return None, None, None, gdout
    return kernel


_grad_of_grad("elementwise_add_grad", ("Out@GRAD",))(_linear_grad_grad(1.0))
_grad_of_grad("elementwise_sub_grad", ("Out@GRAD",))(_linear_grad_grad(-1.0))


def _adjoint(fwd_type, attrs_of=dict):
    """The gradient of a grad op linear in Out@GRAD alone (reduce_sum / reduce_mean / mean broadcast it back
    to X's shape, scale multiplies it): the forward op applied to ddX is that broadcast's adjoint."""
    kernel = get_op_spec(fwd_type).kernel

    def grad(attrs, ins, outs, douts, need):
        ddx = douts[0]
        result = [None] * len(ins)
        if need[-1]:
            result[-1] = _zeros_or(None if ddx is None else kernel(attrs_of(attrs), ddx, *ins[1:-2]), ins[-1])
        return tuple(result)
    return grad


for _type in ("reduce_sum", "reduce_mean", "mean"):
    _grad_of_grad(_type + "_grad", ("Out@GRAD",), ("X", "Out"))(_adjoint(_type))
_grad_of_grad("scale_grad", ("ScaleTensor", "Out@GRAD"), ("X", "ScaleTensor", "Out"))(
    _adjoint("scale", lambda attrs: dict(attrs, bias=0.0)))
