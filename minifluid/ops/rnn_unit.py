"""Single recurrent steps on plain tensors: ``gru_unit`` and ``lstm_unit`` (the ops of fluid's gru_unit and
lstm_unit layers, used inside hand-written recurrences). The GRU step is the one the ``gru`` op runs per
time step (ops/rnn.py), with the same weight layout."""
import numpy as np

from .registry import register_grad, register_op
from .rnn import _ACTS, _gru_weights, gru_step, gru_step_grad, shape_differs

_GRU_UNIT_ACTS = ("identity", "sigmoid", "tanh", "relu")  # the op's integer activation codes


def _unit_acts(attrs):
    names = []
    for attr in ("gate_activation", "activation"):
        code = attrs[attr]
        if code not in range(len(_GRU_UNIT_ACTS)):
            raise ValueError(f"gru_unit: attribute {attr} must be 0 (identity), 1 (sigmoid), 2 (tanh) or 3 (relu), "
                             f"got {code!r}")
        names.append(_ACTS[_GRU_UNIT_ACTS[code]])
    return tuple(names)


def _gru_unit_infer(attrs, x, h_prev, weight, bias):
    n, d = x.shape[0], weight.shape[1] // 3
    if shape_differs(x.shape, (-1, 3 * d)):
        raise ValueError(f"gru_unit: the Input(Input) should have width 3 * {d} (frame size), but received "
                         f"{list(x.shape)}.")
    if shape_differs(weight.shape, (d, 3 * d)):
        raise ValueError(f"gru_unit: the shape of Input(Weight) should be [{d}, {3 * d}], but received "
                         f"{list(weight.shape)}.")
    if shape_differs(h_prev.shape, (-1, d)):
        raise ValueError(f"gru_unit: the Input(HiddenPrev) should have width {d} (frame size), but received "
                         f"{list(h_prev.shape)}.")
    if bias is not None and shape_differs(bias.shape, (1, 3 * d)):
        raise ValueError(f"gru_unit: the shape of Input(Bias) should be [1, {3 * d}], but received "
                         f"{list(bias.shape)}.")
    return (tuple(x.shape), x.dtype), ((n, d), x.dtype), ((n, d), x.dtype)


@register_op("gru_unit", inputs=("Input", "HiddenPrev", "Weight", "Bias"),
             outputs=("Gate", "ResetHiddenPrev", "Hidden"), optional=("Bias",),
             attrs={"activation": 2, "gate_activation": 1, "origin_mode": False}, infer_shape=_gru_unit_infer)
def _gru_unit_forward(attrs, x, h_prev, weight, bias):
    w_gate, w_state = _gru_weights(weight)
    g = x + bias.reshape(-1) if bias is not None else x.copy()
    reset, h = np.empty_like(h_prev), np.empty_like(h_prev)
    with np.errstate(over="ignore"):
        gru_step(g, h_prev, w_gate, w_state, _unit_acts(attrs), attrs["origin_mode"], reset, h)
    return g, reset, h


@register_grad("gru_unit")
def _gru_unit_backward(attrs, ins, outs, douts, need):
    _, h_prev, weight, bias = ins
    g, reset, _ = outs
    dh = douts[2] if douts[2] is not None else np.zeros_like(h_prev)
    w_gate, w_state = _gru_weights(weight)
    d = weight.shape[0]
    dg = np.empty_like(g)
    dh_prev = gru_step_grad(g, h_prev, reset, w_gate, w_state, _unit_acts(attrs), attrs["origin_mode"], dh, dg)
    dw = None
    if need[2]:
        dw = np.concatenate(((h_prev.T @ dg[:, :2 * d]).reshape(-1), (reset.T @ dg[:, 2 * d:]).reshape(-1)))
        dw = dw.reshape(d, 3 * d)
    return (dg if need[0] else None, dh_prev if need[1] else None, dw,
            dg.sum(axis=0, keepdims=True) if need[3] and bias is not None else None)


def _lstm_unit_infer(attrs, x, c_prev):
    if len(x.shape) != 2 or len(c_prev.shape) != 2:
        raise ValueError(f"lstm_unit: Input(X) and Input(C_prev) must be 2-D, got {list(x.shape)} and "
                         f"{list(c_prev.shape)}")
    if shape_differs(x.shape, (-1, 4 * c_prev.shape[1])):
        raise ValueError(f"lstm_unit: the second dimension of Input(X) should be 4 * {c_prev.shape[1]} (4 times "
                         f"that of Input(C_prev)), but received {x.shape[1]}.")
    meta = (tuple(c_prev.shape), c_prev.dtype)
    return meta, meta


def _lstm_unit_gates(attrs, x, d):
    """Activated gates i, f, o (sigmoid; f with forget_bias) and g (tanh), fluid's order in X."""
    sig, tanh = _ACTS["sigmoid"][0], _ACTS["tanh"][0]
    gates = x.copy()
    gates[:, d:2 * d] += attrs["forget_bias"]
    with np.errstate(over="ignore"):
        sig(gates[:, :3 * d], gates[:, :3 * d])
        tanh(gates[:, 3 * d:], gates[:, 3 * d:])
    return gates[:, :d], gates[:, d:2 * d], gates[:, 2 * d:3 * d], gates[:, 3 * d:]


@register_op("lstm_unit", inputs=("X", "C_prev"), outputs=("C", "H"), attrs={"forget_bias": 0.0},
             infer_shape=_lstm_unit_infer)
def _lstm_unit_forward(attrs, x, c_prev):
    i, f, o, g = _lstm_unit_gates(attrs, x, c_prev.shape[1])
    c = f * c_prev + i * g
    tanh_c = np.empty_like(c)
    with np.errstate(over="ignore"):
        _ACTS["tanh"][0](c, tanh_c)
    return c, o * tanh_c


@register_grad("lstm_unit")
def _lstm_unit_backward(attrs, ins, outs, douts, need):
    x, c_prev = ins
    c, _ = outs
    d = c_prev.shape[1]
    i, f, o, g = _lstm_unit_gates(attrs, x, d)
    tanh_c = np.empty_like(c)
    with np.errstate(over="ignore"):
        _ACTS["tanh"][0](c, tanh_c)
    dc_out, dh = (np.zeros_like(c) if v is None else v for v in douts)
    dc = dc_out + dh * o * (1 - tanh_c * tanh_c)
    dx = np.concatenate((dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dh * tanh_c * o * (1 - o),
                         dc * i * (1 - g * g)), axis=1)
    return dx if need[0] else None, dc * f if need[1] else None
