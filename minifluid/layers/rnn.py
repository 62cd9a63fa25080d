"""fluid 1.8's RNN cell API: RNNCell, GRUCell, LSTMCell, rnn() and the cuDNN-style multi-layer ``lstm``.

A cell maps (inputs, states) to (outputs, new states), each a tensor or a nested structure (list, tuple,
namedtuple, dict) of tensors; ``rnn`` runs it over the time axis. In a static program the steps run in
a While over tensor arrays (the inputs' rows per step, the states at every step), so the sequence length
may be unknown until run time and append_backward differentiates the loop like any While
(layers/control_flow.py); in dygraph mode the same cell runs in a Python loop over eager tensors.
A cell creates its parameters on its first call (their sizes depend on the input's width), once: in
dygraph mode the eager parameters are kept, in static mode each program gets them by name, so a train
and a test program built with one cell share them.
"""
from ..framework import dygraph_mode, unique_name
from ..framework.variable import Variable
from ..ops.cudnn_lstm import weight_size
from .activation import check_variable_and_dtype
from .compare import less_than
from .control_flow import While, array_read, array_write, create_array, in_parent_block, tensor_array_to_tensor
from .helper import LayerHelper
from .indexing import reverse
from .nn import sigmoid, tanh
from .nest import assert_same_structure, flatten, map_structure, pack_sequence_as
from .manip import fill_constant_batch_size_like, increment, shape, slice, stack, unstack
from .math import elementwise_add, elementwise_mul, matmul, scale
from .sequence import sequence_mask
from .tensor import cast, concat, fill_constant, split, transpose

__all__ = ["GRUCell", "LSTMCell", "RNNCell", "lstm", "rnn"]

_FLOATS = ("float32", "float64")


# --- cells ---------------------------------------------------------------------------------------------------
def _is_shape(x):
    return isinstance(x, (list, tuple)) and all(isinstance(d, int) for d in x)


def _map_shapes(fn, shapes):
    if _is_shape(shapes):
        return fn(list(shapes))
    if isinstance(shapes, dict):
        return type(shapes)((k, _map_shapes(fn, shapes[k])) for k in sorted(shapes))
    if not isinstance(shapes, (list, tuple)):
        raise TypeError(f"RNNCell: a state shape must be a list or tuple of ints, got {shapes!r}")
    return type(shapes)(_map_shapes(fn, s) for s in shapes)


class RNNCell:
    """Base class of cells: ``call(inputs, states, **kwargs)`` returns ``(outputs, new_states)``, where
    ``new_states`` has the structure of ``states``. ``state_shape`` (and optionally ``state_dtype``)
    describe the states ``get_initial_states`` makes."""

    def call(self, inputs, states, **kwargs):
        raise NotImplementedError("RNNCell must implent the call function.")

    def __call__(self, inputs, states, **kwargs):
        return self.call(inputs, states, **kwargs)

    def get_initial_states(self, batch_ref, shape=None, dtype="float32", init_value=0, batch_dim_idx=0):
        """States filled with ``init_value``: one per shape of ``shape`` (default ``state_shape``), each with
        the batch size of ``batch_ref``'s first tensor (its dimension ``batch_dim_idx``) put in front (a
        leading -1 in a shape stands for it)."""
        ref = flatten(batch_ref)[0]
        check_variable_and_dtype(ref, "batch_ref", ("float32", "float64", "int32", "int64"), "RNNCell")
        if not isinstance(shape, (list, tuple, type(None), int)):
            raise TypeError(f"The type of 'shape' in RNNCell must be list, tuple, NoneType or int, but received "
                            f"{type(shape).__name__}. ")
        shapes = self.state_shape if shape is None else ([shape] if isinstance(shape, int) else shape)
        try:
            dtypes = self.state_dtype if dtype is None else dtype
        except NotImplementedError:
            dtypes = "float32"
        for d in flatten(dtypes):
            if d not in _FLOATS:
                raise TypeError(f"The data type of 'dtype' in RNNCell must be {list(_FLOATS)}, but received {d}. ")
        full = _map_shapes(lambda s: s if s and s[0] == -1 else [-1] + s, shapes)
        shape_leaves = []
        _map_shapes(shape_leaves.append, full)
        dtype_leaves = flatten(dtypes)
        if len(dtype_leaves) == 1:
            dtype_leaves = dtype_leaves * len(shape_leaves)
        if len(dtype_leaves) != len(shape_leaves):
            raise ValueError(f"RNNCell: {len(dtype_leaves)} dtypes for {len(shape_leaves)} state shapes")
        states = iter([fill_constant_batch_size_like(ref, s, d, init_value, input_dim_idx=batch_dim_idx)
                       for s, d in zip(shape_leaves, dtype_leaves)])
        return _map_shapes(lambda s: next(states), full)

    @property
    def state_shape(self):
        raise NotImplementedError("Please add implementaion for `state_shape` in the used cell.")

    @property
    def state_dtype(self):
        raise NotImplementedError("Please add implementaion for `state_dtype` in the used cell.")


class _Weights:
    """A cell's parameters, made on its first call: kept as eager parameters in dygraph mode, and looked
    up (or created, under the names of the first creation) in the current program in static mode."""

    def __init__(self, scope, dtype):
        self.helper = LayerHelper(scope, name=unique_name.generate(scope))
        self.dtype, self.attrs, self.eager = dtype, {}, {}

    def get(self, key, attr, shape, is_bias=False):
        if key not in self.attrs:
            self.attrs[key] = self.helper._param_attr(attr, shape, is_bias)[0]
        if dygraph_mode._tracer is None:
            return self.helper.create_parameter(self.attrs[key], shape, self.dtype, is_bias)
        if key not in self.eager:
            self.eager[key] = self.helper.create_parameter(self.attrs[key], shape, self.dtype, is_bias)
        return self.eager[key]

    def parameters(self):
        """The eager parameters made so far (dygraph: what an optimizer's ``parameter_list`` needs)."""
        return list(self.eager.values())


def _named(attr, suffix):
    """fluid's BasicGRUUnit naming: a named ParamAttr gets ``_gate`` / ``_candidate`` appended per weight."""
    if attr is None or attr is False or getattr(attr, "name", None) is None:
        return attr
    import copy  # noqa: PLC0415
    attr = copy.deepcopy(attr)
    attr.name += suffix
    return attr


def _check_cell(cls, hidden_size, dtype):
    if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
        raise TypeError(f"The type of 'hidden_size' in {cls} must be int, but received {type(hidden_size).__name__}. ")
    if dtype not in _FLOATS:
        raise TypeError(f"The data type of 'dtype' in {cls} must be {list(_FLOATS)}, but received {dtype}. ")


class GRUCell(RNNCell):
    """GRU cell (fluid's BasicGRUUnit): with gates from ``[x, h]`` @ W_gate + b_gate split into reset r and
    update u, ``c = act([x, r * h] @ W_cand + b_cand)`` and ``h' = u * h + (1 - u) * c``. Weights
    [input + hidden, 2 * hidden] and [input + hidden, hidden], biases [2 * hidden] and [hidden]."""

    def __init__(self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None, activation=None,
                 dtype="float32", name="GRUCell"):
        _check_cell("GRUCell", hidden_size, dtype)
        self.hidden_size = hidden_size
        self._param_attr, self._bias_attr = param_attr, bias_attr
        self._gate_activation, self._activation = gate_activation or sigmoid, activation or tanh
        self._weights = self.gru_unit = _Weights(name + "/BasicGRUUnit", dtype)  # gru_unit.parameters(), as fluid

    def call(self, inputs, states):
        check_variable_and_dtype(inputs, "inputs", _FLOATS, "GRUCell")
        check_variable_and_dtype(states, "states", _FLOATS, "GRUCell")
        h, width = self.hidden_size, inputs.shape[-1] + self.hidden_size
        w = self._weights
        w_gate = w.get("gate_w", _named(self._param_attr, "_gate"), [width, 2 * h])
        w_cand = w.get("cand_w", _named(self._param_attr, "_candidate"), [width, h])
        b_gate = w.get("gate_b", _named(self._bias_attr, "_gate"), [2 * h], is_bias=True)
        b_cand = w.get("cand_b", _named(self._bias_attr, "_candidate"), [h], is_bias=True)
        gate = self._gate_activation(_affine(concat([inputs, states], 1), w_gate, b_gate))
        r, u = split(gate, num_or_sections=2, dim=1)
        c = self._activation(_affine(concat([inputs, elementwise_mul(r, states)], 1), w_cand, b_cand))
        new_hidden = elementwise_add(elementwise_mul(u, states), elementwise_mul(scale(u, -1.0, 1.0), c))
        return new_hidden, new_hidden

    @property
    def state_shape(self):
        return [self.hidden_size]


def _affine(x, w, b):
    out = matmul(x, w)
    return elementwise_add(out, b) if b is not None else out


class LSTMCell(RNNCell):
    """LSTM cell (fluid's BasicLSTMUnit): ``[x, h] @ W + b`` split into gates i, j, f, o (that order);
    ``c' = c * gate(f + forget_bias) + gate(i) * act(j)``, ``h' = act(c') * gate(o)``. Weight
    [input + hidden, 4 * hidden], bias [4 * hidden]. States: ``[h, c]``."""

    def __init__(self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None, activation=None,
                 forget_bias=1.0, dtype="float32", name="LSTMCell"):
        _check_cell("LSTMCell", hidden_size, dtype)
        self.hidden_size = hidden_size
        self._param_attr, self._bias_attr = param_attr, bias_attr
        self._gate_activation, self._activation = gate_activation or sigmoid, activation or tanh
        self._forget_bias = float(forget_bias)
        self._weights = self.lstm_unit = _Weights(name + "/BasicLSTMUnit", dtype)  # lstm_unit.parameters()

    def call(self, inputs, states):
        check_variable_and_dtype(inputs, "inputs", _FLOATS, "LSTMCell")
        if not isinstance(states, (list, tuple)):
            raise TypeError(f"The type of 'states' in LSTMCell must be list, but received {type(states).__name__}. ")
        for i, state in enumerate(states):
            check_variable_and_dtype(state, f"state[{i}]", _FLOATS, "LSTMCell")
        pre_hidden, pre_cell = states
        h = self.hidden_size
        weight = self._weights.get("w", self._param_attr, [inputs.shape[-1] + h, 4 * h])
        bias = self._weights.get("b", self._bias_attr, [4 * h], is_bias=True)
        i, j, f, o = split(_affine(concat([inputs, pre_hidden], 1), weight, bias), num_or_sections=4, dim=-1)
        gate, act = self._gate_activation, self._activation
        new_cell = elementwise_add(elementwise_mul(pre_cell, gate(scale(f, 1.0, self._forget_bias))),
                                   elementwise_mul(gate(i), act(j)))
        new_hidden = elementwise_mul(act(new_cell), gate(o))
        return new_hidden, [new_hidden, new_cell]

    @property
    def state_shape(self):
        return [[self.hidden_size], [self.hidden_size]]


# --- rnn -----------------------------------------------------------------------------------------------------
def _transpose_batch_time(x):
    return transpose(x, [1, 0] + list(range(2, len(x.shape))))


def _maybe_copy(state, new_state, step_mask):
    """``new_state`` where the step mask is 1, ``state`` where it is 0 (rows of a [batch] mask)."""
    return elementwise_add(elementwise_mul(new_state, step_mask, axis=0),
                           elementwise_mul(state, scale(step_mask, -1.0, 1.0), axis=0))


def _check_rnn_args(inputs, initial_states, sequence_length):
    if not isinstance(inputs, (Variable, list, tuple)):
        raise TypeError(f"The type of 'inputs' in rnn must be Variable, list or tuple, but received "
                        f"{type(inputs).__name__}. ")
    for i, x in enumerate(flatten(inputs)):
        check_variable_and_dtype(x, f"inputs[{i}]", _FLOATS, "rnn")
    if not isinstance(initial_states, (Variable, list, tuple, type(None))):
        raise TypeError(f"The type of 'initial_states' in rnn must be Variable, list, tuple or NoneType, but "
                        f"received {type(initial_states).__name__}. ")
    for i, s in enumerate(flatten(initial_states) if initial_states is not None else []):
        check_variable_and_dtype(s, f"states[{i}]", _FLOATS, "rnn")
    if not isinstance(sequence_length, (Variable, type(None))):
        raise TypeError(f"The type of 'sequence_length' in rnn must be Variable or NoneType, but received "
                        f"{type(sequence_length).__name__}. ")


def rnn(cell, inputs, initial_states=None, sequence_length=None, time_major=False, is_reverse=False, **kwargs):
    """Run ``cell`` over every time step of ``inputs`` ([batch, time, ...], or [time, batch, ...] with
    ``time_major``). With ``sequence_length`` ([batch]) a sequence's states stop changing past its length
    (its outputs there are what the cell computed on the padding). ``is_reverse`` runs from the last step
    to the first (outputs still in input order). Returns ``(outputs, final_states)``: the outputs stacked
    on the time axis in the inputs' layout, and the states after the last step."""
    _check_rnn_args(inputs, initial_states, sequence_length)
    if initial_states is None:
        initial_states = cell.get_initial_states(batch_ref=inputs, batch_dim_idx=1 if time_major else 0)

    def enable_grad(x):
        x.stop_gradient = False
        return x
    initial_states = map_structure(enable_grad, initial_states)
    if not time_major:
        inputs = map_structure(_transpose_batch_time, inputs)
    mask = None
    if sequence_length is not None:
        steps = slice(shape(flatten(inputs)[0]), axes=[0], starts=[0], ends=[1])
        mask = transpose(sequence_mask(sequence_length, maxlen=steps, dtype=flatten(initial_states)[0].dtype),
                         [1, 0])
    if is_reverse:
        inputs = map_structure(lambda x: reverse(x, axis=[0]), inputs)
        mask = reverse(mask, axis=[0]) if mask is not None else None
    run = _eager_rnn if dygraph_mode._tracer is not None else _static_rnn
    outputs, final_states = run(cell, inputs, initial_states, mask, kwargs)
    if is_reverse:
        outputs = map_structure(lambda x: reverse(x, axis=[0]), outputs)
    if not time_major:
        outputs = map_structure(_transpose_batch_time, outputs)
    return outputs, final_states


def _eager_rnn(cell, inputs, states, mask, kwargs):
    steps = flatten(inputs)[0].shape[0]
    per_step = [unstack(x, axis=0) for x in flatten(inputs)]
    masks = unstack(mask, axis=0) if mask is not None else None
    collected = []
    for t in range(steps):
        outputs, new_states = cell(pack_sequence_as(inputs, [xs[t] for xs in per_step]), states, **kwargs)
        assert_same_structure(states, new_states, "states of the cell")
        if masks is not None:
            new_states = map_structure(lambda s, n, m=masks[t]: _maybe_copy(s, n, m), states, new_states)
        collected.append(flatten(outputs))
        states = new_states
    stacked = [stack([step[k] for step in collected], axis=0) for k in range(len(collected[0]))]
    return pack_sequence_as(outputs, stacked), states


def _static_rnn(cell, inputs, initial_states, mask, kwargs):
    """The steps in a While: each input split into a tensor array of steps, the states kept in arrays
    (entry t: the states before step t), each output written into an array, then stacked."""
    helper = LayerHelper("rnn")
    first = flatten(inputs)[0]
    i = fill_constant([1], "int64", 0)
    n = cast(slice(shape(first), axes=[0], starts=[0], ends=[1]), "int64")

    def to_array(x):
        array = create_array(x.dtype)
        helper.append_op(type="tensor_to_array", inputs={"X": [x]}, outputs={"Out": [array]}, attrs={"axis": 0})
        return array, x.shape[1:] if x.shape is not None else None
    input_arrays = [to_array(x) for x in flatten(inputs)]
    mask_array = to_array(mask) if mask is not None else None
    state_arrays = map_structure(lambda s: array_write(s, i), initial_states)
    cond = less_than(i, n)
    loop = While(cond)
    with loop.block():
        def read(entry):
            value = array_read(entry[0], i)
            value.shape = entry[1]
            return value
        step_inputs = pack_sequence_as(inputs, [read(e) for e in input_arrays])
        states = map_structure(lambda a: array_read(a, i), state_arrays)
        outputs, new_states = cell(step_inputs, states, **kwargs)
        assert_same_structure(states, new_states, "states of the cell")
        if mask_array is not None:
            step_mask = read(mask_array)
            new_states = map_structure(lambda s, ns: _maybe_copy(s, ns, step_mask), states, new_states)
        with in_parent_block(helper.main_program):
            output_arrays = map_structure(lambda o: create_array(o.dtype), outputs)
        map_structure(lambda o, a: array_write(o, i, a), outputs, output_arrays)
        increment(i, in_place=True)
        map_structure(lambda s, a: array_write(s, i, a), new_states, state_arrays)
        less_than(i, n, cond=cond)
    stacked = map_structure(lambda a: tensor_array_to_tensor(a, axis=0, use_stack=True)[0], output_arrays)
    for out, o in zip(flatten(stacked), flatten(outputs)):
        out.shape = (-1,) + tuple(o.shape) if o.shape is not None else None
    final_states = map_structure(lambda a, s: _with_shape(array_read(a, i), s.shape), state_arrays, initial_states)
    return stacked, final_states


def _with_shape(var, shape):
    var.shape = shape
    return var


# --- lstm (cudnn_lstm) ------------------------------------------------------------------------------------------
def lstm(input, init_h, init_c, max_len, hidden_size, num_layers, dropout_prob=0.0, is_bidirec=False, is_test=False,
         name=None, default_initializer=None, seed=-1):
    """Multi-layer LSTM over a time-major ``input`` [seq_len, batch, input_size] (fluid's cudnn_lstm; gates
    i, f, c, o; no peepholes). ``init_h`` / ``init_c``: [num_layers * dirs, batch, hidden_size]. One flat
    weight parameter holds every layer's weights and biases (ops/cudnn_lstm.py). ``dropout_prob`` applies
    between layers only. Returns (rnn_out [seq_len, batch, hidden_size * dirs], last_h, last_c)."""
    check_variable_and_dtype(input, "input", _FLOATS, "lstm")
    check_variable_and_dtype(init_h, "init_h", _FLOATS, "lstm")
    check_variable_and_dtype(init_c, "init_c", _FLOATS, "lstm")
    for label, value in (("max_len", max_len), ("hidden_size", hidden_size), ("num_layers", num_layers)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"The type of '{label}' in lstm must be int, but received {type(value).__name__}. ")
    if len(input.shape) != 3:
        raise ValueError(f"lstm: Input(X)'s rank must be 3 ([seq_len, batch_size, input_size]), got shape "
                         f"{list(input.shape)}")
    helper = LayerHelper("cudnn_lstm", name=name, param_attr=None)
    dtype, input_size = input.dtype, input.shape[-1]
    weight = helper.create_parameter(attr=helper.param_attr,
                                     shape=[weight_size(input_size, hidden_size, num_layers, is_bidirec)],
                                     dtype=dtype, default_initializer=default_initializer)
    outs = {slot: helper.create_variable_for_type_inference(dtype) for slot in ("Out", "last_h", "last_c")}
    outs["ReserveSpace"] = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(type="cudnn_lstm", inputs={"Input": [input], "InitH": [init_h], "InitC": [init_c],
                                                "W": [weight]},
                     outputs={k: [v] for k, v in outs.items()},
                     attrs={"max_len": max_len, "is_bidirec": is_bidirec, "input_size": input_size,
                            "hidden_size": hidden_size, "num_layers": num_layers, "is_test": is_test,
                            "dropout_prob": float(dropout_prob), "seed": seed})
    return outs["Out"], outs["last_h"], outs["last_c"]


# fluid 1.8's layers/rnn.py module holds the decoding API and the LoD recurrent layers too
from .decode import *  # noqa: E402,F401,F403
from .decode import __all__ as _decode_all  # noqa: E402
from .recurrent import dynamic_gru, dynamic_lstm, dynamic_lstmp, gru_unit, lstm_unit  # noqa: E402,F401
from .dynamic_rnn import beam_search, beam_search_decode  # noqa: E402,F401

_CELL_API = __all__ + _decode_all  # the names fluid.layers gains from this module and decode.py
__all__ = _CELL_API + ["beam_search", "beam_search_decode", "dynamic_gru", "dynamic_lstm", "dynamic_lstmp",
                                   "gru_unit", "lstm_unit"]
