"""Activation and elementwise math layers (fluid.layers.ops and the activations of fluid.layers.nn).

Most are one op with a few attributes: ``_op_layer`` writes each such builder from fluid's signature,
so ``inspect.signature(fluid.layers.leaky_relu)`` reads ``(x, alpha=0.02, name=None)`` as in fluid 1.8.
"""
import inspect

import numpy as np

from ..framework.variable import Variable
from .helper import LayerHelper, check_variable_and_dtype
from .tensor import assign

__all__ = ["abs", "acos", "asin", "atan", "brelu", "ceil", "cos", "elu", "erf", "exp", "floor", "gelu", "hard_shrink",
           "hard_sigmoid", "hard_swish", "leaky_relu", "log", "log1p", "log_softmax", "logsigmoid", "pow", "prelu",
           "reciprocal", "relu6", "round", "rsqrt", "selu", "sign", "sin", "soft_relu", "softplus", "softshrink",
           "softsign", "sqrt", "stanh", "swish", "tanh_shrink", "thresholded_relu"]

_FLOAT = ("float16", "float32", "float64")


def _append(op_type, x, attrs, name=None, inputs=None):
    helper = LayerHelper(op_type, x=x, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type=op_type, inputs={"X": [x], **(inputs or {})}, outputs={"Out": [out]}, attrs=attrs)
    return out


def _op_layer(op_type, x_name="x", dtypes=_FLOAT, **defaults):
    """A layer ``op_type(x, <attr>=<default>..., name=None)`` appending op ``op_type``; attrs left None are
    not set (the op's own default applies, as fluid leaves them)."""
    def layer(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        x, name = values.pop(x_name), values.pop("name")
        check_variable_and_dtype(x, x_name, dtypes, op_type)
        return _append(op_type, x, {k: v for k, v in values.items() if v is not None}, name)
    P = inspect.Parameter
    sig = inspect.Signature([P(x_name, P.POSITIONAL_OR_KEYWORD)] +
                            [P(k, P.POSITIONAL_OR_KEYWORD, default=v) for k, v in defaults.items()] +
                            [P("name", P.POSITIONAL_OR_KEYWORD, default=None)])
    layer.__signature__ = sig
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = f"fluid.layers.{op_type}{sig}: elementwise {op_type} (one ``{op_type}`` op)."
    return layer


(exp, sqrt, rsqrt, abs, ceil, floor, cos, sin, atan, round, reciprocal, softplus, softsign, logsigmoid,
 tanh_shrink, log, acos, asin) = (_op_layer(t) for t in ("exp", "sqrt", "rsqrt", "abs", "ceil", "floor", "cos", "sin",
                                                        "atan", "round", "reciprocal", "softplus", "softsign",
                                                        "logsigmoid", "tanh_shrink", "log", "acos", "asin"))
leaky_relu = _op_layer("leaky_relu", alpha=0.02)
elu = _op_layer("elu", alpha=1.0)
relu6 = _op_layer("relu6", threshold=6.0)
brelu = _op_layer("brelu", t_min=0.0, t_max=24.0)
soft_relu = _op_layer("soft_relu", threshold=40.0)
stanh = _op_layer("stanh", scale_a=0.67, scale_b=1.7159)
hard_sigmoid = _op_layer("hard_sigmoid", slope=0.2, offset=0.5)
swish = _op_layer("swish", beta=1.0)
hard_swish = _op_layer("hard_swish", threshold=6.0, scale=6.0, offset=3.0)
selu = _op_layer("selu", scale=None, alpha=None)
gelu = _op_layer("gelu", approximate=False)
thresholded_relu = _op_layer("thresholded_relu", threshold=None)
hard_shrink = _op_layer("hard_shrink", threshold=None)


def softshrink(x, alpha=None):
    """Soft shrink: ``x - alpha`` above ``alpha``, ``x + alpha`` below ``-alpha``, else 0 (op attr ``lambda``)."""
    check_variable_and_dtype(x, "x", _FLOAT, "softshrink")
    return _append("softshrink", x, {} if alpha is None else {"lambda": float(alpha)})


def pow(x, factor=1.0, name=None):
    """``x ** factor`` elementwise; a Variable ``factor`` (shape [1], float32) is read at run time."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), "pow")
    if isinstance(factor, Variable):
        check_variable_and_dtype(factor, "factor", ("float32",), "pow")
        factor.stop_gradient = True
        return _append("pow", x, {}, name, inputs={"FactorTensor": [factor]})
    if not isinstance(factor, (int, float)):
        raise TypeError(f"factor must be float or Variable, but received {type(factor).__name__}")
    return _append("pow", x, {"factor": float(factor)}, name)


def log_softmax(input, axis=None, dtype=None, name=None):
    """``log(softmax(input))`` along ``axis`` (default -1), computed without forming the softmax."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "log_softmax")
    if dtype is not None:
        from .tensor import cast
        input = cast(input, dtype)
    return _append("log_softmax", input, {"axis": -1 if axis is None else int(axis)}, name)


def prelu(x, mode, param_attr=None, name=None):
    """``max(0, x) + alpha * min(0, x)`` with a learned ``alpha``: one value (``mode='all'``), one per channel
    (``'channel'``, shape [1, C, 1, 1]) or one per element of a sample (``'element'``, shape [1] + x.shape[1:])."""
    check_variable_and_dtype(x, "x", ("float32", "float64"), "prelu")
    helper = LayerHelper("prelu", x=x, param_attr=param_attr, name=name)
    if mode not in ("all", "channel", "element"):
        raise ValueError("mode should be one of all, channel, element.")
    alpha_shape = [1]
    if mode == "channel":
        if len(x.shape) < 2:
            raise AssertionError("The size of input shape should be equal or larger than 2 in prelu() when mode is "
                                 "'channel'")
        alpha_shape = [1, x.shape[1], 1, 1]
    elif mode == "element":
        alpha_shape = [1] + list(x.shape[1:])
    from ..initializer import Constant
    alpha = helper.create_parameter(attr=helper.param_attr, shape=alpha_shape, dtype=x.dtype,
                                    default_initializer=Constant(0.25))
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="prelu", inputs={"X": [x], "Alpha": [alpha]}, outputs={"Out": [out]},
                     attrs={"mode": mode})
    return out


def log1p(x, out=None, name=None):
    """``log(1 + x)`` elementwise, accurate for small ``x`` (written into ``out`` when given)."""
    check_variable_and_dtype(x, "x", ("float32", "float64"), "log1p")
    if out is None:
        return _append("log1p", x, {}, name)
    LayerHelper("log1p", x=x).append_op(type="log1p", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def sign(x):
    """-1, 0 or 1 by the sign of each element of ``x`` (a Variable or a numpy array)."""
    if not isinstance(x, (Variable, np.ndarray)):
        raise TypeError(f"The type of 'x' in sign must be (Variable, numpy.ndarray), but received {type(x).__name__}. ")
    if isinstance(x, np.ndarray):
        x = assign(x)
    check_variable_and_dtype(x, "x", _FLOAT, "sign")
    return _append("sign", x, {})


def erf(x):
    """The error function, elementwise (float32 precision)."""
    check_variable_and_dtype(x, "x", _FLOAT, "erf")
    return _append("erf", x, {})
