"""Arithmetic layers: elementwise_* (generated from one table), scale, mean, reduce_*, matmul."""
from .helper import LayerHelper

__all__ = ["elementwise_add", "elementwise_div", "elementwise_max", "elementwise_min", "elementwise_mul",
           "elementwise_pow", "elementwise_sub", "matmul", "mean", "reduce_max", "reduce_mean", "reduce_min",
           "reduce_sum", "scale"]


def _elementwise_layer(op_type):
    def layer(x, y, axis=-1, act=None, name=None):
        helper = LayerHelper(op_type, x=x, y=y, act=act, name=name)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]}, attrs={"axis": axis})
        return helper.append_activation(out)
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = (f"fluid.layers.{op_type}(x, y, axis=-1, act=None, name=None): y broadcast onto x "
                     "from dimension ``axis`` (-1: align trailing dimensions).")
    return layer


(elementwise_add, elementwise_sub, elementwise_mul, elementwise_div, elementwise_max, elementwise_min,
 elementwise_pow) = (_elementwise_layer("elementwise_" + k) for k in ("add", "sub", "mul", "div", "max", "min", "pow"))


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """``x * scale + bias`` (or ``(x + bias) * scale`` when ``bias_after_scale`` is False)."""
    helper = LayerHelper("scale", x=x, act=act, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="scale", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"scale": float(scale), "bias": float(bias), "bias_after_scale": bias_after_scale})
    return helper.append_activation(out)


def mean(x, name=None):
    """Mean of all elements, shape [1]."""
    helper = LayerHelper("mean", x=x, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="mean", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def _reduce_layer(op_type):
    def layer(input, dim=None, keep_dim=False, name=None):
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


reduce_sum, reduce_mean, reduce_max, reduce_min = (_reduce_layer("reduce_" + k) for k in ("sum", "mean", "max", "min"))


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """Batched matrix product with optional transposes, scaled by ``alpha``."""
    helper = LayerHelper("matmul", x=x, y=y, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(type="matmul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"transpose_X": transpose_x, "transpose_Y": transpose_y, "alpha": float(alpha)})
    return out
