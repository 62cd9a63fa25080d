"""Normalisation layers: layer_norm, l2_normalize, lrn (fluid 1.8 signatures, defaults and checks)."""
import numpy as np

from ..ops.norm import check_begin_norm_axis
from .activation import check_variable_and_dtype
from . import wiring
from .helper import LayerHelper
from .nn import _params

__all__ = ["l2_normalize", "layer_norm", "lrn"]


def layer_norm(input, scale=True, shift=True, begin_norm_axis=1, epsilon=1e-05, param_attr=None, bias_attr=None,
               act=None, name=None):
    """Normalise each sample over the dims from ``begin_norm_axis`` on, then scale (``<name>.w_0``, ones) and
    shift (``<name>.b_0``, zeros), both of shape [prod(input.shape[begin_norm_axis:])]."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "layer_norm")
    helper = LayerHelper("layer_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    check_begin_norm_axis(begin_norm_axis, len(input.shape))
    tail = input.shape[begin_norm_axis:]
    if any(d < 0 for d in tail):
        raise ValueError(f"layer_norm: the dims of {input.name!r} from begin_norm_axis={begin_norm_axis} must be "
                         f"known, got shape {list(input.shape)}")
    scale, bias = _params(helper, wiring.layer_norm_params(int(np.prod(tail)), scale, shift, helper.param_attr,
                                                           helper.bias_attr), dtype)
    return wiring.layer_norm_ops(wiring.StaticEmit(helper, dtype), input, scale, bias, epsilon, begin_norm_axis, act)


def l2_normalize(x, axis, epsilon=1e-12, name=None):
    """``x / sqrt(sum(x ** 2, axis) + epsilon)``; a 1-D ``x`` is normalised along axis 0."""
    check_variable_and_dtype(x, "X", ("float32", "float64"), "norm")
    axis = 0 if len(x.shape) == 1 else axis
    helper = LayerHelper("l2_normalize", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    norm = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op(type="norm", inputs={"X": [x]}, outputs={"Out": [out], "Norm": [norm]},
                     attrs={"axis": 1 if axis is None else axis, "epsilon": epsilon})
    return out


def lrn(input, n=5, k=1.0, alpha=1e-4, beta=0.75, name=None, data_format="NCHW"):
    """Local response normalisation across channels: ``input * (k + alpha * sum of squares over the n
    neighbouring channels) ** -beta``."""
    check_variable_and_dtype(input, "input", ("float32",), "lrn")
    if len(input.shape) != 4:
        raise ValueError(f"Input's dimension size of Op(lrn) must be 4, but received {len(input.shape)}.")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"Attr(data_format) of Op(lrn) got wrong value: received {data_format} but only NCHW or "
                         "NHWC supported.")
    helper = LayerHelper("lrn", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    mid = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op(type="lrn", inputs={"X": [input]}, outputs={"Out": [out], "MidOut": [mid]},
                     attrs={"n": n, "k": k, "alpha": alpha, "beta": beta, "data_format": data_format})
    return out
