"""Arithmetic ops: elementwise_* (fluid's axis broadcasting), scale, mul, fc, mean, sum, and the small
ops regularizers, gradient clipping and learning-rate schedules append: sign, clip, clip_by_norm,
squared_l2_norm, increment, floor; cos_sim.

Each op's spec, forward kernel and gradient sit together.
"""
import math

import numpy as np

from . import parallel
from . import selected_rows as _sr
from .parallel import into
from .channels import ChannelView
from .registry import array_module, grad_var_name, register_grad, register_op, same_as

def _c_div(x, y):
    """Integer division as C's / (truncating toward zero; numpy's // floors), in x's dtype."""
    return (x // y + ((x % y != 0) & ((x < 0) != (y < 0)))).astype(x.dtype, copy=False)


# --- broadcasting helpers -------------------------------------------------------------


def _y_view(x, y, axis):
    """Reshape ``y`` so numpy broadcasting matches fluid's rule: y's dims align with x's from ``axis``."""
    if x.ndim == y.ndim or y.ndim == 0:
        return y
    yshape = list(y.shape)
    while len(yshape) > 1 and yshape[-1] == 1 and len(yshape) + max(axis, 0) > x.ndim:
        yshape.pop()  # fluid trims trailing 1s of y
    axis = x.ndim - len(yshape) if axis == -1 else axis
    return y.reshape([1] * axis + yshape + [1] * (x.ndim - axis - len(yshape)))


def _sum_over(grad, axes):
    """``grad.sum(axis=axes)`` as one einsum contraction, which takes any memory order in one pass
    (summing a conv output's per-channel bias gradient over (0, 2, 3) of channels-last memory with
    ndarray.sum took 10x longer; NOTE [ batch_norm passes ] in nn.py)."""
    if grad.dtype.kind != "f" or grad.ndim > 10:
        return grad.sum(axis=axes)
    letters = "abcdefghij"[:grad.ndim]
    return array_module(grad).einsum(letters + "->" + "".join(c for i, c in enumerate(letters) if i not in axes), grad)


def _unbroadcast(grad, shape):
    """Sum ``grad`` down to ``shape`` (undo broadcasting), then reshape."""
    if grad.shape == tuple(shape):
        return grad
    size = int(np.prod(shape)) if len(shape) else 1
    if grad.ndim > len(shape):
        # y was aligned somewhere inside x: sum over dims that y does not have
        gshape = grad.shape
        for axis in range(grad.ndim - len(shape) + 1):
            if all(s in (1, g) for s, g in zip(shape, gshape[axis:axis + len(shape)])):
                keep = set(range(axis, axis + len(shape)))
                red = tuple(i for i in range(grad.ndim) if i not in keep)
                g = _sum_over(grad, red) if red else grad
                ones = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
                g = g.sum(axis=ones, keepdims=True) if ones else g
                if g.size == size:
                    return g.reshape(shape)
        return grad.sum().reshape(shape)
    ones = tuple(i for i, (s, g) in enumerate(zip(shape, grad.shape)) if s == 1 and g != 1)
    return grad.sum(axis=ones, keepdims=True).reshape(shape)


def _broadcast_infer(attrs, x, y):
    return (x.shape, x.dtype)


def _channel_view(x, yv):
    """A ChannelView of ``x`` when ``yv`` is a per-channel vector of a channels-last N-D ``x`` (a conv's bias:
    NOTE [ Per-channel broadcasts on channels-last memory ] in channels.py), else None."""
    if x.ndim < 3 or yv.ndim != x.ndim or x.size < 4096:
        return None
    axes = [i for i, s in enumerate(yv.shape) if s != 1]
    if len(axes) != 1 or yv.shape[axes[0]] != x.shape[axes[0]] or yv.dtype != x.dtype:
        return None
    cv = ChannelView(x, axes[0])
    return cv if cv.perm else None


def _add_blocks(out, *arrays):
    """out = arrays[0] + arrays[1] + ... (one block of ``parallel.into``)."""
    np.add(arrays[0], arrays[1], out=out)
    for a in arrays[2:]:
        out += a


def _same_arrays(arrays):
    """True when ``arrays`` are numpy arrays of one shape and dtype (their sum can be made in blocks)."""
    first = arrays[0]
    return all(type(a) is np.ndarray and a.shape == first.shape and a.dtype == first.dtype for a in arrays)


def _add_forward(attrs, x, y):
    yv = _y_view(x, y, attrs["axis"])
    if _same_arrays((x, yv)):  # a residual add: in blocks on the intra-op threads
        return into(_add_blocks, np.empty_like(x), x, yv)
    cv = _channel_view(x, yv)
    if cv is None:
        return x + yv
    out = cv.empty(x.dtype)
    cv.xp.add(cv.flat(x), cv.vec(yv.reshape(-1)), out=cv.flat(out))
    return out


def _add_grad_y(x, yv, d):
    cv = _channel_view(d, yv)
    return d if cv is None else cv.sum(d).reshape(yv.shape)


def _register_elementwise(name, forward, grad_x, grad_y, kernel=None):
    kernel = kernel or (lambda attrs, x, y: forward(x, _y_view(x, y, attrs["axis"])))
    register_op(name, inputs=("X", "Y"), outputs=("Out",), attrs={"axis": -1, "use_mkldnn": False},
                infer_shape=_broadcast_infer, share_lod={"Out": "X"})(kernel)

    def backward(attrs, ins, outs, douts, need):
        x, y = ins
        dout = douts[0]
        if dout is None:  # an integer result has no gradient
            return None, None
        yv = _y_view(x, y, attrs["axis"])
        dx = _unbroadcast(grad_x(x, yv, dout), x.shape) if need[0] else None
        dy = _unbroadcast(grad_y(x, yv, dout), yv.shape).reshape(y.shape) if need[1] else None
        return dx, dy
    register_grad(name)(backward)


# a per-channel y on channels-last x (a conv's bias) adds and sums over long rows (_channel_view)
_register_elementwise("elementwise_add", lambda x, y: x + y, lambda x, y, d: d, _add_grad_y, kernel=_add_forward)
_register_elementwise("elementwise_sub", lambda x, y: x - y, lambda x, y, d: d, lambda x, y, d: -d)
_register_elementwise("elementwise_mul", lambda x, y: x * y, lambda x, y, d: d * y, lambda x, y, d: d * x)
_register_elementwise("elementwise_div", lambda x, y: x / y if x.dtype.kind in "fc" else _c_div(x, y),
                      lambda x, y, d: d / y,
                      lambda x, y, d: -d * x / (y * y))
_register_elementwise("elementwise_max", lambda x, y: array_module(x).maximum(x, y),
                      lambda x, y, d: d * (x >= y), lambda x, y, d: d * (x < y))
_register_elementwise("elementwise_min", lambda x, y: array_module(x).minimum(x, y),
                      lambda x, y, d: d * (x <= y), lambda x, y, d: d * (x > y))
_register_elementwise("elementwise_pow", lambda x, y: x ** y, lambda x, y, d: d * y * x ** (y - 1),
                      lambda x, y, d: d * x ** y * array_module(x).log(x))



def _register_division(name, ints, floats=None):
    """elementwise_floordiv / elementwise_mod: the results of fluid's C++ kernels, no gradient (as in fluid)."""
    def kernel(attrs, x, y):
        xp, yv = array_module(x), _y_view(x, y, attrs["axis"])
        if x.dtype.kind in "iu" and not yv.all():
            raise ZeroDivisionError(f"{name}: Y holds a zero divisor")
        if x.dtype.kind in "iu":
            return ints(xp, x, yv).astype(x.dtype, copy=False)
        if floats is None or x.dtype.kind != "f":
            raise TypeError(f"{name}: X must be int32 or int64{' or float' if floats else ''}, got {x.dtype}")
        return floats(xp, x, yv).astype(x.dtype, copy=False)
    register_op(name, inputs=("X", "Y"), outputs=("Out",), attrs={"axis": -1, "use_mkldnn": False},
                infer_shape=_broadcast_infer, share_lod={"Out": "X"}, no_gradient=True)(kernel)


# integer division truncates toward zero (C's /), the remainder takes the dividend's sign (C's %); a float
# remainder takes the divisor's sign (fmod(y + fmod(x, y), y))
_register_division("elementwise_floordiv", lambda xp, x, y: _c_div(x, y))
_register_division("elementwise_mod", lambda xp, x, y: xp.fmod(x, y), lambda xp, x, y: xp.fmod(y + xp.fmod(x, y), y))
# --- scale ------------------------------------------------------------------------------
def _scale_factor(attrs, scale_t):
    """The attribute ``scale``, or the one value of ScaleTensor (fluid.layers.scale with a Variable scale)."""
    return attrs["scale"] if scale_t is None else float(scale_t.reshape(-1)[0])


@register_op("scale", inputs=("X", "ScaleTensor"), outputs=("Out",), optional=("ScaleTensor",),
             no_grad_inputs=("ScaleTensor",), attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True},
             infer_shape=same_as(0), share_lod={"Out": "X"})
def _scale_forward(attrs, x, scale_t=None):
    s, b = _scale_factor(attrs, scale_t), attrs["bias"]
    if _sr.is_selected_rows(x):  # the value scaled, rows kept
        return _sr.scale(x, lambda v: _scale_forward(attrs, v, scale_t))
    out = x * s + b if attrs["bias_after_scale"] else (x + b) * s
    return out.astype(x.dtype, copy=False)


@register_grad("scale")
def _scale_backward(attrs, ins, outs, douts, need):
    return (douts[0] * _scale_factor(attrs, ins[1])).astype(douts[0].dtype, copy=False), None


# --- mul: flatten to 2-D, then one matmul ------------------------------------------------
def _mul_infer(attrs, x, y):
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    return (tuple(x.shape[:xn]) + tuple(y.shape[yn:]), x.dtype)


def _flat2(x, n):
    """``x`` as a matrix: its first ``n`` dimensions as rows, the rest as columns (also with no rows)."""
    return x.reshape(int(np.prod(x.shape[:n])), int(np.prod(x.shape[n:])))


@register_op("mul", inputs=("X", "Y"), outputs=("Out",),
             attrs={"x_num_col_dims": 1, "y_num_col_dims": 1, "use_mkldnn": False, "scale_x": 1.0, "scale_y": [1.0],
                    "scale_out": 1.0, "force_fp32_output": False},  # the last five: MKL-DNN's int8, kept only
             infer_shape=_mul_infer, share_lod={"Out": "X"}, grad_share_lod={})
def _mul_forward(attrs, x, y):
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    x2 = x if x.ndim == 2 and xn == 1 else _flat2(x, xn)
    y2 = y if y.ndim == 2 and yn == 1 else _flat2(y, yn)
    out = parallel.matmul(x2, y2)
    return out if x.ndim == 2 and y.ndim == 2 else out.reshape(x.shape[:xn] + y.shape[yn:])


@register_grad("mul")
def _mul_backward(attrs, ins, outs, douts, need):
    x, y = ins
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    x2, y2 = _flat2(x, xn), _flat2(y, yn)
    d2 = douts[0].reshape(x2.shape[0], y2.shape[1])
    dx = parallel.matmul(d2, y2.T).reshape(x.shape) if need[0] else None
    dy = parallel.matmul(x2.T, d2).reshape(y.shape) if need[1] else None
    return dx, dy


# --- fc: the fused inference op, Input flattened at in_num_col_dims times W, plus Bias, optionally relu ----------
def _fc_infer(attrs, x, w, bias=None):
    pad = 4 if attrs["padding_weights"] else 0
    n = attrs["in_num_col_dims"]
    if len(w.shape) != 2:
        raise ValueError(f"fc: the weights W should be a 2-D tensor, but received shape {list(w.shape)}")
    if not 0 < n < len(x.shape):
        raise ValueError(f"fc: the rank of Input ({len(x.shape)}) should be larger than in_num_col_dims ({n})")
    rows, cols = w.shape[0] - pad, w.shape[1] - pad
    width = int(np.prod(x.shape[n:]))
    if min(x.shape[n:]) >= 0 and rows >= 0 and width != rows:
        raise ValueError(f"fc: Fully Connected input and weight size do not match. input width: {width}, weight "
                         f"height: {rows} (Input {list(x.shape)}, in_num_col_dims {n}, W {list(w.shape)})")
    if bias is not None and cols >= 0 and min(bias.shape) >= 0 and tuple(bias.shape) not in ((cols,), (1, cols)):
        raise ValueError(f"fc: the shape of Bias {list(bias.shape)} is invalid: it should be [{cols}] or [1, {cols}]")
    if attrs["activation_type"] not in ("", "relu"):
        raise ValueError(f"fc: activation {attrs['activation_type']!r} is not supported in fc now (only 'relu')")
    return (tuple(x.shape[:n]) + (cols,), x.dtype)


@register_op("fc", inputs=("Input", "W", "Bias"), outputs=("Out",), optional=("Bias",), no_gradient=True,
             attrs={"in_num_col_dims": 1, "activation_type": "", "use_mkldnn": False, "padding_weights": False},
             infer_shape=_fc_infer, share_lod={"Out": "Input"})
def _fc_forward(attrs, x, w, bias=None):
    """``padding_weights``: W holds 4 extra rows and columns (a padded layout) that take no part."""
    shape, _ = _fc_infer(attrs, x, w, bias)
    if attrs["padding_weights"]:
        w = w[:-4, :-4]
    out = parallel.matmul(_flat2(x, attrs["in_num_col_dims"]), w)
    if bias is not None:
        out += bias.reshape(1, -1)
    if attrs["activation_type"] == "relu":
        np.maximum(out, 0, out=out)
    return out.reshape(shape)


# --- mean and sum --------------------------------------------------------------------------
@register_op("mean", inputs=("X",), outputs=("Out",), infer_shape=lambda attrs, x: ((1,), x.dtype),
             grad_share_lod={grad_var_name("X"): "X"})
def _mean_forward(attrs, x):
    return x.mean(keepdims=False).reshape(1).astype(x.dtype, copy=False)


@register_grad("mean")
def _mean_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    xp = array_module(x)
    return (xp.full(x.shape, douts[0].reshape(()) / max(x.size, 1), dtype=x.dtype),)


@register_op("sum", inputs=("X",), outputs=("Out",), duplicable=("X",),
             infer_shape=lambda attrs, xs: (xs[0].shape, xs[0].dtype), attrs={"use_mkldnn": False},
             share_lod={"Out": "X"})
def _sum_forward(attrs, xs):
    if any(_sr.is_selected_rows(x) for x in xs):
        return _sr.sum_of(xs)
    if len(xs) > 1 and _same_arrays(xs):  # gradient sums: in blocks on the intra-op threads
        return into(_add_blocks, np.empty_like(xs[0]), *xs)
    out = xs[0] + xs[1] if len(xs) > 1 else xs[0].copy(order="K")  # keeps the inputs' memory order
    for x in xs[2:]:
        out += x
    return out


@register_grad("sum")
def _sum_backward(attrs, ins, outs, douts, need):
    return ([douts[0] for _ in ins[0]],)


# --- ops used by regularizers and gradient clipping ------------------------------------------------
@register_op("sign", inputs=("X",), outputs=("Out",), infer_shape=same_as(0))
def _sign_forward(attrs, x):
    return array_module(x).sign(x)


def _sign_backward(attrs, ins, outs, douts, need):
    return (array_module(douts[0]).zeros_like(douts[0]),)


@register_grad("sign", builder=True, eager=_sign_backward)
def _build_sign_grad(op, grads):
    """fluid's gradient of sign: zeros, as a scale of Out@GRAD by 0."""
    if grads.output("Out")[0] is None:
        return []
    return [("scale", {"X": grads.output("Out")}, {"Out": grads.input("X")}, {"scale": 0.0})]


@register_op("clip", inputs=("X",), outputs=("Out",), attrs={"min": -1.0, "max": 1.0}, infer_shape=same_as(0),
             share_lod={"Out": "X"})
def _clip_forward(attrs, x):
    return array_module(x).clip(x, attrs["min"], attrs["max"])


@register_grad("clip")
def _clip_backward(attrs, ins, outs, douts, need):
    x = ins[0]
    return (douts[0] * ((x > attrs["min"]) & (x < attrs["max"])),)


@register_op("clip_by_norm", inputs=("X",), outputs=("Out",), attrs={"max_norm": 1.0}, infer_shape=same_as(0),
             no_gradient=True)
def _clip_by_norm_forward(attrs, x):
    if _sr.is_selected_rows(x):
        return _sr.clip_by_norm(x, attrs["max_norm"])
    norm = math.sqrt(float((x * x).sum()))
    max_norm = attrs["max_norm"]
    return x * (max_norm / norm) if norm > max_norm else x.copy()


@register_op("squared_l2_norm", inputs=("X",), outputs=("Out",),
             infer_shape=lambda attrs, x: ((1,), x.dtype))
def _squared_l2_norm_forward(attrs, x):
    flat = x.reshape(-1)
    return flat.dot(flat).reshape(1)


@register_grad("squared_l2_norm")
def _squared_l2_norm_backward(attrs, ins, outs, douts, need):
    return (ins[0] * (2.0 * float(douts[0].reshape(-1)[0])),)


# --- ops of learning-rate schedules (layers/learning_rate_scheduler.py) ----------------------------
@register_op("increment", inputs=("X",), outputs=("Out",), attrs={"step": 1.0}, infer_shape=same_as(0),
             no_gradient=True)
def _increment_forward(attrs, x):
    """``X + step`` (the step counter: X and Out are the same variable, so it counts across runs)."""
    return x + np.asarray(attrs["step"]).astype(x.dtype)


@register_op("floor", inputs=("X",), outputs=("Out",), infer_shape=same_as(0), no_gradient=True)
def _floor_forward(attrs, x):
    return array_module(x).floor(x)


# --- cos_sim ---------------------------------------------------------------------------------------------
def _cos_sim_infer(attrs, x, y):
    if len(x.shape) != len(y.shape) or len(x.shape) < 2:
        raise ValueError(f"cos_sim: ranks of Input(X) and Input(Y) must be equal and at least 2, but received "
                         f"{list(x.shape)} and {list(y.shape)}")
    rows_bad = y.shape[0] not in (1, x.shape[0]) and min(x.shape[0], y.shape[0]) >= 0
    if list(x.shape[1:]) != list(y.shape[1:]) or rows_bad:
        raise ValueError(f"cos_sim: all dimensions except the 1st of Input(X) {list(x.shape)} and Input(Y) "
                         f"{list(y.shape)} must be equal, and the 1st of Input(Y) must equal Input(X)'s or be 1")
    return ((x.shape[0], 1), x.dtype), ((x.shape[0], 1), x.dtype), ((y.shape[0], 1), y.dtype)


@register_op("cos_sim", inputs=("X", "Y"), outputs=("Out", "XNorm", "YNorm"), infer_shape=_cos_sim_infer,
             share_lod={"Out": "X"})
def _cos_sim_forward(attrs, x, y):
    xf, yf = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    if yf.shape[0] not in (1, xf.shape[0]):
        raise ValueError(f"cos_sim: the 1st dimension of Input(Y) {yf.shape[0]} must be equal to Input(X)'s "
                         f"{xf.shape[0]} or just 1 (which will be broadcasted to match Input(X))")
    x_norm = np.sqrt((xf * xf).sum(axis=1, keepdims=True))
    y_norm = np.sqrt((yf * yf).sum(axis=1, keepdims=True))
    return (xf * yf).sum(axis=1, keepdims=True) / (x_norm * y_norm), x_norm, y_norm


@register_grad("cos_sim")
def _cos_sim_backward(attrs, ins, outs, douts, need):
    x, y = ins
    out, x_norm, y_norm = outs
    xf, yf = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    dout = douts[0]
    dx = dy = None
    if need[0]:
        dx = (dout * (yf / (x_norm * y_norm) - out * xf / (x_norm * x_norm))).reshape(x.shape).astype(x.dtype)
    if need[1]:
        dy = dout * (xf / (x_norm * y_norm) - out * yf / (y_norm * y_norm))
        dy = (dy.sum(axis=0, keepdims=True) if yf.shape[0] == 1 and xf.shape[0] != 1 else dy)
        dy = dy.reshape(y.shape).astype(y.dtype)
    return dx, dy
