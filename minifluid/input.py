"""``fluid.embedding`` and ``fluid.one_hot`` (fluid 1.8's ``fluid/input.py``): ids need no trailing dimension
of 1."""
from .layers.activation import check_variable_and_dtype
from .layers.helper import LayerHelper
from .layers.manip import one_hot_args

__all__ = ["embedding", "one_hot"]


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    """Rows of a [vocabulary, width] table (``size``) for int64 ids of any shape; the output has the ids'
    shape plus the width, and their LoD. ``padding_idx`` (negative: from the end) reads as zeros and gets
    no gradient; ``is_sparse`` is accepted (the gradient is dense)."""
    check_variable_and_dtype(input, "input", ("int64",), "fluid.embedding")
    if dtype not in ("float16", "float32", "float64"):
        raise TypeError(f"The data type of 'dtype' in fluid.embedding must be ['float16', 'float32', 'float64'], "
                        f"but received {dtype}. ")
    helper = LayerHelper("embedding", input=input, param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=list(size), dtype=dtype, is_bias=False)
    out = helper.create_variable_for_type_inference(dtype)
    padding = -1 if padding_idx is None else padding_idx if padding_idx >= 0 else size[0] + padding_idx
    helper.append_op(type="lookup_table_v2", inputs={"Ids": [input], "W": [w]}, outputs={"Out": [out]},
                     attrs={"is_sparse": is_sparse, "is_distributed": is_distributed,
                            "remote_prefetch": is_sparse and not is_distributed, "padding_idx": padding})
    return out


def one_hot(input, depth, allow_out_of_range=False):
    """float32 one-hot rows of ``depth`` for int32/int64 ids of any shape (the output has the ids' shape plus
    ``depth``); an id outside [0, depth) raises unless ``allow_out_of_range``, which gives it a zero row. ``depth``
    may be a Variable of one int, read when the op runs."""
    check_variable_and_dtype(input, "input", ("int32", "int64"), "one_hot_v2")
    inputs, attrs = one_hot_args(input, depth, allow_out_of_range, "one_hot_v2")
    helper = LayerHelper("one_hot_v2", input=input)
    out = helper.create_variable_for_type_inference("float32")
    helper.append_op(type="one_hot_v2", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out
