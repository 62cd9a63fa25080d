"""``fluid.contrib.layers.nn`` (1.8): contrib's layers over ops of their own (ops/fused_elemwise.py,
ops/fused_embedding.py, ops/partial.py, ops/shuffle_batch.py, ops/text_match.py, ops/rank_attention.py); tree_conv and multiclass_nms2 live with their
families (layers/tree_conv.py, layers/detection_nms.py)."""
import warnings

import numpy as np

from ...framework import unique_name
from ...framework.variable import Variable
from ...initializer import Constant
from ...layers.activation import check_variable_and_dtype
from ...layers.creation import check_type
from ...layers.detection_nms import multiclass_nms2
from ...layers.helper import LayerHelper
from ...layers.tree_conv import tree_conv
from ...ops.fused_elemwise import split_functors

__all__ = ["batch_fc", "fused_elemwise_activation", "fused_embedding_seq_pool", "match_matrix_tensor",
           "multiclass_nms2", "partial_concat", "partial_sum", "rank_attention", "sequence_topk_avg_pooling",
           "shuffle_batch", "tree_conv", "var_conv_2d"]

_FLOATS = ("float32", "float64")
_NUMBERS = ("float32", "float64", "int32", "int64")


def fused_elemwise_activation(x, y, functor_list, axis=-1, scale=0.0, save_intermediate_out=True):
    """``Binary(x, Unary(y))`` for functor_list [binary, unary], ``Unary(Binary(x, y))`` for [unary, binary];
    binary: 'elementwise_add' / 'elementwise_mul', unary: 'scale' (by ``scale``), 'relu', 'tanh', 'sigmoid'. The
    lower-rank operand broadcasts from ``axis`` as in the elementwise layers. A string 'a,b' is split."""
    if isinstance(functor_list, str):
        functor_list = functor_list.split(",")
    if not isinstance(functor_list, list) or len(functor_list) != 2:
        raise ValueError("functor_list should be a list of str, and the length should be 2.")
    split_functors(functor_list)
    check_variable_and_dtype(x, "x", _FLOATS, "fused_elemwise_activation")
    check_variable_and_dtype(y, "y", _FLOATS, "fused_elemwise_activation")
    helper = LayerHelper("fused_elemwise_activation")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    intermediate_out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op(type="fused_elemwise_activation", inputs={"X": x, "Y": y},
                     outputs={"Out": out, "IntermediateOut": intermediate_out},
                     attrs={"axis": axis, "scale": float(scale), "save_intermediate_out": save_intermediate_out,
                            "functor_list": list(functor_list)})
    return out


def fused_embedding_seq_pool(input, size, is_sparse=False, padding_idx=None, combiner="sum", param_attr=None,
                             dtype="float32"):
    """The sum of each sequence's embeddings: ``input`` int64 ids [T, 1] with one LoD level, a [size[0],
    size[1]] embedding parameter; returns [number of sequences, size[1]]. Rows of ``padding_idx`` (negative:
    counted from size[0]) count as zeros."""
    check_variable_and_dtype(input, "input", ("int64",), "fused_embedding_seq_pool")
    if combiner != "sum":
        raise ValueError(f"fused_embedding_seq_pool: combiner must be 'sum', got {combiner!r}")
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise ValueError(f"fused_embedding_seq_pool: size must be [dict_size, embedding_size], got {size!r}")
    helper = LayerHelper("fused_embedding_seq_pool", param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=list(size), dtype=dtype, is_bias=False)
    out = helper.create_variable_for_type_inference(dtype)
    padding_idx = -1 if padding_idx is None else padding_idx if padding_idx >= 0 else size[0] + padding_idx
    helper.append_op(type="fused_embedding_seq_pool", inputs={"Ids": input, "W": w}, outputs={"Out": out},
                     attrs={"is_sparse": is_sparse, "combiner": combiner, "padding_idx": padding_idx})
    return out


def shuffle_batch(x, seed=None):
    """``x``'s rows (all dimensions but the last flattened) in a random order, a new one every run. ``seed``: an
    int start seed (default the program's random_seed, else a random one) or an int64 Variable holding it."""
    check_variable_and_dtype(x, "x", _NUMBERS, "shuffle_batch")
    helper = LayerHelper("shuffle_batch")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    shuffle_idx = helper.create_variable_for_type_inference(dtype="int64", stop_gradient=True)
    if seed is None and helper.main_program.random_seed != 0:
        seed = helper.main_program.random_seed
    if seed is None:
        seed = int(np.random.randint(-65536, 65535))
    attrs = {}
    if isinstance(seed, int):
        attrs["startup_seed"] = seed
        seed = helper.create_global_variable(name=unique_name.generate("shuffle_batch_seed"), dtype="int64",
                                             shape=[1], persistable=True, stop_gradient=True)
        helper.set_variable_initializer(seed, Constant(float(attrs["startup_seed"])))
    elif not isinstance(seed, Variable):
        raise TypeError(f"shuffle_batch: seed must be None, an int or a Variable, got {type(seed).__name__}")
    helper.append_op(type="shuffle_batch", inputs={"X": x, "Seed": seed},
                     outputs={"Out": out, "ShuffleIdx": shuffle_idx, "SeedOut": seed}, attrs=attrs)
    return out


def _partial(op_type, input, start_index, length):
    if not isinstance(input, (list, tuple)):
        warnings.warn(f"The type of input in {op_type} should be list, but received {type(input)}.")
        input = [input]
    for i, x in enumerate(input):
        check_variable_and_dtype(x, f"input[{i}]", _NUMBERS, op_type)
        if x.shape is not None and len(x.shape) != 2:
            raise ValueError(f"{op_type}: input[{i}] must be 2-D, got shape {x.shape}")
    check_type(start_index, "start_index", (int,), op_type)
    check_type(length, "length", (int,), op_type)
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype=input[0].dtype)
    helper.append_op(type=op_type, inputs={"X": list(input)}, outputs={"Out": [out]},
                     attrs={"start_index": start_index, "length": length})
    return out


def partial_concat(input, start_index=0, length=-1):
    """The columns [start_index, start_index + length) of each 2-D input, concatenated along dimension 1
    (length -1: to the end of the row; a negative start_index counts from its end)."""
    return _partial("partial_concat", input, start_index, length)


def partial_sum(input, start_index=0, length=-1):
    """The columns [start_index, start_index + length) of the 2-D inputs, summed."""
    return _partial("partial_sum", input, start_index, length)


def _pair(value, name):
    pair = [value, value] if isinstance(value, int) else list(value)
    if len(pair) != 2 or not all(isinstance(v, int) and v > 0 for v in pair):
        raise ValueError(f"var_conv_2d: {name} must be a positive int or a pair of them, got {value!r}")
    return pair


def var_conv_2d(input, row, col, input_channel, output_channel, filter_size, stride=1, param_attr=None, act=None,
                dtype="float32", name=None):
    """A convolution over each sample's own input_channel x rows x columns image (``input``: their values, one LoD
    level; ``row`` / ``col``: LoD tensors whose lengths are each sample's rows / columns), zero-padded to keep
    ceil(size / stride) positions. Weight [output_channel, input_channel * filter_h * filter_w]; returns [total
    output_channel * top_h * top_w of the samples, 1] with one LoD level."""
    check_variable_and_dtype(input, "input", _FLOATS, "var_conv_2d")
    if input.shape is not None and len(input.shape) != 2:
        raise ValueError(f"var_conv_2d: input must be 2-D ([total values, 1]), got shape {input.shape}")
    filter_size, stride = _pair(filter_size, "filter_size"), _pair(stride, "stride")
    helper = LayerHelper("var_conv_2d", name=name, act=act, param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, dtype=dtype,
                                shape=[int(output_channel), int(input_channel) * filter_size[0] * filter_size[1]])
    out = helper.create_variable_for_type_inference(dtype)
    col_out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="var_conv_2d", inputs={"X": input, "ROW": row, "COLUMN": col, "W": w},
                     outputs={"Out": out, "Col": col_out},
                     attrs={"InputChannel": int(input_channel), "OutputChannel": int(output_channel),
                            "StrideH": stride[0], "StrideW": stride[1], "KernelH": filter_size[0],
                            "KernelW": filter_size[1]})
    return helper.append_activation(out)


def match_matrix_tensor(x, y, channel_num, act=None, param_attr=None, dtype="float32", name=None):
    """For each pair of sequences (x_b [n, h], y_b [m, h]; one LoD level each) the matching matrices x_b W_t y_b^T,
    t < channel_num, with W [h, channel_num, h]: returns (out [sum of channel_num * n * m, 1] with one LoD level,
    after ``act``; tmp = x W)."""
    check_variable_and_dtype(x, "x", _FLOATS, "match_matrix_tensor")
    check_variable_and_dtype(y, "y", _FLOATS, "match_matrix_tensor")
    if len(x.shape) != 2 or len(y.shape) != 2 or x.shape[-1] != y.shape[-1]:
        raise ValueError(f"match_matrix_tensor: x and y must be 2-D with one width, got shapes {x.shape} and {y.shape}")
    helper = LayerHelper("match_matrix_tensor", name=name, act=act, param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=[x.shape[-1], channel_num, y.shape[-1]], dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    tmp = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="match_matrix_tensor", inputs={"X": x, "Y": y, "W": w}, outputs={"Out": out, "Tmp": tmp},
                     attrs={"dim_t": channel_num})
    return helper.append_activation(out), tmp


def sequence_topk_avg_pooling(input, row, col, topks, channel_num):
    """For every row of every channel of each sample (``input``: channel_num x rows x columns values per sample,
    sizes from ``row`` / ``col``'s LoD), the averages of its k largest values for each k of ``topks`` (increasing;
    missing values count as 0). Returns [total rows, channel_num * len(topks)] with ``row``'s LoD."""
    check_variable_and_dtype(input, "input", _FLOATS, "sequence_topk_avg_pooling")
    if not isinstance(topks, (list, tuple)) or not topks or list(topks) != sorted(topks) or topks[0] < 1:
        raise ValueError(f"sequence_topk_avg_pooling: topks must be a list of increasing positive ints, got {topks!r}")
    helper = LayerHelper("sequence_topk_avg_pooling")
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    pos = helper.create_variable_for_type_inference(dtype="int32", stop_gradient=True)
    helper.append_op(type="sequence_topk_avg_pooling", inputs={"X": input, "ROW": row, "COLUMN": col},
                     outputs={"Out": out, "pos": pos}, attrs={"topks": list(topks), "channel_num": channel_num})
    return out


def rank_attention(input, rank_offset, rank_param_shape, rank_param_attr, max_rank=3):
    """CTR rank attention: row i of ``input`` [N, width] attends to the rows its ``rank_offset`` row (int32,
    [N, 2 * max_rank + 1]: its rank, then (rank, row index) pairs; ranks 1-based, 0: none) names, each through the
    block of the [max_rank * max_rank * width, out] parameter its own rank and the neighbour's pick."""
    check_variable_and_dtype(input, "input", _FLOATS, "rank_attention")
    check_variable_and_dtype(rank_offset, "rank_offset", ("int32",), "rank_attention")
    if input.shape[1] * max_rank * max_rank != rank_param_shape[0]:
        raise ValueError(f"rank_attention: rank_param_shape[0] must be input width * max_rank * max_rank = "
                         f"{input.shape[1] * max_rank * max_rank}, got {rank_param_shape[0]}")
    helper = LayerHelper("rank_attention")
    param = helper.create_parameter(attr=rank_param_attr, shape=list(rank_param_shape), dtype=input.dtype)
    param.stop_gradient = False
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="rank_attention", inputs={"X": input, "RankOffset": rank_offset, "RankParam": param},
                     outputs={"Out": out}, attrs={"MaxRank": max_rank})
    return out


def batch_fc(input, param_size, param_attr, bias_size, bias_attr, act=None):
    """One fully connected layer per slot pair: ``input`` [slots, rows, in] times a [slots, in, out] weight
    (``param_size``) plus a [slots, out] bias (``bias_size``), then ``act``."""
    check_variable_and_dtype(input, "input", _FLOATS, "batch_fc")
    shape = list(input.shape)
    if len(shape) != 3 or shape[2] != param_size[1] or param_size[2] != bias_size[1] or shape[0] != bias_size[0]:
        raise ValueError(f"batch_fc: input [slots, rows, in] {shape}, param_size [slots, in, out] {list(param_size)} "
                         f"and bias_size [slots, out] {list(bias_size)} do not match")
    helper = LayerHelper("batch_fc", act=act)
    w = helper.create_parameter(attr=param_attr, shape=list(param_size), dtype=input.dtype)
    b = helper.create_parameter(attr=bias_attr, shape=list(bias_size), dtype=input.dtype)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="batch_fc", inputs={"Input": input, "W": w, "Bias": b}, outputs={"Out": out})
    return helper.append_activation(out)
