"""fluid 1.8's decoding API (layers/decode.py): gather_tree by hand; a seq2seq program (embedding -> GRU
encoder through rnn() -> teacher-forced GRU decoder through BasicDecoder + TrainingHelper) trained with
SGD, then BeamSearchDecoder + dynamic_decode on the trained parameters checked against a brute-force numpy
beam search, in a static program and in dygraph; the greedy helper and dynamic_decode's step limit."""
import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers
V, E, H, BEAM, START, END = 7, 6, 8, 3, 0, 1


def test_gather_tree_backtracks_each_final_beam_by_hand():
    # 3 steps, 1 source, 2 beams. Step 2's beams extend beams (1, 0) of step 1, which extend (0, 0) of step 0.
    ids = np.array([[[2, 3]], [[4, 5]], [[6, 7]]], "int64")
    parents = np.array([[[0, 0]], [[0, 0]], [[1, 0]]], "int64")
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        out = L.gather_tree(fluid.data("ids", [3, 1, 2], "int64"), fluid.data("parents", [3, 1, 2], "int64"))
        assert out.shape == (3, 1, 2)
    got, = fluid.Executor().run(main, feed={"ids": ids, "parents": parents}, fetch_list=[out])
    # beam 0 ends in 6 and came from step-1 beam 1 (token 5), which came from step-0 beam 0 (token 2)
    assert got[:, 0, 0].tolist() == [2, 5, 6] and got[:, 0, 1].tolist() == [2, 4, 7]
    with fluid.program_guard(fluid.Program(), fluid.Program()), pytest.raises(TypeError, match="ids"):
        L.gather_tree(fluid.data("f", [3, 1, 2], "float32"), fluid.data("p", [3, 1, 2], "int64"))
    bad = parents.copy()
    bad[2, 0, 0] = 5
    with pytest.raises(IndexError, match="outside"):
        fluid.Executor().run(main, feed={"ids": ids, "parents": bad}, fetch_list=[out])


# --- the seq2seq model -----------------------------------------------------------------------------------
class FromTrained(fluid.initializer.Initializer):
    """Initialise each parameter with the trained value of its name."""

    def __init__(self, params):
        self.params = params

    def _op(self, var, block):
        return fluid.initializer.NumpyArrayInitializer(self.params[var.name])._op(var, block)


class Seq2Seq:
    """Embedding -> GRU encoder (rnn with sequence_length) -> GRU decoder with an output projection. Every
    parameter is named, so a train program, an inference program and a dygraph copy share them by name."""

    def __init__(self, params=None):
        self.params = params
        self.enc = L.GRUCell(H, param_attr=self.attr("enc"), bias_attr=self.attr("enc_b"))
        self.dec = L.GRUCell(H, param_attr=self.attr("dec"), bias_attr=self.attr("dec_b"))

    def attr(self, name):
        return fluid.ParamAttr(name=name, initializer=FromTrained(self.params) if self.params else None)

    def src_emb(self, ids):
        return fluid.embedding(ids, [V, E], param_attr=self.attr("src_emb"))

    def trg_emb(self, ids):
        return fluid.embedding(ids, [V, E], param_attr=self.attr("trg_emb"))

    def out(self, x):
        return L.fc(x, V, num_flatten_dims=len(x.shape) - 1, param_attr=self.attr("out_w"), bias_attr=False)

    def encode(self, src, src_len):
        return L.rnn(self.enc, self.src_emb(src), sequence_length=src_len)[1]

    def beam_search(self, state, max_step_num):
        decoder = L.BeamSearchDecoder(self.dec, START, END, BEAM, embedding_fn=self.trg_emb, output_fn=self.out)
        return L.dynamic_decode(decoder, inits=state, max_step_num=max_step_num, is_test=True, return_length=True)


def copy_task(rng, n):
    lengths = rng.integers(2, 5, n)
    src = rng.integers(2, V, (n, 4))
    return src, lengths


def teacher_batch(src, lengths):
    steps = lengths.max() + 1
    trg_in, trg_out = np.zeros((len(src), steps), "int64"), np.zeros((len(src), steps), "int64")
    for i, (row, n) in enumerate(zip(src, lengths)):
        trg_in[i, 1:n + 1] = row[:n]
        trg_out[i, :n], trg_out[i, n] = row[:n], END
    return trg_in, trg_out


@pytest.fixture(scope="module")
def trained():
    """Train the copy task; returns (losses, {parameter name: value})."""
    model = Seq2Seq()
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        src, src_len = fluid.data("src", [None, None], "int64"), fluid.data("src_len", [None], "int64")
        trg, trg_len = fluid.data("trg", [None, None], "int64"), fluid.data("trg_len", [None], "int64")
        label = fluid.data("label", [None, None], "int64")
        helper = L.TrainingHelper(model.trg_emb(trg), trg_len)
        decoder = L.BasicDecoder(model.dec, helper, output_fn=model.out)
        outputs, _, lengths = L.dynamic_decode(decoder, inits=model.encode(src, src_len), impute_finished=True,
                                               return_length=True)
        probs = L.softmax(outputs.cell_outputs)
        mask = L.sequence_mask(lengths, maxlen=L.shape(probs)[1], dtype="float32")
        loss = L.reduce_sum(L.cross_entropy(probs, label) * mask) / L.reduce_sum(mask)
        fluid.optimizer.SGD(3.0).minimize(loss)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(3)
    src_all, len_all = copy_task(rng, 64)
    losses = []
    for step in range(60):
        k = (step * 8) % 64
        s, n = src_all[k:k + 8], len_all[k:k + 8]
        trg_in, trg_out = teacher_batch(s, n)
        out, = exe.run(main, feed={"src": s[:, :n.max()], "src_len": n, "trg": trg_in, "trg_len": n + 1,
                                   "label": trg_out}, fetch_list=[loss], scope=scope)
        losses.append(float(out))
    params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.global_block().all_parameters()}
    return losses, params


def test_teacher_forced_training_through_dynamic_decode_lowers_the_loss(trained):
    losses, params = trained
    assert np.mean(losses[-8:]) < 0.6 * np.mean(losses[:8]), losses
    assert set(params) == {"src_emb", "trg_emb", "out_w", "enc_gate", "enc_candidate", "enc_b_gate",
                           "enc_b_candidate", "dec_gate", "dec_candidate", "dec_b_gate", "dec_b_candidate"}


# --- numpy reference ---------------------------------------------------------------------------------------
def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_gru(p, prefix, x, h):
    gates = sigmoid(np.concatenate([x, h], -1) @ p[prefix + "_gate"] + p[prefix + "_b_gate"])
    r, u = gates[..., :H], gates[..., H:]
    c = np.tanh(np.concatenate([x, r * h], -1) @ p[prefix + "_candidate"] + p[prefix + "_b_candidate"])
    return u * h + (1 - u) * c


def np_encode(p, src, lengths):
    h = np.zeros((len(src), H))
    for t in range(src.shape[1]):
        h = np.where((t < lengths)[:, None], np_gru(p, "enc", p["src_emb"][src[:, t]], h), h)
    return h


def np_beam_search(p, h0, max_step_num, kinf=1e9):
    """Brute force, one source at a time: every step ranks all beam * V extensions by summed log probability
    (a finished beam extends only with END, at no cost) and keeps the best BEAM; then backtracks."""
    results = []
    for h_src in h0:
        h = np.repeat(h_src[None], BEAM, 0)
        tokens, scores = np.full(BEAM, START), np.array([0.0] + [-kinf] * (BEAM - 1))
        finished, lengths = np.zeros(BEAM, bool), np.zeros(BEAM, int)
        decoded = np.zeros(BEAM, int)  # dynamic_decode's count: steps each beam slot was unfinished at
        history, step = [], 0
        while not finished.all() and step <= max_step_num:
            h = np_gru(p, "dec", p["trg_emb"][tokens], h)
            logits = h @ p["out_w"]
            logp = logits - logits.max(1, keepdims=True)
            logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
            candidates = []
            for k in range(BEAM):
                for v in range(V):
                    cost = (0.0 if v == END else -kinf) if finished[k] else logp[k, v]
                    candidates.append((scores[k] + cost, k, v))
            best = sorted(candidates, key=lambda c: -c[0])[:BEAM]
            parents = np.array([k for _, k, _ in best])
            tokens = np.array([v for _, _, v in best])
            scores = np.array([s for s, _, _ in best])
            decoded += ~finished
            lengths = lengths[parents] + ~finished[parents]
            finished = finished[parents] | (tokens == END)
            h = h[parents]
            history.append((tokens, parents))
            step += 1
        sequences = np.zeros((len(history), BEAM), int)
        beams = np.arange(BEAM)
        for t in range(len(history) - 1, -1, -1):
            tokens_t, parents_t = history[t]
            sequences[t] = tokens_t[beams]
            beams = parents_t[beams]
        results.append((sequences, scores, lengths, decoded))
    return results


def check_against_reference(params, src, src_len, ids, states, lengths, max_step_num):
    """``states``: (log_probs, lengths) of the final beam search state; ``lengths``: dynamic_decode's."""
    want = np_beam_search(params, np_encode(params, src, src_len), max_step_num)
    steps = max(len(w[0]) for w in want)
    assert ids.shape == (len(src), steps, BEAM)
    for b, (sequences, scores, beam_lengths, decoded) in enumerate(want):
        assert ids[b, :len(sequences)].tolist() == sequences.tolist()
        np.testing.assert_allclose(states[0][b], scores, rtol=1e-4, atol=1e-4)
        assert states[1][b].tolist() == beam_lengths.tolist()  # each final beam's length, end token included
        assert lengths[b].tolist() == decoded.tolist()


SRC = np.array([[2, 3, 4, 5], [6, 5, 4, 0], [3, 3, 0, 0]])
SRC_LEN = np.array([4, 3, 2])


def test_static_beam_search_matches_a_brute_force_numpy_beam_search(trained):
    _, params = trained
    model = Seq2Seq()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        src, src_len = fluid.data("src", [None, None], "int64"), fluid.data("src_len", [None], "int64")
        ids, states, lengths = model.beam_search(model.encode(src, src_len), max_step_num=5)
    scope = fluid.Scope()
    for name, value in params.items():  # the trained parameters, by name
        scope.var(name).get_tensor().set(value, fluid.CPUPlace())
    got = fluid.Executor().run(main, feed={"src": SRC, "src_len": SRC_LEN},
                               fetch_list=[ids, states.log_probs, states.lengths, lengths], scope=scope)
    check_against_reference(params, SRC, SRC_LEN, got[0], got[1:3], got[3], max_step_num=5)
    assert (got[0][:, :, 0] == END).any(), "the trained model ends some beam: finished beams are exercised"


def test_dygraph_beam_search_decodes_the_same_beams(trained):
    _, params = trained
    with fluid.dygraph.guard():
        model = Seq2Seq(params)
        to = fluid.dygraph.to_variable
        ids, states, lengths = model.beam_search(model.encode(to(SRC), to(SRC_LEN)), max_step_num=5)
        check_against_reference(params, SRC, SRC_LEN, ids.numpy(), (states.log_probs.numpy(),
                                states.lengths.numpy()), lengths.numpy(), max_step_num=5)


def test_greedy_decoding_stops_at_end_token_or_after_max_step_num_plus_one_steps(trained):
    _, params = trained
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model = Seq2Seq()
        src, src_len = fluid.data("src", [None, None], "int64"), fluid.data("src_len", [None], "int64")
        start = L.fill_constant_batch_size_like(src, [-1], "int64", START)
        decoder = L.BasicDecoder(model.dec, L.GreedyEmbeddingHelper(model.trg_emb, start, END), output_fn=model.out)
        outputs, _, lengths = L.dynamic_decode(decoder, inits=model.encode(src, src_len), max_step_num=2,
                                               output_time_major=True, return_length=True)
    scope = fluid.Scope()
    for name, value in params.items():
        scope.var(name).get_tensor().set(value, fluid.CPUPlace())
    sample_ids, logits, lens = fluid.Executor().run(main, feed={"src": SRC, "src_len": SRC_LEN},
                                                    fetch_list=[outputs.sample_ids, outputs.cell_outputs, lengths],
                                                    scope=scope)
    assert sample_ids.shape == (3, 3) and logits.shape == (3, 3, V)  # time-major, at most max_step_num + 1 steps
    h = np_encode(params, SRC, SRC_LEN)
    tokens, done = np.full(3, START), np.zeros(3, bool)
    for t in range(3):
        h = np_gru(params, "dec", params["trg_emb"][tokens], h)
        tokens = (h @ params["out_w"]).argmax(1)
        assert sample_ids[t].tolist() == tokens.tolist()
        done |= tokens == END
    assert lens.tolist() == [min(3, list(row).index(END) + 1) if END in row else 3 for row in sample_ids.T]


def test_dynamic_decode_needs_a_decoder_with_step():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        state = fluid.data("s", [None, H], "float32")
        with pytest.raises(NotImplementedError):
            L.dynamic_decode(L.Decoder(), inits=state)
