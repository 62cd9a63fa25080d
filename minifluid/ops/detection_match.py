"""Matching ops of SSD training: bipartite_match (priors to ground truth), target_assign (the matched rows of a LoD
input per prior) and mine_hard_examples (the negatives that ssd_loss keeps).

bipartite_match runs all images at once: their distance blocks are padded into one [N, rows, cols] array and each
step takes, in every image, the largest distance left among unmatched rows and columns (fluid's greedy order: on a
tie the lowest column, then the lowest row), so a batch costs as many numpy steps as its largest image has rows.
target_assign and mine_hard_examples are gathers and one sort over the whole batch. None has a gradient (fluid's
have none: they make targets, not predictions).
"""
import numpy as np

from .registry import register_op
from .sequence import lod_offsets, row_segments

_EPS = 1e-6


def _known(d):
    return d >= 0


# --- bipartite_match ------------------------------------------------------------------------------------
def _match_infer(attrs, dist):
    if len(dist.shape) != 2:
        raise ValueError(f"The rank of Input(DistMat) must be 2, but received shape {list(dist.shape)}.")
    if attrs["match_type"] not in ("bipartite", "per_prediction"):
        raise ValueError(f"bipartite_match: match_type must be 'bipartite' or 'per_prediction', but received "
                         f"{attrs['match_type']!r}")
    shape = (-1, dist.shape[1])
    return (shape, "int32"), (shape, dist.dtype)


def _padded_blocks(dist, lengths):
    """[N, max rows, cols] with the rows of image i in block i; padding rows are -1 (never matched)."""
    seq, pos, _ = row_segments(lengths)
    blocks = np.full((len(lengths), int(max(lengths, default=0)), dist.shape[1]), -1.0, dist.dtype)
    blocks[seq, pos] = dist
    return blocks


def greedy_bipartite(blocks, strict_positive):
    """Per image, repeatedly match the largest distance among unmatched rows and columns; (match [N, cols] int32,
    distance [N, cols]). Fluid accepts a distance of at least 1e-6, or above 0 for an image of 130 rows or more
    (``strict_positive`` [N])."""
    n, rows, cols = blocks.shape
    match = np.full((n, cols), -1, np.int32)
    dist = np.zeros((n, cols), blocks.dtype)
    ok = np.where(strict_positive[:, None, None], blocks > 0, blocks >= _EPS)
    work = np.where(ok, blocks, -np.inf).transpose(0, 2, 1).reshape(n, -1)  # column-major: ties go to low cols
    images = np.arange(n)
    for _ in range(min(rows, cols)):  # each step matches one pair in every image that still has one
        best = work.argmax(axis=1)
        found = np.isfinite(work[images, best])
        if not found.any():
            break
        im, col, row = images[found], best[found] // rows, best[found] % rows
        match[im, col], dist[im, col] = row, work[im, best[found]]
        work = work.reshape(n, cols, rows)
        work[im, col, :] = -np.inf
        work[im, :, row] = -np.inf
        work = work.reshape(n, -1)
    return match, dist


def argmax_fill(blocks, match, dist, threshold):
    """per_prediction: every column still unmatched takes its best row if that distance reaches ``threshold``."""
    masked = np.where((blocks >= _EPS) & (blocks >= threshold), blocks, -np.inf)
    if masked.shape[1] == 0:
        return match, dist
    row = masked.argmax(axis=1)
    best = np.take_along_axis(masked, row[:, None], axis=1)[:, 0]
    fill = (match == -1) & np.isfinite(best)
    return np.where(fill, row, match).astype(np.int32), np.where(fill, best, dist).astype(dist.dtype)


@register_op("bipartite_match", inputs=("DistMat",), outputs=("ColToRowMatchIndices", "ColToRowMatchDist"),
             attrs={"match_type": "bipartite", "dist_threshold": 0.5}, infer_shape=_match_infer, context=True,
             no_gradient=True)
def _bipartite_match(ctx, attrs, dist):
    _match_infer(attrs, dist)
    lod = ctx.input_lod("DistMat")
    if len(lod) > 1:
        raise ValueError(f"bipartite_match: Only support 1 level of LoD, but Input(DistMat) has {len(lod)}.")
    lengths = np.asarray(lod[0] if lod else [dist.shape[0]], np.int64)
    blocks = _padded_blocks(dist, lengths)
    match, best = greedy_bipartite(blocks, lengths >= 130)
    if attrs["match_type"] == "per_prediction":
        match, best = argmax_fill(blocks, match, best, attrs["dist_threshold"])
    return match, best


# --- target_assign --------------------------------------------------------------------------------------
def _assign_infer(attrs, x, match, neg):
    if len(x.shape) != 3:
        raise ValueError(f"The rank of Input(X) must be 3, but received shape {list(x.shape)}.")
    if len(match.shape) != 2:
        raise ValueError(f"The rank of Input(MatchIndices) must be 2, but received shape {list(match.shape)}.")
    if neg is not None:
        if len(neg.shape) != 2:
            raise ValueError(f"The rank of Input(NegIndices) must be 2, but received shape {list(neg.shape)}.")
        if neg.shape[1] not in (1, -1):
            raise ValueError(f"The last dimension of Input(NegIndices) must be 1, but received shape "
                             f"{list(neg.shape)}.")
    return ((match.shape[0], match.shape[1], x.shape[2]), x.dtype), ((match.shape[0], match.shape[1], 1), "float32")


@register_op("target_assign", inputs=("X", "MatchIndices", "NegIndices"), outputs=("Out", "OutWeight"),
             optional=("NegIndices",), attrs={"mismatch_value": 0}, infer_shape=_assign_infer, context=True,
             no_gradient=True)
def _target_assign(ctx, attrs, x, match, neg):
    _assign_infer(attrs, x, match, neg)
    lod = ctx.input_lod("X")
    if len(lod) != 1:
        raise ValueError(f"TargetAssignOp input(X) needs 1 level of LoD, but it has {len(lod)} (feed the rows of "
                         f"each image as one sequence)")
    if len(lod[0]) != match.shape[0]:
        raise ValueError(f"target_assign: Input(X) holds {len(lod[0])} images (its LoD) but Input(MatchIndices) "
                         f"has {match.shape[0]} rows")
    n, m = match.shape
    lengths = np.asarray(lod[0], np.int64)
    if (match >= lengths[:, None]).any():
        bad = np.argwhere(match >= lengths[:, None])[0]
        raise ValueError(f"target_assign: MatchIndices[{bad[0]}][{bad[1]}] = {match[tuple(bad)]} but image "
                         f"{bad[0]} has {lengths[bad[0]]} rows in Input(X)")
    matched = match > -1
    rows = np.minimum(lod_offsets(lengths)[:-1, None] + np.where(matched, match, 0), max(x.shape[0] - 1, 0))
    out = x[rows, np.arange(m) % x.shape[1]] if x.shape[0] else np.zeros((n, m, x.shape[2]), x.dtype)
    out = np.where(matched[..., None], out, np.asarray(attrs["mismatch_value"]).astype(x.dtype))
    weight = matched.astype(np.float32)[..., None]
    if neg is not None:
        neg_lod = ctx.input_lod("NegIndices")
        if len(neg_lod) != 1:
            raise ValueError("TargetAssignOp input(NegIndices) needs 1 level of LoD")
        image = row_segments(neg_lod[0])[0]
        cols = neg.reshape(-1).astype(np.int64)
        out[image, cols] = attrs["mismatch_value"]
        weight[image, cols] = 1.0
    return out.astype(x.dtype, copy=False), weight


# --- mine_hard_examples ---------------------------------------------------------------------------------
def _mine_infer(attrs, cls_loss, loc_loss, match, dist):
    for slot, v in (("ClsLoss", cls_loss), ("LocLoss", loc_loss), ("MatchIndices", match), ("MatchDist", dist)):
        if v is not None and len(v.shape) != 2:
            raise ValueError(f"The shape of {slot} is [N, Np]. But received {list(v.shape)}.")
    if attrs["mining_type"] not in ("max_negative", "hard_example"):
        raise ValueError(f"mine_hard_examples: mining_type must be 'max_negative' or 'hard_example', but received "
                         f"{attrs['mining_type']!r}")
    if _known(cls_loss.shape[1]) and _known(match.shape[1]) and cls_loss.shape[1] != match.shape[1]:
        raise ValueError(f"mine_hard_examples: Input(ClsLoss) {list(cls_loss.shape)} and Input(MatchIndices) "
                         f"{list(match.shape)} must both be [N, Np].")
    return ((-1, 1), "int32"), (tuple(match.shape), match.dtype)


@register_op("mine_hard_examples", inputs=("ClsLoss", "LocLoss", "MatchIndices", "MatchDist"),
             outputs=("NegIndices", "UpdatedMatchIndices"), optional=("LocLoss",),
             attrs={"neg_pos_ratio": 1.0, "neg_dist_threshold": 0.5, "sample_size": 0, "mining_type": "max_negative"},
             infer_shape=_mine_infer, context=True, no_gradient=True)
def _mine_hard_examples(ctx, attrs, cls_loss, loc_loss, match, dist):
    """Per image, the eligible priors with the largest losses: for max_negative the unmatched ones whose best
    overlap is under neg_dist_threshold, int(positives * neg_pos_ratio) of them; for hard_example the
    sample_size largest of all (matched ones left out become unmatched). Negatives come in prior order."""
    _mine_infer(attrs, cls_loss, loc_loss, match, dist)
    updated = match.copy()
    if attrs["mining_type"] == "max_negative":
        eligible = (match == -1) & (dist < attrs["neg_dist_threshold"])
        loss = cls_loss
        count = np.minimum(((match != -1).sum(1) * np.float32(attrs["neg_pos_ratio"])).astype(np.int64),
                           eligible.sum(1))
    else:
        eligible = np.ones(match.shape, bool)
        loss = cls_loss if loc_loss is None else cls_loss + loc_loss
        count = np.minimum(attrs["sample_size"], match.shape[1])
    order = np.argsort(np.where(eligible, -loss, np.inf), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(match.shape[1])[None, :], axis=1)
    chosen = eligible & (rank < np.reshape(count, (-1, 1)))
    if attrs["mining_type"] == "hard_example":
        updated[(match > -1) & ~chosen] = -1
        chosen &= match == -1
    ctx.set_output_lod("NegIndices", [chosen.sum(1).tolist()])
    return np.nonzero(chosen)[1].astype(np.int32).reshape(-1, 1), updated
