"""Losses over many classes that look at a few per sample: hsigmoid (the classes on a tree path,
ops/hsigmoid.py)."""
from .activation import check_variable_and_dtype
from .helper import LayerHelper

__all__ = ["hsigmoid"]


def hsigmoid(input, label, num_classes, param_attr=None, bias_attr=None, name=None, path_table=None, path_code=None,
             is_custom=False, is_sparse=False):
    """Hierarchical sigmoid loss [N, 1] of ``input`` [N, D] for int64 ``label`` [N, 1]: the default complete
    binary tree over ``num_classes`` classes (weight [num_classes - 1, D]), or with ``is_custom`` each sample's
    path rows ``path_table`` and bits ``path_code`` ([N, L], -1 after the path's end; weight [num_classes, D]).
    NOTE [ hsigmoid's paths ] in ops/hsigmoid.py. ``is_sparse`` is accepted; the gradient is dense."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "hsigmoid")
    check_variable_and_dtype(label, "label", ("int64",), "hsigmoid")
    helper = LayerHelper("hierarchical_sigmoid", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    dtype = input.dtype
    if (num_classes is None or num_classes < 2) and not is_custom:
        raise ValueError("num_classes must not be less than 2 with default tree")
    if not is_custom and (path_table is not None or path_code is not None):
        raise ValueError("only num_classes should be passed without custom tree")
    if is_custom and path_code is None:
        raise ValueError("path_code should not be None with custom tree")
    if is_custom and path_table is None:
        raise ValueError("path_table should not be None with custom tree")
    if is_custom and num_classes is None:
        raise ValueError("num_classes should not be None with custom tree")
    is_sparse = bool(is_sparse and is_custom)  # fluid drops sparse mode without a custom tree
    rows = num_classes if is_custom else num_classes - 1
    weights = helper.create_parameter(attr=helper.param_attr, shape=[rows, input.shape[1]], dtype=dtype)
    inputs = {"X": [input], "W": [weights], "Label": [label]}
    if is_custom:
        inputs.update(PathTable=[path_table], PathCode=[path_code])
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[rows, 1], dtype=dtype, is_bias=True)]
    out = helper.create_variable_for_type_inference(dtype)
    pre_out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="hierarchical_sigmoid", inputs=inputs,
                     outputs={"Out": [out], "PreOut": [pre_out], "W_Out": [weights]},
                     attrs={"num_classes": num_classes, "is_sparse": is_sparse, "remote_prefetch": is_sparse})
    return out

