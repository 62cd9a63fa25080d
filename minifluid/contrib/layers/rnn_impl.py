"""``fluid.contrib.layers``' GRU and LSTM built from basic ops (fluid 1.8): BasicGRUUnit / BasicLSTMUnit (one step)
and basic_gru / basic_lstm (multi-layer, optionally bidirectional, over padded batches).

The units are the GRUCell / LSTMCell math of layers/rnn.py under fluid's parameter names
(``<name_scope>/BasicGRUUnit_<k>.w_0`` ...). basic_gru / basic_lstm run every layer of one direction in one
StaticRNN step (layers/control_flow.py): step t of layer l reads layer l-1's hidden of step t, so the layers
advance together and the sequence length may be unknown until run time. With ``sequence_length`` a sequence's
states, and so its outputs, stay at their last valid value past its length; the backward direction runs on the
time-reversed batch (the padding of a shorter sequence then comes first, where the mask keeps the initial
state) and its outputs are reversed back.
"""
from ...dygraph.layer import Layer
from ...framework.variable import Variable
from ...layers.activation import check_variable_and_dtype
from ...layers.control_flow import StaticRNN
from ...layers.indexing import reverse
from ...layers.manip import shape, slice, stack
from ...layers.nn import dropout
from ...layers.rnn import GRUCell, LSTMCell, _maybe_copy, _named
from ...layers.sequence import sequence_mask
from ...layers.tensor import concat, reshape, transpose

__all__ = ["BasicGRUUnit", "BasicLSTMUnit", "basic_gru", "basic_lstm"]

_FLOATS = ("float32", "float64")


class _Unit(Layer):
    """A cell of layers/rnn.py as a fluid Layer: static programs get its parameters by name, and in dygraph mode
    they are registered on the layer (``parameters()``, ``state_dict()``) under fluid's attribute names."""
    _param_names = ()

    def _register(self):
        eager = self._cell._weights.eager
        for key, attr in self._param_names:
            if key in eager and attr not in self._parameters:
                setattr(self, attr, eager[key])


class BasicGRUUnit(_Unit):
    """One GRU step: gates ``[x, h] @ W_gate + b_gate`` split into reset r and update u, candidate
    ``m = act([x, r * h] @ W_cand + b_cand)``, ``h' = u * h + (1 - u) * m``. Parameters (made on the first
    call, from the input width I): ``.w_0`` [I + H, 2H], ``.w_1`` [I + H, H], ``.b_0`` [2H], ``.b_1`` [H]."""
    _param_names = (("gate_w", "_gate_weight"), ("cand_w", "_candidate_weight"), ("gate_b", "_gate_bias"),
                    ("cand_b", "_candidate_bias"))

    def __init__(self, name_scope, hidden_size, param_attr=None, bias_attr=None, gate_activation=None,
                 activation=None, dtype="float32"):
        super().__init__(name_scope, dtype)
        self._cell = GRUCell(hidden_size, param_attr, bias_attr, gate_activation, activation, dtype, name=name_scope)
        self._full_name = self._cell._weights.helper.name
        self._hiden_size = hidden_size

    def forward(self, input, pre_hidden):
        new_hidden = self._cell.call(input, pre_hidden)[0]
        self._register()
        return new_hidden


class BasicLSTMUnit(_Unit):
    """One LSTM step: ``[x, h] @ W + b`` split into i, j, f, o; ``c' = c * gate(f + forget_bias) +
    gate(i) * act(j)``, ``h' = act(c') * gate(o)``. Parameters: ``.w_0`` [I + H, 4H], ``.b_0`` [4H]. Returns
    ``(new_hidden, new_cell)``."""
    _param_names = (("w", "_weight"), ("b", "_bias"))

    def __init__(self, name_scope, hidden_size, param_attr=None, bias_attr=None, gate_activation=None,
                 activation=None, forget_bias=1.0, dtype="float32"):
        super().__init__(name_scope, dtype)
        self._cell = LSTMCell(hidden_size, param_attr, bias_attr, gate_activation, activation, forget_bias, dtype,
                              name=name_scope)
        self._full_name = self._cell._weights.helper.name
        self._hiden_size = hidden_size

    def forward(self, input, pre_hidden, pre_cell):
        new_hidden, (_, new_cell) = self._cell.call(input, [pre_hidden, pre_cell])
        self._register()
        return new_hidden, new_cell


# --- basic_gru / basic_lstm ----------------------------------------------------------------------------------------
def _check_args(layer, input, init_states, hidden_size, num_layers, sequence_length, dropout_prob):
    check_variable_and_dtype(input, "input", _FLOATS, layer)
    if input.shape is None or len(input.shape) != 3:
        raise ValueError(f"{layer}: input must be 3-D ([batch_size, seq_len, input_size] with batch_first, else "
                         f"[seq_len, batch_size, input_size]), got shape {input.shape}")
    for label, value in (("hidden_size", hidden_size), ("num_layers", num_layers)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{layer}: {label} must be a positive int, got {value!r}")
    for label, state in init_states:
        if state is not None:
            check_variable_and_dtype(state, label, _FLOATS, layer)
    if sequence_length is not None and not isinstance(sequence_length, Variable):
        raise TypeError(f"{layer}: sequence_length must be a Variable of shape [batch_size] or None, got "
                        f"{type(sequence_length).__name__}")
    if dropout_prob is not None and not 0.0 <= dropout_prob < 1.0:
        raise ValueError(f"{layer}: dropout_prob must be in [0, 1), got {dropout_prob!r}")


def _units(make, name, num_layers, param_attr, bias_attr, direction):
    """One unit per layer, named ``<name>_layers_<i>`` (``<name>_reverse_layers_<i>`` backwards); a named
    param_attr / bias_attr becomes ``<attr name>_fw_w_<i>`` / ``_fw_b_<i>`` (``_bw_`` backwards)."""
    scope = name + ("_layers_" if direction == "fw" else "_reverse_layers_")
    return [make(scope + str(i), _named(param_attr, f"_{direction}_w_{i}"), _named(bias_attr, f"_{direction}_b_{i}"))
            for i in range(num_layers)]


def _run_direction(rnn_input, units, inits, mask, hidden_size, dropout_prob, dropout_implementation):
    """Every layer of one direction in one StaticRNN: ``(output of the last layer [seq, batch, H], [per state
    kind: the final states [num_layers, batch, H]])``. ``inits``: per state kind, per layer, the initial state
    or None (zeros)."""
    rnn = StaticRNN()
    with rnn.step():
        step_input = rnn.step_input(rnn_input)
        step_mask = rnn.step_input(mask) if mask is not None else None
        for i, unit in enumerate(units):
            pre = [rnn.memory(init=init[i]) if init[i] is not None else
                   rnn.memory(batch_ref=rnn_input, shape=[-1, hidden_size], ref_batch_dim_idx=1) for init in inits]
            new = unit(step_input, *pre)
            new = list(new) if isinstance(new, tuple) else [new]
            if step_mask is not None:
                new = [_maybe_copy(p, n, step_mask) for p, n in zip(pre, new)]
            for p, n in zip(pre, new):
                rnn.update_memory(p, n)
                rnn.step_output(n)
            step_input = new[0]
            if dropout_prob:
                step_input = dropout(step_input, dropout_prob=dropout_prob,
                                     dropout_implementation=dropout_implementation)
        rnn.step_output(step_input)
    outs = rnn()
    kinds = len(inits)
    finals = [stack([outs[i * kinds + k][-1] for i in range(len(units))], axis=0) for k in range(kinds)]
    return outs[-1], finals


def _basic_rnn(layer, input, init_states, hidden_size, num_layers, sequence_length, dropout_prob, bidirectional,
               batch_first, make_unit, name, param_attr, bias_attr, dropout_implementation):
    _check_args(layer, input, init_states, hidden_size, num_layers, sequence_length, dropout_prob)
    directions = ("fw", "bw") if bidirectional else ("fw",)
    units = [_units(make_unit, name, num_layers, param_attr, bias_attr, d) for d in directions]
    if batch_first:
        input = transpose(input, [1, 0, 2])
    mask = None
    if sequence_length is not None:
        steps = slice(shape(input), axes=[0], starts=[0], ends=[1])
        mask = transpose(sequence_mask(sequence_length, maxlen=steps, dtype=input.dtype), [1, 0])
    # initial states [num_layers * dirs, batch, H] -> per direction, per kind, per layer: [batch, H]
    layered = [reshape(s, [num_layers, len(directions), -1, hidden_size]) if s is not None else None
               for _, s in init_states]
    results = []
    for d, direction in enumerate(directions):
        inits = [[s[i, d] if s is not None else None for i in range(num_layers)] for s in layered]
        rnn_input, rnn_mask = input, mask
        if direction == "bw":
            rnn_input = reverse(input, axis=[0])
            rnn_mask = reverse(mask, axis=[0]) if mask is not None else None
        out, finals = _run_direction(rnn_input, units[d], inits, rnn_mask, hidden_size, dropout_prob,
                                     dropout_implementation)
        results.append((reverse(out, axis=[0]) if direction == "bw" else out, finals))
    if bidirectional:
        rnn_out = concat([results[0][0], results[1][0]], axis=2)
        finals = [reshape(stack([fw, bw], axis=1), [num_layers * 2, -1, hidden_size])
                  for fw, bw in zip(results[0][1], results[1][1])]
    else:
        rnn_out, finals = results[0]
    if batch_first:
        rnn_out = transpose(rnn_out, [1, 0, 2])
    return (rnn_out, *finals)


def basic_gru(input, init_hidden, hidden_size, num_layers=1, sequence_length=None, dropout_prob=0.0,
              bidirectional=False, batch_first=True, param_attr=None, bias_attr=None, gate_activation=None,
              activation=None, dtype="float32", name="basic_gru"):
    """A ``num_layers``-layer GRU of BasicGRUUnit steps over ``input`` ([batch, seq, input_size] with
    ``batch_first``, else [seq, batch, input_size]). ``init_hidden``: [num_layers * dirs, batch, H] (layer-major,
    forward then backward per layer) or None for zeros. ``sequence_length`` [batch] masks the padding;
    ``dropout_prob`` drops each layer's output on its way to the next layer (and to ``rnn_out``), not between
    steps. Returns ``(rnn_out [.., H * dirs] in the input's layout, last_hidden [num_layers * dirs, batch, H])``."""
    def make(scope, w_attr, b_attr):
        return BasicGRUUnit(scope, hidden_size, w_attr, b_attr, gate_activation, activation, dtype)
    return _basic_rnn("basic_gru", input, [("init_hidden", init_hidden)], hidden_size, num_layers, sequence_length,
                      dropout_prob, bidirectional, batch_first, make, name, param_attr, bias_attr,
                      "downgrade_in_infer")


def basic_lstm(input, init_hidden, init_cell, hidden_size, num_layers=1, sequence_length=None, dropout_prob=0.0,
               bidirectional=False, batch_first=True, param_attr=None, bias_attr=None, gate_activation=None,
               activation=None, forget_bias=1.0, dtype="float32", name="basic_lstm"):
    """A ``num_layers``-layer LSTM of BasicLSTMUnit steps; arguments as basic_gru's, with ``init_cell`` like
    ``init_hidden`` (both given or both None) and ``forget_bias`` added to the forget gate. Dropout between layers
    scales at training time (``upscale_in_train``). Returns ``(rnn_out, last_hidden, last_cell)``."""
    if (init_hidden is None) != (init_cell is None):
        raise ValueError("basic_lstm: init_hidden and init_cell must both be given or both be None")

    def make(scope, w_attr, b_attr):
        return BasicLSTMUnit(scope, hidden_size, w_attr, b_attr, gate_activation, activation, forget_bias, dtype)
    return _basic_rnn("basic_lstm", input, [("init_hidden", init_hidden), ("init_cell", init_cell)], hidden_size,
                      num_layers, sequence_length, dropout_prob, bidirectional, batch_first, make, name, param_attr,
                      bias_attr, "upscale_in_train")
