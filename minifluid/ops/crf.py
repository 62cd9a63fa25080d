"""Sequence labelling: ``linear_chain_crf`` (negative log-likelihood and its gradient), ``crf_decoding``
(Viterbi) and ``chunk_eval`` (chunk precision / recall / F1).

NOTE [ Padded CRF passes ]
Sequences come as LoD rows ([T, D] with the Label's LoD) or padded ([N, L, D] with Length). Either way the
kernels work on a padded [N, L, D] view with a mask: the forward/backward (and Viterbi) recursions are
one vectorised update of all N sequences per time step, each row keeping its state once its sequence
has ended; the label scores are single gathers over all rows. Transition ([D + 2, D], fluid's layout):
row 0 the start weights, row 1 the end weights, rows 2.. the tag-to-tag weights (from row i - 2 to
column j). LogLikelihood is, as in fluid, the *negative* log-likelihood log Z - score(label) per sequence
(0 for an empty one), so the training loss is its mean.
"""
import numpy as np

from .registry import register_grad, register_op
from .rnn import shape_differs


class _Padded:
    """Row layout of N sequences: ``flat`` indices of their rows inside a padded [N, L] grid."""

    __slots__ = ("lengths", "mask", "rows", "shape")

    def __init__(self, lengths, max_len=None):
        self.lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        n = len(self.lengths)
        max_len = int(self.lengths.max(initial=0)) if max_len is None else max_len
        self.mask = np.arange(max_len) < self.lengths[:, None]
        self.shape = (n, max_len)
        self.rows = np.flatnonzero(self.mask)

    def pad(self, values, fill=0):
        """[T, ...] rows -> [N, L, ...]."""
        out = np.full(self.shape + values.shape[1:], fill, dtype=values.dtype)
        out.reshape((-1,) + values.shape[1:])[self.rows] = values
        return out


def _layout(ctx, op_type, emission, label, length):
    """(_Padded, emission [N, L, D], label [N, L] or None, padded_io) for the LoD or the Length form."""
    if length is not None:
        n, max_len = emission.shape[0], emission.shape[1]
        if length.size != n:
            raise ValueError(f"{op_type}: the size of Input(Length) must be equal to the first dimension of "
                             f"Input(Emission) ({n}), got {length.size}")
        lengths = length.reshape(-1).astype(np.int64)
        lay = _Padded(np.minimum(lengths, max_len), max_len)
        lab = None if label is None else label.reshape(n, max_len)
        return lay, emission, lab, True
    lod = ctx.input_lod("Label") if label is not None else []
    lod = lod or ctx.input_lod("Emission")
    if not lod:
        raise ValueError(f"{op_type}: Input(Label) must be a sequence (a LoDTensor with LoD) when Input(Length) "
                         "is not given; got a tensor without LoD")
    lay = _Padded(lod[-1])
    if int(lay.lengths.sum()) != emission.shape[0]:
        raise ValueError(f"{op_type}: the LoD holds {int(lay.lengths.sum())} rows but Input(Emission) has "
                         f"{emission.shape[0]}")
    lab = None if label is None else lay.pad(label.reshape(-1))
    return lay, lay.pad(emission), lab, False


def _logsumexp(x, axis):
    top = x.max(axis=axis, keepdims=True)
    return (np.log(np.exp(x - top).sum(axis=axis, keepdims=True)) + top).squeeze(axis)


def _forward_logs(emission, trans, mask):
    """Log forward variables [N, L, D] (each row frozen past its sequence's end) and log Z [N]."""
    n, max_len, _ = emission.shape
    logs = np.empty_like(emission)
    if max_len == 0:
        return logs, np.zeros(n, emission.dtype)
    a = trans[0] + emission[:, 0]
    logs[:, 0] = a
    pair = trans[2:][None]
    for k in range(1, max_len):
        new = _logsumexp(a[:, :, None] + pair, axis=1) + emission[:, k]
        a = np.where(mask[:, k:k + 1], new, a)
        logs[:, k] = a
    return logs, _logsumexp(a + trans[1], axis=1)


def _backward_logs(emission, trans, mask, lengths):
    """Log backward variables [N, L, D]: beta at a sequence's last row is the end weights."""
    n, max_len, d = emission.shape
    logs = np.zeros_like(emission)
    b = np.broadcast_to(trans[1], (n, d)).copy()
    pair = trans[2:][None]
    for k in range(max_len - 1, -1, -1):
        last = (lengths - 1 == k)[:, None]
        if k + 1 < max_len:
            nxt = _logsumexp(pair + (emission[:, k + 1] + b)[:, None, :], axis=2)
            b = np.where(last, trans[1], np.where(mask[:, k + 1:k + 2], nxt, b))
        logs[:, k] = b
    return logs


def _label_score(emission, trans, labels, lay):
    """score(label) per sequence: start + emissions + transitions + end."""
    n = lay.shape[0]
    if lay.shape[1] == 0:
        return np.zeros(n, emission.dtype)
    seq = np.arange(n)[:, None]
    steps = np.arange(lay.shape[1])[None]
    emit = np.where(lay.mask, emission[seq, steps, labels], 0).sum(axis=1)
    moves = np.where(lay.mask[:, 1:], trans[2 + labels[:, :-1], labels[:, 1:]], 0).sum(axis=1)
    last = labels[np.arange(n), np.maximum(lay.lengths - 1, 0)]
    ends = np.where(lay.lengths > 0, trans[0, labels[:, 0]] + trans[1, last], 0)
    return emit + moves + ends


def _crf_infer(attrs, emission, transition, label, length):
    d = emission.shape[-1]
    if shape_differs(transition.shape, (d + 2, d)):
        raise ValueError(f"linear_chain_crf: the shape of Input(Transition) should be [{d + 2}, {d}] (tag number "
                         f"{d} from Input(Emission)), but received {list(transition.shape)}.")
    n = emission.shape[0] if length is not None else -1
    return (tuple(emission.shape), emission.dtype), (tuple(emission.shape), emission.dtype), \
        (tuple(transition.shape), emission.dtype), ((n, 1), emission.dtype)


def _checked_labels(lab, lay, d):
    labels = np.where(lay.mask, lab, 0).astype(np.int64)
    if labels.size and (labels.max() >= d or labels.min() < 0):
        raise ValueError(f"linear_chain_crf: a label ({int(labels.max())}) exceeds the largest tag number; labels "
                         f"must be in [0, {d})")
    return labels


@register_op("linear_chain_crf", inputs=("Emission", "Transition", "Label", "Length"),
             outputs=("Alpha", "EmissionExps", "TransitionExps", "LogLikelihood"), optional=("Length",),
             no_grad_inputs=("Label", "Length"), infer_shape=_crf_infer, context=True,
             share_lod={"Alpha": "Emission", "EmissionExps": "Emission"})
def _crf_forward(ctx, attrs, emission, transition, label, length):
    lay, em, lab, padded = _layout(ctx, "linear_chain_crf", emission, label, length)
    em64, w64 = em.astype(np.float64), transition.astype(np.float64)
    labels = _checked_labels(lab, lay, w64.shape[1])
    logs, log_z = _forward_logs(em64, w64, lay.mask)
    nll = np.where(lay.lengths > 0, log_z - _label_score(em64, w64, labels, lay), 0)
    alpha = np.exp(logs - _logsumexp(logs, axis=2)[..., None])  # fluid's Alpha: each row normalised to sum 1
    exps = np.exp(em64 - em64.max(axis=2, keepdims=True)) if em64.size else em64
    if not padded:
        alpha, exps = alpha.reshape(-1, em.shape[2])[lay.rows], exps.reshape(-1, em.shape[2])[lay.rows]
    else:
        alpha, exps = alpha * lay.mask[..., None], exps * lay.mask[..., None]
    dtype = emission.dtype
    return (alpha.astype(dtype), exps.astype(dtype), np.exp(w64).astype(dtype), nll[:, None].astype(dtype))


@register_grad("linear_chain_crf")
def _crf_backward(ctx, attrs, ins, outs, douts, need):
    emission, transition, label, length = ins
    lay, em, lab, padded = _layout(ctx, "linear_chain_crf", emission, label, length)
    em64, w64 = em.astype(np.float64), transition.astype(np.float64)
    labels = _checked_labels(lab, lay, w64.shape[1])
    n, max_len, d = em64.shape
    scale = np.zeros(n) if douts[3] is None else douts[3].reshape(-1).astype(np.float64)
    scale = np.where(lay.lengths > 0, scale, 0)
    alphas, log_z = _forward_logs(em64, w64, lay.mask)
    betas = _backward_logs(em64, w64, lay.mask, lay.lengths)
    marg = np.exp(alphas + betas - log_z[:, None, None]) * lay.mask[..., None]
    onehot = np.zeros_like(marg)
    np.put_along_axis(onehot, labels[..., None], 1.0, axis=2)
    onehot *= lay.mask[..., None]
    d_em = (marg - onehot) * scale[:, None, None]
    d_w = np.zeros_like(w64)
    if max_len:
        valid = lay.lengths > 0
        last = np.maximum(lay.lengths - 1, 0)
        rows = np.arange(n)
        d_w[0] = ((marg[:, 0] - onehot[:, 0]) * scale[:, None])[valid].sum(axis=0)
        d_w[1] = ((marg[rows, last] - onehot[rows, last]) * scale[:, None])[valid].sum(axis=0)
        weight = lay.mask * scale[:, None]
        for k in range(1, max_len):  # pairwise marginals of rows k - 1, k over all sequences
            pair = np.exp(alphas[:, k - 1, :, None] + w64[2:] + (em64[:, k] + betas[:, k] - log_z[:, None])[:, None])
            d_w[2:] += np.einsum("nij,n->ij", pair, weight[:, k])
        if max_len > 1:
            np.add.at(d_w[2:], (labels[:, :-1], labels[:, 1:]), -(lay.mask[:, 1:] * scale[:, None]))
    if not padded:
        d_em = d_em.reshape(-1, d)[lay.rows]
    dtype = emission.dtype
    return (d_em.astype(dtype) if need[0] else None, d_w.astype(transition.dtype) if need[1] else None, None, None)


# --- crf_decoding ------------------------------------------------------------------------------------------
def _viterbi(em, trans, lay):
    """Best tag path [N, L] (0 past each sequence's end): one vectorised max-product step per time step."""
    n, max_len, d = em.shape
    path = np.zeros((n, max_len), np.int64)
    if max_len == 0:
        return path
    track = np.zeros((n, max_len, d), np.int64)
    best = trans[0] + em[:, 0]
    pair = trans[2:][None]
    for k in range(1, max_len):
        scores = best[:, :, None] + pair
        track[:, k] = scores.argmax(axis=1)
        new = scores.max(axis=1) + em[:, k]
        best = np.where(lay.mask[:, k:k + 1], new, best)
    cur = (best + trans[1]).argmax(axis=1)
    rows = np.arange(n)
    for k in range(max_len - 1, -1, -1):
        here = lay.lengths - 1 == k
        inside = lay.lengths - 1 > k
        nxt = track[rows, min(k + 1, max_len - 1), path[:, min(k + 1, max_len - 1)]]
        path[:, k] = np.where(here, cur, np.where(inside, nxt, 0))
    return path


def _decode_infer(attrs, emission, transition, label, length):
    shape = (emission.shape[0], emission.shape[1]) if length is not None else (emission.shape[0], 1)
    return shape, "int64"


@register_op("crf_decoding", inputs=("Emission", "Transition", "Label", "Length"), outputs=("ViterbiPath",),
             optional=("Label", "Length"), infer_shape=_decode_infer, context=True, no_gradient=True,
             share_lod={"ViterbiPath": "Emission"})
def _crf_decoding(ctx, attrs, emission, transition, label, length):
    if length is None and not ctx.input_lod("Emission"):
        raise ValueError("crf_decoding: Input(Emission) must be a sequence (a LoDTensor with LoD level 1) when "
                         "Input(Length) is not given; got a tensor without LoD")
    lay, em, _, padded = _layout(ctx, "crf_decoding", emission, None, length)
    path = _viterbi(em.astype(np.float64), transition.astype(np.float64), lay)
    if label is not None:
        lab = label.reshape(lay.shape) if padded else lay.pad(label.reshape(-1))
        path = ((lab == path) & lay.mask).astype(np.int64)
    return path if padded else path.reshape(-1)[lay.rows][:, None]


# --- chunk_eval --------------------------------------------------------------------------------------------
_SCHEMES = {"IOB": (2, 0, 1, -1, -1), "IOE": (2, -1, 0, 1, -1), "IOBES": (4, 0, 1, 2, 3), "plain": (1, -1, -1, -1, -1)}


def _segments(labels, starts, attrs):
    """Chunks of flat ``labels`` (sequences begin where ``starts`` is True) as sorted int64 keys of
    (begin, end, type), excluded types left out; fluid's chunk rules, applied at every position at once."""
    n_tag, t_begin, t_inside, t_end, t_single = _SCHEMES[attrs["chunk_scheme"]]
    other = attrs["num_chunk_types"]
    total = len(labels)
    if total and labels.max() > other * n_tag:
        raise ValueError(f"chunk_eval: the value of Input(Label) should be less than the number of chunk types "
                         f"times the number of tag types, but received {int(labels.max())} (Label) vs {other} "
                         f"(chunk types) * {n_tag} (tag types).")
    tag, typ = labels % n_tag, labels // n_tag
    prev_tag = np.where(starts, -1, np.roll(tag, 1))
    prev_typ = np.where(starts, other, np.roll(typ, 1))
    same = (typ == prev_typ) & (typ != other)
    after_end = (prev_tag == t_end) | (prev_tag == t_single)
    begin = np.where(prev_typ == other, typ != other,
                     (typ != other) & ((typ != prev_typ) | (tag == t_begin) | (tag == t_single)
                                       | (((tag == t_inside) | (tag == t_end)) & after_end)))
    ends = (prev_typ != other) & ~(same & ~(((prev_tag == t_begin) | (prev_tag == t_inside))
                                            & ((tag == t_begin) | (tag == t_single)) | after_end))
    closers = np.union1d(np.flatnonzero(ends), np.append(np.flatnonzero(starts), total))
    first = np.flatnonzero(begin)
    last = closers[np.searchsorted(closers, first, side="right")] - 1
    kinds = typ[first]
    keep = ~np.isin(kinds, attrs["excluded_chunk_types"])
    return ((first * (total + 1) + last) * (other + 1) + kinds)[keep]


def _chunk_infer(attrs, inference, label, seq_length):
    return ((1,), "float32"), ((1,), "float32"), ((1,), "float32"), ((1,), "int64"), ((1,), "int64"), \
        ((1,), "int64")


@register_op("chunk_eval", inputs=("Inference", "Label", "SeqLength"),
             outputs=("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks"),
             optional=("SeqLength",), attrs={"num_chunk_types": 1, "chunk_scheme": "IOB", "excluded_chunk_types": []},
             infer_shape=_chunk_infer, context=True, no_gradient=True)
def _chunk_eval(ctx, attrs, inference, label, seq_length):
    if attrs["chunk_scheme"] not in _SCHEMES:
        raise ValueError(f"chunk_eval: unknown chunk scheme {attrs['chunk_scheme']!r}; expected one of "
                         f"{', '.join(_SCHEMES)}")
    lod = ctx.input_lod("Label")
    if lod:
        if len(lod) != 1:
            raise ValueError(f"chunk_eval: only support one level LoD sequence now, but received {len(lod)}.")
        if ctx.input_lod("Inference") != lod:
            raise ValueError("chunk_eval: Input(Inference) and Input(Label) of Op(chunk_eval) should have same "
                             "LoD information.")
        lay = _Padded(lod[0])
        infer, lab = inference.reshape(-1), label.reshape(-1)
    else:
        if seq_length is None:
            raise ValueError("chunk_eval: Input(Label) has no LoD, so Input(SeqLength) (the length of each padded "
                             "row) is needed")
        n = inference.shape[0]
        lay = _Padded(seq_length.reshape(-1), inference.size // max(n, 1))
        infer, lab = inference.reshape(-1)[lay.rows], label.reshape(-1)[lay.rows]
    starts = np.zeros(len(lab), bool)
    starts[(np.cumsum(lay.lengths) - lay.lengths)[lay.lengths > 0]] = True
    found, wanted = _segments(infer.astype(np.int64), starts, attrs), _segments(lab.astype(np.int64), starts, attrs)
    n_infer, n_label = len(found), len(wanted)
    n_correct = len(np.intersect1d(found, wanted))
    precision = n_correct / n_infer if n_infer else 0.0
    recall = n_correct / n_label if n_label else 0.0
    f1 = 2 * precision * recall / (precision + recall) if n_correct else 0.0
    return tuple(np.array([v], np.float32) for v in (precision, recall, f1)) + \
        tuple(np.array([v], np.int64) for v in (n_infer, n_label, n_correct))
