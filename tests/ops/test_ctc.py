"""The CTC layers end to end (warpctc, ctc_greedy_decoder, edit_distance): against the plain references of
ctc_cases.py through the Executor, LoD and padded forms agreeing, norm_by_times, impossible alignments, blank
not 0, and the errors."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.lod_tensor import LoDTensor
from minifluid.ops.ctc import levenshtein
from minifluid.ops.registry import get_op_spec
from minifluid.testing import call_grad, call_kernel

from .ctc_cases import align_ref, brute_ctc, levenshtein_ref, split


def _run(build, feed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fetches = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=fluid.Scope())
    return exe.run(main, feed=feed, fetch_list=fetches, scope=fluid.Scope(), return_numpy=False)


def _lod(array, lengths):
    return LoDTensor(np.asarray(array), [list(lengths)])


def test_levenshtein_matches_the_plain_dp_on_random_batches_with_empty_sequences():
    rng = np.random.default_rng(0)
    hyp, ref = rng.integers(0, 3, (40, 7)), rng.integers(0, 3, (40, 9))
    hl, rl = rng.integers(0, 8, 40), rng.integers(0, 10, 40)
    hl[:3], rl[2:5] = 0, 0
    want = [levenshtein_ref(h[:m], r[:n]) for h, r, m, n in zip(hyp, ref, hl, rl)]
    np.testing.assert_array_equal(levenshtein(hyp, hl, ref, rl), want)


def _edit_feed(rng, lengths_h, lengths_r, width=6):
    hyps = [rng.integers(0, 4, n) for n in lengths_h]
    refs = [rng.integers(0, 4, n) for n in lengths_r]
    pad = lambda seqs: np.array([np.pad(s, (0, width - len(s)), constant_values=3) for s in seqs])  # noqa: E731
    return hyps, refs, pad(hyps), pad(refs)


@pytest.mark.parametrize("normalized", [False, True])
def test_edit_distance_lod_and_padded_with_ignored_tokens(normalized):
    rng = np.random.default_rng(1)
    lh, lr = [4, 0, 6, 3, 5], [5, 2, 6, 4, 3]
    hyps, refs, ph, pr = _edit_feed(rng, lh, lr)
    refs[1][:] = 2  # survives erasing 0 and 1, so normalized has something to divide by
    pr[1, :2] = 2
    erase = lambda s: s[~np.isin(s, [0, 1])]  # noqa: E731
    want = [levenshtein_ref(erase(h), erase(r)) / (len(erase(r)) if normalized else 1) for h, r in zip(hyps, refs)]

    def build():
        x = fluid.data("x", [None, 1], "int64", lod_level=1)
        y = fluid.data("y", [None, 1], "int64", lod_level=1)
        xp, yp = fluid.data("xp", [None, 6], "int64"), fluid.data("yp", [None, 6], "int64")
        xl, yl = fluid.data("xl", [None], "int64"), fluid.data("yl", [None], "int64")
        d, n = fluid.layers.edit_distance(x, y, normalized=normalized, ignored_tokens=[0, 1])
        d2, n2 = fluid.layers.edit_distance(xp, yp, normalized, [0, 1], input_length=xl, label_length=yl)
        assert d.dtype == d2.dtype == "float32" and n.dtype == "int64"
        return [d, n, d2, n2]
    feed = {"x": _lod(np.concatenate(hyps).reshape(-1, 1), lh), "y": _lod(np.concatenate(refs).reshape(-1, 1), lr),
            "xp": ph, "yp": pr, "xl": np.array(lh), "yl": np.array(lr)}
    d, n, d2, n2 = (np.array(v) for v in _run(build, feed))
    np.testing.assert_allclose(d.reshape(-1), want, rtol=1e-6)
    np.testing.assert_allclose(d2.reshape(-1), want, rtol=1e-6)
    assert n.tolist() == n2.tolist() == [5] and d.shape == (5, 1)


def test_edit_distance_errors():
    def build():
        x = fluid.data("x", [None, 1], "int64", lod_level=1)
        return list(fluid.layers.edit_distance(x, x, normalized=True))
    with pytest.raises(ValueError, match="Reference string 2 is empty"):
        _run(build, {"x": _lod(np.ones((3, 1), np.int64), [3, 0])})
    with pytest.raises(ValueError, match="does not contain LoD"):
        _run(build, {"x": np.ones((3, 1), np.int64)})
    with fluid.program_guard(fluid.Program()):
        x = fluid.data("x", [None, 3], "int64")
        with pytest.raises(ValueError, match="input_length and label_length go together"):
            fluid.layers.edit_distance(x, x, input_length=fluid.data("l", [None], "int64"))
        with pytest.raises(TypeError, match="input"):
            fluid.layers.edit_distance(fluid.data("f", [None, 3], "float32"), x)


def test_ctc_greedy_decoder_lod_and_padded():
    rng = np.random.default_rng(2)
    lengths = [5, 0, 7, 1]
    probs = rng.random((sum(lengths), 4)).astype("float32")
    probs[:3, 2] = 2.0  # a run of one class: merged
    seqs = [align_ref(s.argmax(axis=1).tolist(), 1) for s in split(probs, lengths)]
    padded = np.zeros((4, 7, 4), "float32")
    for b, s in enumerate(split(probs, lengths)):
        padded[b, :len(s)] = s

    def build():
        x = fluid.data("x", [None, 4], "float32", lod_level=1)
        xp, xl = fluid.data("xp", [None, 7, 4], "float32"), fluid.data("xl", [None, 1], "int64")
        out = fluid.layers.ctc_greedy_decoder(x, blank=1)
        out2, out_len = fluid.layers.ctc_greedy_decoder(xp, 1, input_length=xl, padding_value=-1)
        return [out, out2, out_len]
    out, out2, out_len = _run(build, {"x": _lod(probs, lengths), "xp": padded,
                                      "xl": np.array(lengths).reshape(-1, 1)})
    assert out.recursive_sequence_lengths() == [[len(s) for s in seqs]]
    assert np.array(out).reshape(-1).tolist() == sum(seqs, [])
    assert np.array(out_len).reshape(-1).tolist() == [len(s) for s in seqs]
    assert np.array(out2).tolist() == [s + [-1] * (7 - len(s)) for s in seqs]


def _ctc_program(blank, norm_by_times, padded):
    def build():
        if padded:
            x = fluid.data("x", [None, None, 5], "float32")
            y = fluid.data("y", [None, None], "int32")
            lengths = dict(input_length=fluid.data("xl", [None], "int64"),
                           label_length=fluid.data("yl", [None], "int64"))
        else:
            x = fluid.data("x", [None, 5], "float32", lod_level=1)
            y = fluid.data("y", [None, 1], "int32", lod_level=1)
            lengths = {}
        x.stop_gradient = False
        loss = fluid.layers.warpctc(x, y, blank=blank, norm_by_times=norm_by_times, **lengths)
        assert loss.shape[-1] == 1 and loss.dtype == "float32"
        grad, = fluid.gradients([fluid.layers.reduce_sum(loss * 2.0)], [x])
        return [loss, grad]
    return build


@pytest.mark.parametrize("blank", [0, 4])
def test_warpctc_lod_and_padded_agree_with_brute_force_and_norm_by_times_scales(blank):
    rng = np.random.default_rng(3)
    t_lens, l_lens = [4, 1, 5, 3], [2, 2, 1, 0]  # the second cannot be aligned: 2 labels in 1 frame
    logits = rng.standard_normal((sum(t_lens), 5)).astype("float32")
    labels = [rng.choice([k for k in range(5) if k != blank], n) for n in l_lens]
    want = [brute_ctc(x.astype(np.float64), y, blank) for x, y in zip(split(logits, t_lens), labels)]
    assert want[1] == 0.0 and all(w > 0 for w in want[:1] + want[2:])
    lod_feed = {"x": _lod(logits, t_lens), "y": _lod(np.concatenate(labels).reshape(-1, 1).astype("int32"), l_lens)}
    tm = np.zeros((5, 4, 5), "float32")
    for b, s in enumerate(split(logits, t_lens)):
        tm[:len(s), b] = s
    pad_feed = {"x": tm, "y": np.array([np.pad(y, (0, 2 - len(y))) for y in labels], "int32"),
                "xl": np.array(t_lens), "yl": np.array(l_lens)}
    loss, grad = _run(_ctc_program(blank, False, False), lod_feed)
    np.testing.assert_allclose(np.array(loss).reshape(-1), want, rtol=1e-5)
    grad = np.array(grad)
    assert grad.shape == logits.shape and not grad[4].any()  # the impossible sequence: zero gradient
    _, normed = _run(_ctc_program(blank, True, False), lod_feed)
    scale = np.repeat(1.0 / np.array(t_lens), t_lens)[:, None]
    np.testing.assert_allclose(np.array(normed), grad * scale, rtol=1e-5, atol=1e-7)
    ploss, pgrad = _run(_ctc_program(blank, False, True), pad_feed)
    np.testing.assert_allclose(np.array(ploss).reshape(-1), want, rtol=1e-5)
    pgrad = np.array(pgrad)
    np.testing.assert_allclose(np.concatenate([pgrad[:t, b] for b, t in enumerate(t_lens)]), grad, rtol=1e-5,
                               atol=1e-7)
    assert not any(pgrad[t:, b].any() for b, t in enumerate(t_lens))  # nothing past a sequence's end


def test_warpctc_errors():
    build = _ctc_program(0, False, False)
    x, y = _lod(np.zeros((3, 5), "float32"), [3]), _lod(np.array([[7]], "int32"), [1])
    with pytest.raises(ValueError, match=r"Input\(Label\) holds 7, outside the classes \[0, 5\)"):
        _run(build, {"x": x, "y": y})
    with pytest.raises(ValueError, match=r"Input\(Logits\) Tensor of WarpCTC does not contain LoD"):
        _run(build, {"x": np.zeros((3, 5), "float32"), "y": y})
    with pytest.raises(ValueError, match=r"should be in interval \[0, 5\), but received 5"):
        _run(_ctc_program(5, False, False), {"x": x, "y": _lod(np.array([[1]], "int32"), [1])})
    with pytest.raises(ValueError, match=r"number of sequences of Input\(Logits\) should be equal to that of "
                                         r"Input\(Label\) = 2, but received 1"):
        _run(build, {"x": x, "y": _lod(np.array([[1], [2]], "int32"), [1, 1])})
    with fluid.program_guard(fluid.Program()):
        xv = fluid.data("xv", [None, 5], "float32", lod_level=1)
        with pytest.raises(TypeError, match="label"):
            fluid.layers.warpctc(xv, fluid.data("yv", [None, 1], "int64", lod_level=1))
        with pytest.raises(ValueError, match="input_length and label_length go together"):
            fluid.layers.warpctc(xv, fluid.data("yw", [None, 1], "int32"), label_length=fluid.data("l", [None], "int64"))


def test_warpctc_on_a_batch_of_empty_sequences_costs_nothing():
    spec = get_op_spec("warpctc")
    ins = (np.zeros((0, 4), "float32"), np.array([[2]], "int32"), None, None)
    lods = {("Logits", 0): [[0, 0]], ("Label", 0): [[0, 1]]}  # the second cannot be aligned: cost 0 as well
    grad, loss = call_kernel(spec, dict(spec.attrs), ins, lods)
    assert loss.tolist() == [[0.0], [0.0]] and not np.signbit(loss).any() and grad.shape == (0, 2, 4)
    dx, _, _, _ = call_grad(spec, dict(spec.attrs), ins, (grad, loss), (None, np.ones_like(loss)),
                            (True, False, False, False), lods)
    assert dx.shape == (0, 4) and dx.dtype == np.float32


def test_edit_distance_reads_the_decoders_all_empty_result():
    """All-blank frames decode to ctc_align's marker (one row -1, zero lengths): no tokens, with or without
    ignored_tokens (the state of a model early in training)."""
    def build():
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        y = fluid.data("y", [None, 1], "int64", lod_level=1)
        decoded = fluid.layers.ctc_greedy_decoder(x, blank=0)
        return [decoded, fluid.layers.edit_distance(decoded, y, normalized=False)[0],
                fluid.layers.edit_distance(decoded, y, normalized=False, ignored_tokens=[2])[0]]
    frames = np.tile(np.array([[5.0, 1.0, 1.0]], "float32"), (5, 1))
    decoded, dist, dist_erased = _run(build, {"x": _lod(frames, [2, 3]), "y": _lod(np.array([[1], [2], [1]]), [1, 2])})
    assert np.array(decoded).tolist() == [[-1]] and decoded.recursive_sequence_lengths() == [[0, 0]]
    assert np.array(dist).ravel().tolist() == [1.0, 2.0] and np.array(dist_erased).ravel().tolist() == [1.0, 1.0]
