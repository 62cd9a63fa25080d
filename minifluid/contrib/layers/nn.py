"""``fluid.contrib.layers.nn`` (1.8): contrib's layers over ops of their own (ops/fused_elemwise.py,
ops/fused_embedding.py, ops/partial.py, ops/shuffle_batch.py); tree_conv and multiclass_nms2 live with their
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

__all__ = ["fused_elemwise_activation", "fused_embedding_seq_pool", "multiclass_nms2", "partial_concat",
           "partial_sum", "shuffle_batch", "tree_conv"]

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
