"""Tensor-making ops of fluid 1.8: range, linspace, eye, diag, size (none has a gradient, as in fluid)."""
import numpy as np

from ..dtypes import convert_dtype, to_numpy_dtype
from .registry import array_module, register_op


def _scalar(t, slot):
    if t.size != 1:
        raise ValueError(f"range: {slot} must hold one value (shape [1]), got shape {list(t.shape)}")
    return t.reshape(-1)[0]


# --- range: start, start + step, ... while short of end ------------------------------------------------------
@register_op("range", inputs=("Start", "End", "Step"), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, s, e, st: ((-1,), s.dtype))
def _range_forward(attrs, start, end, step):
    xp = array_module(start)
    s, e, st = _scalar(start, "Start"), _scalar(end, "End"), _scalar(step, "Step")
    if st == 0:
        raise ValueError("The step of range op should not be 0.")
    if s < e and st < 0:
        raise ValueError("The step should be greater than 0 while start < end.")
    if s > e and st > 0:
        raise ValueError("step should be less than 0 while start > end.")
    if start.dtype.kind in "iu":
        size = (abs(int(e) - int(s)) + abs(int(st)) - 1) // abs(int(st))
    else:
        size = int(np.ceil(abs((e - s) / st)))
    return _accumulate(xp, s, st, size, start.dtype)


def _accumulate(xp, start, step, size, dtype):
    """``start, start + step, (start + step) + step, ...``: ``size`` values summed in order, as fluid's loops."""
    steps = xp.full(size, step, dtype=dtype)
    if size:
        steps[0] = start
    return xp.add.accumulate(steps, dtype=dtype)


# --- linspace: num evenly spaced values from start to stop, both included ----------------------------------------
@register_op("linspace", inputs=("Start", "Stop", "Num"), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, s, e, n: ((-1,), s.dtype))
def _linspace_forward(attrs, start, stop, num):
    count = int(num.reshape(-1)[0])
    if count <= 0:
        raise ValueError(f"The num of linspace op should be larger than 0, but received num is {count}")
    s, e = start.reshape(-1)[0], stop.reshape(-1)[0]
    step = (e - s) / start.dtype.type(count - 1) if count > 1 else start.dtype.type(0)
    return _accumulate(array_module(start), s, step, count, start.dtype)


# --- eye: ones on the main diagonal --------------------------------------------------------------------------
@register_op("eye", inputs=(), outputs=("Out",), no_gradient=True,
             attrs={"num_rows": 0, "num_columns": -1, "dtype": "float32"},
             infer_shape=lambda attrs: ((attrs["num_rows"], attrs["num_columns"] if attrs["num_columns"] >= 0
                                         else attrs["num_rows"]), convert_dtype(attrs["dtype"])))
def _eye_forward(attrs):
    cols = attrs["num_columns"] if attrs["num_columns"] >= 0 else attrs["num_rows"]
    return np.eye(attrs["num_rows"], cols, dtype=to_numpy_dtype(attrs["dtype"]))


# --- diag: a square matrix with the 1-D input on its diagonal -------------------------------------------------
def _diag_infer(attrs, d):
    if len(d.shape) != 1:
        raise ValueError(f"The input tensor's rank of DiagOp should be 1, but received rank {len(d.shape)} "
                         f"(shape {list(d.shape)})")
    return ((d.shape[0], d.shape[0]), d.dtype)


@register_op("diag", inputs=("Diagonal",), outputs=("Out",), no_gradient=True, infer_shape=_diag_infer)
def _diag_forward(attrs, diagonal):
    _diag_infer(attrs, diagonal)
    return array_module(diagonal).diag(diagonal)


# --- size: the number of elements, int64 [1] -----------------------------------------------------------------
@register_op("size", inputs=("Input",), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, x: ((1,), "int64"))
def _size_forward(attrs, x):
    return np.array([x.size], dtype=np.int64)
