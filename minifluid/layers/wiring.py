"""What fc, conv2d, pool2d, batch_norm, dropout and layer_norm append, written once for static and eager mode.

Each layer is described by two functions: ``<layer>_params(...)`` lists its parameters as
``ParamSpec`` (shape, attribute, bias or not, default initializer) and ``<layer>_ops(emit, ...)``
appends its ops through an emitter. The static builders (``layers/nn.py``: ``fc``, ``conv2d`` ...)
create the parameters with a LayerHelper and run the ops through ``StaticEmit`` (which, in dygraph
mode, the helper hands to the tracer); the eager layers (``dygraph/nn.py``: ``Linear``, ``Conv2D``
...) create the parameters once in ``__init__`` and run the same ``*_ops`` through their eager
emitter on every call. An emitter offers::

    emit.op(type, inputs, attrs=None, out="Out", extra=None) -> the new output of slot ``out``
    emit.bias(x, b, axis)   emit.act(x, act)

``inputs`` maps slots to a variable (or a list); ``extra`` maps other output slots to an existing
variable (written in place, as batch_norm's MeanOut) or to ``New(dtype)``: a fresh temporary that
takes no gradient (dtype None: the layer's).
"""
from typing import NamedTuple

from ..framework.variable import Variable
from ..initializer import Constant, Normal
from ..param_attr import ParamAttr
from .helper import known_attrs

__all__ = ["New", "ParamSpec", "StaticEmit", "batch_norm_attrs", "batch_norm_inputs", "batch_norm_ops",
           "batch_norm_params", "conv2d_attrs", "conv2d_ops", "conv2d_params", "dropout_attrs", "dropout_ops", "fc_ops", "fc_params",
           "ints", "layer_norm_ops", "layer_norm_params", "pair", "pool2d_attrs", "spatial_padding"]


class ParamSpec(NamedTuple):
    shape: list
    attr: object
    is_bias: bool = False
    default_initializer: object = None


class New(NamedTuple):
    """An output slot's fresh temporary (no gradient)."""
    dtype: str = None


def ints(value, n, name):
    """fluid's convert_to_list: ``n`` copies of an int, else the ``n`` ints of a list or tuple; anything else is
    its ValueError (a length other than ``n``, or an entry that is no int: a nested padding list too)."""
    if isinstance(value, int):
        return [value] * n
    try:
        items = list(value)
    except TypeError:
        raise ValueError(f"The {name}'s type must be list or tuple. Received: {value}") from None
    if len(items) != n:
        raise ValueError(f"The {name}'s length must be {n}. Received: {value}")
    try:
        return [int(v) for v in items]
    except (TypeError, ValueError):
        raise ValueError(f"The {name}'s type must be a list or tuple of {n} int. Received: {value}") from None


def pair(value, name):
    return ints(value, 2, name)


def spatial_padding(padding, data_format, name="padding"):
    """(paddings, padding_algorithm) from fluid 1.8's 2-D padding forms: 'SAME' / 'VALID' (paddings [0, 0]), the
    per-dimension pairs of the data format ([[0, 0], [0, 0], [top, bottom], [left, right]] for NCHW),
    [top, bottom, left, right] (kept as 4 values unless symmetric) or an int / [h, w] pair."""
    if isinstance(padding, str):
        algorithm = padding.upper()
        if algorithm not in ("SAME", "VALID"):
            raise ValueError(f"Unknown {name}: '{algorithm}'. It can only be 'SAME' or 'VALID'.")
        return [0, 0], algorithm
    if isinstance(padding, (list, tuple)) and len(padding) == 4:
        if isinstance(padding[0], (list, tuple)):
            outer = (padding[0], padding[1]) if data_format == "NCHW" else (padding[0], padding[3])
            if any(list(p) != [0, 0] for p in outer):
                raise ValueError(f"Non-zero {name}({padding}) in the batch or channel dimensions is not supported.")
            padding = [v for p in (padding[2:4] if data_format == "NCHW" else padding[1:3]) for v in p]
        padding = ints(padding, 4, name)
        return (padding if padding[0] != padding[1] or padding[2] != padding[3] else padding[::2]), "EXPLICIT"
    return pair(padding, name), "EXPLICIT"


class StaticEmit:
    """Appends ops through a LayerHelper (graph building; eager when the helper is in dygraph mode)."""

    def __init__(self, helper, dtype):
        self.helper, self.dtype = helper, dtype

    def op(self, type, inputs, attrs=None, out="Out", extra=None):
        helper = self.helper
        result = helper.create_variable_for_type_inference(self.dtype)
        outputs = {out: [result]}
        for slot, v in (extra or {}).items():
            outputs[slot] = [helper.create_variable_for_type_inference(v.dtype or self.dtype, stop_gradient=True)
                             if isinstance(v, New) else v]
        helper.append_op(type=type, inputs={k: v if isinstance(v, list) else [v] for k, v in inputs.items()},
                         outputs=outputs, attrs=attrs or {})
        return result

    def bias(self, x, b, axis):
        return x if b is None else self.op("elementwise_add", {"X": x, "Y": b}, {"axis": axis})

    def act(self, x, act):
        """``act``: None, an op name, or a dict with ``type`` plus the op's attributes."""
        if act is None:
            return x
        attrs = {"type": act} if isinstance(act, str) else dict(act)
        return self.op(attrs.pop("type"), {"X": x}, attrs)


# --- fc / Linear -------------------------------------------------------------------------------------
def fc_params(in_sizes, size, param_attrs, bias_attr):
    """One weight [in_size, size] per input, then the bias [size]."""
    return [ParamSpec([n, size], attr) for n, attr in zip(in_sizes, param_attrs)] + \
        [ParamSpec([size], bias_attr, is_bias=True)]


def fc_ops(emit, xs, weights, bias, num_flatten_dims, act):
    """``act(sum_i flatten(x_i) @ W_i + b)``: mul per input, sum when several, bias, activation."""
    products = [emit.op("mul", {"X": x, "Y": w}, {"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1})
                for x, w in zip(xs, weights)]
    out = products[0] if len(products) == 1 else emit.op("sum", {"X": products})
    return emit.act(emit.bias(out, bias, num_flatten_dims), act)


# --- conv2d / Conv2D ---------------------------------------------------------------------------------
def conv2d_params(channels, num_filters, filter_size, groups, param_attr, bias_attr):
    """Filter [num_filters, channels / groups, kh, kw], Normal(0, sqrt(2 / (kh * kw * channels))) by default
    as in fluid, and the bias [num_filters]."""
    if channels < 0 or channels % groups:
        raise ValueError(f"conv2d: the channel dimension of the input ({channels}) must be known and "
                         f"divisible by groups ({groups})")
    ksize = pair(filter_size, "filter_size")
    std = (2.0 / (ksize[0] * ksize[1] * channels)) ** 0.5
    return [ParamSpec([num_filters, channels // groups] + ksize, param_attr, default_initializer=Normal(0.0, std, 0)),
            ParamSpec([num_filters], bias_attr, is_bias=True)]


def conv2d_attrs(stride, padding, dilation, groups, use_cudnn, data_format="NCHW"):
    """fluid 1.8's padding forms: an int or pair, [top, bottom, left, right], the per-dimension pairs of the
    data format ([[0, 0], [0, 0], [top, bottom], [left, right]] for NCHW) or 'SAME' / 'VALID'."""
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"Attr(data_format) should be 'NCHW' or 'NHWC'. Received Attr(data_format): {data_format}.")
    paddings, algorithm = spatial_padding(padding, data_format)
    return {"strides": pair(stride, "stride"), "paddings": paddings, "dilations": pair(dilation, "dilation"),
            "groups": groups, "padding_algorithm": algorithm, "data_format": data_format,
            **known_attrs("conv2d", use_cudnn=use_cudnn)}


def conv2d_ops(emit, x, weight, bias, attrs, act):
    out = emit.op("conv2d", {"Input": x, "Filter": weight}, attrs, out="Output")
    return emit.act(emit.bias(out, bias, 3 if attrs.get("data_format") == "NHWC" else 1), act)


# --- pool2d / Pool2D (no parameters: one pool2d op) ------------------------------------------------------
def pool2d_attrs(pool_size, pool_type, pool_stride, pool_padding, global_pooling, use_cudnn, ceil_mode, exclusive,
                 data_format="NCHW"):
    if pool_type not in ("max", "avg"):
        raise ValueError(f"Unknown Attr(pool_type): '{pool_type}'. It can only be 'max' or 'avg'.")
    if not global_pooling and pool_size == -1:
        raise ValueError("When Attr(global_pooling) is False, Attr(pool_size) must be passed and be a valid "
                         f"value. Received pool_size: {pool_size}")
    paddings, algorithm = spatial_padding(pool_padding, data_format, "pool_padding")
    if algorithm == "VALID" and ceil_mode:
        raise ValueError('When Attr(pool_padding) is "VALID", Attr(ceil_mode) must be False. Received ceil_mode: '
                         'True.')
    return {"pooling_type": pool_type, "ksize": [1, 1] if pool_size == -1 else pair(pool_size, "pool_size"),
            "global_pooling": global_pooling, "strides": pair(pool_stride, "pool_stride"), "paddings": paddings,
            "padding_algorithm": algorithm, "ceil_mode": ceil_mode, "exclusive": exclusive,
            **known_attrs("pool2d", use_cudnn=use_cudnn, data_format=data_format)}


# --- batch_norm / BatchNorm --------------------------------------------------------------------------
def batch_norm_params(channels, param_attr, bias_attr, moving_mean_name, moving_variance_name):
    """Scale (ones), bias (zeros), and the moving mean / variance: persistable, not trainable."""
    return [ParamSpec([channels], param_attr, default_initializer=Constant(1.0)),
            ParamSpec([channels], bias_attr, is_bias=True),
            ParamSpec([channels], ParamAttr(name=moving_mean_name, initializer=Constant(0.0), trainable=False)),
            ParamSpec([channels], ParamAttr(name=moving_variance_name, initializer=Constant(1.0), trainable=False))]


def batch_norm_attrs(momentum, epsilon, is_test, data_layout, use_global_stats, trainable_statistics=False):
    """A Variable ``momentum`` is read at run time (``batch_norm_inputs``); the attribute keeps its default."""
    momentum = 0.9 if isinstance(momentum, Variable) else momentum
    return {"momentum": momentum, "epsilon": epsilon, "is_test": is_test, "data_layout": data_layout,
            **known_attrs("batch_norm", use_global_stats=use_global_stats,
                          trainable_statistics=trainable_statistics)}


def batch_norm_inputs(x, params, momentum=None):
    """The op's inputs; a Variable ``momentum`` goes to MomentumTensor."""
    scale, bias, mean, variance = params
    inputs = {"X": x, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": variance}
    if isinstance(momentum, Variable):
        inputs["MomentumTensor"] = momentum
    return inputs


def batch_norm_ops(emit, x, params, attrs, act, momentum=None):
    mean, variance = params[2:]
    y = emit.op("batch_norm", batch_norm_inputs(x, params, momentum), attrs, out="Y",
                extra={"MeanOut": mean, "VarianceOut": variance, "SavedMean": New(), "SavedVariance": New()})
    return emit.act(y, act)


# --- dropout / Dropout (no parameters) ----------------------------------------------------------------
def dropout_attrs(dropout_prob, is_test, seed, dropout_implementation):
    if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
        raise ValueError("dropout_implementation must be 'downgrade_in_infer' or 'upscale_in_train', got "
                         f"{dropout_implementation!r}")
    return {"dropout_prob": dropout_prob, "is_test": is_test, "fix_seed": seed is not None,
            "seed": seed if seed is not None else 0, "dropout_implementation": dropout_implementation}


def dropout_ops(emit, x, attrs):
    return emit.op("dropout", {"X": x}, attrs, extra={"Mask": New("uint8")})


# --- layer_norm / LayerNorm ---------------------------------------------------------------------------
def layer_norm_params(size, scale, shift, param_attr, bias_attr):
    """[Scale, Bias], each [size] (ones and zeros) or None when ``scale`` / ``shift`` is off."""
    return [ParamSpec([size], param_attr, default_initializer=Constant(1.0)) if scale else None,
            ParamSpec([size], bias_attr, is_bias=True) if shift else None]


def layer_norm_ops(emit, x, scale, bias, epsilon, begin_norm_axis, act):
    inputs = {"X": x}
    if scale is not None:
        inputs["Scale"] = scale
    if bias is not None:
        inputs["Bias"] = bias
    y = emit.op("layer_norm", inputs, {"epsilon": epsilon, "begin_norm_axis": begin_norm_axis}, out="Y",
                extra={"Mean": New(), "Variance": New()})
    return emit.act(y, act)
