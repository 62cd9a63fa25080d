"""The CTC family: ``warpctc`` (the CTC loss of unnormalised logits, with its gradient), ``ctc_align`` (merge
repeats, drop blanks: the greedy decoder's second half), ``edit_distance`` (Levenshtein distance per sequence
pair) and ``sequence_erase`` (drop given tokens from LoD sequences: edit_distance's ignored_tokens).

Each op takes LoD sequences or a padded batch with a length per row, as fluid's do: warpctc's padded Logits
are time-major [T_max, B, C] with Label [B, L_max]; ctc_align's and edit_distance's are batch-major [B, W].
Both forms go through the same padded kernels; a LoD input is padded first by one fancy index.

NOTE [ CTC in log space ]
The label of a sequence is extended with blanks, z = (blank, l1, blank, l2, ..., blank) of length S = 2L + 1.
alpha[t, s] = log-probability of all paths over frames 0..t that end in z[s]; beta[t, s] that of all paths
over frames t..T-1 that start in z[s] (both including frame t's own probability). One step of the
recursions updates every sequence and every s at once (numpy over [B, S]); a sequence whose frames have run
out keeps beta = -inf until its last frame starts it. The gradient w.r.t. the logits (a softmax inside, as
warp-ctc's) is softmax(x)[t, k] - sum_{s: z[s] = k} exp(alpha[t, s] + beta[t, s] - log y[t, z[s]] - log p),
summed per class with one bincount. As warp-ctc does, a sequence that cannot be aligned (L plus its repeated
neighbours exceeds T) costs 0 and gets a zero gradient. WarpCTCGrad keeps that gradient (time-major, zero past
each sequence's end) for warpctc_grad, which scales it by dLoss (and by 1 / T with norm_by_times).
"""
import numpy as np

from .registry import register_grad, register_op
from .sequence import lod_of, row_segments

_NEG_INF = -np.inf


def _pad_rows(values, lengths, fill=0):
    """LoD rows [T] -> [B, max_len] (``fill`` past each sequence's end)."""
    seq, pos, _ = row_segments(lengths)
    out = np.full((len(lengths), int(pos.max(initial=-1)) + 1), fill, values.dtype)
    out[seq, pos] = values
    return out


def _lengths_of(length, n, op_type, slot, width, data_slot):
    lengths = np.asarray(length).reshape(-1).astype(np.int64)
    if lengths.size != n:
        raise ValueError(f"{op_type}: Input({slot}) must hold one length per sequence of Input({data_slot}) ({n}), "
                         f"got {lengths.size}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > width):
        raise ValueError(f"{op_type}: every Input({slot}) must be in [0, {width}] (the padded width of "
                         f"Input({data_slot})), got {lengths.tolist()}")
    return lengths


def _without_empty_marker(x, lengths):
    """ctc_align's result when every decoded sequence is empty is one row holding -1 under a LoD of zero lengths
    (fluid's layout); the ops that read decoded sequences take it as no rows."""
    return x[:0] if x.shape[:2] == (1, 1) and not np.any(lengths) else x


def _sequences(ctx, op_type, slot, x, length, length_slot):
    """(padded [B, W] values, lengths [B]) of a LoD [T, 1] input or a padded [B, W] one with its lengths."""
    if length is not None:
        if x.ndim != 2:
            raise ValueError(f"{op_type}: a padded Input({slot}) must be 2-D [batch_size, max_length], got shape "
                             f"{list(x.shape)}")
        return x, _lengths_of(length, x.shape[0], op_type, length_slot, x.shape[1], slot)
    lengths = np.asarray(lod_of(ctx, slot, op_type)[-1], np.int64)
    x = _without_empty_marker(x, lengths)
    if x.ndim != 2 or x.shape[1] != 1 or x.shape[0] != lengths.sum():
        raise ValueError(f"{op_type}: Input({slot}) must be a 2-D LoDTensor [{int(lengths.sum())}, 1] (the sum of "
                         f"its LoD's lengths, one token per row), got shape {list(x.shape)}")
    return _pad_rows(x.reshape(-1), lengths), lengths


# --- edit_distance ---------------------------------------------------------------------------------------
def levenshtein(hyp, hyp_len, ref, ref_len):
    """Edit distances [B] of padded int sequences. One DP row (hyp position i) for all sequences at a time;
    the insertion chain inside a row, D[i, j] = min_k (E[k] + j - k), is one cumulative minimum."""
    n_ref = ref.shape[1]
    cols = np.arange(n_ref + 1)
    row = np.broadcast_to(cols, (len(hyp_len), n_ref + 1)).copy()  # D[0, j] = j
    dist = np.where(hyp_len == 0, ref_len, 0)
    best = np.empty_like(row)
    for i in range(1, int(hyp_len.max(initial=0)) + 1):
        best[:, 0] = i
        np.minimum(row[:, 1:] + 1, row[:, :-1] + (hyp[:, i - 1:i] != ref), out=best[:, 1:])
        row = np.minimum.accumulate(best - cols, axis=1) + cols
        done = np.flatnonzero(hyp_len == i)
        dist[done] = row[done, ref_len[done]]
    return dist


def _edit_infer(attrs, hyps, refs, hyps_length, refs_length):
    if (hyps_length is None) != (refs_length is None):
        raise ValueError("edit_distance: Input(HypsLength) and Input(RefsLength) go together (padded inputs); "
                         "give both or neither")
    if hyps_length is not None:
        if len(hyps.shape) != 2 or len(refs.shape) != 2 or hyps.shape[0] != refs.shape[0]:
            raise ValueError(f"Input(Hyps) and Input(Refs) must be 2-D Tensors with identical first dimension. But "
                             f"received Input(Hyps): input rank {len(hyps.shape)}, input shape {list(hyps.shape)}; "
                             f"received Input(Refs): input rank {len(refs.shape)}, input shape {list(refs.shape)}")
    else:
        for slot, x in (("Hyps", hyps), ("Refs", refs)):
            if len(x.shape) != 2 or x.shape[1] != 1:
                raise ValueError(f"Input({slot}) must be a 2-D LoDTensor with the 2nd dimension equal to 1. But "
                                 f"received: input rank {len(x.shape)}, input shape {list(x.shape)}.")
    n = hyps.shape[0] if hyps_length is not None else -1
    return ((n, 1), "float32"), ((1,), "int64")


@register_op("edit_distance", inputs=("Hyps", "Refs", "HypsLength", "RefsLength"), outputs=("Out", "SequenceNum"),
             optional=("HypsLength", "RefsLength"), attrs={"normalized": False}, infer_shape=_edit_infer,
             context=True, no_gradient=True)
def _edit_distance(ctx, attrs, hyps, refs, hyps_length, refs_length):
    _edit_infer(attrs, hyps, refs, hyps_length, refs_length)
    hyp, hyp_len = _sequences(ctx, "edit_distance", "Hyps", hyps, hyps_length, "HypsLength")
    ref, ref_len = _sequences(ctx, "edit_distance", "Refs", refs, refs_length, "RefsLength")
    if len(hyp_len) != len(ref_len):
        raise ValueError(f"edit_distance: Input(Hyps) holds {len(hyp_len)} sequences but Input(Refs) holds "
                         f"{len(ref_len)}; each hypothesis needs its reference")
    dist = levenshtein(hyp, hyp_len, ref, ref_len).astype(np.float32)
    if attrs["normalized"]:
        empty = np.flatnonzero(ref_len == 0)
        if empty.size:
            raise ValueError(f"edit_distance: Reference string {int(empty[0]) + 1} is empty; Attr(normalized) "
                             f"divides by the reference length, so every reference needs a token")
        dist /= ref_len
    return dist.reshape(-1, 1), np.array([len(hyp_len)], np.int64)


def _erase_infer(attrs, x):
    if len(x.shape) != 2 or x.shape[1] != 1:
        raise ValueError(f"Input(X) of SequenceEraseOp should be a 2-D LoDTensor with the 2nd dimension equal to 1, "
                         f"but received size {len(x.shape)} with the 2nd dimension {x.shape[-1]}.")
    return (-1, 1), x.dtype


@register_op("sequence_erase", inputs=("X",), outputs=("Out",), attrs={"tokens": []}, infer_shape=_erase_infer,
             context=True, no_gradient=True)
def _sequence_erase(ctx, attrs, x):
    _erase_infer(attrs, x)
    lod = lod_of(ctx, "X", "SequenceEraseOp")
    x = _without_empty_marker(x, lod[-1])
    if sum(lod[-1]) != x.size:
        raise ValueError(f"The actual input size {x.size} mismatches with the LoD information size {sum(lod[-1])}.")
    keep = ~np.isin(x.reshape(-1), np.asarray(attrs["tokens"], x.dtype))
    seq, _, _ = row_segments(lod[-1])
    ctx.set_output_lod("Out", lod[:-1] + [np.bincount(seq[keep], minlength=len(lod[-1])).tolist()])
    return x[keep]


# --- ctc_align -------------------------------------------------------------------------------------------
def _align_infer(attrs, x, length):
    if length is None:  # LoD: as many rows as survive
        return ((-1, 1), x.dtype), None
    return (tuple(x.shape), x.dtype), ((x.shape[0], 1), x.dtype)


@register_op("ctc_align", inputs=("Input", "InputLength"), outputs=("Output", "OutputLength"),
             optional=("InputLength",), attrs={"blank": 0, "merge_repeated": True, "padding_value": 0},
             infer_shape=_align_infer, context=True, no_gradient=True)
def _ctc_align(ctx, attrs, x, length):
    if length is None:
        tokens, lengths = x.reshape(-1), np.asarray(lod_of(ctx, "Input", "ctc_align")[0], np.int64)
        if x.shape[0] != lengths.sum():
            raise ValueError(f"ctc_align: The first dimension of Input(Input) ({x.shape[0]}) should be equal to the "
                             f"sum of all sequences' lengths ({int(lengths.sum())}).")
        seq, pos, _ = row_segments(lengths)
        first = pos == 0
    else:
        if x.ndim != 2:
            raise ValueError(f"ctc_align: a padded Input(Input) must be 2-D [batch_size, max_length], got shape "
                             f"{list(x.shape)}")
        lengths = _lengths_of(length, x.shape[0], "ctc_align", "InputLength", x.shape[1], "Input")
        tokens = x.reshape(-1)
        grid = np.arange(x.shape[1]) < lengths[:, None]
        seq, first = np.repeat(np.arange(x.shape[0]), x.shape[1]), (np.arange(x.size) % max(x.shape[1], 1)) == 0
    keep = tokens != attrs["blank"]
    if attrs["merge_repeated"]:
        keep[1:] &= (tokens[1:] != tokens[:-1]) | first[1:]
    if length is None:
        counts = np.bincount(seq[keep], minlength=len(lengths))
        ctx.set_output_lod("Output", [counts.tolist()])
        if not counts.sum():  # fluid's marker of an all-empty result: one row holding -1
            return np.full((1, 1), -1, x.dtype), None
        return tokens[keep].reshape(-1, 1), None
    keep &= grid.reshape(-1)
    counts = np.bincount(seq[keep], minlength=x.shape[0])
    out = np.full(x.shape, attrs["padding_value"], x.dtype)
    out[seq[keep], row_segments(counts)[1]] = tokens[keep]
    return out, counts.reshape(-1, 1).astype(x.dtype)


# --- warpctc ---------------------------------------------------------------------------------------------
def _ctc_inputs(ctx, logits, label, logits_length, label_length):
    """(time-major logits [T, B, C], frame counts [B], padded labels [B, L], label lengths [B], (seq, pos) of the
    LoD rows or None when padded)."""
    if (logits_length is None) != (label_length is None):
        raise ValueError("warpctc: Input(LogitsLength) and Input(LabelLength) go together (padded inputs); give "
                         "both or neither")
    if logits_length is not None:
        if logits.ndim != 3:
            raise ValueError(f"warpctc: a padded Input(Logits) must be 3-D [max_logit_length, batch_size, "
                             f"num_classes + 1], got shape {list(logits.shape)}")
        n = logits.shape[1]
        if label.ndim != 2 or label.shape[0] != n:
            raise ValueError(f"warpctc: a padded Input(Label) must be 2-D [batch_size ({n}), max_label_length], got "
                             f"shape {list(label.shape)}")
        t_len = _lengths_of(logits_length, n, "warpctc", "LogitsLength", logits.shape[0], "Logits")
        l_len = _lengths_of(label_length, n, "warpctc", "LabelLength", label.shape[1], "Label")
        return logits, t_len, label.astype(np.int64), l_len, None
    t_len = np.asarray(lod_of(ctx, "Logits", "WarpCTC")[0], np.int64)
    l_len = np.asarray(lod_of(ctx, "Label", "WarpCTC")[0], np.int64)
    if logits.shape[0] != t_len.sum():
        raise ValueError(f"The first dimension of Input(Logits) should be equal to the sum of all sequences' lengths "
                         f"= {int(t_len.sum())}., but received {logits.shape[0]}. ")
    if label.ndim != 2 or label.shape[1] != 1:
        raise ValueError(f"The last dimension of Input(Label) should be 1, but received {list(label.shape)}")
    if len(l_len) != len(t_len):
        raise ValueError(f"The number of sequences of Input(Logits) should be equal to that of Input(Label) = "
                         f"{len(l_len)}, but received {len(t_len)}")
    seq, pos, _ = row_segments(t_len)
    flat = logits.reshape(logits.shape[0], int(np.prod(logits.shape[1:])))
    x = np.zeros((int(t_len.max(initial=0)), len(t_len), flat.shape[1]), logits.dtype)
    x[pos, seq] = flat
    return x, t_len, _pad_rows(label.reshape(-1).astype(np.int64), l_len), l_len, (seq, pos)


def ctc_loss_and_grad(x, t_len, labels, l_len, blank):
    """CTC loss [B] of time-major logits x [T, B, C] (float64) and its gradient w.r.t. x (NOTE [ CTC in log
    space ]); labels [B, L] padded, sequences of t_len frames and l_len labels."""
    n_t, n, n_c = x.shape
    top = x.max(axis=2, keepdims=True) if x.size else x
    logp = x - (np.log(np.exp(x - top).sum(axis=2, keepdims=True)) + top)
    n_s = 2 * labels.shape[1] + 1
    z = np.full((n, n_s), blank, np.int64)
    z[:, 1::2] = labels
    s_len = 2 * l_len + 1
    odd = np.arange(n_s) % 2 == 1
    skip = np.zeros((n, n_s), bool)
    skip[:, 2:] = odd[2:] & (z[:, 2:] != z[:, :-2])
    inside = np.arange(n_s) < s_len[:, None]
    lp = np.where(inside, logp[:, np.arange(n)[:, None], z], _NEG_INF)  # [T, B, S]
    alpha = np.full_like(lp, _NEG_INF)
    beta = np.full_like(lp, _NEG_INF)
    if n_t:
        alpha[0, :, :2] = lp[0, :, :2]
    for t in range(1, n_t):
        prev, cur = alpha[t - 1], alpha[t - 1].copy()
        np.logaddexp(cur[:, 1:], prev[:, :-1], out=cur[:, 1:])
        cur[:, 2:] = np.where(skip[:, 2:], np.logaddexp(cur[:, 2:], prev[:, :-2]), cur[:, 2:])
        alpha[t] = cur + lp[t]
    ends = np.where((np.arange(n_s) == s_len[:, None] - 1) | (np.arange(n_s) == s_len[:, None] - 2), 0.0, _NEG_INF)
    nxt = np.full((n, n_s), _NEG_INF)
    for t in range(n_t - 1, -1, -1):
        rec = nxt.copy()
        np.logaddexp(rec[:, :-1], nxt[:, 1:], out=rec[:, :-1])
        rec[:, :-2] = np.where(skip[:, 2:], np.logaddexp(rec[:, :-2], nxt[:, 2:]), rec[:, :-2])
        step = np.where((t == t_len - 1)[:, None], ends, np.where((t < t_len - 1)[:, None], rec, _NEG_INF))
        nxt = beta[t] = step + lp[t]
    rows = np.arange(n)
    last = alpha[np.maximum(t_len - 1, 0), rows] if n_t else np.full((n, n_s), _NEG_INF)
    log_p = np.logaddexp(last[rows, s_len - 1], np.where(l_len > 0, last[rows, np.maximum(s_len - 2, 0)], _NEG_INF))
    log_p = np.where(t_len > 0, log_p, np.where(l_len > 0, _NEG_INF, 0.0))
    repeats = ((labels[:, 1:] == labels[:, :-1]) & (np.arange(1, labels.shape[1]) < l_len[:, None])).sum(axis=1)
    feasible = l_len + repeats <= t_len  # warp-ctc's test: otherwise cost 0, gradient 0
    running = (np.arange(n_t)[:, None] < t_len) & feasible  # [T, B]
    with np.errstate(invalid="ignore"):
        occ = np.where(np.isfinite(lp) & running[..., None], alpha + beta - lp - log_p[:, None], _NEG_INF)
    index = (np.arange(n_t)[:, None, None] * n + rows[:, None]) * n_c + z
    post = np.bincount(index.reshape(-1), np.exp(occ).reshape(-1), minlength=n_t * n * n_c).reshape(x.shape)
    grad = np.where(running[..., None], np.exp(logp) - post, 0.0)
    return np.where(feasible, 0.0 - log_p, 0.0) + 0.0, grad  # + 0.0: no -0.0 for an empty sequence


def _warpctc_infer(attrs, logits, label, logits_length, label_length):
    padded = logits_length is not None
    width = logits.shape[2] if padded else int(np.prod(logits.shape[1:]))
    if not 0 <= attrs["blank"] < width and width >= 0:
        raise ValueError(f"The value of Attr(blank) should be in interval [0, {width}), but received "
                         f"{attrs['blank']}")
    n = logits.shape[1] if padded else -1
    return (tuple(logits.shape) if padded else (-1, n, width), logits.dtype), ((n, 1), logits.dtype)


@register_op("warpctc", inputs=("Logits", "Label", "LogitsLength", "LabelLength"), outputs=("WarpCTCGrad", "Loss"),
             optional=("LogitsLength", "LabelLength"), attrs={"blank": 0, "norm_by_times": False},
             no_grad_inputs=("Label", "LogitsLength", "LabelLength"), infer_shape=_warpctc_infer, context=True)
def _warpctc_forward(ctx, attrs, logits, label, logits_length, label_length):
    x, t_len, labels, l_len, _ = _ctc_inputs(ctx, logits, label, logits_length, label_length)
    _warpctc_infer(attrs, x, label, t_len, l_len)
    inside = np.arange(labels.shape[1]) < l_len[:, None]
    wrong = inside & ((labels < 0) | (labels >= x.shape[2]))
    if wrong.any():
        raise ValueError(f"warpctc: Input(Label) holds {int(labels[wrong][0])}, outside the classes [0, "
                         f"{x.shape[2]}) of Input(Logits)")
    loss, grad = ctc_loss_and_grad(x.astype(np.float64), t_len, np.where(inside, labels, 0), l_len, attrs["blank"])
    return grad.astype(logits.dtype), loss.reshape(-1, 1).astype(logits.dtype)


@register_grad("warpctc")
def _warpctc_backward(ctx, attrs, ins, outs, douts, need):
    logits, _, logits_length = ins[:3]
    grad, dloss = outs[0], douts[1]
    if logits_length is not None:
        t_len, rows = logits_length.reshape(-1).astype(np.int64), None
    else:
        t_len = np.asarray(lod_of(ctx, "Logits", "warpctc_grad")[0], np.int64)
        rows = row_segments(t_len)[:2]
    scale = np.zeros(len(t_len), grad.dtype) if dloss is None else dloss.reshape(-1).astype(grad.dtype)
    if attrs["norm_by_times"]:
        scale = scale / np.maximum(t_len, 1).astype(grad.dtype)
    out = grad * scale[:, None]
    if rows is not None:
        seq, pos = rows
        out = out[pos, seq].reshape(logits.shape)
    return out, None, None, None
