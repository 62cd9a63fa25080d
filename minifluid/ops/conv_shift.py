"""conv_shift: the circular correlation of each row of X [B, M] with its row of Y [B, N] (N odd, N <= M):
Out[b, i] = sum_j X[b, (i + j - (N - 1) / 2) mod M] * Y[b, j], as fluid's kernel computes it.

One [M, N] table of the X columns each output reads makes the forward one gather and one product summed over
N, the Y gradient the same gather against dOut, and the X gradient one bincount of the products back onto the
columns they came from (every row of the batch at once)."""
from .registry import array_module, register_grad, register_op


def _check(x_shape, y_shape):
    if len(x_shape) != 2:
        raise ValueError(f"Input(X)'s dimensions of ConvShiftOp should be 2. But received X's shape = "
                         f"{list(x_shape)} and the dimension is {len(x_shape)}.")
    if len(y_shape) != 2:
        raise ValueError(f"Input(Y)'s dimensions of ConvShiftOp should be 2. But received Y's shape = "
                         f"{list(y_shape)} and the dimension is {len(y_shape)}.")
    if x_shape[0] >= 0 and y_shape[0] >= 0 and x_shape[0] != y_shape[0]:
        raise ValueError(f"The first dimension of Input(X) and Input(Y) of ConvShiftOp should be equal. But "
                         f"received X's shape = {list(x_shape)}, Y's shape = {list(y_shape)}")
    if y_shape[1] >= 0 and y_shape[1] % 2 != 1:
        raise ValueError(f"The second dimension of Input(Y) of ConvShiftOp should be odd.But received Y's shape = "
                         f"{list(y_shape)} and the second dimension is {y_shape[1]}.")
    if x_shape[1] >= 0 and y_shape[1] > x_shape[1]:
        raise ValueError(f"The second dimension of Input(Y) of ConvShiftOp should be less than or equal to the 2nd "
                         f"dimension of Input(X).But received X's shape = {list(x_shape)}, Y's shape = "
                         f"{list(y_shape)}")


def _columns(m, n, xp):
    """[M, N]: the X column output i reads for Y's tap j."""
    return (xp.arange(m)[:, None] + xp.arange(n)[None, :] - (n - 1) // 2) % m


def _conv_shift_infer(attrs, x, y):
    _check(x.shape, y.shape)
    return tuple(x.shape), x.dtype


@register_op("conv_shift", inputs=("X", "Y"), outputs=("Out",), share_lod={"Out": "X"}, infer_shape=_conv_shift_infer)
def _conv_shift_forward(attrs, x, y):
    _check(x.shape, y.shape)
    xp = array_module(x)
    return xp.einsum("bmn,bn->bm", x[:, _columns(x.shape[1], y.shape[1], xp)], y).astype(x.dtype, copy=False)


@register_grad("conv_shift", reads=("X", "Y"))
def _conv_shift_backward(attrs, ins, outs, douts, need):
    (x, y), d = ins, douts[0]
    xp, (b, m), n = array_module(x), x.shape, y.shape[1]
    cols = _columns(m, n, xp)
    dx = dy = None
    if need[0]:  # X[b, cols[i, j]] received d[b, i] * y[b, j]
        target = (xp.arange(b)[:, None, None] * m + cols[None]).reshape(-1)
        weights = (d[:, :, None] * y[:, None, :]).reshape(-1)
        dx = xp.bincount(target, weights=weights, minlength=x.size).reshape(x.shape).astype(x.dtype, copy=False)
    if need[1]:
        dy = xp.einsum("bmn,bm->bn", x[:, cols], d).astype(y.dtype, copy=False)
    return dx, dy

