"""The top-level ``paddle`` namespace as legacy scripts see it (``paddle.batch``, ``paddle.reader`` …),
plus the paddle 2.x names the dygraph seed programs use.

Mode (decided here, documented in the README): ``import paddle`` changes nothing, so a fluid 1.x
script stays in static mode unless it enters ``fluid.dygraph.guard()``. The paddle 2.x APIs
(``paddle.to_tensor``, ``paddle.mean``, ``paddle.reshape``, ``paddle.nn`` layers and functions,
``paddle.optimizer``'s ``step``/``minimize``/``clear_grad``) run eagerly whatever the global mode, and
``paddle.io.DataLoader(dataset, ...)`` yields eager tensors unless ``paddle.enable_static()`` was
called or it was given a ``feed_list`` of static variables; so a 2.x dynamic-mode script runs as written. ``paddle.disable_static()`` turns dygraph mode
on globally (then ``fluid.layers`` run eagerly too); ``paddle.enable_static()`` turns it off.
"""
import numpy as np

from .. import layers as _layers
from ..dygraph import base as _base
from ..dygraph import functional as _functional  # noqa: F401  (paddle.nn.functional)
from ..dygraph import paddle_io as io
from ..dygraph import paddle_metric as metric
from ..dygraph import paddle_nn as nn
from ..dygraph import paddle_optimizer as optimizer
from ..dygraph.paddle_tensor import *  # noqa: F401,F403  (names in paddle_tensor.__all__)
from ..dygraph.checkpoint import load, save
from ..dygraph.tensor import Tensor, default_tracer
from ..dtypes import get_default_dtype, set_default_dtype
from ..param_attr import ParamAttr
from ..places import CPUPlace, CUDAPlace
from ..reader import batch
from .paddle_framework.random import seed

__all__ = ["CPUPlace", "CUDAPlace", "ParamAttr", "Tensor", "abs", "add", "arange", "argmax", "argmin", "argsort",
           "batch", "cast", "clip", "concat", "disable_static", "divide", "enable_static", "equal", "exp",
           "expand", "eye", "flatten", "full", "full_like", "gather", "get_default_dtype", "greater_equal",
           "greater_than", "in_dynamic_mode", "io", "less_equal", "less_than", "linspace", "load", "log",
           "logical_and", "logical_not", "logical_or", "logical_xor", "matmul", "max", "maximum", "mean",
           "metric", "min", "minimum", "multiply", "nn", "no_grad", "normal", "not_equal", "numel", "ones",
           "ones_like", "optimizer", "pow", "prod", "rand", "randint", "randn", "reshape", "save",
           "scatter", "seed", "set_default_dtype", "set_device", "shape", "sort", "split", "sqrt", "square",
           "squeeze", "stack", "subtract", "sum", "tanh", "tile", "to_tensor", "topk", "transpose",
           "uniform", "unsqueeze", "unstack", "where", "zeros", "zeros_like"]

enable_static = _base.enable_static
disable_static = _base.disable_static
in_dynamic_mode = _base.in_dygraph_mode
no_grad = _base.no_grad


@_base.eager_api
def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """An eager tensor holding a copy of ``data`` (ndarray, Tensor, list or scalar; Python floats
    become ``get_default_dtype()``, float32 unless set), cast to ``dtype`` when given."""
    if isinstance(data, Tensor):
        data = data._value.copy()
    elif isinstance(data, np.ndarray) or hasattr(data, "__cuda_array_interface__"):
        data = data.copy()
    else:
        data = np.array(data)
        if data.dtype == np.float64:
            data = data.astype(get_default_dtype())
    t = default_tracer().eager_tensor(data)
    if dtype is not None:
        t = t.astype(dtype)
    t.stop_gradient = stop_gradient
    return t


@_base.eager_api
def mean(x, axis=None, keepdim=False, name=None):
    """Mean over ``axis`` (an int or list; None: all elements, shape [1] as in fluid 1.x)."""
    return _layers.reduce_mean(x, dim=axis, keep_dim=keepdim)


@_base.eager_api
def reshape(x, shape, name=None):
    return _layers.reshape(x, list(shape))


def set_device(device):
    """'cpu' or 'gpu[:N]': the place eager tensors are created on from now on; returns it."""
    device = str(device).lower()
    place = CPUPlace() if device == "cpu" else CUDAPlace(int(device.split(":")[1]) if ":" in device else 0)
    default_tracer().expected_place = place
    return place
