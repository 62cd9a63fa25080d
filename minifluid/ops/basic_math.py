"""Small arithmetic ops of fluid 1.8: minus (X - Y of one shape), l1_norm (sum |X|, shape [1]) and bmm (a
batched product of [B, M, K] and [B, K, N]); each with its gradient."""
from .registry import array_module, register_grad, register_op


def _minus_infer(attrs, x, y):
    if len(x.shape) != len(y.shape) or any(a != b and a >= 0 and b >= 0 for a, b in zip(x.shape, y.shape)):
        raise ValueError(f"minus: Input(X) and Input(Y) must have the same shape, but received X's shape "
                         f"{list(x.shape)} and Y's shape {list(y.shape)}")
    return (x.shape, x.dtype)


@register_op("minus", inputs=("X", "Y"), outputs=("Out",), infer_shape=_minus_infer, share_lod={"Out": "X"})
def _minus_forward(attrs, x, y):
    _minus_infer(attrs, x, y)
    return x - y


@register_grad("minus")
def _minus_backward(attrs, ins, outs, douts, need):
    d = douts[0]
    return (d if need[0] else None), (-d if need[1] else None)


@register_op("l1_norm", inputs=("X",), outputs=("Out",), infer_shape=lambda attrs, x: ((1,), x.dtype))
def _l1_norm_forward(attrs, x):
    return array_module(x).abs(x).sum().reshape(1).astype(x.dtype, copy=False)


@register_grad("l1_norm")
def _l1_norm_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    return ((array_module(x).sign(x) * douts[0].reshape(())).astype(x.dtype, copy=False),)


def _bmm_infer(attrs, x, y):
    for slot, shape in (("X", x.shape), ("Y", y.shape)):
        if len(shape) != 3:
            raise ValueError(f"Input({slot}) of BmmOp must be 3-dimensional in BmmOp, but received {slot}'s shape: "
                             f"{list(shape)}")
    (b, m, k), (b2, k2, n) = x.shape, y.shape
    if b >= 0 and b2 >= 0 and b != b2:
        raise ValueError(f"Input(X) and Input(Y) must have the same batch size in BmmOp, but received X's batch "
                         f"size: {b}, Y's batch size {b2}")
    if k >= 0 and k2 >= 0 and k != k2:
        raise ValueError(f"Input(X)'s width must be equal with Input(Y)'s height in BmmOp, but received X's width: "
                         f"{k}, Y's height: {k2}")
    return ((b, m, n), x.dtype)


@register_op("bmm", inputs=("X", "Y"), outputs=("Out",), infer_shape=_bmm_infer, share_lod={"Out": "X"})
def _bmm_forward(attrs, x, y):
    _bmm_infer(attrs, x, y)
    return x @ y


@register_grad("bmm")
def _bmm_backward(attrs, ins, outs, douts, need):
    x, y = ins
    d = douts[0]
    return (d @ y.swapaxes(1, 2) if need[0] else None), (x.swapaxes(1, 2) @ d if need[1] else None)
