"""Fused recurrent ops of fluid 1.8's optimized inference programs (no gradient, as in fluid): fusion_lstm and
fusion_gru (an fc folded into lstm / gru), fused_embedding_fc_lstm (the fc folded into the embedding table:
each id's row holds its projected gate inputs) and attention_lstm.

They run the time-major kernels of ops/rnn.py (NOTE [ Time-major batches ]): one matrix product over all rows
projects the inputs, then each time step is one product and a few elementwise calls over the sequences still
running; attention_lstm's attention is a segment softmax over the rows of those sequences, also per step.

Layouts are the unfused ops' (ops/rnn.py): lstm gates candidate, input, forget, output with the peephole
weights after the 4D gate biases; gru's WeightH its [D, 2D] update/reset part then its [D, D] candidate part.
As the unfused ops, a missing H0 (or C0) starts from zeros; fusion_gru honours origin_mode (the fusing pass
copies it from the gru op). ``use_seq`` (fluid's choice between a per-sequence and a batched CPU loop) only
chooses which intermediate outputs are filled: XX, the projected inputs in sequence order, when True; when
False, as fluid's batched loop, XX is the regrouped X when X is no wider than the gates, and BatchedInput
(the activated gates), BatchedHidden / BatchedCell (BatchedOut) and ReorderedH0 / ReorderedC0 the regrouped
values. Scratch outputs fluid overwrites per step (CheckedCell, attention_lstm's AttentionFCOut, LSTMX,
LSTMOUT) are not written.
"""
import numpy as np

from . import parallel
from .registry import register_op
from .rnn import Steps, activation, gru_acts, gru_forward, _lstm_forward, shape_differs
from .sequence import lod_offsets

_LSTM_ATTRS = {"use_peepholes": True, "is_reverse": False, "use_seq": True, "gate_activation": "sigmoid",
               "cell_activation": "tanh", "candidate_activation": "tanh"}
_LSTM_OUTPUTS = ("Hidden", "Cell", "XX", "BatchedInput", "BatchedHidden", "BatchedCell", "ReorderedH0", "ReorderedC0")


def _shape(value):
    return None if value is None else list(value.shape)


def _check(ok, op_type, message):
    if not ok:
        raise ValueError(f"{op_type}: {message}")


def _check_lstm(op_type, attrs, wh, bias, h0, c0):
    """fluid's checks of WeightH, Bias and the initial states; returns D."""
    _check(len(wh.shape) == 2, op_type, f"the rank of Input(WeightH) should be 2, but received {len(wh.shape)}")
    d = wh.shape[1] // 4
    _check(not shape_differs(wh.shape, (d, 4 * d)), op_type,
           f"the shape of Input(WeightH) should be [D, 4D] = [{d}, {4 * d}], but received {list(wh.shape)}")
    width = 7 * d if attrs["use_peepholes"] else 4 * d
    _check(not shape_differs(bias.shape, (1, width)), op_type,
           f"the shape of Input(Bias) should be [1, {width}] ({'7' if attrs['use_peepholes'] else '4'} * {d}, "
           f"peepholes {'enabled' if attrs['use_peepholes'] else 'disabled'}), but received {list(bias.shape)}")
    _check(h0 is None or c0 is not None, op_type, "Input(C0) must be given with Input(H0)")
    if h0 is not None:
        _check(not shape_differs(h0.shape, c0.shape), op_type, f"the dimension of Input(H0) and Input(C0) should "
               f"be same, but received h0 dims is:{list(h0.shape)}, c0 dims is:{list(c0.shape)}")
    for name, state in (("H0", h0), ("C0", c0)):
        _check(state is None or not shape_differs(state.shape, (-1, d)), op_type,
               f"Input({name}) should be [N, {d}], but received {_shape(state)}")
    return d


def _lstm_metas(rows, d, xx_width, dtype):
    out, states = ((rows, d), dtype), ((-1, d), dtype)
    return out, out, ((rows, xx_width), dtype), ((rows, 4 * d), dtype), out, out, states, states


def _run_lstm(op_type, attrs, steps, xx, wh, bias, h0, c0, batch_xx):
    """Hidden, Cell and the intermediates (module docstring) from the projected gate inputs ``xx`` (with their
    biases, sequence order); ``batch_xx``: what XX holds with use_seq=False."""
    g, c, _, h, _ = _lstm_forward(op_type, steps, xx, wh, bias, h0, c0, attrs, gate_bias=False)
    hidden, cell = steps.to_sequences(h), steps.to_sequences(c)
    if attrs["use_seq"]:
        return hidden, cell, xx, None, None, None, None, None
    return (hidden, cell, batch_xx, g, h, c, None if h0 is None else h0[steps.order],
            None if c0 is None else c0[steps.order])


# --- fusion_lstm: fc(X, WeightX) into lstm ---------------------------------------------------------------------
def _fusion_lstm_infer(attrs, x, wx, wh, bias, h0, c0):
    _check(len(x.shape) == 2, "fusion_lstm", f"Input(X)'s rank must be 2, but received x's rank is:{len(x.shape)}")
    _check(len(wx.shape) == 2 and not shape_differs(wx.shape[:1], x.shape[1:]), "fusion_lstm",
           f"the first dimension of Input(WeightX) should equal to second dimension of Input(X), but received "
           f"WeightX {list(wx.shape)}, X {list(x.shape)}")
    _check(wx.shape[1] == wh.shape[1], "fusion_lstm", f"Input(WeightX) {list(wx.shape)} and Input(WeightH) "
           f"{list(wh.shape)} must have 4 * D columns alike")
    d = _check_lstm("fusion_lstm", attrs, wh, bias, h0, c0)
    xx_width = 4 * d if attrs["use_seq"] or min(x.shape[1], 4 * d) < 0 else min(x.shape[1], 4 * d)
    return _lstm_metas(x.shape[0], d, xx_width, x.dtype) + (((2, d), x.dtype),)


@register_op("fusion_lstm", inputs=("X", "WeightX", "WeightH", "Bias", "H0", "C0"),
             outputs=_LSTM_OUTPUTS + ("CheckedCell",), optional=("H0", "C0"), attrs=_LSTM_ATTRS, context=True,
             no_gradient=True, share_lod={"Hidden": "X", "Cell": "X", "XX": "X"}, infer_shape=_fusion_lstm_infer)
def _fusion_lstm_forward(ctx, attrs, x, wx, wh, bias, h0, c0):
    _fusion_lstm_infer(attrs, x, wx, wh, bias, h0, c0)
    steps = Steps.of(ctx.input_lod("X"), attrs["is_reverse"], "fusion_lstm", "X")
    xx = parallel.matmul(x, wx.astype(x.dtype, copy=False))
    xx += bias.reshape(-1)[:wh.shape[1]].astype(x.dtype, copy=False)
    batch_xx = xx if x.shape[1] > wh.shape[1] else x[steps.index]
    return _run_lstm("fusion_lstm", attrs, steps, xx, wh, bias, h0, c0, batch_xx) + (None,)


# --- fused_embedding_fc_lstm: rows of a projected embedding table into lstm ------------------------------------
def _embedding_lstm_infer(attrs, ids, table, wh, bias, h0, c0):
    op = "fused_embedding_fc_lstm"
    _check(len(table.shape) == 2, op, f"the Embeddings's rank should be 2, but received value is:{len(table.shape)}")
    _check(len(ids.shape) == 2 and ids.shape[-1] == 1, op,
           f"Input(Ids) must be [T, 1] (rank 2, last dimension 1), but received {list(ids.shape)}")
    d = _check_lstm(op, attrs, wh, bias, h0, c0)
    _check(not shape_differs(table.shape[1:], (4 * d,)), op, f"each row of Input(Embeddings) holds the 4 * D = "
           f"{4 * d} projected gate inputs of its id, but received width {table.shape[1]}")
    return _lstm_metas(ids.shape[0], d, 4 * d, table.dtype)


@register_op("fused_embedding_fc_lstm", inputs=("Ids", "Embeddings", "WeightH", "Bias", "H0", "C0"),
             outputs=_LSTM_OUTPUTS, optional=("H0", "C0"), attrs=_LSTM_ATTRS, context=True, no_gradient=True,
             share_lod={"Hidden": "Ids", "Cell": "Ids", "XX": "Ids"}, infer_shape=_embedding_lstm_infer)
def _embedding_lstm_forward(ctx, attrs, ids, table, wh, bias, h0, c0):
    """Each id's row of Embeddings is its X @ WeightX + gate bias, folded in when the op was fused: the
    rows are the gate inputs as they are (Bias gives the peepholes only)."""
    _embedding_lstm_infer(attrs, ids, table, wh, bias, h0, c0)
    flat = np.asarray(ids).reshape(-1).astype(np.int64, copy=False)
    bad = (flat < 0) | (flat >= table.shape[0])
    _check(not bad.any(), "fused_embedding_fc_lstm",
           f"ids must lie in [0, {table.shape[0]}), but received {flat[bad][:5].tolist()}")
    steps = Steps.of(ctx.input_lod("Ids"), attrs["is_reverse"], "fused_embedding_fc_lstm", "Ids")
    xx = table[flat]
    return _run_lstm("fused_embedding_fc_lstm", attrs, steps, xx, wh, bias, h0, c0, xx)


# --- fusion_gru: fc(X, WeightX) into gru -----------------------------------------------------------------------
def _fusion_gru_infer(attrs, x, h0, wx, wh, bias):
    op = "fusion_gru"
    _check(len(x.shape) == 2, op, f"Input(X)'s rank must be 2, but received input dim size is:{len(x.shape)}")
    _check(len(wx.shape) == 2 and not shape_differs(wx.shape[:1], x.shape[1:]), op,
           f"the first dimension of Input(WeightX) should equal to second dimension of input x, but received "
           f"WeightX {list(wx.shape)}, X {list(x.shape)}")
    d = wx.shape[1] // 3
    _check(len(wh.shape) == 2 and not shape_differs(wh.shape, (d, 3 * d)), op,
           f"the shape of Input(WeightH) should be [{d}, {3 * d}] (frame size {d}), but received {list(wh.shape)}")
    _check(h0 is None or not shape_differs(h0.shape[1:], (d,)), op,
           f"the width of H0 must be equal to frame_size {d}, but received {_shape(h0)}")
    _check(bias is None or not shape_differs(bias.shape, (1, 3 * d)), op,
           f"the shape of Bias must be [1, frame_size * 3] = [1, {3 * d}], but received {_shape(bias)}")
    out = ((x.shape[0], d), x.dtype)
    xx_width = 3 * d if attrs["use_seq"] or min(x.shape[1], 3 * d) < 0 else min(x.shape[1], 3 * d)
    return ((-1, d), x.dtype), ((x.shape[0], xx_width), x.dtype), ((x.shape[0], 3 * d), x.dtype), out, out


@register_op("fusion_gru", inputs=("X", "H0", "WeightX", "WeightH", "Bias"),
             outputs=("ReorderedH0", "XX", "BatchedInput", "BatchedOut", "Hidden"), optional=("H0", "Bias"),
             attrs={"activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False, "use_seq": True,
                    "origin_mode": False},
             context=True, no_gradient=True, share_lod={"Hidden": "X", "XX": "X"}, infer_shape=_fusion_gru_infer)
def _fusion_gru_forward(ctx, attrs, x, h0, wx, wh, bias):
    _fusion_gru_infer(attrs, x, h0, wx, wh, bias)
    steps = Steps.of(ctx.input_lod("X"), attrs["is_reverse"], "fusion_gru", "X")
    xx = parallel.matmul(x, wx.astype(x.dtype, copy=False))
    if bias is not None:
        xx += bias.reshape(-1).astype(x.dtype, copy=False)
    g = xx[steps.index]
    _, h = gru_forward(steps, g, h0, wh.astype(x.dtype, copy=False), gru_acts("fusion_gru", attrs, "activation"),
                       attrs["origin_mode"])
    hidden = steps.to_sequences(h)
    if attrs["use_seq"]:
        return None, xx, None, None, hidden
    return (None if h0 is None else h0[steps.order], xx if x.shape[1] > wh.shape[1] else x[steps.index], g, h,
            hidden)


# --- attention_lstm ----------------------------------------------------------------------------------------------
def _attention_lstm_infer(attrs, x, c0, h0, att_w, att_b, scalar, scalar_b, lstm_w, lstm_b):
    op = "attention_lstm"
    _check(len(x.shape) == 2, op, f"Input(X)'s rank must be 2, but received {len(x.shape)}")
    m, d = x.shape[1], lstm_w.shape[1] // 4
    _check(len(lstm_w.shape) == 2 and not shape_differs(lstm_w.shape, (d + m, 4 * d)), op,
           f"LSTMWeight dims should be ({d} + {m}) * {4 * d}, but received {list(lstm_w.shape)}")
    _check(not shape_differs(lstm_b.shape, (1, 4 * d)), op,
           f"LSTMBias dims should be 1 x {4 * d}, but received {list(lstm_b.shape)}")
    _check(len(c0.shape) == 2 and not shape_differs(c0.shape[1:], (d,)), op,
           f"C0 dims should be N x {d}, but received {list(c0.shape)}")
    _check(h0 is None or not shape_differs(h0.shape, c0.shape), op, "the dimension of Input(H0) and Input(C0) "
           f"should be the same, but received {_shape(h0)} and {list(c0.shape)}")
    _check(not shape_differs(att_w.shape, (m + d, 1)), op,
           f"AttentionWeight shapes must be ({m} + {d}) * 1, but received {list(att_w.shape)}")
    for name, v in (("AttentionBias", att_b), ("AttentionScalar", scalar), ("AttentionScalarBias", scalar_b)):
        _check(v is None or not shape_differs(v.shape, (1, 1)), op,
               f"{name} shapes must be 1 * 1, but received {_shape(v)}")
    _check(scalar_b is None or scalar is not None, op, "Input(AttentionScalar) must be given with "
           "Input(AttentionScalarBias)")
    out = ((x.shape[0], d), x.dtype)
    return out, out, ((x.shape[0], 1), x.dtype), ((-1, 1), x.dtype), ((1, m), x.dtype), ((1, 4 * d), x.dtype)


@register_op("attention_lstm", inputs=("X", "C0", "H0", "AttentionWeight", "AttentionBias", "AttentionScalar",
                                       "AttentionScalarBias", "LSTMWeight", "LSTMBias"),
             outputs=("Hidden", "Cell", "AttentionedX", "AttentionFCOut", "LSTMX", "LSTMOUT"),
             optional=("H0", "AttentionBias", "AttentionScalar", "AttentionScalarBias"),
             attrs={"gate_activation": "sigmoid", "cell_activation": "tanh", "candidate_activation": "tanh"},
             context=True, no_gradient=True, share_lod={"Hidden": "X", "Cell": "X"},
             infer_shape=_attention_lstm_infer)
def _attention_lstm_forward(ctx, attrs, x, c0, h0, att_w, att_b, scalar, scalar_b, lstm_w, lstm_b):
    """Step t of a sequence: scores relu(X_row . w_x + b + C_{t-1} . w_c) over the sequence's rows (then
    relu(scores * scalar + scalar bias) with AttentionScalar), softmax over them, the weighted sum of its rows
    as the LSTM's input, gates [H_{t-1}, input] @ LSTMWeight + LSTMBias in the order forget, input, output,
    candidate. Sequences are sorted longest first so the ones running at step t are the first n_t, and their
    rows (grouped in that order) a prefix of the reordered X."""
    _attention_lstm_infer(attrs, x, c0, h0, att_w, att_b, scalar, scalar_b, lstm_w, lstm_b)
    op, dtype = "attention_lstm", x.dtype
    lod = ctx.input_lod("X")
    _check(len(lod) == 1, op, f"Input(X)'s lod size must be 1, but received {len(lod)}")
    steps = Steps.of(lod, False, op, "X")
    lengths = np.asarray(lod[0], np.int64)
    _check(lengths.sum() == x.shape[0], op, f"Input(X) has {x.shape[0]} rows but its LoD covers {lengths.sum()}")
    _check(c0.shape[0] == len(lengths), op, f"C0 dims should be {len(lengths)} x D (one row per sequence), but "
           f"received {list(c0.shape)}")
    gate, cell_act, cand = (activation(op, attrs, a)[0] for a in ("gate_activation", "cell_activation",
                                                                  "candidate_activation"))
    m, d = x.shape[1], lstm_w.shape[1] // 4
    att_w, lstm_w = att_w.astype(dtype, copy=False), lstm_w.astype(dtype, copy=False)
    atted = parallel.matmul(x, att_w[:m])
    if att_b is not None:
        atted += att_b.reshape(-1).astype(dtype, copy=False)
    ordered = lengths[steps.order]
    starts = lod_offsets(ordered)
    span = np.arange(int(ordered.max(initial=0)))
    rows = (lod_offsets(lengths)[steps.order][:, None] + span)[span < ordered[:, None]]  # X's rows in that order
    xr, ar, seq = x[rows], atted[rows, 0], np.repeat(np.arange(len(ordered)), ordered)
    w_h, w_x, w_c, bias = lstm_w[:d], lstm_w[d:], att_w[m:, 0], lstm_b.reshape(-1).astype(dtype, copy=False)
    total = x.shape[0]
    c_all, h_all = np.empty((total, d), dtype), np.empty((total, d), dtype)
    c_prev, h_prev = steps.initial(c0, d, dtype), steps.initial(h0, d, dtype)
    with np.errstate(over="ignore"):
        for s, e in steps.bounds:
            n, r = e - s, starts[e - s]
            score = ar[:r] + (c_prev[:n] @ w_c)[seq[:r]]
            np.maximum(score, 0, out=score)
            if scalar is not None:
                score *= scalar.reshape(())
                if scalar_b is not None:
                    score += scalar_b.reshape(())
                np.maximum(score, 0, out=score)
            score -= np.maximum.reduceat(score, starts[:n])[seq[:r]]
            np.exp(score, out=score)
            score /= np.add.reduceat(score, starts[:n])[seq[:r]]
            lstm_x = np.add.reduceat(xr[:r] * score[:, None], starts[:n], axis=0)
            g = lstm_x @ w_x
            g += h_prev[:n] @ w_h
            g += bias
            gate(g[:, :3 * d], g[:, :3 * d])
            cand(g[:, 3 * d:], g[:, 3 * d:])
            c = c_all[s:e]
            np.multiply(g[:, :d], c_prev[:n], out=c)
            c += g[:, d:2 * d] * g[:, 3 * d:]
            h = h_all[s:e]
            cell_act(c, h)
            h *= g[:, 2 * d:3 * d]
            c_prev, h_prev = c, h
    return steps.to_sequences(h_all), steps.to_sequences(c_all), atted, None, None, None
