"""The fused recurrent ops of inference programs (ops/fused_rnn.py) against per-sequence references of the ops
they replace (tests/ops/rnn_cases.py's lstm / gru, one row at a time), on uneven lengths with an empty
sequence, in both of fluid's compute modes (use_seq), and their errors."""
import numpy as np
import pytest

from minifluid.lod_tensor import LoDTensor
from minifluid.testing import check_op

from .rnn_cases import gru_reference, lstm_reference, sequences, sigmoid

rng = np.random.default_rng(97531)
LENGTHS = [3, 0, 5, 1, 2]
T, N, M, D = sum(LENGTHS), len(LENGTHS), 6, 4
OUT_LODS = {"Hidden": [LENGTHS], "Cell": [LENGTHS]}


def normal(*shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def lod(value, lengths=LENGTHS):
    return LoDTensor(value, [list(lengths)])


@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("peepholes, reverse, initial, acts", [
    (False, False, False, ("sigmoid", "tanh", "tanh")), (True, True, True, ("sigmoid", "tanh", "tanh")),
    (True, False, False, ("sigmoid", "relu", "identity")), (False, True, True, ("tanh", "sigmoid", "relu"))])
def test_fusion_lstm_is_fc_then_lstm(use_seq, peepholes, reverse, initial, acts):
    x, wx, wh = normal(T, M), normal(M, 4 * D, scale=0.5), normal(D, 4 * D, scale=0.5)
    bias = normal(1, (7 if peepholes else 4) * D, scale=0.5)  # the lstm's gate biases with the fc's bias added
    h0, c0 = (normal(N, D), normal(N, D)) if initial else (None, None)
    inputs = {"X": lod(x), "WeightX": wx, "WeightH": wh, "Bias": bias}
    if initial:
        inputs.update(H0=h0, C0=c0)
    attrs = {"use_peepholes": peepholes, "is_reverse": reverse, "use_seq": use_seq, "gate_activation": acts[0],
             "cell_activation": acts[1], "candidate_activation": acts[2]}
    fetched = check_op("fusion_lstm", inputs=inputs, attrs=attrs, outputs=["Hidden", "Cell", "XX"],
                       output_lods=OUT_LODS,
                       reference=lambda **_: {"Hidden": lstm_reference(x @ wx, wh, bias, LENGTHS, h0, c0, peepholes,
                                                                       reverse, *acts)[0],
                                              "Cell": lstm_reference(x @ wx, wh, bias, LENGTHS, h0, c0, peepholes,
                                                                     reverse, *acts)[1]})
    # XX: the projected inputs in sequence order (use_seq), or X regrouped by time step, as X is narrower than 4D
    assert fetched["XX"].shape == ((T, 4 * D) if use_seq else (T, M))
    if use_seq:
        np.testing.assert_allclose(fetched["XX"], x @ wx + bias[:, :4 * D], atol=1e-9)
    else:
        assert sorted(map(tuple, fetched["XX"].round(9))) == sorted(map(tuple, x.round(9)))


def test_fusion_lstm_batched_intermediates_hold_the_time_major_values():
    x, wx, wh, bias = normal(T, M), normal(M, 4 * D), normal(D, 4 * D), normal(1, 4 * D)
    h0, c0 = normal(N, D), normal(N, D)
    inputs = {"X": lod(x), "WeightX": wx, "WeightH": wh, "Bias": bias, "H0": h0, "C0": c0}
    fetched = check_op("fusion_lstm", inputs=inputs, attrs={"use_peepholes": False, "use_seq": False},
                       outputs=["Hidden", "Cell", "BatchedHidden", "BatchedCell", "ReorderedH0", "ReorderedC0"])
    order = np.argsort(-np.array(LENGTHS), kind="stable")  # longest first; the empty sequence last
    np.testing.assert_array_equal(fetched["ReorderedH0"], h0[order])
    np.testing.assert_array_equal(fetched["ReorderedC0"], c0[order])
    first_rows = np.cumsum([0] + LENGTHS)[:-1][order][:4]  # step 0 of the 4 non-empty sequences, in that order
    np.testing.assert_allclose(fetched["BatchedHidden"][:4], fetched["Hidden"][first_rows])
    np.testing.assert_allclose(fetched["BatchedCell"][:4], fetched["Cell"][first_rows])


def test_fusion_lstm_takes_c0_alone_as_lstm_does_and_refuses_h0_alone():
    x, wx, wh, bias, c0 = normal(T, M), normal(M, 4 * D), normal(D, 4 * D), normal(1, 7 * D), normal(N, D)
    h, c = lstm_reference(x @ wx, wh, bias, LENGTHS, None, c0)
    check_op("fusion_lstm", inputs={"X": lod(x), "WeightX": wx, "WeightH": wh, "Bias": bias, "C0": c0},
             outputs=["Hidden", "Cell"], reference=lambda **_: (h, c))
    with pytest.raises(ValueError, match=r"Input\(C0\) must be given with Input\(H0\)"):
        check_op("fusion_lstm", inputs={"X": lod(x), "WeightX": wx, "WeightH": wh, "Bias": bias, "H0": c0})


@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("peepholes, reverse, initial", [(False, False, False), (True, True, True), (True, False, False)])
def test_fused_embedding_fc_lstm_reads_gate_inputs_from_the_table(use_seq, peepholes, reverse, initial):
    vocab = 9
    ids = rng.integers(0, vocab, (T, 1))
    table, wh = normal(vocab, 4 * D), normal(D, 4 * D, scale=0.5)
    bias = normal(1, (7 if peepholes else 4) * D, scale=0.5)
    h0, c0 = (normal(N, D), normal(N, D)) if initial else (None, None)
    inputs = {"Ids": lod(ids), "Embeddings": table, "WeightH": wh, "Bias": bias}
    if initial:
        inputs.update(H0=h0, C0=c0)
    # the table rows already hold the gate biases (folded in with the fc): Bias only gives the peepholes
    peep_only = np.concatenate([np.zeros((1, 4 * D)), bias[:, 4 * D:]], axis=1)
    h, c = lstm_reference(table[ids[:, 0]], wh, peep_only, LENGTHS, h0, c0, peepholes, reverse)
    check_op("fused_embedding_fc_lstm", inputs=inputs, outputs=["Hidden", "Cell"], output_lods=OUT_LODS,
             attrs={"use_peepholes": peepholes, "is_reverse": reverse, "use_seq": use_seq},
             reference=lambda **_: (h, c))


def test_fused_embedding_fc_lstm_refuses_ids_outside_the_table():
    ids = np.array([[0], [3], [9], [1]])
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 9\).*\[9\]"):
        check_op("fused_embedding_fc_lstm", inputs={"Ids": lod(ids, [4]), "Embeddings": normal(9, 4 * D),
                                                    "WeightH": normal(D, 4 * D), "Bias": normal(1, 7 * D)})


@pytest.mark.parametrize("use_seq", [True, False])
@pytest.mark.parametrize("initial, with_bias, origin_mode, reverse", [
    (True, True, False, False), (False, True, False, True), (True, False, True, False), (False, True, True, True)])
def test_fusion_gru_is_fc_then_gru(use_seq, initial, with_bias, origin_mode, reverse):
    x, wx, wh = normal(T, M), normal(M, 3 * D, scale=0.5), normal(D, 3 * D, scale=0.5)
    bias, h0 = normal(1, 3 * D) if with_bias else None, normal(N, D) if initial else None
    inputs = {"X": lod(x), "WeightX": wx, "WeightH": wh}
    if with_bias:
        inputs["Bias"] = bias
    if initial:
        inputs["H0"] = h0
    want = gru_reference(x @ wx, wh, bias, LENGTHS, h0, origin_mode, reverse)
    check_op("fusion_gru", inputs=inputs, outputs=["Hidden"], output_lods={"Hidden": [LENGTHS]},
             attrs={"use_seq": use_seq, "origin_mode": origin_mode, "is_reverse": reverse},
             reference=lambda **_: want)


def _attention_lstm_reference(x, lengths, c0, h0, att_w, att_b, scalar, scalar_b, lstm_w, lstm_b,
                              gate=sigmoid, cell=np.tanh, cand=np.tanh):
    m, d = x.shape[1], lstm_w.shape[1] // 4
    hs, cs = [], []
    for i, seq in enumerate(sequences(x, lengths)):
        c, h = c0[i], (np.zeros(d) if h0 is None else h0[i])
        for _ in range(len(seq)):
            score = np.maximum(seq @ att_w[:m, 0] + att_b + c @ att_w[m:, 0], 0)
            if scalar is not None:
                score = np.maximum(score * scalar + scalar_b, 0)
            p = np.exp(score - score.max())
            p /= p.sum()
            g = np.concatenate([h, p @ seq]) @ lstm_w + lstm_b.reshape(-1)
            f, i_, o, cnd = gate(g[:d]), gate(g[d:2 * d]), gate(g[2 * d:3 * d]), cand(g[3 * d:])
            c = f * c + i_ * cnd
            h = o * cell(c)
            hs.append(h)
            cs.append(c)
    return np.array(hs).reshape(-1, d), np.array(cs).reshape(-1, d)


@pytest.mark.parametrize("initial, with_scalar", [(True, True), (False, False), (True, False)])
def test_attention_lstm_attends_over_each_sequence_at_every_step(initial, with_scalar):
    x, c0, h0 = normal(T, M), normal(N, D), normal(N, D) if initial else None
    att_w, att_b = normal(M + D, 1), normal(1, 1)
    scalar, scalar_b = (normal(1, 1), normal(1, 1)) if with_scalar else (None, None)
    lstm_w, lstm_b = normal(D + M, 4 * D, scale=0.5), normal(1, 4 * D)
    inputs = {"X": lod(x), "C0": c0, "AttentionWeight": att_w, "AttentionBias": att_b, "LSTMWeight": lstm_w,
              "LSTMBias": lstm_b}
    if initial:
        inputs["H0"] = h0
    if with_scalar:
        inputs.update(AttentionScalar=scalar, AttentionScalarBias=scalar_b)
    h, c = _attention_lstm_reference(x, LENGTHS, c0, h0, att_w, att_b[0, 0], None if scalar is None else scalar[0, 0],
                                     None if scalar_b is None else scalar_b[0, 0], lstm_w, lstm_b)
    check_op("attention_lstm", inputs=inputs, outputs=["Hidden", "Cell", "AttentionedX"], output_lods=OUT_LODS,
             reference=lambda **_: {"Hidden": h, "Cell": c, "AttentionedX": x @ att_w[:M] + att_b})


def test_attention_lstm_refuses_c0_rows_other_than_the_sequences():
    with pytest.raises(ValueError, match="C0 dims should be 5 x D"):
        check_op("attention_lstm", inputs={"X": lod(normal(T, M)), "C0": normal(N - 1, D),
                                           "AttentionWeight": normal(M + D, 1), "LSTMWeight": normal(D + M, 4 * D),
                                           "LSTMBias": normal(1, 4 * D)})
