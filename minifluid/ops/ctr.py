"""Click-through-rate model ops: cvm (continuous_value_model) and teacher_student_sigmoid_loss.

cvm reads the first two columns of each embedding as the show and click counts: with ``use_cvm`` it replaces
them by ``log(show + 1)`` and ``log(click + 1) - log(show + 1)``, without it drops them. Its "gradient" is
fluid's: the embedding columns get the upstream gradient, the show / click columns get the CVM input (the
counts, one row per instance, or per sequence when X carries LoD), which the sparse update reads; it is not the
derivative of the forward (tests/numerics/test_ctr_layers.py checks it against that rule).
teacher_student_sigmoid_loss is a sigmoid cross-entropy against the click z plus, where the label carries a
teacher's score z' (label = z + z'), a second one against z'; its gradient is fluid's, zero where the logit lies
outside [soft_max_lower_bound, soft_max_up_bound].
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _rank2(slot, shape):
    if len(shape) != 2:
        raise ValueError(f"Input({slot})'s rank should be 2. But received: Input({slot})'s rank is [{len(shape)}]")


# --- cvm: [N, D] -> [N, D] (use_cvm) or [N, D - 2] -------------------------------------------------------------
def _cvm_infer(attrs, x, cvm):
    _rank2("X", x.shape)
    _rank2("CVM", cvm.shape)
    if cvm.shape[1] not in (-1, 2):
        raise ValueError(f"The 2nd dimension of Input(CVM) should be 2, but received {cvm.shape[1]}")
    width = x.shape[1] if attrs["use_cvm"] or x.shape[1] < 0 else x.shape[1] - 2
    return (x.shape[0], width), x.dtype


@register_op("cvm", inputs=("X", "CVM"), outputs=("Y",), attrs={"use_cvm": True}, infer_shape=_cvm_infer,
             no_grad_inputs=("CVM",), context=True, share_lod={"Y": "X"})
def _cvm_forward(ctx, attrs, x, cvm):
    _cvm_infer(attrs, x, cvm)
    if not attrs["use_cvm"]:
        return x[:, 2:].copy()
    xp = array_module(x)
    y = x.copy()
    y[:, 0] = xp.log(x[:, 0] + 1)
    y[:, 1] = xp.log(x[:, 1] + 1) - y[:, 0]
    return y


@register_grad("cvm", reads=("X", "CVM"))
def _cvm_backward(ctx, attrs, ins, outs, douts, need):
    x, cvm = ins
    dy = douts[0]
    dx = array_module(x).empty(x.shape, dtype=dy.dtype)
    dx[:, 2:] = dy[:, 2:] if attrs["use_cvm"] else dy
    lod = ctx.input_lod("X")
    counts = cvm if not lod else np.repeat(cvm, lod[0], axis=0)  # one CVM row per sequence
    dx[:, :2] = counts
    return dx, None


# --- teacher_student_sigmoid_loss: [N, 1] logits, [N, 1] labels in {-2, -1} or [0, 2) ---------------------------
def _tssl_infer(attrs, x, label):
    _rank2("X", x.shape)
    _rank2("Label", label.shape)
    if x.shape[0] >= 0 and label.shape[0] >= 0 and x.shape[0] != label.shape[0]:
        raise ValueError(f"The 1st dimension of Input(X) and Input(Label) should be equal. The difference is "
                         f"[{x.shape[0]}]: [{label.shape[0]}]")
    if label.shape[1] not in (-1, 1):
        raise ValueError(f"The 2nd dimension of Input(Label) should be 1. But received Input(Label)'s 2nd dim is "
                         f"[{label.shape[1]}]")
    return (x.shape[0], 1), x.dtype


@register_op("teacher_student_sigmoid_loss", inputs=("X", "Label"), outputs=("Y",),
             attrs={"soft_max_up_bound": 15.0, "soft_max_lower_bound": -15.0}, infer_shape=_tssl_infer,
             no_grad_inputs=("Label",), share_lod={"Y": "X"})
def _tssl_forward(attrs, x, label):
    _tssl_infer(attrs, x, label)
    xp = array_module(x)
    softplus = xp.logaddexp(0, x)  # max(x, 0) + log(1 + exp(-|x|))
    clicked = (label >= -1) & (label < 0) | (label >= 1)
    teacher = xp.where(label >= 1, label - 1, label)
    loss = softplus - x * clicked  # the click term
    loss = loss + (label >= 0) * (softplus - x * teacher)  # the teacher's term, where the label has one
    return loss.astype(x.dtype, copy=False)


@register_grad("teacher_student_sigmoid_loss", reads=("X", "Label"))
def _tssl_backward(attrs, ins, outs, douts, need):
    x, label = ins
    xp = array_module(x)
    low, high = attrs["soft_max_lower_bound"], attrs["soft_max_up_bound"]
    pred = 1 / (1 + xp.exp(-xp.clip(x, low, high)))
    dx = xp.where(label < -1, pred, xp.where(label < 0, pred - 1, 2 * pred - label))
    dx = xp.where((x >= high) | (x <= low), 0, dx) * douts[0]
    return dx.astype(x.dtype, copy=False), None


# --- data_norm: (x - batch_sum / batch_size) * sqrt(batch_size / batch_square_sum), per column ------------------
# NOTE [ data_norm statistics ]
# BatchSize, BatchSum and BatchSquareSum are parameters. The backward pass gives them fluid's "gradients", this
# batch's statistics (N, sum x, sum (x - mean)^2 + N * epsilon per column; with slot_dim, only over the slots
# whose show value, the slot's first column, is not 0, and then divided by their count, the count set to 1), and
# folds them in at once as fluid's GPU kernel does: stat = stat * summary_decay_rate + batch stat. The layer gives
# the three a learning rate of 0, so an optimizer leaves them as that update wrote them.
_SHOW_EPS = 1e-7
_DN_ATTRS = {"epsilon": 1e-4, "slot_dim": -1, "summary_decay_rate": 0.9999999, "enable_scale_and_shift": False,
             "data_layout": "NCHW", "sync_stats": False, "use_mkldnn": False}


def _dn_width(attrs, x_shape):
    c = x_shape[1] if attrs["data_layout"] == "NCHW" else x_shape[-1]
    if not 2 <= len(x_shape) <= 5:
        raise ValueError(f"Input X must have 2 to 5 dimensions, but received {len(x_shape)}")
    return c


def _dn_infer(attrs, x, size, total, square, scale_w, bias):
    c = _dn_width(attrs, x.shape)
    for slot, v in (("BatchSize", size), ("BatchSum", total), ("BatchSquareSum", square)):
        if len(v.shape) != 1 or (c >= 0 and v.shape[0] >= 0 and v.shape[0] != c):
            raise ValueError(f"Input({slot}) of data_norm should be a 1-D tensor of the {c} channels, but received "
                             f"shape {list(v.shape)}")
    if attrs["enable_scale_and_shift"] and (scale_w is None or bias is None):
        raise ValueError("Input(scale_w) and Input(bias) of DataNormOp should not be null.")
    return (x.shape, x.dtype), ((c,), x.dtype), ((c,), x.dtype)


def _dn_rows(attrs, x):
    """x as [N, C], and the [N, C] mask of the columns that count (all, or the slots whose show is not 0)."""
    rows = x.reshape(x.shape[0], -1)
    slot = attrs["slot_dim"]
    if slot <= 0:
        return rows, None
    blocks = rows.reshape(rows.shape[0], -1, slot)
    shown = array_module(x).abs(blocks[:, :, :1]) >= _SHOW_EPS
    return rows, np.broadcast_to(shown, blocks.shape).reshape(rows.shape)


@register_op("data_norm", inputs=("X", "BatchSize", "BatchSum", "BatchSquareSum", "scale_w", "bias"),
             outputs=("Y", "Means", "Scales"), optional=("scale_w", "bias"),
             attrs=_DN_ATTRS, infer_shape=_dn_infer, share_lod={"Y": "X"})
def _data_norm_forward(attrs, x, size, total, square, scale_w, bias):
    _dn_infer(attrs, x, size, total, square, scale_w, bias)
    rows, shown = _dn_rows(attrs, x)
    means, scales = total / size, array_module(x).sqrt(size / square)
    y = (rows - means) * scales
    if attrs["enable_scale_and_shift"]:
        y = y * scale_w + bias
    if shown is not None:
        y = y * shown
    return y.reshape(x.shape).astype(x.dtype, copy=False), means.astype(x.dtype), scales.astype(x.dtype)


@register_op("data_norm_grad", inputs=("X", "Y@GRAD", "scale_w", "bias", "Means", "Scales", "BatchSize", "BatchSum",
                                       "BatchSquareSum"),
             outputs=("X@GRAD", "BatchSize@GRAD", "BatchSum@GRAD", "BatchSquareSum@GRAD", "scale_w@GRAD", "bias@GRAD",
                      "BatchSizeOut", "BatchSumOut", "BatchSquareSumOut"),
             optional=("scale_w", "bias"), attrs=_DN_ATTRS, no_gradient=True)
def _data_norm_grad(attrs, x, dy, scale_w, bias, means, scales, size, total, square):
    """The gradients of X (and scale_w, bias) and the statistics' batch values and update (the NOTE)."""
    rows, shown = _dn_rows(attrs, x)
    dy = dy.reshape(rows.shape)
    if shown is not None and attrs["enable_scale_and_shift"]:
        dy = dy * shown
    dx = dy * scales * (scale_w if attrs["enable_scale_and_shift"] else 1)
    d_scale = d_bias = None
    if attrs["enable_scale_and_shift"]:
        d_bias, d_scale = dy.sum(axis=0), (dy * (rows - means) * scales).sum(axis=0)
    eps, xp = attrs["epsilon"], array_module(x)
    if shown is None:
        count = xp.full(rows.shape[1], rows.shape[0], dtype=x.dtype)
        b_sum, b_square = rows.sum(axis=0), ((rows - means) ** 2).sum(axis=0) + count * eps
    else:
        count = shown.sum(axis=0).astype(x.dtype)
        b_sum, b_square = (rows * shown).sum(axis=0), (((rows - means) * shown) ** 2).sum(axis=0)
        seen = count >= 1
        safe = xp.where(seen, count, 1)
        b_sum, b_square = xp.where(seen, b_sum / safe, 0), xp.where(seen, b_square / safe + count * eps, 0)
        count = xp.where(seen, 1, 0).astype(x.dtype)
    decay = attrs["summary_decay_rate"]
    cast = lambda a: None if a is None else a.astype(x.dtype, copy=False)  # noqa: E731
    return (cast(dx.reshape(x.shape)), cast(count), cast(b_sum), cast(b_square), cast(d_scale), cast(d_bias),
            cast(size * decay + count), cast(total * decay + b_sum), cast(square * decay + b_square))


@register_grad("data_norm", builder=True)
def _build_data_norm_grad(op, grads):
    stats = ("BatchSize", "BatchSum", "BatchSquareSum")
    inputs = {"X": op.inputs["X"], "Y@GRAD": grads.output("Y"), "Means": op.outputs["Means"],
              "Scales": op.outputs["Scales"], **{s: op.inputs[s] for s in stats}}
    outputs = {f"{s}Out": op.inputs[s] for s in stats}
    for slot in ("scale_w", "bias"):
        if op.inputs.get(slot):
            inputs[slot] = op.inputs[slot]
    for slot in ("X",) + stats + ("scale_w", "bias"):
        if op.inputs.get(slot):
            outputs[f"{slot}@GRAD"] = grads.input(slot)
    return [("data_norm_grad", inputs, outputs, dict(op.attrs))]


# --- hash: XXH64 of each row's bytes, seeds 0 .. num_hash - 1, modulo mod_by: [N, D] -> [N, num_hash, 1] -----------
_P1, _P2, _P3, _P4, _P5 = (np.uint64(p) for p in (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                                                  0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5))


def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _xx_round(acc, lane):
    return _rotl(acc + lane * _P2, 31) * _P1


def _xxh64(data, seed):
    """XXH64 of every row of the uint8 matrix ``data`` (all rows one length) with ``seed``, as uint64: the rows run
    through the same steps, so each step is one numpy operation over all of them (uint64 arithmetic wraps)."""
    n, size = data.shape
    seed = np.uint64(seed)
    words = data[:, :size // 8 * 8].copy().view("<u8")  # the little-endian 8-byte words
    pos = 0
    if size >= 32:
        acc = [np.full(n, v, dtype=np.uint64) for v in (seed + _P1 + _P2, seed + _P2, seed, seed - _P1)]
        for stripe in range(size // 32):
            acc = [_xx_round(a, words[:, stripe * 4 + i]) for i, a in enumerate(acc)]
        h = _rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)
        for a in acc:
            h = (h ^ _xx_round(np.uint64(0), a)) * _P1 + _P4
        pos = size // 32 * 32
    else:
        h = np.full(n, seed + _P5, dtype=np.uint64)
    h = h + np.uint64(size)
    while pos + 8 <= size:
        h = _rotl(h ^ _xx_round(np.uint64(0), words[:, pos // 8]), 27) * _P1 + _P4
        pos += 8
    if pos + 4 <= size:
        h = _rotl(h ^ data[:, pos:pos + 4].copy().view("<u4")[:, 0].astype(np.uint64) * _P1, 23) * _P2 + _P3
        pos += 4
    for i in range(pos, size):
        h = _rotl(h ^ data[:, i].astype(np.uint64) * _P5, 11) * _P1
    for shift, prime in ((33, _P2), (29, _P3)):
        h = (h ^ (h >> np.uint64(shift))) * prime
    return h ^ (h >> np.uint64(32))


def _hash_infer(attrs, x):
    if len(x.shape) != 2:
        raise ValueError(f"The input of hash_op's dimensions must be 2, but received {len(x.shape)}")
    return (x.shape[0], attrs["num_hash"], 1), x.dtype


@register_op("hash", inputs=("X",), outputs=("Out",), attrs={"num_hash": 1, "mod_by": 100000},
             infer_shape=_hash_infer, no_gradient=True, share_lod={"Out": "X"})
def _hash_forward(attrs, x):
    _hash_infer(attrs, x)
    data = np.ascontiguousarray(x).view(np.uint8).reshape(x.shape[0], -1)
    with np.errstate(over="ignore"):
        hashes = np.stack([_xxh64(data, seed) for seed in range(attrs["num_hash"])], axis=1)
    return (hashes % np.uint64(attrs["mod_by"])).astype(x.dtype)[:, :, None]


# --- filter_by_instag: the instances one of whose tags is in Filter_tag, in order ---------------------------------
def _instag_keep(ctx, attrs, ins, tags, wanted):
    """(the kept instances' first rows, their row counts) from the tag LoD and the instance LoD (one row each
    without ``is_lod``)."""
    tag_lod = ctx.input_lod("Ins_tag")
    tag_counts = np.asarray(tag_lod[0] if tag_lod else [1] * len(tags), dtype=np.int64)
    hit = np.isin(tags.reshape(-1), wanted.reshape(-1)).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(tag_counts)[:-1]])
    hits = np.add.reduceat(np.append(hit, 0), starts) * (tag_counts > 0) if len(starts) else np.zeros(0, np.int64)
    ins_lod = ctx.input_lod("Ins")
    rows = np.asarray(ins_lod[0], dtype=np.int64) if attrs["is_lod"] and ins_lod else np.ones(len(ins), np.int64)
    first = np.concatenate([[0], np.cumsum(rows)[:-1]])
    keep = hits[:len(rows)] > 0
    return first[keep], rows[keep]


@register_op("filter_by_instag", inputs=("Ins", "Ins_tag", "Filter_tag"), outputs=("Out", "LossWeight", "IndexMap"),
             attrs={"is_lod": True, "out_val_if_empty": 0}, no_grad_inputs=("Ins_tag", "Filter_tag"), context=True,
             infer_shape=lambda attrs, ins, tag, wanted: (((-1, ins.shape[1]), ins.dtype), ((-1, 1), "float32"),
                                                          ((-1, 3), "int64")))
def _filter_by_instag_forward(ctx, attrs, ins, tags, wanted):
    first, rows = _instag_keep(ctx, attrs, ins, tags, wanted)
    if not len(rows):  # nothing kept: one row of out_val_if_empty, loss weight 0
        ctx.set_output_lod("Out", [[1]])
        for slot in ("LossWeight", "IndexMap"):
            ctx.set_output_lod(slot, [[1]])
        return (np.full((1, ins.shape[1]), attrs["out_val_if_empty"], dtype=ins.dtype),
                np.zeros((1, 1), np.float32), np.array([[0, 1, 1]], np.int64))
    out_first = np.concatenate([[0], np.cumsum(rows)[:-1]])
    source = np.repeat(first - out_first, rows) + np.arange(rows.sum())  # each output row's input row
    ctx.set_output_lod("Out", [rows.tolist()])
    for slot in ("LossWeight", "IndexMap"):
        ctx.set_output_lod(slot, [[1] * len(rows)])
    return (ins[source], np.ones((len(rows), 1), np.float32),
            np.stack([out_first, first, rows], axis=1).astype(np.int64))


@register_grad("filter_by_instag", reads=("Ins", "LossWeight", "IndexMap"))
def _filter_by_instag_backward(ctx, attrs, ins, outs, douts, need):
    x, (_, weight, index) = ins[0], outs
    dx = np.zeros(x.shape, dtype=douts[0].dtype)
    if weight.size != 1 or weight.reshape(-1)[0] != 0:
        out_first, first, rows = index[:, 0], index[:, 1], index[:, 2]
        step = np.arange(rows.sum()) - np.repeat(np.concatenate([[0], np.cumsum(rows)[:-1]]), rows)
        dx[np.repeat(first, rows) + step] = douts[0][np.repeat(out_first, rows) + step]
    return dx, None, None
