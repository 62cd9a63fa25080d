"""Recurrent and CRF layers end to end: forward against per-sequence references through the Executor,
Viterbi against brute force, chunk_eval against fluid's chunk rules applied one position at a time,
parameter layouts and errors, and a small tagger whose CRF loss falls."""
import itertools

import numpy as np
import pytest

import minifluid as fluid
from minifluid.lod_tensor import LoDTensor
from minifluid.testing import call_kernel
from minifluid.ops.registry import get_op_spec

from .rnn_cases import gru_reference, lstm_reference, sequences


def _lod_feed(rng, lengths, width):
    return LoDTensor(rng.standard_normal((sum(lengths), width)).astype("float32"), [list(lengths)])


def _run(build, feed, seed=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetches = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.global_block().all_parameters()}
    return exe.run(main, feed=feed, fetch_list=fetches, scope=scope, return_numpy=False), params


@pytest.mark.parametrize("peepholes, reverse", [(True, False), (False, True)])
def test_dynamic_lstm_matches_a_per_sequence_reference(peepholes, reverse):
    rng = np.random.default_rng(5)
    lengths = [5, 0, 9, 1, 3, 9, 2]

    def build():
        x = fluid.layers.data("x", [16], dtype="float32", lod_level=1)
        bias = fluid.ParamAttr(initializer=fluid.initializer.Uniform(-0.5, 0.5))  # peepholes matter
        return list(fluid.layers.dynamic_lstm(x, 16, use_peepholes=peepholes, is_reverse=reverse, bias_attr=bias))
    feed = _lod_feed(rng, lengths, 16)
    (hidden, cell), params = _run(build, {"x": feed})
    assert hidden.recursive_sequence_lengths() == [lengths] == cell.recursive_sequence_lengths()
    w, b = params["lstm_0.w_0"], params["lstm_0.b_0"]
    assert w.shape == (4, 16) and b.shape == (1, 28 if peepholes else 16)
    want_h, want_c = lstm_reference(np.array(feed, np.float64), w, b, lengths, peepholes=peepholes, reverse=reverse)
    np.testing.assert_allclose(np.array(hidden), want_h, atol=1e-5)
    np.testing.assert_allclose(np.array(cell), want_c, atol=1e-5)


@pytest.mark.parametrize("origin_mode", [False, True])
def test_dynamic_gru_matches_a_per_sequence_reference(origin_mode):
    rng = np.random.default_rng(6)
    lengths = [4, 7, 0, 1, 7]

    def build():
        x = fluid.layers.data("x", [9], dtype="float32", lod_level=1)
        h0 = fluid.layers.data("h0", [3], dtype="float32")
        bias = fluid.ParamAttr(initializer=fluid.initializer.Uniform(-1, 1))
        return [fluid.layers.dynamic_gru(x, 3, h_0=h0, origin_mode=origin_mode, bias_attr=bias)]
    feed, h0 = _lod_feed(rng, lengths, 9), rng.standard_normal((5, 3)).astype("float32")
    (hidden,), params = _run(build, {"x": feed, "h0": h0})
    w, b = params["gru_0.w_0"], params["gru_0.b_0"]
    assert w.shape == (3, 9) and b.shape == (1, 9)
    want = gru_reference(np.array(feed, np.float64), w, b, lengths, h0, origin_mode)
    np.testing.assert_allclose(np.array(hidden), want, atol=1e-5)
    assert hidden.recursive_sequence_lengths() == [lengths]


def test_lstm_layers_check_their_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.layers.data("x", [12], dtype="float32", lod_level=1)
        with pytest.raises(ValueError, match="multiple of 4"):
            fluid.layers.dynamic_lstm(x, 10)
        with pytest.raises(ValueError, match=r"input's width must equal size \(16\)"):
            fluid.layers.dynamic_lstm(x, 16)
        with pytest.raises(AssertionError, match="bias_attr should not be False"):
            fluid.layers.dynamic_lstm(x, 12, bias_attr=False)
        h0 = fluid.layers.data("h0", [4], dtype="float32")
        with pytest.raises(ValueError, match=r"shape of h_0 should be \(batch_size, 3\)"):
            fluid.layers.dynamic_lstm(x, 12, h_0=h0, c_0=h0)
        with pytest.raises(TypeError, match="'input' in dynamic_gru must be"):
            fluid.layers.dynamic_gru(fluid.layers.data("i", [3], dtype="int64", lod_level=1), 1)
        wide_h0 = fluid.layers.data("wide_h0", [4], dtype="float32")
        with pytest.raises(TypeError, match="'c_0' in dynamic_lstmp must be"):  # every dtype before any shape
            fluid.layers.dynamic_lstmp(x, 12, proj_size=2, h_0=wide_h0,
                                       c_0=fluid.layers.data("c_i32", [3], dtype="int32"))
        proj, cell = fluid.layers.dynamic_lstmp(x, 12, proj_size=2)
        names = {p.name: p.shape for p in fluid.default_main_program().global_block().all_parameters()}
        assert names == {"lstmp_0.w_0": (2, 12), "lstmp_0.w_1": (3, 2), "lstmp_0.b_0": (1, 21)}
        assert proj.shape == (-1, 2) and cell.shape == (-1, 3) and proj.lod_level == 1


def test_sequence_recurrences_refuse_dygraph_mode_as_fluid_does():
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(np.zeros((3, 8), "float32"))
        with pytest.raises(AssertionError, match="please use lstm instead of dynamic_lstm in dygraph mode"):
            fluid.layers.dynamic_lstm(x, 8)
        with pytest.raises(AssertionError, match="please use lstm instead of dynamic_lstmp in dygraph mode"):
            fluid.layers.dynamic_lstmp(x, 8, 2)
        with pytest.raises(AssertionError, match="please use gru instead of dynamic_gru in dygraph mode"):
            fluid.layers.dynamic_gru(x, 2)


def test_lstm_without_lod_names_the_problem():
    spec = get_op_spec("lstm")
    x, w = np.zeros((3, 8)), np.zeros((2, 8))
    with pytest.raises(ValueError, match=r"lstm: Input\(Input\) must be a LoDTensor holding sequences"):
        call_kernel(spec, dict(spec.attrs), [x, None, None, w, np.zeros((1, 14))])


# --- crf_decoding -----------------------------------------------------------------------------------------
def _viterbi_reference(em, trans, lengths):
    out = []
    for seq in sequences(em, lengths):
        if len(seq) == 0:
            continue

        def score(path):
            moves = sum(trans[2 + a, b] for a, b in zip(path[:-1], path[1:]))
            return trans[0, path[0]] + trans[1, path[-1]] + seq[np.arange(len(seq)), list(path)].sum() + moves
        out += max(itertools.product(range(em.shape[1]), repeat=len(seq)), key=score)
    return np.array(out, np.int64)


def test_crf_decoding_finds_the_best_path_lod_and_padded():
    rng = np.random.default_rng(7)
    lengths, tags = [3, 0, 4, 1, 2], 3
    em, trans = rng.standard_normal((10, tags)), rng.standard_normal((tags + 2, tags))
    want = _viterbi_reference(em, trans, lengths)
    spec = get_op_spec("crf_decoding")
    got = call_kernel(spec, {}, [em, trans, None, None], {("Emission", 0): [lengths]})
    np.testing.assert_array_equal(got[:, 0], want)
    label = want.copy()
    label[::3] = (label[::3] + 1) % tags
    marks = call_kernel(spec, {}, [em, trans, label[:, None], None], {("Emission", 0): [lengths]})
    np.testing.assert_array_equal(marks[:, 0], (label == want).astype(np.int64))
    padded = np.zeros((5, 4, tags))
    for i, seq in enumerate(sequences(em, lengths)):
        padded[i, :len(seq)] = seq
    path = call_kernel(spec, {}, [padded, trans, None, np.array(lengths)])
    assert path.shape == (5, 4)
    np.testing.assert_array_equal(np.concatenate([path[i, :n] for i, n in enumerate(lengths)]), want)
    assert (path[np.arange(4) >= np.array(lengths)[:, None]] == 0).all()


# --- chunk_eval ---------------------------------------------------------------------------------------------
SCHEMES = {"IOB": (2, 0, 1, -1, -1), "IOE": (2, -1, 0, 1, -1), "IOBES": (4, 0, 1, 2, 3), "plain": (1, -1, -1, -1, -1)}


def _chunks_reference(labels, scheme, num_types):
    """fluid's chunk rules, one position at a time: (begin, end, type) of every chunk of one sequence."""
    n_tag, t_b, t_i, t_e, t_s = SCHEMES[scheme]
    other = num_types

    def ends(pt, pty, t, ty):
        if pty == other:
            return False
        if ty == other or ty != pty:
            return True
        if pt in (t_b, t_i):
            return t in (t_b, t_s)
        return pt in (t_e, t_s)

    def begins(pt, pty, t, ty):
        if pty == other:
            return ty != other
        if ty == other:
            return False
        if ty != pty or t in (t_b, t_s):
            return True
        if t in (t_i, t_e):
            return pt in (t_e, t_s)
        return False
    out, start, inside, tag, typ = [], 0, False, -1, other
    for i, lab in enumerate(labels):
        ptag, ptyp, tag, typ = tag, typ, lab % n_tag, lab // n_tag
        if inside and ends(ptag, ptyp, tag, typ):
            out.append((start, i - 1, ptyp))
            inside = False
        if begins(ptag, ptyp, tag, typ):
            start, inside = i, True
    if inside:
        out.append((start, len(labels) - 1, typ))
    return out


def _chunk_eval_reference(infer, label, lengths, scheme, num_types, excluded):
    counts = np.zeros(3, np.int64)
    for inf, lab in zip(sequences(infer, lengths), sequences(label, lengths)):
        found = {c for c in _chunks_reference(inf, scheme, num_types) if c[2] not in excluded}
        wanted = {c for c in _chunks_reference(lab, scheme, num_types) if c[2] not in excluded}
        counts += len(found), len(wanted), len(found & wanted)
    return counts


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_chunk_eval_counts_chunks_as_fluid_does(scheme):
    rng = np.random.default_rng(8)
    num_types, n_tag = 3, SCHEMES[scheme][0]
    spec = get_op_spec("chunk_eval")
    for trial in range(30):
        lengths = list(rng.integers(0, 9, 6))
        total = sum(lengths)
        label = rng.integers(0, num_types * n_tag + 1, total)
        infer = np.where(rng.random(total) < 0.3, rng.integers(0, num_types * n_tag + 1, total), label)
        excluded = [1] if trial % 2 else []
        attrs = {"chunk_scheme": scheme, "num_chunk_types": num_types, "excluded_chunk_types": excluded}
        lod = {("Label", 0): [lengths], ("Inference", 0): [lengths]}
        p, r, f1, n_inf, n_lab, n_cor = call_kernel(spec, attrs, [infer[:, None], label[:, None], None], lod)
        want = _chunk_eval_reference(infer, label, lengths, scheme, num_types, excluded)
        assert [int(n_inf[0]), int(n_lab[0]), int(n_cor[0])] == list(want), (lengths, label, infer)
        prec = want[2] / want[0] if want[0] else 0.0
        rec = want[2] / want[1] if want[1] else 0.0
        np.testing.assert_allclose([p[0], r[0], f1[0]],
                                   [prec, rec, 2 * prec * rec / (prec + rec) if want[2] else 0.0], rtol=1e-6)


def test_chunk_eval_padded_with_seq_length_and_a_known_answer():
    # IOB with 2 types: B-0=0 I-0=1 B-1=2 I-1=3 O=4; label chunks (0-1, type 0) (3-3, type 1) | (0-0, type 1)
    label = np.array([[0, 1, 4, 2, 9], [2, 4, 9, 9, 9]])
    infer = np.array([[0, 1, 4, 0, 9], [2, 4, 9, 9, 9]])
    spec = get_op_spec("chunk_eval")
    outs = call_kernel(spec, {"chunk_scheme": "IOB", "num_chunk_types": 2, "excluded_chunk_types": []},
                       [infer, label, np.array([4, 2])])
    assert [int(o[0]) for o in outs[3:]] == [3, 3, 2]
    np.testing.assert_allclose([o[0] for o in outs[:3]], [2 / 3, 2 / 3, 2 / 3], rtol=1e-6)
    with pytest.raises(ValueError, match="unknown chunk scheme 'BIO'"):
        call_kernel(spec, {"chunk_scheme": "BIO", "num_chunk_types": 2, "excluded_chunk_types": []},
                    [infer, label, np.array([4, 2])])


# --- a small tagger --------------------------------------------------------------------------------------------
def test_lstm_crf_tagger_learns_and_decodes():
    """embedding -> fc -> dynamic_lstm (+ a reversed dynamic_gru) -> fc -> linear_chain_crf, trained with Adam
    on sequences whose tag is a function of the word: the CRF cost falls and decoding gets better."""
    rng = np.random.default_rng(9)
    vocab, tags = 20, 3
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.layers.data("words", [1], dtype="int64", lod_level=1)
        target = fluid.layers.data("target", [1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(words, size=[vocab, 8])
        hidden, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(emb, 32), 32)
        back = fluid.layers.dynamic_gru(fluid.layers.fc(emb, 24), 8, is_reverse=True)
        emission = fluid.layers.fc([hidden, back], tags)
        cost = fluid.layers.linear_chain_crf(emission, target, param_attr=fluid.ParamAttr(name="crfw"))
        loss = fluid.layers.mean(cost)
        fluid.optimizer.Adam(0.05).minimize(loss)
        path = fluid.layers.crf_decoding(emission, param_attr=fluid.ParamAttr(name="crfw"))
        scores = fluid.layers.chunk_eval(path, target, "IOB", 1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    lengths = [5, 3, 8, 1, 6]
    ids = rng.integers(0, vocab, (sum(lengths), 1))
    feed = {"words": LoDTensor(ids, [lengths]), "target": LoDTensor(ids % 3, [lengths])}
    losses, accuracy = [], []
    for _ in range(40):
        out = exe.run(main, feed=feed, fetch_list=[loss, path, scores[2]], return_numpy=False)
        losses.append(float(np.array(out[0])[0]))
        accuracy.append(float((np.array(out[1]) == ids % 3).mean()))
        assert out[1].recursive_sequence_lengths() == [lengths]
    assert losses[-1] < 0.2 * losses[0], losses
    assert accuracy[-1] == 1.0 and accuracy[0] < 0.9, accuracy
