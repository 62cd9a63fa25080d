"""What DynamicRNN runs on: a LoD rank table (the sequences of a batch ordered by length, longest
first) and the ops that cut a LoD tensor into time steps by it and put it back: lod_rank_table,
max_sequence_len, lod_tensor_to_array, array_to_lod_tensor, shrink_rnn_memory,
reorder_lod_tensor_by_rank, with their gradients.

NOTE [ Time-major batches of sequences ]
A rank table ranks the units of one LoD level (sequences, or sequences of sequences). Step t of a
DynamicRNN holds the t-th child of every unit longer than t, in rank-table order (longest first): a
row when the ranked level is the innermost one, else a sub-sequence with its own nested LoD. So the
batch of step t is the first ``count[t]`` children of step t-1's, and a memory only needs
``shrink_rnn_memory`` to keep its first ``count[t]`` rows. ``lod_tensor_to_array`` takes the rows of
every step with one gather (``layout``: all children in step-major, rank order, followed down the LoD
to their rows) and splits them by step; ``array_to_lod_tensor`` does the reverse: each step's parts
(its top-level units, or rows) ordered by unit then step, followed down the entries' LoD, so sequences
come back in their input order under the table's coarse LoD.
"""
import numpy as np

from .registry import array_module, register_grad, register_op
from .tensor_array import TensorArray

__all__ = ["RankTable"]


def _starts(lengths):
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def _ranges(starts, lengths):
    """The indices of the ranges [starts[k], starts[k] + lengths[k]) one after another."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.repeat(np.asarray(starts, dtype=np.int64) - _starts(lengths), lengths) + np.arange(lengths.sum())


def descend(lod, units):
    """Follow ``units`` (indices into level 0 of ``lod``, a lengths-based LoD) down to the rows:
    (their nested LoD, one lengths array per level; their rows, in order)."""
    sub = []
    for lengths in lod:
        lengths = np.asarray(lengths, dtype=np.int64)
        picked = lengths[units]
        sub.append(picked)
        units = _ranges(_starts(lengths)[units], picked)
    return sub, units


def _split_nested(sub, rows, counts):
    """Cut (nested LoD, rows) of parts laid end to end into groups of ``counts`` top-level parts."""
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    levels = []
    for lengths in sub:
        levels.append([lengths[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])])
        bounds = np.concatenate([[0], np.cumsum(lengths)])[bounds]
    lods = [[level[t] for level in levels] for t in range(len(counts))]
    return lods, [rows[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


class RankTable:
    """fluid's LoDRankTable: ``items`` (unit index, length) longest first (ties keep input order) for
    the units of LoD ``level`` of the tensor it was made from, and that tensor's LoD."""

    def __init__(self, lengths, lod, level=None):
        lengths = np.asarray(lengths, dtype=np.int64)
        self.order = np.argsort(-lengths, kind="stable")
        self.lengths = lengths[self.order]
        self.lod = lod
        self.level = len(lod) - 1 if level is None else level
        self._layout = None

    def items(self):
        """[(unit index, length)], longest first (fluid's ``LoDRankTable.items()``)."""
        return [(int(i), int(n)) for i, n in zip(self.order, self.lengths)]

    @property
    def coarse_lod(self):
        return [list(level) for level in self.lod[:self.level]]

    def counts(self):
        """Per step t: how many units are longer than t."""
        steps = int(self.lengths[0]) if self.lengths.size else 0
        return (self.lengths[None, :] > np.arange(steps)[:, None]).sum(axis=1)

    def parts(self, counts):
        """For parts laid out step by step, ``counts[t]`` in step t in rank order: their order by unit
        (in input order), then step."""
        steps = np.repeat(np.arange(len(counts)), counts)
        rank = np.arange(steps.size) - _starts(counts)[steps]
        return np.lexsort((steps, self.order[rank]))

    def layout(self):
        """(nested LoD per step, rows per step) of the tensor the table was made from (see the NOTE)."""
        if self._layout is None:
            rank = np.repeat(np.arange(self.lengths.size), self.lengths)  # every (rank, step) pair ...
            step = np.arange(rank.size) - _starts(self.lengths)[rank]
            first = np.lexsort((rank, step))  # ... step-major
            unit_lengths = np.asarray(self.lod[self.level], dtype=np.int64)
            children = _starts(unit_lengths)[self.order[rank[first]]] + step[first]
            self._layout = _split_nested(*descend(self.lod[self.level + 1:], children), self.counts())
        return self._layout

    def __repr__(self):
        return f"RankTable(items={self.items()})"


def _table(value, name):
    if not isinstance(value, RankTable):
        raise TypeError(f"{name!r} must be a LoD rank table (fluid.layers.lod_rank_table), got "
                        f"{type(value).__name__}")
    return value


def _sequence_lengths(ctx, slot, level):
    lod = ctx.input_lod(slot)
    if not lod:
        raise ValueError(f"Input {ctx.op.inputs[slot][0]!r} of {ctx.op.type} has no LoD: feed it as a LoDTensor "
                         "with sequence lengths (fluid.create_lod_tensor)")
    if level >= len(lod):
        raise ValueError(f"{ctx.op.type}: level {level} is out of the LoD's {len(lod)} level(s)")
    return lod


@register_op("lod_rank_table", inputs=("X",), outputs=("Out",), attrs={"level": 0}, context=True,
             no_gradient=True)
def _lod_rank_table_forward(ctx, attrs, x):
    lod = _sequence_lengths(ctx, "X", attrs["level"])
    return RankTable(lod[attrs["level"]], lod, attrs["level"])


@register_op("max_sequence_len", inputs=("RankTable",), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, table: ((1,), "int64"))
def _max_sequence_len_forward(attrs, table):
    return np.array([table.lengths[0] if table.lengths.size else 0], dtype=np.int64)


def _step_rows(table):
    lods, rows = table.layout()
    return lods, rows, np.concatenate(rows) if rows else np.zeros(0, np.int64)


@register_op("lod_tensor_to_array", inputs=("X", "RankTable"), outputs=("Out",), context=True)
def _lod_tensor_to_array_forward(ctx, attrs, x, table):
    """Entry t: the t-th child of every unit of the table's level longer than t (see the NOTE)."""
    lods, rows, every = _step_rows(_table(table, ctx.op.inputs["RankTable"][0]))
    arr = TensorArray()
    bounds = np.cumsum([len(r) for r in rows])[:-1]
    for t, (step, lod) in enumerate(zip(array_module(x).split(x[every], bounds), lods)):
        arr.put(t, step, lod)
    return arr


@register_grad("lod_tensor_to_array")
def _lod_tensor_to_array_backward(ctx, attrs, ins, outs, douts, need):
    (x, table), grads = ins, douts[0]
    _, rows, every = _step_rows(table)
    xp = array_module(x)
    parts = [grads[t][0] if grads is not None and t < len(grads) and grads[t] is not None else
             xp.zeros((len(r),) + tuple(x.shape[1:]), x.dtype) for t, r in enumerate(rows)]
    dx = xp.zeros_like(x)
    if parts:
        dx[every] = xp.concatenate(parts)
    return dx, None


def _merge_plan(entries, table, name):
    """(rows of the entries laid end to end, in output order; output LoD) for array_to_lod_tensor."""
    counts = table.counts()
    if len(entries) < len(counts):
        raise ValueError(f"array_to_lod_tensor: {name!r} has {len(entries)} entries but the rank table's longest "
                         f"unit has {len(counts)} steps")
    entries = entries[:len(counts)]
    depths = {len(lod) for _, lod in entries}
    if len(depths) > 1:
        raise ValueError(f"array_to_lod_tensor: the entries of {name!r} have LoDs of different depths {sorted(depths)}")
    depth = depths.pop() if depths else 0
    parts = [len(lod[0]) if depth else len(value) for value, lod in entries]
    if parts != counts.tolist():
        raise ValueError(f"array_to_lod_tensor: the entries of {name!r} hold {parts} sequences (or rows) per step, but "
                         f"the rank table has {counts.tolist()} units longer than each step")
    order = table.parts(counts)
    if depth:
        levels = [np.concatenate([np.asarray(lod[k], np.int64) for _, lod in entries]) for k in range(depth)]
        sub, rows = descend(levels, order)
    else:
        sub, rows = [], order
    lod = table.coarse_lod + [list(table.lod[table.level])] + [level.tolist() for level in sub]
    return rows, lod


def _entries(arr, name):
    return [arr.entry(t, name) for t in range(len(arr))]


@register_op("array_to_lod_tensor", inputs=("X", "RankTable"), outputs=("Out",), context=True)
def _array_to_lod_tensor_forward(ctx, attrs, arr, table):
    """The entries back in one LoD tensor, units in input order (see the NOTE)."""
    name = ctx.op.inputs["X"][0]
    entries = _entries(arr, name)
    rows, lod = _merge_plan(entries, _table(table, ctx.op.inputs["RankTable"][0]), name)
    ctx.set_output_lod("Out", lod)
    values = [value for value, _ in entries[:len(table.counts())]]
    return array_module(values[0]).concatenate(values)[rows]


@register_op("array_to_lod_tensor_grad", inputs=("X", "RankTable", "Out@GRAD"), outputs=("X@GRAD",),
             context=True, no_gradient=True)
def _array_to_lod_tensor_grad(ctx, attrs, arr, table, dout):
    """Out@GRAD cut into the entries again, added into the array of gradients."""
    name = ctx.op.outputs["X@GRAD"][0]
    entries = _entries(arr, ctx.op.inputs["X"][0])[:len(table.counts())]
    rows, _ = _merge_plan(entries, table, ctx.op.inputs["X"][0])
    xp = array_module(dout)
    stacked = xp.zeros((len(rows),) + tuple(dout.shape[1:]), dout.dtype)
    stacked[rows] = dout
    grads = ctx.find_value(name)
    grads = TensorArray() if grads is None else grads
    bounds = np.cumsum([len(value) for value, _ in entries])[:-1]
    for t, (step, (_, lod)) in enumerate(zip(xp.split(stacked, bounds), entries)):
        held = grads[t] if t < len(grads) else None
        grads.put(t, step if held is None else held[0] + step, lod)
    return grads


@register_grad("array_to_lod_tensor", builder=True)
def _build_array_to_lod_tensor_grad(op, grads):
    return [("array_to_lod_tensor_grad", {"X": op.inputs["X"], "RankTable": op.inputs["RankTable"],
                                          "Out@GRAD": grads.output("Out")}, {"X@GRAD": grads.input("X")}, {})]


def _leading_units(lod, n):
    """Rows and nested LoD of the first ``n`` top-level units (all rows when there is no LoD)."""
    sub, rows = descend(lod, np.arange(n))
    return rows, [level.tolist() for level in sub]


@register_op("shrink_rnn_memory", inputs=("X", "RankTable", "I"), outputs=("Out",), no_grad_inputs=("RankTable", "I"),
             context=True)
def _shrink_rnn_memory_forward(ctx, attrs, x, table, i):
    """The first rows (or top-level sequences) of X: one per unit longer than step I (they lead in rank order)."""
    t = int(np.asarray(i).reshape(-1)[0])
    keep = int((table.lengths > t).sum())
    lod = ctx.input_lod("X")
    if not lod:
        return x[:keep]
    if len(lod[0]) <= keep:
        ctx.set_output_lod("Out", lod)
        return x
    rows, out_lod = _leading_units(lod, keep)
    ctx.set_output_lod("Out", out_lod)
    return x[:len(rows)]


@register_grad("shrink_rnn_memory")
def _shrink_rnn_memory_backward(ctx, attrs, ins, outs, douts, need):
    x, dout = ins[0], douts[0]
    dx = array_module(x).zeros_like(x)
    dx[:len(dout)] = dout
    return dx, None, None


@register_op("reorder_lod_tensor_by_rank", inputs=("X", "RankTable"), outputs=("Out",), context=True,
             no_grad_inputs=("RankTable",))
def _reorder_forward(ctx, attrs, x, table):
    """X's rows (or, when X has LoD, its top-level sequences) in the rank table's order."""
    rows, lod = _reorder_rows(ctx.input_lod("X"), _table(table, ctx.op.inputs["RankTable"][0]).order, len(x))
    if lod:
        ctx.set_output_lod("Out", lod)
    return x[rows]


def _reorder_rows(lod, order, num_rows):
    units = len(lod[0]) if lod else num_rows
    if order.size and int(order.max()) >= units:
        raise ValueError(f"reorder_lod_tensor_by_rank: the rank table ranks {order.size} units but X has {units} "
                         "top-level sequences (or rows): the value of rank_table is out of range")
    if not lod:
        return order, []
    sub, rows = descend(lod, order)
    return rows, [level.tolist() for level in sub]


@register_grad("reorder_lod_tensor_by_rank")
def _reorder_backward(ctx, attrs, ins, outs, douts, need):
    (x, table), dout = ins, douts[0]
    lod = ctx.input_lod("X")
    rows, _ = _reorder_rows(lod, table.order, len(x))
    dx = array_module(dout).zeros_like(x)
    dx[rows] = dout
    if lod:  # X's gradient has X's LoD
        ctx.set_output_lod("X@GRAD", lod)
    return dx, None
