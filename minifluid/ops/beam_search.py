"""Beam search in the graph: beam_search (one step: choose the beam_size best extensions of each source
sentence's prefixes) and beam_search_decode (backtrack every step's choices into sentences).

NOTE [ Beam LoD ]
The prefixes of a step are rows with a 2-level LoD: level 0 counts each source sentence's prefixes,
level 1 groups the rows by the prefix of the step before they extend. beam_search reads level 0 as
row offsets (``level``'s absolute offsets) and writes the same 2 levels for its choices: level 0
again per source (its prefixes, now counted in rows), level 1 the number of choices each prefix made.
Candidates are ranked by score, then by prefix (a later prefix first on a tie), then by column, as
fluid's beam search orders them; a prefix that ended (its id is ``end_id``) offers only itself with
its score, and a source whose every choice is an ended prefix's end id is dropped (it ended a step
ago), so ``is_empty`` of the selection says when every source has finished.
"""
import numpy as np

from .registry import register_op

__all__ = []


def _host(x):
    return np.asarray(x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else x)


def _source_offsets(lod, level, rows):
    """Row offsets of the level-``level`` sequences of a LoD given as lengths."""
    if not lod:
        return np.array([0, rows])
    offsets = np.concatenate([[0], np.cumsum(lod[level])])
    for lengths in lod[level + 1:]:
        offsets = np.concatenate([[0], np.cumsum(lengths)])[offsets]
    return offsets


@register_op("beam_search", inputs=("pre_ids", "pre_scores", "ids", "scores"),
             outputs=("selected_ids", "selected_scores", "parent_idx"), optional=("ids",),
             attrs={"level": 0, "beam_size": 1, "end_id": 0, "is_accumulated": True}, context=True,
             no_gradient=True)
def _beam_search_forward(ctx, attrs, pre_ids, pre_scores, ids, scores):
    beam, end = int(attrs["beam_size"]), int(attrs["end_id"])
    pre_ids, pre_scores, scores = _host(pre_ids).reshape(-1), _host(pre_scores).reshape(-1), _host(scores)
    rows = len(pre_ids)
    scores = scores.reshape(rows, -1)
    width = scores.shape[1]
    ids = np.broadcast_to(np.arange(width), scores.shape) if ids is None else _host(ids).reshape(rows, width)
    if not attrs["is_accumulated"]:
        scores = pre_scores[:, None] + np.log(scores)
    high = _source_offsets(ctx.input_lod("scores"), attrs["level"], rows)
    ended = pre_ids == end
    keep = np.ones((rows, width), bool)
    keep[ended, 1:] = False  # an ended prefix offers only itself
    cand_row = np.broadcast_to(np.arange(rows)[:, None], (rows, width))[keep]
    cand_col = np.broadcast_to(np.arange(width), (rows, width))[keep]
    cand_id = np.where(ended[:, None], end, ids)[keep].astype(np.int64)
    cand_score = np.where(ended[:, None], pre_scores[:, None], scores)[keep].astype(scores.dtype)
    source = np.searchsorted(high, cand_row, side="right") - 1
    order = np.lexsort((cand_col, -cand_row, -cand_score, source))
    src_sorted = source[order]
    first = np.searchsorted(src_sorted, src_sorted, side="left")
    chosen = order[np.arange(order.size) - first < beam]
    chosen = chosen[np.lexsort((np.arange(chosen.size), cand_row[chosen]))]  # by prefix, best first within
    row, sel_id, sel_score = cand_row[chosen], cand_id[chosen], cand_score[chosen]
    n_sources = len(high) - 1
    live = np.bincount(source[chosen], weights=~((sel_id == end) & ended[row]), minlength=n_sources)
    picked = live[source[chosen]] > 0  # drop the sources whose every branch ended a step ago
    row, sel_id, sel_score = row[picked], sel_id[picked], sel_score[picked]
    lod = [np.diff(high).tolist(), np.bincount(row, minlength=rows).tolist()]
    ctx.set_output_lod("selected_ids", lod)
    ctx.set_output_lod("selected_scores", lod)
    return sel_id.reshape(-1, 1), sel_score.reshape(-1, 1), row.astype(np.int32)


@register_op("beam_search_decode", inputs=("Ids", "Scores"), outputs=("SentenceIds", "SentenceScores"),
             attrs={"beam_size": 1, "end_id": 0}, context=True, no_gradient=True)
def _beam_search_decode_forward(ctx, attrs, step_ids, step_scores):
    """Each source's hypotheses, backtracked from the last step: words in order, best score first."""
    if not step_ids:
        raise ValueError("Input(Ids) should not be empty.")
    if len(step_ids) != len(step_scores):
        raise ValueError("The size of Input(Ids) and Input(Scores) should be the same.")
    end = int(attrs["end_id"])
    steps = [(_host(i).reshape(-1), _host(s).reshape(-1), _offsets(lod)) for (i, lod), (s, _) in
             zip(_entries(step_ids, "Ids"), _entries(step_scores, "Scores"))]
    n_src = len(steps[0][2][0]) - 1
    hyps = [[] for _ in range(n_src)]  # per source: [word ids (reversed)], [scores], candidate row
    for ids, scores, (src_level, sent_level) in reversed(steps):
        for s in range(n_src):
            if not hyps[s]:  # finished and pruned here (or the last step): its candidates start hypotheses
                rows = range(sent_level[src_level[s]], sent_level[src_level[s + 1]])
                hyps[s] = [[[ids[r]], [scores[r]], _prefix(sent_level, r)] for r in rows]
                continue
            for h in hyps[s]:  # h[2]: the row of this step that the hypothesis extends
                r = h[2]
                if ids[r] != end or not h[0]:  # one end id per hypothesis
                    h[0].append(ids[r])
                    h[1].append(scores[r])
                h[2] = _prefix(sent_level, r)
    words, values, src_lod, sent_lod = [], [], [], []
    for s in range(n_src):
        ranked = sorted(hyps[s], key=lambda h: -h[1][0])
        src_lod.append(len(ranked))
        for h in ranked:
            words.extend(reversed(h[0]))
            values.extend(reversed(h[1]))
            sent_lod.append(len(h[0]))
    lod = [src_lod, sent_lod]
    ctx.set_output_lod("SentenceIds", lod)
    ctx.set_output_lod("SentenceScores", lod)
    score_dtype = steps[0][1].dtype
    return np.array(words, np.int64), np.array(values, score_dtype)


def _prefix(sent_level, row):
    """The row of the step before that ``row`` extends (level 1 groups rows by it)."""
    return int(np.searchsorted(sent_level, row, side="right")) - 1


def _entries(array, slot):
    """(array, lod) of every step (a scope's LoDTensorArray answers ``entry`` as the ops' own arrays do)."""
    return [array.entry(t, slot) for t in range(len(array))]


def _offsets(lod):
    if len(lod) != 2:
        raise ValueError(f"beam_search_decode: every step's ids need a 2-level LoD (source, prefix), got {lod}")
    return [np.concatenate([[0], np.cumsum(level)]).astype(np.int64) for level in lod]
