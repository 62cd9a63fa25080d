"""Sequence (LoD) layers with fluid 1.8's signatures and defaults: each appends one op of
ops/sequence.py or ops/sequence_pad.py and sets its output's ``lod_level`` as fluid's shape
inference does while building."""
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .helper import LayerHelper

__all__ = ["sequence_conv", "sequence_softmax", "sequence_pool", "sequence_concat", "sequence_first_step",
           "sequence_last_step", "sequence_slice", "sequence_expand", "sequence_expand_as", "sequence_pad",
           "sequence_unpad", "sequence_reshape", "sequence_enumerate", "sequence_mask", "sequence_reverse",
           "lod_reset", "lod_append"]

_FLOATS = ("float32", "float64")
_NUMBERS = ("float32", "float64", "int32", "int64")


def _layer(op_type, x, inputs, attrs=None, lod_level=None, out_slot="Out", dtype=None, extra_outputs=None,
           stop_gradient=False, **kwargs):
    """Append ``op_type`` with one main output (of ``x``'s dtype unless given); returns it (and the extras)."""
    helper = LayerHelper(op_type, **kwargs)
    out = helper.create_variable_for_type_inference(dtype or x.dtype, stop_gradient)
    extras = {slot: helper.create_variable_for_type_inference(d, True) for slot, d in (extra_outputs or {}).items()}
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: [out], **{s: [v] for s, v in extras.items()}},
                     attrs=attrs or {})
    out.lod_level = x.lod_level if lod_level is None else lod_level
    return (out, *extras.values()) if extras else out


def _needs_lod(x, op_name):
    if x.lod_level <= 0:
        raise ValueError(f"The LoD level of Input(X) of {op_name} should be larger than 0, but received "
                         f"{x.lod_level} (declare the variable with lod_level=1, e.g. fluid.data(..., lod_level=1))")


def sequence_conv(input, num_filters, filter_size=3, filter_stride=1, padding=True, padding_start=None,
                  bias_attr=None, param_attr=None, act=None, name=None):
    """Convolution over the time steps of each sequence: a context of ``filter_size`` rows from
    ``padding_start`` (default ``-(filter_size // 2)``) around each row, zeros outside the sequence."""
    check_variable_and_dtype(input, "input", _FLOATS, "sequence_conv")
    helper = LayerHelper("sequence_conv", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    filt = helper.create_parameter(attr=helper.param_attr, shape=[filter_size * input.shape[1], num_filters],
                                   dtype=input.dtype)
    pre_bias = helper.create_variable_for_type_inference(input.dtype)
    start = -int(filter_size // 2) if padding_start is None else padding_start
    helper.append_op(type="sequence_conv", inputs={"X": [input], "Filter": [filt]}, outputs={"Out": [pre_bias]},
                     attrs={"contextStride": filter_stride, "contextStart": start, "contextLength": filter_size})
    return helper.append_activation(helper.append_bias_op(pre_bias))


def sequence_softmax(input, use_cudnn=False, name=None):
    check_variable_and_dtype(input, "input", _FLOATS, "sequence_softmax")
    return _layer("sequence_softmax", input, {"X": [input]}, {"use_cudnn": use_cudnn}, name=name)


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """One row per sequence: ``pool_type`` is average, sum, sqrt, max, last or first; an empty sequence
    gives ``pad_value``."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "sequence_pool")
    _needs_lod(input, "SequencePoolOp")
    out, max_index = _layer("sequence_pool", input, {"X": [input]},
                            {"pooltype": pool_type.upper(), "is_test": is_test, "pad_value": pad_value},
                            lod_level=input.lod_level - 1, extra_outputs={"MaxIndex": "int32"})
    return out


def sequence_first_step(input):
    check_variable_and_dtype(input, "input", _FLOATS, "sequence_first_step")
    return sequence_pool(input=input, pool_type="first")


def sequence_last_step(input):
    check_variable_and_dtype(input, "input", _FLOATS, "sequence_last_step")
    return sequence_pool(input=input, pool_type="last")


def sequence_concat(input, name=None):
    if not isinstance(input, list):
        raise TypeError(f"The type of 'input' in fluid.layers.sequence_concat must be list, but received "
                        f"{type(input).__name__}. ")
    for i, x in enumerate(input):
        check_variable_and_dtype(x, f"input[{i}]", ("int64", "float32", "float64"), "fluid.layers.sequence_concat")
    return _layer("sequence_concat", input[0], {"X": list(input)}, name=name)


def sequence_slice(input, offset, length, name=None):
    check_variable_and_dtype(input, "input", _NUMBERS, "sequence_slice")
    check_variable_and_dtype(offset, "offset", ("int32", "int64"), "sequence_slice")
    check_variable_and_dtype(length, "length", ("int32", "int64"), "sequence_slice")
    offset.stop_gradient = length.stop_gradient = True
    return _layer("sequence_slice", input, {"X": [input], "Offset": [offset], "Length": [length]}, name=name)


def sequence_expand(x, y, ref_level=-1, name=None):
    """Repeat sequence i of ``x`` (row i when ``x`` has no LoD) as many times as ``y``'s sequence i at
    LoD level ``ref_level`` has items."""
    check_variable_and_dtype(x, "x", _NUMBERS, "sequence_expand")
    return _layer("sequence_expand", x, {"X": [x], "Y": [y]}, {"ref_level": ref_level},
                  lod_level=max(x.lod_level, 1), name=name)


def sequence_expand_as(x, y, name=None):
    """Row i of ``x`` repeated over every row of ``y``'s sequence i; the output has ``y``'s LoD."""
    check_variable_and_dtype(x, "x", _NUMBERS, "sequence_expand_as")
    if not isinstance(y, Variable):
        raise TypeError(f"The type of 'y' in sequence_expand_as must be Variable, but received {type(y).__name__}. ")
    return _layer("sequence_expand_as", x, {"X": [x], "Y": [y]}, lod_level=max(y.lod_level, 1), name=name)


def sequence_pad(x, pad_value, maxlen=None, name=None):
    """[sequences, maxlen, ...] padded with ``pad_value`` (a Variable), and the lengths (int64)."""
    check_variable_and_dtype(x, "x", _NUMBERS, "fluid.layers.sequence_pad")
    check_variable_and_dtype(pad_value, "pad_value", _NUMBERS, "fluid.layers.sequence_pad")
    _needs_lod(x, "sequence_pad")
    pad_value.stop_gradient = True
    return _layer("sequence_pad", x, {"X": [x], "PadValue": [pad_value]},
                  {"padded_length": -1 if maxlen is None else maxlen}, lod_level=0,
                  extra_outputs={"Length": "int64"}, name=name)


def sequence_unpad(x, length, name=None):
    check_variable_and_dtype(x, "x", _NUMBERS, "fluid.layers.sequence_unpad")
    check_variable_and_dtype(length, "length", ("int64",), "fluid.layers.sequence_unpad")
    length.stop_gradient = True
    return _layer("sequence_unpad", x, {"X": [x], "Length": [length]}, lod_level=1, name=name)


def sequence_reshape(input, new_dim):
    check_variable_and_dtype(input, "input", _NUMBERS, "fluid.layers.sequence_reshape")
    return _layer("sequence_reshape", input, {"X": [input]}, {"new_dim": new_dim})


def sequence_enumerate(input, win_size, pad_value=0, name=None):
    check_variable_and_dtype(input, "input", ("int32", "int64"), "sequence_enumerate")
    return _layer("sequence_enumerate", input, {"X": [input]}, {"win_size": win_size, "pad_value": pad_value},
                  stop_gradient=True, name=name)


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """``y[..., j] = j < x[...]`` with ``maxlen`` columns (default: the largest length)."""
    inputs, attrs = {"X": [x]}, {"out_dtype": dtype}
    if isinstance(maxlen, Variable):
        inputs["MaxLenTensor"] = [maxlen]
    elif maxlen is not None:
        attrs["maxlen"] = maxlen
    return _layer("sequence_mask", x, inputs, attrs, lod_level=0, out_slot="Y", dtype=dtype, stop_gradient=True,
                  name=name)


def sequence_reverse(x, name=None):
    check_variable_and_dtype(x, "x", ("float32", "float64", "int8", "int32", "int64"),
                             "fluid.layers.sequence_reverse")
    return _layer("sequence_reverse", x, {"X": [x]}, out_slot="Y", name=name)


def lod_reset(x, y=None, target_lod=None):
    """``x`` with the LoD of ``y`` (or, when ``y`` has none, its values as offsets), or ``target_lod`` (offsets)."""
    check_variable_and_dtype(x, "x", _NUMBERS, "lod_reset")
    if y is not None:
        if not isinstance(y, Variable):
            raise TypeError(f"The type of 'y' in lod_reset must be Variable, but received {type(y).__name__}. ")
        return _layer("lod_reset", x, {"X": [x], "Y": [y]}, lod_level=max(y.lod_level, 1))
    if target_lod is None:
        raise ValueError("y and target_lod should not be both none.")
    return _layer("lod_reset", x, {"X": [x]}, {"target_lod": list(target_lod)}, lod_level=1)


def lod_append(x, level):
    """``x`` with one more LoD level: ``level`` (offsets, a list or a Variable)."""
    if x is None:
        raise ValueError("Input(x) can't be None.")
    if not isinstance(level, (list, tuple, Variable)):
        raise ValueError("Input(level) must be list, tuple or Variable.")
    check_variable_and_dtype(x, "x", _NUMBERS, "lod_append")
    inputs, attrs = {"X": [x]}, {"append": True}
    if isinstance(level, Variable):
        inputs["Y"] = [level]
    else:
        attrs["target_lod"] = list(level)
    return _layer("lod_reset", x, inputs, attrs, lod_level=x.lod_level + 1)
