"""Neural-network layers: fc, conv2d, pool2d, batch_norm, dropout, activations, softmax, accuracy.

Each builder only appends existing ops (their gradients come from the registry) and names its
parameters and temporaries through LayerHelper. Simple unary activations come from one table.
"""
import numpy as np

from ..initializer import Constant, Normal
from ..param_attr import ParamAttr
from .helper import LayerHelper, known_attrs

__all__ = ["accuracy", "batch_norm", "conv2d", "dropout", "fc", "pool2d", "relu", "sigmoid", "softmax",
           "square", "tanh"]


def _pair(value, name):
    if isinstance(value, int):
        return [value, value]
    value = [int(v) for v in value]
    if len(value) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {value}")
    return value


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None):
    """Fully connected: ``act(sum_i flatten(input_i) @ W_i + b)``; ``input`` may be a list.

    Each input of shape [d0, ..., dk] is flattened to 2-D at ``num_flatten_dims`` and gets its own
    weight ``fc_<n>.w_<i>`` of shape [prod(dims[num_flatten_dims:]), size]; the bias is ``fc_<n>.b_0``.
    """
    helper = LayerHelper("fc", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    products = []
    for x, attr in helper.iter_inputs_and_params():
        in_dims = x.shape[num_flatten_dims:]
        if any(d < 0 for d in in_dims):
            raise ValueError(f"fc: the dimensions of input {x.name!r} after num_flatten_dims="
                             f"{num_flatten_dims} must be known, got shape {list(x.shape)}")
        w = helper.create_parameter(attr=attr, shape=[int(np.prod(in_dims)), size], dtype=dtype)
        out = helper.create_variable_for_type_inference(dtype)
        helper.append_op(type="mul", inputs={"X": [x], "Y": [w]}, outputs={"Out": [out]},
                         attrs={"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1})
        products.append(out)
    if len(products) == 1:
        pre_bias = products[0]
    else:
        pre_bias = helper.create_variable_for_type_inference(dtype)
        helper.append_op(type="sum", inputs={"X": products}, outputs={"Out": [pre_bias]})
    return helper.append_activation(helper.append_bias_op(pre_bias, dim_start=num_flatten_dims))


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None, param_attr=None,
           bias_attr=None, use_cudnn=True, act=None, name=None):
    """2-D convolution over NCHW input; filter ``conv2d_<n>.w_0`` is [num_filters, C/groups, kh, kw].

    The default filter initializer is Normal(0, sqrt(2 / (kh * kw * C))), as in fluid; the bias
    (shape [num_filters]) is added along axis 1.
    """
    helper = LayerHelper("conv2d", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1]
    groups = 1 if groups is None else int(groups)
    if channels < 0 or channels % groups:
        raise ValueError(f"conv2d: the channel dimension of the input ({channels}) must be known and "
                         f"divisible by groups ({groups})")
    ksize = _pair(filter_size, "filter_size")
    std = (2.0 / (ksize[0] * ksize[1] * channels)) ** 0.5
    w = helper.create_parameter(attr=helper.param_attr, shape=[num_filters, channels // groups] + ksize,
                                dtype=dtype, default_initializer=Normal(0.0, std, 0))
    pre_bias = helper.create_variable_for_type_inference(dtype)
    attrs = {"strides": _pair(stride, "stride"), "paddings": _pair(padding, "padding"),
             "dilations": _pair(dilation, "dilation"), "groups": groups,
             **known_attrs("conv2d", use_cudnn=use_cudnn)}
    helper.append_op(type="conv2d", inputs={"Input": [input], "Filter": [w]}, outputs={"Output": [pre_bias]},
                     attrs=attrs)
    return helper.append_activation(helper.append_bias_op(pre_bias, dim_start=1, dim_end=2))


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0, global_pooling=False,
           use_cudnn=True, ceil_mode=False, name=None, exclusive=True):
    """Max or average pooling over NCHW input."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"Unknown Attr(pool_type): '{pool_type}'. It can only be 'max' or 'avg'.")
    if not global_pooling and pool_size == -1:
        raise ValueError("When Attr(global_pooling) is False, Attr(pool_size) must be passed and be a valid "
                         f"value. Received pool_size: {pool_size}")
    helper = LayerHelper("pool2d", input=input, name=name)
    dtype = helper.input_dtype()
    out = helper.create_variable_for_type_inference(dtype)
    ksize = [1, 1] if pool_size == -1 else _pair(pool_size, "pool_size")
    attrs = {"pooling_type": pool_type, "ksize": ksize, "global_pooling": global_pooling,
             "strides": _pair(pool_stride, "pool_stride"), "paddings": _pair(pool_padding, "pool_padding"),
             "ceil_mode": ceil_mode, "exclusive": exclusive, **known_attrs("pool2d", use_cudnn=use_cudnn)}
    helper.append_op(type="pool2d", inputs={"X": [input]}, outputs={"Out": [out]}, attrs=attrs)
    return out


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None, bias_attr=None,
               data_layout="NCHW", name=None, moving_mean_name=None, moving_variance_name=None,
               use_global_stats=False):
    """Batch normalization; the moving mean/variance (``.w_1``/``.w_2``) are persistable, not trainable."""
    helper = LayerHelper("batch_norm", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    dtype = helper.input_dtype()
    channels = input.shape[1] if data_layout == "NCHW" else input.shape[-1]
    shape = [channels]
    scale = helper.create_parameter(attr=helper.param_attr, shape=shape, dtype=dtype,
                                    default_initializer=Constant(1.0))
    bias = helper.create_parameter(attr=helper.bias_attr, shape=shape, dtype=dtype, is_bias=True)
    mean = helper.create_parameter(attr=ParamAttr(name=moving_mean_name, initializer=Constant(0.0),
                                                  trainable=False), shape=shape, dtype=dtype)
    variance = helper.create_parameter(attr=ParamAttr(name=moving_variance_name, initializer=Constant(1.0),
                                                      trainable=False), shape=shape, dtype=dtype)
    mean.stop_gradient = variance.stop_gradient = True
    saved_mean = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    saved_variance = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(
        type="batch_norm",
        inputs={"X": [input], "Scale": [scale], "Bias": [bias], "Mean": [mean], "Variance": [variance]},
        outputs={"Y": [out], "MeanOut": [mean], "VarianceOut": [variance], "SavedMean": [saved_mean],
                 "SavedVariance": [saved_variance]},
        attrs={"momentum": momentum, "epsilon": epsilon, "is_test": is_test, "data_layout": data_layout,
               **known_attrs("batch_norm", use_global_stats=use_global_stats)})
    return helper.append_activation(out)


def dropout(x, dropout_prob, is_test=False, seed=None, name=None, dropout_implementation="downgrade_in_infer"):
    """Randomly zero elements with probability ``dropout_prob`` (fluid's two scaling conventions)."""
    if dropout_implementation not in ("downgrade_in_infer", "upscale_in_train"):
        raise ValueError("dropout_implementation must be 'downgrade_in_infer' or 'upscale_in_train', got "
                         f"{dropout_implementation!r}")
    helper = LayerHelper("dropout", input=x, name=name)
    if not seed and helper.main_program.random_seed:
        seed = helper.main_program.random_seed
    out = helper.create_variable_for_type_inference(x.dtype)
    mask = helper.create_variable_for_type_inference("uint8", stop_gradient=True)
    helper.append_op(type="dropout", inputs={"X": [x]}, outputs={"Out": [out], "Mask": [mask]},
                     attrs={"dropout_prob": dropout_prob, "is_test": is_test, "fix_seed": seed is not None,
                            "seed": seed if seed is not None else 0,
                            "dropout_implementation": dropout_implementation})
    return out


def _unary_layer(op_type):
    def layer(x, name=None):
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
    helper = LayerHelper("softmax", input=input, name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="softmax", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"axis": axis, **known_attrs("softmax", use_cudnn=use_cudnn)})
    return out


def accuracy(input, label, k=1, correct=None, total=None):
    """Top-k accuracy of ``input`` (scores [N, C]) against ``label`` ([N, 1] int64), as float32 [1]."""
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
    helper = LayerHelper("embedding", input=input, param_attr=param_attr)
    vocabulary, _ = size
    w = helper.create_parameter(attr=helper.param_attr, shape=list(size), dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    padding = -1 if padding_idx is None else padding_idx if padding_idx >= 0 else vocabulary + padding_idx
    helper.append_op(type="lookup_table", inputs={"Ids": [input], "W": [w]}, outputs={"Out": [out]},
                     attrs={"is_sparse": is_sparse, "is_distributed": is_distributed, "padding_idx": padding})
    return out
