"""fluid 1.8's RNN cell API (layers/rnn.py): GRUCell and LSTMCell against the GRU / LSTM equations written
out in numpy, rnn() over padded batches (sequence_length freezes each row's states past its length,
is_reverse, time_major, gradients through the While), in static mode and in dygraph, and fluid.layers.lstm."""
import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
rng = np.random.default_rng(7)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def gru_step(x, h, w_gate, b_gate, w_cand, b_cand):
    """fluid's BasicGRUUnit: reset and update gates from [x, h], candidate from [x, r * h]."""
    d = h.shape[1]
    gates = sigmoid(np.concatenate([x, h], 1) @ w_gate + b_gate)
    r, u = gates[:, :d], gates[:, d:]
    c = np.tanh(np.concatenate([x, r * h], 1) @ w_cand + b_cand)
    return u * h + (1 - u) * c


def lstm_step(x, h, c, w, b, forget_bias):
    """fluid's BasicLSTMUnit: gates i, j, f, o from [x, h]."""
    d = h.shape[1]
    g = np.concatenate([x, h], 1) @ w + b
    i, j, f, o = g[:, :d], g[:, d:2 * d], g[:, 2 * d:3 * d], g[:, 3 * d:]
    c = c * sigmoid(f + forget_bias) + sigmoid(i) * np.tanh(j)
    return np.tanh(c) * sigmoid(o), c


def init(value):
    return fluid.initializer.NumpyArrayInitializer(np.asarray(value, "float32"))


I, H = 3, 4
GRU_W = {"gate_w": rng.normal(size=(I + H, 2 * H)), "gate_b": rng.normal(size=2 * H),
         "cand_w": rng.normal(size=(I + H, H)), "cand_b": rng.normal(size=H)}
LSTM_W = {"w": rng.normal(size=(I + H, 4 * H)) * 0.5, "b": rng.normal(size=4 * H)}


def gru_cell():
    """A GRUCell with known weights (fluid names a named ParamAttr's two weights ``<name>_gate`` / ``_candidate``)."""
    class Init(fluid.initializer.Initializer):
        def __init__(self, which):
            self.which = which

        def _op(self, var, block):
            key = ("gate_" if var.name.endswith("_gate") else "cand_") + self.which
            return init(GRU_W[key])._op(var, block)
    return L.GRUCell(H, param_attr=fluid.ParamAttr(name="g", initializer=Init("w")),
                     bias_attr=fluid.ParamAttr(name="gb", initializer=Init("b")))


def lstm_cell(forget_bias=0.5):
    return L.LSTMCell(H, param_attr=fluid.ParamAttr(initializer=init(LSTM_W["w"])),
                      bias_attr=fluid.ParamAttr(initializer=init(LSTM_W["b"])), forget_bias=forget_bias)


def np_gru(x, h):
    return gru_step(x, h, GRU_W["gate_w"], GRU_W["gate_b"], GRU_W["cand_w"], GRU_W["cand_b"])


def run_static(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor()
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=fetch)


def test_gru_and_lstm_cells_follow_fluids_equations_and_gate_order():
    x, h, c = rng.normal(size=(5, I)), rng.normal(size=(5, H)), rng.normal(size=(5, H))

    def build():
        xv, hv, cv = (fluid.data(n, [None, w], "float32") for n, w in (("x", I), ("h", H), ("c", H)))
        gru_out, gru_state = gru_cell()(xv, hv)
        lstm_out, (lstm_h, lstm_c) = lstm_cell()(xv, [hv, cv])
        assert gru_out is gru_state and lstm_out is lstm_h
        return [gru_out, lstm_h, lstm_c]
    got = run_static(build, {"x": x.astype("float32"), "h": h.astype("float32"), "c": c.astype("float32")})
    want_h, want_c = lstm_step(x, h, c, LSTM_W["w"], LSTM_W["b"], 0.5)
    np.testing.assert_allclose(got[0], np_gru(x, h), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], want_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], want_c, rtol=1e-5, atol=1e-5)


def test_a_cell_makes_its_parameters_once_and_names_them_like_fluid():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()), fluid.unique_name.guard():
        cell = L.LSTMCell(H)
        x = fluid.data("x", [None, I], "float32")
        states = cell.get_initial_states(x)
        cell(x, states)
        cell(x, states)
    names = sorted(p.name for p in main.global_block().all_parameters())
    assert names == ["LSTMCell/BasicLSTMUnit_0.b_0", "LSTMCell/BasicLSTMUnit_0.w_0"]
    assert main.global_block().var(names[1]).shape == (I + H, 4 * H)


def test_get_initial_states_puts_the_batch_size_in_front_of_each_shape():
    def build():
        ref = fluid.data("ref", [None, 7, 2], "float32")
        cell = L.LSTMCell(H)
        h, c = cell.get_initial_states(ref)
        custom = cell.get_initial_states(ref, shape=[[-1, 3], [2, 5]], dtype="float64", init_value=1.5,
                                         batch_dim_idx=1)
        assert h.shape == (-1, H) and custom[1].shape == (7, 2, 5) and custom[0].dtype == "float64"
        return [h, c, custom[0], custom[1]]
    h, c, a, b = run_static(build, {"ref": np.zeros((6, 7, 2), "float32")})
    assert h.shape == c.shape == (6, H) and not h.any()
    assert a.shape == (7, 3) and b.shape == (7, 2, 5) and (b == 1.5).all()
    with fluid.program_guard(fluid.Program(), fluid.Program()), pytest.raises(TypeError, match="dtype"):
        L.GRUCell(H).get_initial_states(fluid.data("r", [None, 2], "float32"), dtype="int32")


def np_rnn(x, lengths, reverse=False):
    """The GRU over each padded row, one step at a time; a row's state stops changing past its length."""
    n, steps, _ = x.shape
    h, outs = np.zeros((n, H)), np.zeros((n, steps, H))
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for t in order:
        new = np_gru(x[:, t], h)
        outs[:, t] = new
        valid = (t < lengths)[:, None]
        h = np.where(valid, new, h)
    return outs, h


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
def test_rnn_freezes_each_rows_states_past_its_length(reverse, time_major):
    x, lengths = rng.normal(size=(4, 5, I)), np.array([5, 2, 0, 3])
    feed_x = x.transpose(1, 0, 2) if time_major else x

    def build():
        xv = fluid.data("x", [None, None, I], "float32")
        out, state = L.rnn(gru_cell(), xv, sequence_length=fluid.data("len", [None], "int64"),
                           time_major=time_major, is_reverse=reverse)
        assert out.shape[-1] == H and state.shape == (-1, H)
        return [out, state]
    out, state = run_static(build, {"x": feed_x.astype("float32"), "len": lengths})
    want_out, want_state = np_rnn(x, lengths, reverse)
    np.testing.assert_allclose(out.transpose(1, 0, 2) if time_major else out, want_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(state, want_state, rtol=1e-5, atol=1e-5)
    assert not state[2].any()  # an empty row keeps its initial (zero) state


def test_rnn_runs_the_same_in_dygraph():
    x, lengths = rng.normal(size=(3, 4, I)).astype("float32"), np.array([4, 1, 2])
    with fluid.dygraph.guard():
        cell = gru_cell()
        out, state = L.rnn(cell, fluid.dygraph.to_variable(x),
                           sequence_length=fluid.dygraph.to_variable(lengths))
        want_out, want_state = np_rnn(x, lengths)
        np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(state.numpy(), want_state, rtol=1e-5, atol=1e-5)
        L.reduce_sum(state).backward()
        params = cell.gru_unit.parameters()  # fluid's GRUCell.gru_unit is the layer holding them
        grads = [p.gradient() for p in params]
        assert len(grads) == 4 and all(g is not None and np.abs(g).sum() > 0 for g in grads)
        before = [p.numpy().copy() for p in params]
        fluid.optimizer.SGD(0.1, parameter_list=params).minimize(L.reduce_sum(state))
        assert all(not np.allclose(p.numpy(), b) for p, b in zip(params, before))


def test_rnn_gradients_flow_through_the_loop_to_inputs_states_and_weights():
    x, h0 = rng.normal(size=(2, 3, I)).astype("float32"), rng.normal(size=(2, H)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xv = fluid.data("x", [None, None, I], "float32")
        hv = fluid.data("h0", [None, H], "float32")
        xv.stop_gradient = False
        out, state = L.rnn(gru_cell(), xv, initial_states=hv)
        loss = L.reduce_sum(out) + L.reduce_sum(state)
        grads = fluid.gradients(loss, [xv, hv])
    exe = fluid.Executor()
    exe.run(startup)
    gx, gh = exe.run(main, feed={"x": x, "h0": h0}, fetch_list=grads)

    def f(xx, hh):
        outs, h = np.zeros((2, 3, H)), hh
        for t in range(3):
            h = outs[:, t] = np_gru(xx[:, t], h)
        return outs.sum() + h.sum()
    eps, k = 1e-4, (1, 2, 0)
    bumped = x.astype(np.float64).copy()
    bumped[k] += eps
    low = x.astype(np.float64).copy()
    low[k] -= eps
    np.testing.assert_allclose(gx[k], (f(bumped, h0) - f(low, h0)) / (2 * eps), rtol=1e-3)
    hb, hl = h0.astype(np.float64).copy(), h0.astype(np.float64).copy()
    hb[0, 1] += eps
    hl[0, 1] -= eps
    np.testing.assert_allclose(gh[0, 1], (f(x, hb) - f(x, hl)) / (2 * eps), rtol=1e-3)


def test_rnn_checks_its_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3, I], "float32")
        with pytest.raises(TypeError, match="'inputs' in rnn"):
            L.rnn(gru_cell(), np.zeros((2, 3, I)))
        with pytest.raises(TypeError, match="sequence_length"):
            L.rnn(gru_cell(), x, sequence_length=[3, 3])
        with pytest.raises(TypeError, match="states"):
            L.LSTMCell(H)(x, fluid.data("h", [None, H], "float32"))


def test_lstm_layer_shapes_and_values_match_a_stacked_bidirectional_lstm():
    from tests.ops.rnn_cases import cudnn_lstm_reference  # noqa: PLC0415
    steps, n, layers = 4, 3, 2
    x = rng.normal(size=(steps, n, I)).astype("float32")
    h0, c0 = (rng.normal(size=(layers * 2, n, H)).astype("float32") for _ in range(2))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xv = fluid.data("x", [None, None, I], "float32")
        hv, cv = fluid.data("h0", [layers * 2, None, H], "float32"), fluid.data("c0", [layers * 2, None, H], "float32")
        out, last_h, last_c = L.lstm(xv, hv, cv, max_len=steps, hidden_size=H, num_layers=layers, is_bidirec=True,
                                     default_initializer=fluid.initializer.Uniform(-0.5, 0.5))
        assert out.shape == (-1, -1, 2 * H) and last_h.shape == (layers * 2, -1, H)
        weight = main.global_block().all_parameters()[0]
        fluid.optimizer.SGD(0.1).minimize(L.reduce_mean(out) + L.reduce_mean(last_c))
    exe = fluid.Executor()
    exe.run(startup)
    w = np.array(fluid.global_scope().find_var(weight.name).get_tensor(), dtype=np.float64)
    got = exe.run(main, feed={"x": x, "h0": h0, "c0": c0}, fetch_list=[out, last_h, last_c])
    for g, want in zip(got, cudnn_lstm_reference(x, h0, c0, w, H, layers, True)):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)
    assert not np.allclose(np.array(fluid.global_scope().find_var(weight.name).get_tensor()), w)  # trained
    with pytest.raises(ValueError, match="max_len"):
        exe.run(main, feed={"x": np.zeros((steps + 1, n, I), "float32"), "h0": h0, "c0": c0}, fetch_list=[out])
