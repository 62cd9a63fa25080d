"""Sequence layers over windows and positions: row_conv, add_position_encoding, sequence_scatter,
im2sequence (fluid 1.8 signatures, defaults and argument errors; the ops are ops/sequence_window.py)."""
from ..framework.variable import Variable
from .activation import check_variable_and_dtype
from .helper import LayerHelper
from .sequence import _layer

__all__ = ["add_position_encoding", "im2sequence", "row_conv", "sequence_scatter"]


def row_conv(input, future_context_size, param_attr=None, act=None):
    """Lookahead convolution: ``out[t] = sum_{k=0..future_context_size} input[t + k] * W[k]`` within each
    sequence (LoD input) or each row of a padded [batch, time, D] input; ``W`` is ``row_conv_<n>.w_0``,
    [future_context_size + 1, D]."""
    helper = LayerHelper("row_conv", input=input, param_attr=param_attr, act=act)
    check_variable_and_dtype(input, "input", ("float32", "float64"), "row_conv")
    width = input.shape[-1]
    if width is None or width < 0:
        raise ValueError(f"row_conv: the last dimension of 'input' must be known, but received shape "
                         f"{list(input.shape)}")
    filt = helper.create_parameter(attr=helper.param_attr, shape=[future_context_size + 1, width],
                                   dtype=input.dtype)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="row_conv", inputs={"X": [input], "Filter": [filt]}, outputs={"Out": [out]})
    out.lod_level = input.lod_level
    return helper.append_activation(out)


def add_position_encoding(input, alpha, beta, name=None):
    """``alpha * input + beta * PE``: PE's first half of features is sin(pos / 10000^(k / (half - 1))), its
    second half cos of the same, ``pos`` the position inside the sequence (LoD input, [N, D]) or along
    axis 1 (padded [batch, time, D]); D must be even."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "add_position_encoding")
    return _layer("add_position_encoding", input, {"X": [input]}, {"alpha": float(alpha), "beta": float(beta)},
                  name=name)


def sequence_scatter(input, index, updates, name=None):
    """A copy of ``input`` [B, ...] with ``updates`` added at ``index``: sequence i of ``index`` (a LoD
    tensor of int64 [M, 1]) and ``updates`` ([M, 1], the same LoD) adds to row i at those flat positions."""
    check_variable_and_dtype(input, "input", ("float32", "float64", "int32", "int64"), "sequence_scatter")
    check_variable_and_dtype(index, "index", ("int32", "int64"), "sequence_scatter")
    check_variable_and_dtype(updates, "updates", ("float32", "float64", "int32", "int64"), "sequence_scatter")
    return _layer("sequence_scatter", input, {"X": [input], "Ids": [index], "Updates": [updates]}, lod_level=0,
                  name=name)


def _pair(value, name):
    value = [value, value] if isinstance(value, int) else list(value)
    if len(value) != 2:
        raise ValueError(f"im2sequence: '{name}' must be an int or a list of 2 ints, but received {value}")
    return value


def im2sequence(input, filter_size=1, stride=1, padding=0, input_image_size=None, out_stride=1, name=None):
    """Each ``filter_size`` window of each image (NCHW) becomes one row [C * kh * kw]; the windows of one
    image (row-major) form one sequence. ``padding``: int, [h, w] or [up, left, down, right].
    ``input_image_size`` ([batch, 2] real heights and widths, divided by ``out_stride`` rounding up) keeps
    only the windows of each image's real size (fluid does this for batches of more than one image)."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "im2sequence")
    filter_size, stride = _pair(filter_size, "filter_size"), _pair(stride, "stride")
    padding = [padding, padding] if isinstance(padding, int) else list(padding)
    padding = padding * 2 if len(padding) == 2 else padding
    if len(padding) != 4:
        raise ValueError(f"im2sequence: 'padding' must be an int or a list of 2 or 4 ints, but received {padding}")
    inputs, attrs = {"X": [input]}, {"kernels": filter_size, "strides": stride, "paddings": padding}
    if input_image_size is not None:
        if not isinstance(input_image_size, Variable):
            raise TypeError(f"im2sequence: 'input_image_size' must be a Variable ([batch, 2]), but received "
                            f"{type(input_image_size).__name__}")
        inputs["Y"] = [input_image_size]
        attrs["out_stride"] = _pair(out_stride, "out_stride")
    return _layer("im2sequence", input, inputs, attrs, lod_level=1, name=name)
