"""Neural-network layers: fc, conv2d, pool2d, batch_norm, dropout, activations, softmax, accuracy, py_func.

Each builder only appends existing ops (their gradients come from the registry) and names its
parameters and temporaries through LayerHelper. What fc, conv2d, pool2d, batch_norm and dropout
append is described once in ``wiring.py``, for these builders and for dygraph's layers alike.
Simple unary activations come from one table.
"""
import numpy as np

from ..errors import check_type
from ..framework import dygraph_mode
from ..framework.program import default_main_program
from ..framework.variable import Variable
from ..ops import py_func as _py_func_op
from . import wiring
from .activation import _FLOAT, check_variable_and_dtype
from .creation import check_dtype
from .helper import LayerHelper, known_attrs

__all__ = ["accuracy", "adaptive_pool2d", "batch_norm", "conv2d", "dropout", "fc", "pool2d", "py_func", "relu", "sigmoid",
           "softmax", "square", "tanh"]


def _params(helper, specs, dtype):
    """The layer's parameters (layers/wiring.py lists them; None for one left out), created in both
    programs by ``helper``."""
    return [None if s is None else helper.create_parameter(attr=s.attr, shape=s.shape, dtype=dtype, is_bias=s.is_bias,
                                                           default_initializer=s.default_initializer) for s in specs]


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None):
    """Fully connected: ``act(sum_i flatten(input_i) @ W_i + b)``; ``input`` may be a list.

    Each input of shape [d0, ..., dk] is flattened to 2-D at ``num_flatten_dims`` and gets its own
    weight ``fc_<n>.w_<i>`` of shape [prod(dims[num_flatten_dims:]), size]; the bias is ``fc_<n>.b_0``.
    """
    check_type(input, "input", (list, tuple, Variable), "fc")
    for i, x in enumerate(input if isinstance(input, (list, tuple)) else []):
        check_type(x, f"input[{i}]", (Variable,), "fc")
    helper = LayerHelper("fc", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    check_dtype(dtype, "input", ("float16", "float32", "float64"), "fc")
    xs, in_sizes = [], []
    for x in helper.multiple_input():
        in_dims = x.shape[num_flatten_dims:]
        if any(d < 0 for d in in_dims):
            raise ValueError(f"fc: the dimensions of input {x.name!r} after num_flatten_dims="
                             f"{num_flatten_dims} must be known, got shape {list(x.shape)}")
        xs.append(x)
        in_sizes.append(int(np.prod(in_dims)))
    *weights, bias = _params(helper, wiring.fc_params(in_sizes, size, helper.multiple_param_attr(len(xs)),
                                                      helper.bias_attr), dtype)
    return wiring.fc_ops(wiring.StaticEmit(helper, dtype), xs, weights, bias, num_flatten_dims, act)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None, param_attr=None,
           bias_attr=None, use_cudnn=True, act=None, name=None, data_format="NCHW"):
    """2-D convolution over NCHW (or NHWC) input; filter ``conv2d_<n>.w_0`` is [num_filters, C/groups, kh, kw].

    The default filter initializer is Normal(0, sqrt(2 / (kh * kw * C))), as in fluid; the bias
    (shape [num_filters]) is added along the channel axis. ``padding``: see wiring.conv2d_attrs.
    """
    check_variable_and_dtype(input, "input", _FLOAT, "conv2d")
    if not isinstance(use_cudnn, bool):
        raise ValueError(f"Attr(use_cudnn) should be True or False. Received Attr(use_cudnn): {use_cudnn}. ")
    helper = LayerHelper("conv2d", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    groups = 1 if groups is None else int(groups)
    attrs = wiring.conv2d_attrs(stride, padding, dilation, groups, use_cudnn, data_format)
    channels = input.shape[3 if data_format == "NHWC" else 1]
    weight, bias = _params(helper, wiring.conv2d_params(channels, num_filters, filter_size, groups,
                                                        helper.param_attr, helper.bias_attr), dtype)
    return wiring.conv2d_ops(wiring.StaticEmit(helper, dtype), input, weight, bias, attrs, act)


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
           use_cudnn=True, ceil_mode=False, name=None, exclusive=True, data_format="NCHW"):
    """Max or average pooling over NCHW (or NHWC) input."""
    check_variable_and_dtype(input, "input", _FLOAT, "pool2d")
    if not isinstance(use_cudnn, bool):
        raise TypeError(f"Attr(use_cudnn) should be True or False. Received Attr(use_cudnn): {use_cudnn}.")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"Attr(data_format) should be 'NCHW' or 'NHWC'. Received Attr(data_format): {data_format}.")
    attrs = wiring.pool2d_attrs(pool_size, pool_type, pool_stride, pool_padding, global_pooling, use_cudnn,
                                ceil_mode, exclusive, data_format)
    helper = LayerHelper("pool2d", input=input, name=name)
    return wiring.StaticEmit(helper, helper.input_dtype()).op("pool2d", {"X": input}, attrs)


def adaptive_pool2d(input, pool_size, pool_type="max", require_index=False, name=None):
    """Max or average pooling of NCHW input to ``pool_size`` outputs: output i pools rows
    [floor(i*H/out), ceil((i+1)*H/out)) (columns alike), as fluid does. ``require_index`` (max only) also
    returns the int32 Mask: the flat H*W position of each max."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"Unknown pool_type: '{pool_type}'. It can only be 'max' or 'avg'.")
    if pool_type == "avg" and require_index:
        raise ValueError("invalid setting 'require_index' true when 'pool_type' is 'avg'.")
    size = wiring.pair(pool_size, "pool_size")
    if require_index:  # fluid's max_pool2d_with_index: Mask holds the flat H*W position of each max (int32)
        helper = LayerHelper("max_pool2d_with_index", input=input, name=name)
        emit = wiring.StaticEmit(helper, helper.input_dtype())
        mask = helper.create_variable_for_type_inference("int32", stop_gradient=True)
        return emit.op("max_pool2d_with_index", {"X": input}, {"ksize": size, "adaptive": True},
                       extra={"Mask": mask}), mask
    helper = LayerHelper("pool2d", input=input, name=name)
    return wiring.StaticEmit(helper, helper.input_dtype()).op(
        "pool2d", {"X": input}, {"pooling_type": pool_type, "ksize": size, "adaptive": True})


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None, bias_attr=None,
               data_layout="NCHW", name=None, moving_mean_name=None, moving_variance_name=None,
               use_global_stats=False):
    """Batch normalization; the moving mean/variance (``.w_1``/``.w_2``) are persistable, not trainable."""
    check_variable_and_dtype(input, "input", _FLOAT, "batch_norm")
    helper = LayerHelper("batch_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    params = _params(helper, wiring.batch_norm_params(channels, helper.param_attr, helper.bias_attr,
                                                      moving_mean_name, moving_variance_name), dtype)
    return wiring.batch_norm_ops(wiring.StaticEmit(helper, dtype), input, params,
                                 wiring.batch_norm_attrs(momentum, epsilon, is_test, data_layout, use_global_stats),
                                 act, momentum)


def dropout(x, dropout_prob, is_test=False, seed=None, name=None, dropout_implementation="downgrade_in_infer"):
    """Randomly zero elements with probability ``dropout_prob`` (fluid's two scaling conventions); a seed
    of None or 0 takes the program's ``random_seed`` when that is set."""
    if not seed and default_main_program().random_seed:
        seed = default_main_program().random_seed
    attrs = wiring.dropout_attrs(dropout_prob, is_test, seed, dropout_implementation)
    helper = LayerHelper("dropout", input=x, name=name)
    return wiring.dropout_ops(wiring.StaticEmit(helper, x.dtype), x, attrs)


def _unary_layer(op_type):
    def layer(x, name=None):
        check_variable_and_dtype(x, "x", ("float16", "float32", "float64"), op_type)
        helper = LayerHelper(op_type, input=x, name=name)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]})
        return out
    layer.__name__ = layer.__qualname__ = op_type
    layer.__doc__ = f"fluid.layers.{op_type}(x, name=None): elementwise {op_type}."
    return layer


relu, sigmoid, tanh, square = (_unary_layer(t) for t in ("relu", "sigmoid", "tanh", "square"))


def softmax(input, use_cudnn=False, name=None, axis=-1):
    """Softmax along ``axis``."""
    check_variable_and_dtype(input, "input", _FLOAT, "softmax")
    helper = LayerHelper("softmax", input=input, name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="softmax", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"axis": axis, **known_attrs("softmax", use_cudnn=use_cudnn)})
    return out


def accuracy(input, label, k=1, correct=None, total=None):
    """Top-k accuracy of ``input`` (scores [N, C]) against ``label`` ([N, 1] int64), as float32 [1]."""
    if not dygraph_mode.in_dygraph_mode():
        check_variable_and_dtype(input, "input", ("float16", "float32", "float64"), "accuracy")
    helper = LayerHelper("accuracy", input=input)
    topk_out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    topk_indices = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(type="top_k", inputs={"X": [input]}, outputs={"Out": [topk_out], "Indices": [topk_indices]},
                     attrs={"k": k})
    acc = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    correct = correct if correct is not None else helper.create_variable_for_type_inference("int32", True)
    total = total if total is not None else helper.create_variable_for_type_inference("int32", True)
    helper.append_op(type="accuracy", inputs={"Out": [topk_out], "Indices": [topk_indices], "Label": [label]},
                     outputs={"Accuracy": [acc], "Correct": [correct], "Total": [total]})
    return acc


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    """Rows of the table ``embedding_<n>.w_0`` of shape ``size`` = [vocabulary, width] for int64 ids of
    shape [..., 1] (output [..., width]). ``padding_idx`` (negative: from the end) reads as zeros and
    gets no gradient. The gradient is dense (``is_sparse`` is accepted for compatibility)."""
    check_variable_and_dtype(input, "input", ("int64",), "fluid.layers.embedding")
    check_dtype(dtype, "dtype", ("float16", "float32", "float64"), "fluid.layers.embedding")
    helper = LayerHelper("embedding", input=input, param_attr=param_attr)
    vocabulary, _ = size
    w = helper.create_parameter(attr=helper.param_attr, shape=list(size), dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    padding = -1 if padding_idx is None else padding_idx if padding_idx >= 0 else vocabulary + padding_idx
    helper.append_op(type="lookup_table", inputs={"Ids": [input], "W": [w]}, outputs={"Out": [out]},
                     attrs={"is_sparse": is_sparse, "is_distributed": is_distributed, "padding_idx": padding})
    return out


def _variables(value, what):
    """None, a Variable or a list / tuple of them, as a list (fluid's checks on py_func's x and out)."""
    if value is None:
        return []
    if isinstance(value, Variable):
        return [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, Variable) for v in value):
        raise TypeError(f"The type of '{what}' in py_func must be Variable, list(Variable), tuple(Variable) or None, "
                        f"but received {type(value).__name__}")
    return list(value)


def py_func(func, x, out, backward_func=None, skip_vars_in_backward_input=None):
    """An op that runs ``func`` on the values of ``x`` (LoDTensors; ``np.array`` converts them) and stores
    what it returns into ``out``, variables the caller declares with their shape and dtype. With
    ``backward_func`` the op has a gradient: ``backward_func(*x, *out, *out_grads)`` (less the variables in
    ``skip_vars_in_backward_input``) returns one gradient per input, None where one needs none; without it
    the inputs get no gradient. Returns ``out``. NOTE [ py_func's callables ] in ops/py_func.py."""
    xs, outs = _variables(x, "X"), _variables(out, "Out")
    fwd_id = _py_func_op.register_callable(func)
    bwd_id = _py_func_op.register_callable(backward_func) if backward_func is not None else -1
    for v in outs:
        if not v.shape:
            raise ValueError(f"Output shapes of py_func op should be provided by users manually: {v.name!r} has "
                             f"shape {v.shape}")
    skip = []
    if backward_func is not None and skip_vars_in_backward_input is not None:
        known = {v.name for v in xs + outs}
        for v in _variables(skip_vars_in_backward_input, "skip_vars_in_backward_input"):
            if v.name not in known:
                raise ValueError(f"Variable {v.name} is not found in forward inputs and outputs")
            skip.append(v.name)
    LayerHelper("py_func").append_op(type="py_func", inputs={"X": xs}, outputs={"Out": outs},
                                     attrs={"forward_callable_id": fwd_id, "backward_callable_id": bwd_id,
                                            "backward_skip_vars": sorted(set(skip))})
    return out


py_func.registered_func = _py_func_op.registered_func
py_func.registered_func_num = _py_func_op.registered_func_num
