"""partial_concat and partial_sum (fluid.contrib.layers): the same column range [start_index, start_index +
length) of every 2-D input, concatenated or summed. A negative start_index counts from the end of a row; a
negative length takes the columns to the end."""
import numpy as np

from .registry import register_grad, register_op

_ATTRS = {"start_index": 0, "length": -1}


def _columns(op_type, attrs, width):
    """The slice of the columns the op reads from rows of ``width``; ValueError naming a bad range."""
    start, length = attrs["start_index"], attrs["length"]
    if start < 0:
        start += width
    end = width if length < 0 else start + length
    if not 0 <= start < width or end > width:
        raise ValueError(f"{op_type}: start_index {attrs['start_index']} and length {length} do not fit the inputs' "
                         f"{width} columns")
    return slice(start, end)


def _check_inputs(op_type, xs):
    shapes = {tuple(x.shape) for x in xs}
    if any(x.ndim != 2 for x in xs) or len(shapes) != 1:
        raise ValueError(f"{op_type}: the inputs must be 2-D tensors of one shape, got shapes {[x.shape for x in xs]}")


def _infer(op_type, concat):
    def infer(attrs, xs):
        width = xs[0].shape[-1]
        cols = width if width < 0 else len(range(width)[_columns(op_type, attrs, width)])
        return (xs[0].shape[0], cols * len(xs) if concat and cols >= 0 else cols), xs[0].dtype
    return infer


@register_op("partial_concat", inputs=("X",), outputs=("Out",), duplicable=("X",), attrs=_ATTRS,
             infer_shape=_infer("partial_concat", True))
def _partial_concat_forward(attrs, xs):
    _check_inputs("partial_concat", xs)
    cols = _columns("partial_concat", attrs, xs[0].shape[1])
    return np.concatenate([x[:, cols] for x in xs], axis=1)


@register_grad("partial_concat")
def _partial_concat_backward(attrs, ins, outs, douts, need):
    xs, dout = ins[0], douts[0]
    cols = _columns("partial_concat", attrs, xs[0].shape[1])
    pieces = np.split(dout, len(xs), axis=1)
    grads = []
    for x, piece in zip(xs, pieces):
        dx = np.zeros_like(x)
        dx[:, cols] = piece
        grads.append(dx)
    return (grads,)


@register_op("partial_sum", inputs=("X",), outputs=("Out",), duplicable=("X",), attrs=_ATTRS,
             infer_shape=_infer("partial_sum", False))
def _partial_sum_forward(attrs, xs):
    _check_inputs("partial_sum", xs)
    cols = _columns("partial_sum", attrs, xs[0].shape[1])
    out = xs[0][:, cols].copy()
    for x in xs[1:]:
        out += x[:, cols]
    return out


@register_grad("partial_sum")
def _partial_sum_backward(attrs, ins, outs, douts, need):
    xs, dout = ins[0], douts[0]
    dx = np.zeros_like(xs[0])
    dx[:, _columns("partial_sum", attrs, xs[0].shape[1])] = dout
    return ([dx.copy() for _ in xs],)
