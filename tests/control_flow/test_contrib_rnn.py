"""fluid.contrib.layers' basic-op GRU / LSTM (contrib/layers/rnn_impl.py): the units and the multi-layer,
bidirectional, padded-batch layers against the GRU / LSTM equations written out in numpy (one layer at a time,
one step at a time), their parameter names, gradients against finite differences, dygraph units, and errors."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.contrib.layers import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm

from .test_rnn_cells import gru_step, lstm_step

L = fluid.layers
rng = np.random.default_rng(11)


def np_layers(x, lengths, params, init, step, n_states, bidirectional):
    """Reference: ``x`` [seq, batch, in]; ``params[d][l]`` the weights of direction d, layer l; ``init[d][l]``
    the initial states. Past a row's length its states are kept (so are its outputs); the backward direction
    reads each row's valid steps from last to first, after its padding."""
    seq, batch = x.shape[:2]
    mask = (np.arange(seq)[:, None] < lengths[None, :]).astype(x.dtype)  # [seq, batch]
    outs, finals = [], []
    for d in range(2 if bidirectional else 1):
        order = range(seq) if d == 0 else range(seq - 1, -1, -1)
        states = [list(s) for s in init[d]]
        out = np.zeros(x.shape[:2] + (init[d][0][0].shape[-1],))
        for t in order:
            inp = x[t]
            for layer, w in enumerate(params[d]):
                new = step(inp, *states[layer], *w)
                new = new if isinstance(new, tuple) else (new,)
                m = mask[t][:, None]
                states[layer] = [m * n + (1 - m) * p for n, p in zip(new, states[layer])]
                inp = states[layer][0]
            out[t] = inp
        outs.append(out)
        finals.append([np.stack([states[layer][k] for layer in range(len(params[d]))]) for k in range(n_states)])
    rnn_out = np.concatenate(outs, axis=2)
    # [num_layers * dirs, batch, H], layer-major
    last = [np.stack([finals[d][k][layer] for layer in range(len(params[0])) for d in range(len(finals))])
            for k in range(n_states)]
    return rnn_out, last


def set_param(scope, name, value):
    scope.find_var(name).get_tensor().set(np.asarray(value, "float32"), fluid.CPUPlace())


def gru_params(prefix, n_in, hidden):
    w = [rng.uniform(-0.5, 0.5, size=s) for s in ((n_in + hidden, 2 * hidden), (hidden + n_in, hidden))]
    b = [rng.uniform(-0.5, 0.5, size=s) for s in ((2 * hidden,), (hidden,))]
    named = {f"{prefix}.w_0": w[0], f"{prefix}.w_1": w[1], f"{prefix}.b_0": b[0], f"{prefix}.b_1": b[1]}
    return named, (w[0], b[0], w[1], b[1])


def lstm_params(prefix, n_in, hidden, forget_bias):
    w, b = rng.uniform(-0.5, 0.5, size=(n_in + hidden, 4 * hidden)), rng.uniform(-0.5, 0.5, size=4 * hidden)
    return {f"{prefix}.w_0": w, f"{prefix}.b_0": b}, (w, b, forget_bias)


def run(build, feed, set_values, program_hook=None):
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetch = build()
    if program_hook is not None:
        main = program_hook(main)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        for name, value in set_values.items():
            set_param(scope, name, value)
        return exe.run(main, feed=feed, fetch_list=fetch), main


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_basic_gru_multi_layer_padded_batches_follow_the_equations(bidirectional, batch_first):
    seq, batch, n_in, hidden, layers = 5, 4, 3, 6, 2
    dirs = 2 if bidirectional else 1
    x = rng.normal(size=(seq, batch, n_in)).astype("float32")
    lengths = np.array([5, 2, 4, 1])
    h0 = rng.normal(size=(layers * dirs, batch, hidden)).astype("float32")
    values, params = {}, [[], []]
    for d, scope in enumerate(["basic_gru_layers_", "basic_gru_reverse_layers_"][:dirs]):
        for layer in range(layers):
            named, p = gru_params(f"{scope}{layer}/BasicGRUUnit_0", n_in if layer == 0 else hidden, hidden)
            values.update(named)
            params[d].append(p)

    def build():
        xv = fluid.data("x", [batch, None, n_in] if batch_first else [None, batch, n_in], "float32")
        hv = fluid.data("h0", [layers * dirs, batch, hidden], "float32")
        lv = fluid.data("len", [batch], "int64")
        return basic_gru(xv, hv, hidden, num_layers=layers, sequence_length=lv, bidirectional=bidirectional,
                         batch_first=batch_first)
    feed_x = x.transpose(1, 0, 2) if batch_first else x
    (out, last), main = run(build, {"x": feed_x, "h0": h0, "len": lengths}, values)
    init = [[[h0[layer * dirs + d]] for layer in range(layers)] for d in range(dirs)]
    ref_out, (ref_last,) = np_layers(x.astype("float64"), lengths, params, init, gru_step, 1, bidirectional)
    np.testing.assert_allclose(out, ref_out.transpose(1, 0, 2) if batch_first else ref_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(last, ref_last, rtol=1e-4, atol=1e-5)
    assert sorted(p.name for p in main.global_block().all_parameters()) == sorted(values)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_basic_lstm_multi_layer_padded_batches_follow_the_equations(bidirectional):
    seq, batch, n_in, hidden, layers, forget_bias = 4, 3, 5, 4, 3, 0.7
    dirs = 2 if bidirectional else 1
    x = rng.normal(size=(batch, seq, n_in)).astype("float32")
    lengths = np.array([2, 4, 3])
    values, params = {}, [[], []]
    for d, scope in enumerate(["basic_lstm_layers_", "basic_lstm_reverse_layers_"][:dirs]):
        for layer in range(layers):
            named, p = lstm_params(f"{scope}{layer}/BasicLSTMUnit_0", n_in if layer == 0 else hidden, hidden,
                                   forget_bias)
            values.update(named)
            params[d].append(p)

    def build():
        xv = fluid.data("x", [None, None, n_in], "float32")
        lv = fluid.data("len", [None], "int32")
        return basic_lstm(xv, None, None, hidden, num_layers=layers, sequence_length=lv,
                          bidirectional=bidirectional, forget_bias=forget_bias)
    (out, last_h, last_c), _ = run(build, {"x": x, "len": lengths.astype("int32")}, values)
    zeros = np.zeros((batch, hidden))
    init = [[[zeros, zeros] for _ in range(layers)] for _ in range(dirs)]
    ref_out, (ref_h, ref_c) = np_layers(x.transpose(1, 0, 2).astype("float64"), lengths, params, init, lstm_step, 2,
                                        bidirectional)
    np.testing.assert_allclose(out, ref_out.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(last_h, ref_h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(last_c, ref_c, rtol=1e-4, atol=1e-5)
    assert out.shape == (batch, seq, hidden * dirs) and last_h.shape == (layers * dirs, batch, hidden)


def test_without_sequence_length_every_step_counts_and_the_length_is_read_at_run_time():
    n_in, hidden = 3, 4
    named, p = lstm_params("basic_lstm_layers_0/BasicLSTMUnit_0", n_in, hidden, 1.0)

    def build():
        xv = fluid.data("x", [None, None, n_in], "float32")
        return basic_lstm(xv, None, None, hidden, batch_first=False)
    for seq in (3, 6):  # one program, two sequence lengths
        x = rng.normal(size=(seq, 2, n_in)).astype("float32")
        (out, last_h, _), _ = run(build, {"x": x}, named)
        zeros = np.zeros((2, hidden))
        ref_out, (ref_h, _) = np_layers(x.astype("float64"), np.full(2, seq), [[p]], [[[zeros, zeros]]], lstm_step,
                                        2, False)
        np.testing.assert_allclose(out, ref_out, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(last_h, ref_h, rtol=1e-4, atol=1e-5)


def test_units_compute_one_step_under_fluids_parameter_names():
    batch, n_in, hidden = 3, 4, 5
    x, h, c = (rng.normal(size=(batch, w)).astype("float32") for w in (n_in, hidden, hidden))
    gru_named, gru_p = gru_params("gru_unit/BasicGRUUnit_0", n_in, hidden)
    lstm_named, lstm_p = lstm_params("lstm_unit/BasicLSTMUnit_0", n_in, hidden, 1.0)

    def build():
        xv, hv, cv = (fluid.data(n, [None, w], "float32") for n, w in (("x", n_in), ("h", hidden), ("c", hidden)))
        return [BasicGRUUnit("gru_unit", hidden)(xv, hv), *BasicLSTMUnit("lstm_unit", hidden)(xv, hv, cv)]
    (gru_h, lstm_h, lstm_c), main = run(build, {"x": x, "h": h, "c": c}, {**gru_named, **lstm_named})
    np.testing.assert_allclose(gru_h, gru_step(x, h, *gru_p), rtol=1e-5, atol=1e-6)
    ref_h, ref_c = lstm_step(x, h, c, *lstm_p)
    np.testing.assert_allclose(lstm_h, ref_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lstm_c, ref_c, rtol=1e-5, atol=1e-6)
    assert {p.name for p in main.global_block().all_parameters()} == set(gru_named) | set(lstm_named)


def test_named_param_attrs_get_fluids_per_layer_and_direction_suffixes():
    def build():
        x = fluid.data("x", [None, 2, 8], "float32")
        basic_gru(x, None, 4, bidirectional=True, param_attr=fluid.ParamAttr(name="g"),
                  bias_attr=fluid.ParamAttr(name="gb"))
        basic_lstm(x, None, None, 4, num_layers=2, param_attr=fluid.ParamAttr(name="l"),
                   bias_attr=fluid.ParamAttr(name="lb"))
        return []
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        build()
    names = {p.name for p in main.global_block().all_parameters()}
    assert names == {f"g_{d}_w_0_{k}" for d in ("fw", "bw") for k in ("gate", "candidate")} | {
        f"gb_{d}_b_0_{k}" for d in ("fw", "bw") for k in ("gate", "candidate")} | {
        f"l_fw_w_{i}" for i in range(2)} | {f"lb_fw_b_{i}" for i in range(2)}


def test_gradients_through_every_layer_and_direction_match_finite_differences():
    seq, batch, n_in, hidden = 3, 2, 2, 3
    x = rng.normal(size=(seq, batch, n_in))
    lengths = np.array([3, 2])

    def build():
        xv = fluid.data("x", [None, batch, n_in], "float64")
        xv.stop_gradient = False
        lv = fluid.data("len", [batch], "int64")
        out, last = basic_gru(xv, None, hidden, num_layers=2, sequence_length=lv, bidirectional=True,
                              batch_first=False, dtype="float64")
        loss = L.reduce_sum(L.elementwise_mul(out, out)) + L.reduce_sum(last)
        fluid.backward.append_backward(loss)
        return [loss, "x@GRAD", "basic_gru_reverse_layers_1/BasicGRUUnit_0.w_0@GRAD"]
    main, startup, scope = fluid.Program(), fluid.Program(), fluid.Scope()
    with fluid.program_guard(main, startup):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        loss, gx, gw = exe.run(main, feed={"x": x, "len": lengths}, fetch_list=fetch)
        w_name = "basic_gru_reverse_layers_1/BasicGRUUnit_0.w_0"
        w = np.array(scope.find_var(w_name).get_tensor())
        eps = 1e-6

        def loss_at(feed_x, weight):
            scope.find_var(w_name).get_tensor().set(weight, fluid.CPUPlace())
            return float(exe.run(main, feed={"x": feed_x, "len": lengths}, fetch_list=[fetch[0]])[0])
        for idx in [(0, 0, 1), (2, 1, 0), (1, 1, 1)]:
            bumped = x.copy()
            bumped[idx] += eps
            lowered = x.copy()
            lowered[idx] -= eps
            assert gx[idx] == pytest.approx((loss_at(bumped, w) - loss_at(lowered, w)) / (2 * eps), rel=1e-5, abs=1e-8)
        assert np.all(gx[2, 1] == 0)  # past row 1's length nothing reads its input
        for idx in [(0, 1), (4, 5), (3, 0)]:
            up, down = w.copy(), w.copy()
            up[idx] += eps
            down[idx] -= eps
            assert gw[idx] == pytest.approx((loss_at(x, up) - loss_at(x, down)) / (2 * eps), rel=1e-5, abs=1e-8)


def test_dropout_between_layers_trains_and_the_test_clone_runs_without_it():
    seq, batch, n_in, hidden = 4, 3, 3, 5
    x = rng.normal(size=(batch, seq, n_in)).astype("float32")
    values, params = {}, []
    for layer in range(2):
        named, p = lstm_params(f"basic_lstm_layers_{layer}/BasicLSTMUnit_0", n_in if layer == 0 else hidden, hidden,
                               1.0)
        values.update(named)
        params.append(p)

    def build():
        xv = fluid.data("x", [None, None, n_in], "float32")
        return [basic_lstm(xv, None, None, hidden, num_layers=2, dropout_prob=0.5)[0]]
    zeros = np.zeros((batch, hidden))
    ref, _ = np_layers(x.transpose(1, 0, 2).astype("float64"), np.full(batch, seq), [params],
                       [[[zeros, zeros], [zeros, zeros]]], lstm_step, 2, False)
    (test_out,), _ = run(build, {"x": x}, values, program_hook=lambda p: p.clone(for_test=True))
    np.testing.assert_allclose(test_out, ref.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    (train_out,), _ = run(build, {"x": x}, values)
    assert np.mean(train_out == 0) > 0.2  # the last layer's output is dropped too, as in fluid


def test_units_in_dygraph_register_their_parameters():
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(rng.normal(size=(2, 3)).astype("float32"))
        h = fluid.dygraph.to_variable(rng.normal(size=(2, 4)).astype("float32"))
        gru = BasicGRUUnit("g", 4)
        out = gru(x, h)
        params = dict(gru.named_parameters())
        assert sorted(params) == ["_candidate_bias", "_candidate_weight", "_gate_bias", "_gate_weight"]
        w = {k: v.numpy() for k, v in params.items()}
        np.testing.assert_allclose(out.numpy(), gru_step(x.numpy(), h.numpy(), w["_gate_weight"], w["_gate_bias"],
                                                          w["_candidate_weight"], w["_candidate_bias"]), rtol=1e-5)
        lstm = BasicLSTMUnit("l", 4)
        new_h, new_c = lstm(x, h, h)
        assert [(p.name, list(p.shape)) for p in lstm.parameters()] == [("l/BasicLSTMUnit_0.w_0", [7, 16]),
                                                                       ("l/BasicLSTMUnit_0.b_0", [16])]
        lstm(x, new_h, new_c)
        assert len(lstm.parameters()) == 2  # made once


def test_bad_arguments_name_what_is_wrong():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2, 3], "float32")
        with pytest.raises(ValueError, match="init_hidden and init_cell"):
            basic_lstm(x, fluid.data("h", [1, 2, 4], "float32"), None, 4)
        with pytest.raises(ValueError, match="input must be 3-D"):
            basic_gru(fluid.data("flat", [None, 3], "float32"), None, 4)
        with pytest.raises(ValueError, match="num_layers must be a positive int, got 0"):
            basic_gru(x, None, 4, num_layers=0)
        with pytest.raises(TypeError, match="sequence_length must be a Variable"):
            basic_gru(x, None, 4, sequence_length=[3, 3])
        with pytest.raises(TypeError, match="input"):
            basic_gru(fluid.data("ints", [None, 2, 3], "int64"), None, 4)
        with pytest.raises(ValueError, match="dropout_prob must be in"):
            basic_lstm(x, None, None, 4, dropout_prob=1.5)


def test_legacy_imports_reach_the_contrib_layers():
    import minifluid.compat as compat
    compat.install()
    try:
        from paddle.fluid.contrib.layers import basic_lstm as legacy_lstm  # noqa: PLC0415
        import paddle.fluid as legacy_fluid  # noqa: PLC0415
        assert legacy_lstm is basic_lstm and legacy_fluid.contrib.layers.BasicGRUUnit is BasicGRUUnit
        assert legacy_fluid.contrib.basic_gru is basic_gru
    finally:
        compat.uninstall()
