"""fluid 1.8's routing layers of ``fluid.layers.control_flow`` (ops/lod_routing.py): split_lod_tensor and
merge_lod_tensor (what IfElse is made of), select_input and select_output (what cond is made of)."""
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .control_flow import _check_type
from .helper import LayerHelper

__all__ = ["merge_lod_tensor", "select_input", "select_output", "split_lod_tensor"]


def select_output(input, outputs, mask):
    """Copy ``input`` into ``outputs[mask]`` (``mask``: an int32 [1] tensor); returns ``outputs``."""
    _check_type(input, "input", Variable, "select_output")
    check_variable_and_dtype(mask, "mask", ("int32",), "select_output")
    _check_type(outputs, "outputs", (list, tuple), "select_output")
    LayerHelper("select_output").append_op(type="select_output", inputs={"X": [input], "Mask": [mask]},
                                           outputs={"Out": list(outputs)})
    return outputs


def select_input(inputs, mask):
    """``inputs[mask]`` (``mask``: an int32 [1] tensor), a variable like ``inputs[0]``."""
    _check_type(inputs, "inputs", (list, tuple), "select_input")
    check_variable_and_dtype(mask, "mask", ("int32",), "select_input")
    helper = LayerHelper("select_input")
    first = inputs[0]
    out = helper.create_variable(dtype=first.dtype, shape=first.shape, type=first.type)
    helper.append_op(type="select_input", inputs={"X": list(inputs), "Mask": [mask]}, outputs={"Out": [out]})
    return out


def _listed(value, name, where, types):
    _check_type(value, name, types, where)
    return list(value) if isinstance(value, (list, tuple)) else [value]


def split_lod_tensor(input, mask, level=0):
    """(the rows, or sequences at LoD ``level``, of ``input`` where the bool ``mask`` holds; the others)."""
    inputs = _listed(input, "input", "fluid.layers.split_lod_tensor", (Variable, list, tuple))
    masks = _listed(mask, "mask", "fluid.layers.split_lod_tensor", (Variable, list))
    _check_type(level, "level", int, "fluid.layers.split_lod_tensor")
    helper = LayerHelper("split_lod_tensor")
    out_true = helper.create_variable_for_type_inference(inputs[0].dtype)
    out_false = helper.create_variable_for_type_inference(inputs[0].dtype)
    helper.append_op(type="split_lod_tensor", inputs={"X": inputs, "Mask": masks},
                     outputs={"OutTrue": [out_true], "OutFalse": [out_false]}, attrs={"level": level})
    for out in (out_true, out_false):
        out.shape, out.lod_level = inputs[0].shape, inputs[0].lod_level
    return out_true, out_false


def merge_lod_tensor(in_true, in_false, x, mask, level=0):
    """``in_true``'s units where ``mask`` holds and ``in_false``'s elsewhere, in ``x``'s order."""
    where = "fluid.layers.merge_lod_tensor"
    xs = _listed(x, "x", where, (Variable, list, tuple))
    masks = _listed(mask, "mask", where, (Variable, list))
    trues = _listed(in_true, "in_true", where, (Variable, list, tuple))
    falses = _listed(in_false, "in_false", where, (Variable, list, tuple))
    helper = LayerHelper("merge_lod_tensor")
    out = helper.create_variable_for_type_inference(trues[0].dtype)
    helper.append_op(type="merge_lod_tensor", inputs={"X": xs, "Mask": masks, "InTrue": trues, "InFalse": falses},
                     outputs={"Out": [out]}, attrs={"level": level})
    out.shape, out.lod_level = trues[0].shape, xs[0].lod_level
    return out
