"""Matrix-shaped ops of fluid 1.8: trace, kron, cross, dist, addmm (with gradients), allclose, diag_embed (no
gradient)."""
import numpy as np

from .registry import array_module, register_grad, register_op


# --- trace: sums along a diagonal of two dimensions ------------------------------------------------------------
def _trace_dims(attrs, ndim):
    d1, d2 = attrs["dim1"], attrs["dim2"]
    if ndim < 2 or not (-ndim <= d1 < ndim and -ndim <= d2 < ndim) or d1 % ndim == d2 % ndim:
        raise ValueError(f"trace: the input must be at least 2-D and dim1 ({d1}), dim2 ({d2}) two different "
                         f"dimensions in [-{ndim}, {ndim}), got an input of rank {ndim}")
    return d1 % ndim, d2 % ndim


def _trace_infer(attrs, x):
    d1, d2 = _trace_dims(attrs, len(x.shape))
    return (tuple(d for i, d in enumerate(x.shape) if i not in (d1, d2)) or (1,), x.dtype)


@register_op("trace", inputs=("Input",), outputs=("Out",), attrs={"offset": 0, "dim1": 0, "dim2": 1},
             infer_shape=_trace_infer)
def _trace_forward(attrs, x):
    d1, d2 = _trace_dims(attrs, x.ndim)
    out = array_module(x).trace(x, attrs["offset"], d1, d2)
    return array_module(x).asarray(out, dtype=x.dtype).reshape(out.shape or (1,))


def _diagonal_positions(xp, rows, cols, offset):
    """Row and column indices of diagonal ``offset`` of a rows x cols matrix."""
    start_r, start_c = max(-offset, 0), max(offset, 0)
    n = max(min(rows - start_r, cols - start_c), 0)
    return xp.arange(n) + start_r, xp.arange(n) + start_c


@register_grad("trace")
def _trace_backward(attrs, ins, outs, douts, need):
    x, dout = ins[0], douts[0]
    xp = array_module(x)
    d1, d2 = _trace_dims(attrs, x.ndim)
    dx = xp.zeros_like(x)
    view = xp.moveaxis(dx, (d1, d2), (-2, -1))  # a view: writing it writes dx
    r, c = _diagonal_positions(xp, view.shape[-2], view.shape[-1], attrs["offset"])
    view[..., r, c] = dout.reshape(view.shape[:-2] + (1,))
    return (dx,)


# --- kron: the Kronecker product (the lower-rank operand padded with leading 1s) ---------------------------------
def _kron_shapes(x_shape, y_shape):
    n = max(len(x_shape), len(y_shape))
    return (1,) * (n - len(x_shape)) + tuple(x_shape), (1,) * (n - len(y_shape)) + tuple(y_shape)


@register_op("kron", inputs=("X", "Y"), outputs=("Out",),
             infer_shape=lambda attrs, x, y: (tuple(a * b if a >= 0 and b >= 0 else -1
                                                    for a, b in zip(*_kron_shapes(x.shape, y.shape))), x.dtype))
def _kron_forward(attrs, x, y):
    return array_module(x).kron(x, y).astype(x.dtype, copy=False)


@register_grad("kron")
def _kron_backward(attrs, ins, outs, douts, need):
    (x, y), dout = ins, douts[0]
    xs, ys = _kron_shapes(x.shape, y.shape)
    n = len(xs)
    # out[i0*y0 + j0, ...] = x[i0, ...] * y[j0, ...]: view dout as [x0, y0, x1, y1, ...]
    d = dout.reshape([s for pair in zip(xs, ys) for s in pair])
    xv, yv = x.reshape(xs), y.reshape(ys)
    x_axes, y_axes = tuple(range(0, 2 * n, 2)), tuple(range(1, 2 * n, 2))
    xp = array_module(x)
    dx = (d * xp.expand_dims(yv, x_axes)).sum(axis=y_axes).reshape(x.shape) if need[0] else None
    dy = (d * xp.expand_dims(xv, y_axes)).sum(axis=x_axes).reshape(y.shape) if need[1] else None
    return dx, dy


# --- allclose: |input - other| <= atol + rtol * |other| everywhere ----------------------------------------------
@register_op("allclose", inputs=("Input", "Other"), outputs=("Out",), no_gradient=True,
             attrs={"rtol": 1e-05, "atol": 1e-08, "equal_nan": False}, infer_shape=lambda attrs, x, y: ((1,), "bool"))
def _allclose_forward(attrs, x, other):
    close = array_module(x).allclose(x, other, rtol=float(attrs["rtol"]), atol=float(attrs["atol"]),
                                     equal_nan=attrs["equal_nan"])
    return np.array([bool(close)])


# --- cross: 3-vector cross products along dim (the first dimension of size 3 when dim is unset) -------------------
_NO_DIM = -100  # fluid's "dim not given"


def _cross_axis(attrs, x_shape, y_shape):
    if tuple(x_shape) != tuple(y_shape):
        raise ValueError(f"cross: X and Y must have one shape, got {list(x_shape)} and {list(y_shape)}")
    dim = attrs["dim"]
    if dim == _NO_DIM:
        dim = next((i for i, d in enumerate(x_shape) if d == 3), None)
        if dim is None:
            raise ValueError(f"cross: no dimension of size 3 in X's shape {list(x_shape)}")
    if not -len(x_shape) <= dim < len(x_shape) or x_shape[dim] != 3:
        raise ValueError(f"cross: dimension {dim} of X (shape {list(x_shape)}) must exist and have size 3")
    return dim % len(x_shape)


@register_op("cross", inputs=("X", "Y"), outputs=("Out",), attrs={"dim": _NO_DIM},
             infer_shape=lambda attrs, x, y: (_cross_axis(attrs, x.shape, y.shape) is not None and x.shape, x.dtype))
def _cross_forward(attrs, x, y):
    return array_module(x).cross(x, y, axis=_cross_axis(attrs, x.shape, y.shape)).astype(x.dtype, copy=False)


@register_grad("cross")
def _cross_backward(attrs, ins, outs, douts, need):
    (x, y), dout = ins, douts[0]
    xp, axis = array_module(x), _cross_axis(attrs, x.shape, y.shape)
    # d(x x y) . g: dx = y x g, dy = g x x
    return (xp.cross(y, dout, axis=axis) if need[0] else None), (xp.cross(dout, x, axis=axis) if need[1] else None)


# --- dist: the p-norm of X - Y (numpy broadcasting), shape [1] ----------------------------------------------------
def _reduce_to(grad, shape):
    """``grad`` summed back to a broadcast operand's ``shape``."""
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    ones = tuple(i for i, s in enumerate(shape) if s == 1 and grad.shape[i] != 1)
    return grad.sum(axis=ones, keepdims=True).reshape(shape)


def _dist(diff, p):
    a = abs(diff)
    if p == 0:
        return (a != 0).sum()
    if p == np.inf:
        return a.max()
    if p == -np.inf:
        return a.min()
    return (a ** p).sum() ** (1.0 / p)


@register_op("dist", inputs=("X", "Y"), outputs=("Out",), attrs={"p": 2.0},
             infer_shape=lambda attrs, x, y: ((1,), x.dtype))
def _dist_forward(attrs, x, y):
    return array_module(x).asarray([_dist(x - y, attrs["p"])], dtype=x.dtype)


@register_grad("dist")
def _dist_backward(attrs, ins, outs, douts, need):
    (x, y), out, dout = ins, outs[0].reshape(()), douts[0].reshape(())
    xp, p, diff = array_module(x), attrs["p"], x - y
    if p == 0:
        g = xp.zeros_like(diff)
    elif p in (np.inf, -np.inf):
        g = xp.sign(diff) * (abs(diff) == out) * dout
    else:
        g = xp.sign(diff) * abs(diff) ** (p - 1) * (out ** (1 - p) if out else 0.0) * dout
    return (_reduce_to(g, x.shape) if need[0] else None), (_reduce_to(-g, y.shape) if need[1] else None)


# --- diag_embed: the last dimension of Input put on diagonal offset of two new dimensions dim1, dim2 ---------------
def _embed_dims(attrs, ndim):
    d1, d2 = (d % (ndim + 1) for d in (attrs["dim1"], attrs["dim2"]))
    if d1 == d2 or not all(-(ndim + 1) <= d <= ndim for d in (attrs["dim1"], attrs["dim2"])):
        raise ValueError(f"diag_embed: dim1 ({attrs['dim1']}) and dim2 ({attrs['dim2']}) must be two different "
                         f"dimensions in [-{ndim + 1}, {ndim}]")
    return d1, d2


def _diag_embed_infer(attrs, x):
    d1, d2 = _embed_dims(attrs, len(x.shape))
    n = x.shape[-1] + abs(attrs["offset"]) if x.shape[-1] >= 0 else -1
    rest = iter(x.shape[:-1])
    return (tuple(n if i in (d1, d2) else next(rest) for i in range(len(x.shape) + 1)), x.dtype)


@register_op("diag_embed", inputs=("Input",), outputs=("Out",), attrs={"offset": 0, "dim1": -2, "dim2": -1},
             no_gradient=True, infer_shape=_diag_embed_infer)
def _diag_embed_forward(attrs, x):
    xp = array_module(x)
    d1, d2 = _embed_dims(attrs, x.ndim)
    n = x.shape[-1] + abs(attrs["offset"])
    out = xp.zeros(x.shape[:-1] + (n, n), dtype=x.dtype)
    r, c = _diagonal_positions(xp, n, n, attrs["offset"])
    out[..., r, c] = x
    return xp.moveaxis(out, (-2, -1), (d1, d2))


# --- addmm: Beta * Input + Alpha * X @ Y, Input's rows or columns broadcast when 1 --------------------------------
def _addmm_infer(attrs, inp, x, y):
    for what, shape in (("input", inp.shape), ("x", x.shape), ("y", y.shape)):
        if len(shape) != 2:
            raise ValueError(f"addmm: the input tensor {what}'s dimension must be 2. But received {what}'s "
                             f"dimension = {len(shape)} (shape {list(shape)}).")
    (m, k), (k2, n) = x.shape, y.shape
    if k >= 0 and k2 >= 0 and k != k2:
        raise ValueError(f"addmm: the input tensor X's width must be equal with matrix Y's height. But received "
                         f"X's shape = {list(x.shape)}, Y's shape = {list(y.shape)}.")
    for got, want in zip(inp.shape, (m, n)):
        if got not in (1, want) and got >= 0 and want >= 0:
            raise ValueError(f"addmm: Input's shape {list(inp.shape)} does not broadcast to the product's "
                             f"[{m}, {n}] (x {list(x.shape)}, y {list(y.shape)}).")
    return ((m, n), x.dtype)


@register_op("addmm", inputs=("Input", "X", "Y"), outputs=("Out",),
             attrs={"Alpha": 1.0, "Beta": 1.0, "use_mkldnn": False}, infer_shape=_addmm_infer,
             share_lod={"Out": "Input"})
def _addmm_forward(attrs, inp, x, y):
    _addmm_infer(attrs, inp, x, y)
    out = (x @ y) * attrs["Alpha"] + inp * attrs["Beta"]
    return out.astype(x.dtype, copy=False)


@register_grad("addmm")
def _addmm_backward(attrs, ins, outs, douts, need):
    inp, x, y = ins
    d = douts[0]
    dinp = None
    if need[0]:
        dinp = d.sum(axis=tuple(i for i in range(2) if inp.shape[i] == 1 and d.shape[i] != 1), keepdims=True)
        dinp = (dinp * attrs["Beta"]).astype(inp.dtype, copy=False)
    da = d * attrs["Alpha"]
    return (dinp, (da @ y.T).astype(x.dtype, copy=False) if need[1] else None,
            (x.T @ da).astype(y.dtype, copy=False) if need[2] else None)
