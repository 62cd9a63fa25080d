"""Arithmetic layers: elementwise_* (generated from one table), scale, mean, reduce_*, matmul, mul, sum, logsumexp,
has_inf / has_nan / isfinite, dot, bmm, t."""
from ..framework import dygraph_mode
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .helper import LayerHelper
from .tensor import transpose

__all__ = ["bmm", "dot", "elementwise_add", "elementwise_div", "elementwise_floordiv", "elementwise_max",
           "elementwise_min", "elementwise_mod", "elementwise_mul", "elementwise_pow", "elementwise_sub", "has_inf",
           "has_nan", "isfinite", "logsumexp", "matmul", "mean", "mul", "reduce_all", "reduce_any", "reduce_max",
           "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum", "scale", "sum", "t"]


_ELEMENTWISE_DTYPES = ("float16", "float32", "float64", "int32", "int64")


def _elementwise_layer(op_type):
    def layer(x, y, axis=-1, act=None, name=None):
        if not dygraph_mode.in_dygraph_mode():
            check_variable_and_dtype(x, "x", _ELEMENTWISE_DTYPES, op_type)
            check_variable_and_dtype(y, "y", _ELEMENTWISE_DTYPES, op_type)
        helper = LayerHelper(op_type, x=x, y=y, act=act, name=name)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]}, attrs={"axis": axis})
        return helper.append_activation(out)
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = (f"fluid.layers.{op_type}(x, y, axis=-1, act=None, name=None): y broadcast onto x "
                     "from dimension ``axis`` (-1: align trailing dimensions).")
    return layer


(elementwise_add, elementwise_sub, elementwise_mul, elementwise_div, elementwise_max, elementwise_min,
 elementwise_pow, elementwise_floordiv, elementwise_mod) = (
    _elementwise_layer("elementwise_" + k) for k in ("add", "sub", "mul", "div", "max", "min", "pow", "floordiv",
                                                     "mod"))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """``x * scale + bias`` (or ``(x + bias) * scale`` when ``bias_after_scale`` is False)."""
    check_variable_and_dtype(x, "x", ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
                             "scale")
    helper = LayerHelper("scale", x=x, act=act, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    inputs = {"X": [x]}
    if isinstance(scale, Variable):  # read at run time
        inputs["ScaleTensor"], scale = [scale], 1.0
    helper.append_op(type="scale", inputs=inputs, outputs={"Out": [out]},
                     attrs={"scale": float(scale), "bias": float(bias), "bias_after_scale": bias_after_scale})
    return helper.append_activation(out)


def mean(x, name=None):
    """Mean of all elements, shape [1]."""
    if not dygraph_mode.in_dygraph_mode():
        check_variable_and_dtype(x, "x", ("float16", "float32", "float64"), "mean")
    helper = LayerHelper("mean", x=x, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="mean", inputs={"X": [x]}, outputs={"Out": [out]})
    if out.shape is None:  # [1] whatever X is (its shape may be unknown when it is built)
        out.shape = (1,)
    return out


def _reduce_layer(op_type, dtypes=None):
    def layer(input, dim=None, keep_dim=False, name=None):
        if dtypes:
            check_variable_and_dtype(input, "input", dtypes, op_type)
        helper = LayerHelper(op_type, input=input, name=name)
        out = helper.create_variable_for_type_inference(input.dtype)
        if dim is not None and not isinstance(dim, (list, tuple)):
            dim = [dim]
        reduce_all = not dim or len(dim) == len(input.shape)
        helper.append_op(type=op_type, inputs={"X": [input]}, outputs={"Out": [out]},
                         attrs={"dim": list(dim) if dim else [0], "keep_dim": keep_dim, "reduce_all": reduce_all})
        return out
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = (f"fluid.layers.{op_type}(input, dim=None, keep_dim=False, name=None): reduce over ``dim`` "
                     "(an int or list; None reduces everything to shape [1]).")
    return layer


_REDUCE_NUMBERS = ("float32", "float64", "int32", "int64")
reduce_sum, reduce_mean = (_reduce_layer("reduce_" + k, _REDUCE_NUMBERS) for k in ("sum", "mean"))
reduce_max, reduce_min, reduce_prod = (_reduce_layer("reduce_" + k) for k in ("max", "min", "prod"))
reduce_all, reduce_any = _reduce_layer("reduce_all", ("bool",)), _reduce_layer("reduce_any", ("bool",))


def _check_matmul(x, y, transpose_x, transpose_y):
    """fluid's build-time checks: float Variables whose inner dimensions agree, and equal batch dimensions."""
    check_variable_and_dtype(x, "x", ("float16", "float32", "float64"), "matmul")
    check_variable_and_dtype(y, "y", ("float16", "float32", "float64"), "matmul")
    xs = [1] + list(x.shape) if len(x.shape) == 1 else list(x.shape)
    ys = list(y.shape) + [1] if len(y.shape) == 1 else list(y.shape)
    if transpose_x:
        xs[-2], xs[-1] = xs[-1], xs[-2]
    if transpose_y:
        ys[-2], ys[-1] = ys[-1], ys[-2]
    if xs[-1] != ys[-2] and xs[-1] != -1 and ys[-2] != -1:
        raise ValueError(f"matmul: after the optional transposes, Input X's width should be equal to Y's height. "
                         f"But received X's shape: {xs}, Y's shape: {ys}")
    if len(xs) > 2 and len(ys) > 2:
        for i, (dx, dy) in enumerate(zip(xs[:-2], ys[:-2])):
            if dx >= 0 and dy >= 0 and dx != dy:
                raise ValueError(f"matmul: when the matrices have more than 2 dimensions, their higher dimensions "
                                 f"must be equal. But received x_shape[{i}] != y_shape[{i}]. X's shape: {xs}, "
                                 f"Y's shape: {ys}.")


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """Batched matrix product with optional transposes, scaled by ``alpha`` (the rules: ops/matmul.py)."""
    if not dygraph_mode.in_dygraph_mode():
        _check_matmul(x, y, transpose_x, transpose_y)
    helper = LayerHelper("matmul", x=x, y=y, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="matmul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"transpose_X": transpose_x, "transpose_Y": transpose_y, "alpha": float(alpha)})
    return out


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    """``x`` flattened to a matrix at ``x_num_col_dims`` times ``y`` flattened at ``y_num_col_dims``; the result
    has shape ``x.shape[:x_num_col_dims] + y.shape[y_num_col_dims:]``."""
    check_variable_and_dtype(x, "x", ("float16", "float32", "float64"), "mul")
    check_variable_and_dtype(y, "y", ("float16", "float32", "float64"), "mul")
    helper = LayerHelper("mul", x=x, y=y, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="mul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"x_num_col_dims": x_num_col_dims, "y_num_col_dims": y_num_col_dims})
    return out


def sum(x):
    """Elementwise sum of a Variable or a list of same-shaped Variables (one ``sum`` op)."""
    if not isinstance(x, (Variable, tuple, list)):
        raise TypeError(f"The type of 'x' in sum must be (Variable, tuple, list), but received {type(x).__name__}. ")
    xs = list(x) if isinstance(x, (tuple, list)) else [x]
    for item in xs:
        check_variable_and_dtype(item, "x", ("float32", "float64", "int32", "int64"), "sum")
    helper = LayerHelper("sum", x=xs)
    out = helper.create_variable_for_type_inference(helper.input_dtype("x"))
    helper.append_op(type="sum", inputs={"X": xs}, outputs={"Out": [out]}, attrs={"use_mkldnn": False})
    return out


def logsumexp(x, dim=None, keepdim=False, out=None, name=None):
    """``log(reduce_sum(exp(x), dim, keepdim))`` (written into ``out`` when given), as fluid composes it."""
    check_variable_and_dtype(x, "x", ("float32", "float64"), "logsumexp")
    helper = LayerHelper("logsumexp", x=x, name=name)
    exp = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="exp", inputs={"X": [x]}, outputs={"Out": [exp]})
    total = reduce_sum(exp, dim, keepdim)
    if out is not None:
        check_variable_and_dtype(out, "out", (x.dtype,), "logsumexp")
    out = out if out is not None else helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="log", inputs={"X": [total]}, outputs={"Out": [out]})
    return out


def _overflow_layer(op_type, api, dtype=None):
    def layer(x):
        if not isinstance(x, Variable):
            raise TypeError(f"The type of 'x' in {api} must be Variable, but received {type(x).__name__}. ")
        if dtype:
            check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), api)
        helper = LayerHelper(op_type, x=x)
        out = helper.create_variable_for_type_inference(dtype or x.dtype, stop_gradient=True)
        helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]})
        return out
    layer.__name__ = layer.__qualname__ = api
    return layer


has_inf, has_nan = _overflow_layer("isinf", "has_inf"), _overflow_layer("isnan", "has_nan")
has_inf.__doc__ = "Whether any element of ``x`` is inf: 1 or 0 in ``x``'s dtype, shape [1]."
has_nan.__doc__ = "Whether any element of ``x`` is nan: 1 or 0 in ``x``'s dtype, shape [1]."
isfinite = _overflow_layer("isfinite", "isfinite", "bool")
isfinite.__doc__ = "Whether every element of ``x`` is finite: bool, shape [1]."


def dot(x, y, name=None):
    """Inner products over the last dimension of two 1-D or 2-D tensors of one shape: shape ``x.shape[:-1] + [1]``."""
    check_variable_and_dtype(x, "x", ("float32", "float64", "int32", "int64"), "dot")
    check_variable_and_dtype(y, "y", ("float32", "float64", "int32", "int64"), "dot")
    helper = LayerHelper("dot", x=x, y=y, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="dot", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
    return out


def bmm(x, y, name=None):
    """Batched matrix product of ``[B, M, K]`` and ``[B, K, N]`` tensors (one ``bmm`` op, ops/basic_math.py)."""
    helper = LayerHelper("bmm", x=x, y=y, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="bmm", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
    return out


def t(input, name=None):
    """A 2-D tensor transposed (a 0-D or 1-D one returned as it is)."""
    if len(input.shape) > 2:
        raise ValueError(f"Input(input) only support N-D (N<=2) tensor, but received length of Input(input) is "
                         f"{len(input.shape)}. Perhaps you can use paddle.tensor.transpose() instead.")
    check_variable_and_dtype(input, "input", ("float16", "float32", "float64", "int32", "int64"), "transpose")
    if len(input.shape) < 2:
        return input
    return transpose(input, [1, 0], name)
