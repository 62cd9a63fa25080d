"""reduce_* ops and frobenius_norm (fluid attrs: dim (list), keep_dim, reduce_all; a 0-d result becomes shape
[1]); p_norm (one axis, attrs porder, axis, epsilon, keepdim).
reduce_all / reduce_any take and give bool and have no gradient, as have isinf / isnan / isfinite."""
from ..dtypes import convert_dtype, to_numpy_dtype
from .registry import array_module, register_grad, register_op

# in_dtype / out_dtype (VarType codes, -1: X's own): X is cast to out_dtype before reducing, Out@GRAD to
# in_dtype before the gradient (reduce_sum with a wider accumulator)
_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False, "in_dtype": -1, "out_dtype": -1}


def _out_dtype(attrs, x):
    code = attrs.get("out_dtype", -1)
    return x.dtype if code is None or code == -1 else to_numpy_dtype(code)


def _axes(attrs, ndim):
    dims = attrs["dim"]
    dims = [dims] if isinstance(dims, int) else list(dims)
    if attrs["reduce_all"] or not dims or ndim == 0:
        return tuple(range(ndim))
    return tuple(sorted({d % ndim for d in dims}))


def _reduce_infer(attrs, x):
    axes = _axes(attrs, len(x.shape))
    if attrs["keep_dim"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return (shape or (1,), x.dtype if attrs.get("out_dtype", -1) == -1 else convert_dtype(attrs["out_dtype"]))


def _kept_shape(x, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(x.shape))


# name: (forward(x, axes), grad(x, out_kept, dout_kept, axes)); out/dout arrive with kept dims
_REDUCE = {
    "reduce_sum": (lambda x, axes: x.sum(axis=axes),
                   lambda x, y, d, axes: array_module(x).broadcast_to(d, x.shape).copy()),
    "reduce_mean": (lambda x, axes: x.mean(axis=axes),
                    lambda x, y, d, axes: array_module(x).broadcast_to(d * (y.size / max(x.size, 1)),
                                                                       x.shape).copy()),
    "reduce_max": (lambda x, axes: x.max(axis=axes), lambda x, y, d, axes: d * (x == y)),
    "reduce_min": (lambda x, axes: x.min(axis=axes), lambda x, y, d, axes: d * (x == y)),
    "reduce_prod": (lambda x, axes: x.prod(axis=axes), lambda x, y, d, axes: d * y / x),
    "frobenius_norm": (lambda x, axes: array_module(x).sqrt((x * x).sum(axis=axes)), lambda x, y, d, axes: d * x / y),
}


def _register_reduce(name, forward, backward):
    def kernel(attrs, x):
        axes = _axes(attrs, x.ndim)
        x = x.astype(_out_dtype(attrs, x), copy=False)
        out = forward(x, axes).astype(x.dtype, copy=False)
        if attrs["keep_dim"]:
            return out.reshape(_kept_shape(x, axes))
        return out.reshape(1) if out.ndim == 0 else out

    def grad(attrs, ins, outs, douts, need):
        x = ins[0]
        axes = _axes(attrs, x.ndim)
        kept = _kept_shape(x, axes)
        xo = x.astype(_out_dtype(attrs, x), copy=False)
        dx = backward(xo, outs[0].reshape(kept), douts[0].reshape(kept), axes)
        return (dx.astype(x.dtype, copy=False),)
    register_op(name, inputs=("X",), outputs=("Out",), attrs=_ATTRS, infer_shape=_reduce_infer)(kernel)
    register_grad(name)(grad)


for _name, (_fwd, _bwd) in _REDUCE.items():
    _register_reduce(_name, _fwd, _bwd)


# --- p_norm: (sum |x|^p)^(1/p) along one axis --------------------------------------------------------------------
def _p_norm_infer(attrs, x):
    p, axis = attrs["porder"], attrs["axis"]
    if not 0 < p < float("inf"):
        raise ValueError(f"p_norm: porder must be a finite number > 0 (0, INFINITY and -INFINITY are not "
                         f"supported), but received porder={p}")
    if not -len(x.shape) <= axis < len(x.shape):
        raise ValueError(f"p_norm: axis {axis} is out of range for an input of rank {len(x.shape)}")
    return _reduce_infer({"dim": [axis], "keep_dim": attrs["keepdim"], "reduce_all": False}, x)


@register_op("p_norm", inputs=("X",), outputs=("Out",),
             attrs={"porder": 2.0, "axis": -1, "epsilon": 1e-12, "keepdim": False}, infer_shape=_p_norm_infer)
def _p_norm_forward(attrs, x):
    shape, _ = _p_norm_infer(attrs, x)
    p = attrs["porder"]
    out = (array_module(x).abs(x) ** p).sum(axis=attrs["axis"]) ** (1.0 / p)
    return out.astype(x.dtype, copy=False).reshape(shape)


@register_grad("p_norm")
def _p_norm_backward(attrs, ins, outs, douts, need):
    """d|x|_p / dx = sign(x) |x|^(p-1) / (norm^(p-1) + epsilon)."""
    x, p = ins[0], attrs["porder"]
    kept = _kept_shape(x, (attrs["axis"] % x.ndim,))
    xp = array_module(x)
    dx = xp.sign(x) * xp.abs(x) ** (p - 1) / (outs[0].reshape(kept) ** (p - 1) + attrs["epsilon"])
    return ((dx * douts[0].reshape(kept)).astype(x.dtype, copy=False),)


def _register_logical(name, forward):
    """reduce_all / reduce_any: bool in, bool out, no gradient."""
    def kernel(attrs, x):
        if x.dtype != bool:
            raise TypeError(f"{name}: X must be bool, got {x.dtype}")
        axes = _axes(attrs, x.ndim)
        out = forward(x, axis=axes, keepdims=attrs["keep_dim"])
        return out.reshape(1) if out.ndim == 0 else out
    register_op(name, inputs=("X",), outputs=("Out",), attrs=_ATTRS, infer_shape=_reduce_infer,
                no_gradient=True)(kernel)


_register_logical("reduce_all", lambda x, **kw: array_module(x).all(x, **kw))
_register_logical("reduce_any", lambda x, **kw: array_module(x).any(x, **kw))


# isinf / isnan: 1 when any element is inf / nan (X's dtype, shape [1]); isfinite: whether all are (bool [1])
for _name, (_test, _dtype) in {"isinf": (lambda xp, x: xp.isinf(x).any(), None),
                               "isnan": (lambda xp, x: xp.isnan(x).any(), None),
                               "isfinite": (lambda xp, x: xp.isfinite(x).all(), "bool")}.items():
    register_op(_name, inputs=("X",), outputs=("Out",), no_gradient=True,
                infer_shape=lambda attrs, x, d=_dtype: ((1,), d or x.dtype))(
        lambda attrs, x, t=_test, d=_dtype: array_module(x).asarray([t(array_module(x), x)], dtype=d or x.dtype))
