"""Recurrent layers over LoD sequences (dynamic_lstm, dynamic_lstmp, dynamic_gru) and single recurrent steps
(gru_unit, lstm_unit), with fluid 1.8's signatures, parameter shapes and names. The ops and their
layouts are described in ops/rnn.py and ops/rnn_unit.py."""
from ..framework.dygraph_mode import in_dygraph_mode
from .activation import check_variable_and_dtype
from .helper import LayerHelper
from .nn import fc
from .tensor import concat

__all__ = ["dynamic_gru", "dynamic_lstm", "dynamic_lstmp", "gru_unit", "lstm_unit"]

_FLOATS = ("float32", "float64")


def _initial_states(layer, states):
    """Check the initial states ``(name, value or None, width)``: every dtype first (a TypeError), then the
    shapes (a ValueError), in fluid's order; returns the values."""
    for name, value, _ in states:
        if value is not None:
            check_variable_and_dtype(value, name, _FLOATS, layer)
    for name, value, width in states:
        if value is not None and value.shape is not None and (len(value.shape) != 2 or value.shape[1] != width):
            raise ValueError(f"{layer}: the shape of {name} should be (batch_size, {width}), got "
                             f"{list(value.shape)}")
    return [value for _, value, _ in states]


def _outputs(helper, dtype, names):
    return {n: helper.create_variable_for_type_inference(dtype) for n in names}


def _lstm_attrs(use_peepholes, is_reverse, gate_activation, cell_activation, candidate_activation):
    return {"use_peepholes": use_peepholes, "is_reverse": is_reverse, "gate_activation": gate_activation,
            "cell_activation": cell_activation, "candidate_activation": candidate_activation}


def _check_size(layer, size, parts, input, what):
    if size % parts:
        raise ValueError(f"{layer}: size ({size}) must be {what}, a multiple of {parts}")
    if input.shape is not None and len(input.shape) == 2 and input.shape[1] not in (-1, size):
        raise ValueError(f"{layer}: the input's width must equal size ({size}), got input shape "
                         f"{list(input.shape)} (project the input with fc(input, size={size}) first)")


def _lstm_arguments(layer, input, size, bias_attr, h_0, c_0, h_width):
    """fluid's argument checks of dynamic_lstm(p); returns (hidden size, h_0, c_0)."""
    assert not in_dygraph_mode(), f"please use lstm instead of {layer} in dygraph mode!"
    assert bias_attr is not False, f"bias_attr should not be False in {layer}."
    check_variable_and_dtype(input, "input", _FLOATS, layer)
    _check_size(layer, size, 4, input, "4 times the hidden size")
    h_0, c_0 = _initial_states(layer, [("h_0", h_0, h_width), ("c_0", c_0, size // 4)])
    if (h_0 is None) != (c_0 is None):
        raise ValueError(f"{layer}: h_0 and c_0 must be given together (or neither)")
    return size // 4, h_0, c_0


def dynamic_lstm(input, size, h_0=None, c_0=None, param_attr=None, bias_attr=None, use_peepholes=True,
                 is_reverse=False, gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh",
                 dtype="float32", name=None):
    """LSTM over the sequences of a LoD ``input`` [T, size] (size = 4 * hidden; the projected gate inputs,
    usually an fc output). Weight ``lstm_<n>.w_0`` is [hidden, 4 * hidden]; bias ``lstm_<n>.b_0`` is
    [1, 7 * hidden] with peepholes, else [1, 4 * hidden]. Returns (hidden, cell), both [T, hidden] with the
    input's LoD."""
    d, h_0, c_0 = _lstm_arguments("dynamic_lstm", input, size, bias_attr, h_0, c_0, size // 4)
    helper = LayerHelper("lstm", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[d, 4 * d], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, (7 if use_peepholes else 4) * d], dtype=dtype,
                                   is_bias=True)
    inputs = {"Input": input, "Weight": weight, "Bias": bias}
    if h_0 is not None:
        inputs.update(H0=h_0, C0=c_0)
    outs = _outputs(helper, dtype, ("Hidden", "Cell", "BatchGate", "BatchCellPreAct"))
    helper.append_op(type="lstm", inputs=inputs, outputs=outs,
                     attrs=_lstm_attrs(use_peepholes, is_reverse, gate_activation, cell_activation,
                                       candidate_activation))
    return outs["Hidden"], outs["Cell"]


def dynamic_lstmp(input, size, proj_size, param_attr=None, bias_attr=None, use_peepholes=True, is_reverse=False,
                  gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh",
                  proj_activation="tanh", dtype="float32", name=None, h_0=None, c_0=None, cell_clip=None,
                  proj_clip=None):
    """LSTM with a recurrent projection: r_t = proj_activation(h_t @ ProjWeight) feeds the next step.
    Weight [proj_size, size] (``lstmp_<n>.w_0``), ProjWeight [size / 4, proj_size] (``.w_1``), bias as
    dynamic_lstm's. h_0 is the initial projection [N, proj_size]; c_0 the initial cell [N, size / 4].
    Returns (projection [T, proj_size], cell [T, size / 4])."""
    d, h_0, c_0 = _lstm_arguments("dynamic_lstmp", input, size, bias_attr, h_0, c_0, proj_size)
    for label, clip in (("cell_clip", cell_clip), ("proj_clip", proj_clip)):
        if clip is not None and clip < 0:
            raise ValueError(f"{label} should not be negative.")
    helper = LayerHelper("lstmp", input=input, param_attr=param_attr, bias_attr=bias_attr, name=name)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[proj_size, 4 * d], dtype=dtype)
    proj_weight = helper.create_parameter(attr=helper.param_attr, shape=[d, proj_size], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, (7 if use_peepholes else 4) * d], dtype=dtype,
                                   is_bias=True)
    inputs = {"Input": input, "Weight": weight, "ProjWeight": proj_weight, "Bias": bias}
    if h_0 is not None:
        inputs.update(H0=h_0, C0=c_0)
    outs = _outputs(helper, dtype, ("Projection", "Cell", "BatchHidden", "BatchGate", "BatchCellPreAct"))
    attrs = _lstm_attrs(use_peepholes, is_reverse, gate_activation, cell_activation, candidate_activation)
    attrs.update(proj_activation=proj_activation, cell_clip=float(cell_clip or 0.0), proj_clip=float(proj_clip or 0.0))
    helper.append_op(type="lstmp", inputs=inputs, outputs=outs, attrs=attrs)
    return outs["Projection"], outs["Cell"]


def dynamic_gru(input, size, param_attr=None, bias_attr=None, is_reverse=False, gate_activation="sigmoid",
                candidate_activation="tanh", h_0=None, origin_mode=False):
    """GRU over the sequences of a LoD ``input`` [T, 3 * size] (projected update, reset and candidate inputs).
    Weight ``gru_<n>.w_0`` is [size, 3 * size] (update/reset weights, then candidate weights, in memory
    order); bias ``gru_<n>.b_0`` [1, 3 * size]. ``origin_mode``: h = u * h_prev + (1 - u) * c (the GRU
    paper's form) instead of (1 - u) * h_prev + u * c. Returns hidden [T, size] with the input's LoD."""
    assert not in_dygraph_mode(), "please use gru instead of dynamic_gru in dygraph mode!"
    check_variable_and_dtype(input, "input", _FLOATS, "dynamic_gru")
    _check_size("dynamic_gru", 3 * size, 3, input, "the hidden size")
    h_0, = _initial_states("dynamic_gru", [("h_0", h_0, size)])
    helper = LayerHelper("gru", input=input, param_attr=param_attr, bias_attr=bias_attr)
    dtype = helper.input_dtype()
    weight = helper.create_parameter(attr=helper.param_attr, shape=[size, 3 * size], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, 3 * size], dtype=dtype, is_bias=True)
    inputs = {"Input": input, "Weight": weight}
    if bias is not None:
        inputs["Bias"] = bias
    if h_0 is not None:
        inputs["H0"] = h_0
    outs = _outputs(helper, dtype, ("Hidden", "BatchGate", "BatchResetHiddenPrev", "BatchHidden"))
    helper.append_op(type="gru", inputs=inputs, outputs=outs,
                     attrs={"is_reverse": is_reverse, "gate_activation": gate_activation,
                            "activation": candidate_activation, "origin_mode": origin_mode})
    return outs["Hidden"]


_UNIT_ACTS = {"identity": 0, "sigmoid": 1, "tanh": 2, "relu": 3}


def gru_unit(input, hidden, size, param_attr=None, bias_attr=None, activation="tanh", gate_activation="sigmoid",
             origin_mode=False):
    """One GRU step: ``input`` [N, size] (size = 3 * hidden, projected), ``hidden`` [N, hidden] the previous
    state. Returns (updated_hidden, reset_hidden_pre, gate)."""
    check_variable_and_dtype(input, "input", _FLOATS, "gru_unit")
    check_variable_and_dtype(hidden, "hidden", _FLOATS, "gru_unit")
    if not isinstance(size, int):
        raise TypeError(f"The type of 'size' in gru_unit must be int, but received {type(size).__name__}. ")
    for label, act in (("activation", activation), ("gate_activation", gate_activation)):
        if act not in _UNIT_ACTS:
            raise ValueError(f"gru_unit: {label} must be one of {', '.join(_UNIT_ACTS)}, got {act!r}")
    helper = LayerHelper("gru_unit", input=input, param_attr=param_attr, bias_attr=bias_attr)
    dtype = helper.input_dtype()
    d = size // 3
    weight = helper.create_parameter(attr=helper.param_attr, shape=[d, 3 * d], dtype=dtype)
    inputs = {"Input": input, "HiddenPrev": hidden, "Weight": weight}
    if helper.bias_attr:
        inputs["Bias"] = helper.create_parameter(attr=helper.bias_attr, shape=[1, 3 * d], dtype=dtype, is_bias=True)
    outs = _outputs(helper, dtype, ("Gate", "ResetHiddenPrev", "Hidden"))
    helper.append_op(type="gru_unit", inputs=inputs, outputs=outs,
                     attrs={"activation": _UNIT_ACTS[activation], "gate_activation": _UNIT_ACTS[gate_activation],
                            "origin_mode": origin_mode})
    return outs["Hidden"], outs["ResetHiddenPrev"], outs["Gate"]


def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0, param_attr=None, bias_attr=None, name=None):
    """One LSTM step: fc(concat(x_t, hidden_t_prev), 4 * D) then the lstm_unit op (gates i, f, o, g).
    Returns (hidden [N, D], cell [N, D])."""
    for label, v in (("x_t", x_t), ("hidden_t_prev", hidden_t_prev), ("cell_t_prev", cell_t_prev)):
        check_variable_and_dtype(v, label, _FLOATS, "lstm_unit")
        if len(v.shape) != 2:
            raise ValueError(f"Rank of {label} must be 2.")
    if x_t.shape[0] != hidden_t_prev.shape[0] or x_t.shape[0] != cell_t_prev.shape[0]:
        raise ValueError("The 1st dimensions of x_t, hidden_t_prev and cell_t_prev must be the same.")
    if hidden_t_prev.shape[1] != cell_t_prev.shape[1]:
        raise ValueError("The 2nd dimensions of hidden_t_prev and cell_t_prev must be the same.")
    helper = LayerHelper("lstm_unit", name=name)
    size = cell_t_prev.shape[1]
    fc_out = fc(input=concat(input=[x_t, hidden_t_prev], axis=1), size=4 * size, param_attr=param_attr,
                bias_attr=bias_attr)
    outs = _outputs(helper, x_t.dtype, ("C", "H"))
    helper.append_op(type="lstm_unit", inputs={"X": fc_out, "C_prev": cell_t_prev}, outputs=outs,
                     attrs={"forget_bias": float(forget_bias)})
    return outs["H"], outs["C"]
