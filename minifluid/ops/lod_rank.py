"""What DynamicRNN runs on: a LoD rank table (the sequences of a batch ordered by length, longest
first) and the ops that cut a LoD tensor into time steps by it and put it back: lod_rank_table,
max_sequence_len, lod_tensor_to_array, array_to_lod_tensor, shrink_rnn_memory,
reorder_lod_tensor_by_rank, with their gradients.

NOTE [ Time-major batches of sequences ]
Step t of a DynamicRNN holds row t of every sequence longer than t, in rank-table order (longest
first), so the batch of step t is the first ``count[t]`` rows of step t-1's: a memory only needs
``shrink_rnn_memory`` to keep its first ``count[t]`` rows. ``lod_tensor_to_array`` gathers those rows
with one permutation of the whole tensor (key: step, then rank) and splits it by the counts;
``array_to_lod_tensor`` concatenates the steps and scatters them back through the same permutation,
so sequences come back in their input order with the input's LoD. Only the innermost LoD level is
cut into steps (the level DynamicRNN's step inputs use).
"""
import numpy as np

from .registry import array_module, register_grad, register_op
from .tensor_array import TensorArray

__all__ = ["RankTable"]


class RankTable:
    """fluid's LoDRankTable: ``items`` (sequence index, length) longest first (ties keep input order),
    and the LoD of the tensor it was made from."""

    def __init__(self, lengths, lod):
        lengths = np.asarray(lengths, dtype=np.int64)
        self.order = np.argsort(-lengths, kind="stable")
        self.lengths = lengths[self.order]
        self.lod = lod

    @property
    def items(self):
        return [(int(i), int(n)) for i, n in zip(self.order, self.lengths)]

    def counts(self):
        """Per step t: how many sequences are longer than t."""
        steps = int(self.lengths[0]) if self.lengths.size else 0
        return (self.lengths[None, :] > np.arange(steps)[:, None]).sum(axis=1)

    def permutation(self):
        """Row indices of the input in step-major, rank order (see the NOTE)."""
        lengths = np.asarray(self.lod[-1], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        rank = np.empty_like(self.order)
        rank[self.order] = np.arange(self.order.size)
        seq = np.repeat(np.arange(lengths.size), lengths)
        step = np.arange(seq.size) - starts[seq]
        return np.lexsort((rank[seq], step))

    def __repr__(self):
        return f"RankTable(items={self.items})"


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
    if attrs["level"] != len(lod) - 1:
        raise NotImplementedError(f"lod_rank_table: only the innermost LoD level ({len(lod) - 1}) can be ranked, "
                                  f"got level {attrs['level']}")
    return RankTable(lod[attrs["level"]], lod)


@register_op("max_sequence_len", inputs=("RankTable",), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, table: ((1,), "int64"))
def _max_sequence_len_forward(attrs, table):
    return np.array([table.lengths[0] if table.lengths.size else 0], dtype=np.int64)


def _to_steps(x, table):
    """The time-step entries of ``x`` (see the NOTE)."""
    counts = table.counts()
    return array_module(x).split(x[table.permutation()], np.cumsum(counts)[:-1]), counts


@register_op("lod_tensor_to_array", inputs=("X", "RankTable"), outputs=("Out",), context=True)
def _lod_tensor_to_array_forward(ctx, attrs, x, table):
    arr = TensorArray()
    for t, step in enumerate(_to_steps(x, _table(table, ctx.op.inputs["RankTable"][0]))[0]):
        arr.put(t, step, [])
    return arr


def _from_steps(entries, table, like):
    """The rows of ``entries`` (one array per step, None for zeros) back in input order."""
    counts = table.counts()
    xp = array_module(like)
    parts = [xp.zeros((int(n),) + tuple(like.shape[1:]), like.dtype) if e is None else e
             for e, n in zip(entries, counts)]
    stacked = xp.concatenate(parts) if parts else like[:0]
    out = xp.empty_like(stacked)
    out[table.permutation()] = stacked
    return out


@register_grad("lod_tensor_to_array")
def _lod_tensor_to_array_backward(ctx, attrs, ins, outs, douts, need):
    (x, table), grads = ins, douts[0]
    steps = len(table.counts())
    entries = [grads[t][0] if grads is not None and t < len(grads) and grads[t] is not None else None
               for t in range(steps)]
    return _from_steps(entries, table, x), None


@register_op("array_to_lod_tensor", inputs=("X", "RankTable"), outputs=("Out",), context=True)
def _array_to_lod_tensor_forward(ctx, attrs, arr, table):
    table = _table(table, ctx.op.inputs["RankTable"][0])
    entries = [arr.entry(t)[0] for t in range(len(table.counts()))]
    ctx.set_output_lod("Out", table.lod)
    return _from_steps(entries, table, entries[0])


@register_op("array_to_lod_tensor_grad", inputs=("X", "RankTable", "Out@GRAD"), outputs=("X@GRAD",),
             context=True, no_gradient=True)
def _array_to_lod_tensor_grad(ctx, attrs, arr, table, dout):
    """Out@GRAD cut into steps again, added into the array of gradients."""
    name = ctx.op.outputs["X@GRAD"][0]
    grads = ctx.find_value(name)
    grads = TensorArray() if grads is None else grads
    for t, step in enumerate(_to_steps(dout, table)[0]):
        held = grads[t] if t < len(grads) else None
        grads.put(t, step if held is None else held[0] + step, [])
    return grads


@register_grad("array_to_lod_tensor", builder=True)
def _build_array_to_lod_tensor_grad(op, grads):
    return [("array_to_lod_tensor_grad", {"X": op.inputs["X"], "RankTable": op.inputs["RankTable"],
                                          "Out@GRAD": grads.output("Out")}, {"X@GRAD": grads.input("X")}, {})]


@register_op("shrink_rnn_memory", inputs=("X", "RankTable", "I"), outputs=("Out",), no_grad_inputs=("RankTable", "I"))
def _shrink_rnn_memory_forward(attrs, x, table, i):
    """The first rows of X: one per sequence longer than step I (they lead in rank order)."""
    t = int(np.asarray(i).reshape(-1)[0])
    return x[:int((table.lengths > t).sum())]


@register_grad("shrink_rnn_memory")
def _shrink_rnn_memory_backward(attrs, ins, outs, douts, need):
    x, dout = ins[0], douts[0]
    dx = array_module(x).zeros_like(x)
    dx[:len(dout)] = dout
    return dx, None, None


@register_op("reorder_lod_tensor_by_rank", inputs=("X", "RankTable"), outputs=("Out",), context=True,
             no_grad_inputs=("RankTable",))
def _reorder_forward(ctx, attrs, x, table):
    """X's rows (or, when X has LoD, its sequences) in the rank table's order."""
    rows, lod = _reorder_rows(ctx.input_lod("X"), table.order)
    if lod:
        ctx.set_output_lod("Out", lod)
    return x[rows]


def _reorder_rows(lod, order):
    if not lod:
        return order, []
    lengths = np.asarray(lod[-1], dtype=np.int64)
    if len(lod) > 1:
        raise NotImplementedError("reorder_lod_tensor_by_rank: X with more than one LoD level")
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    picked = lengths[order]
    rows = np.repeat(starts[order] - np.concatenate([[0], np.cumsum(picked)[:-1]]), picked) + np.arange(picked.sum())
    return rows, [picked.tolist()]


@register_grad("reorder_lod_tensor_by_rank")
def _reorder_backward(ctx, attrs, ins, outs, douts, need):
    (x, table), dout = ins, douts[0]
    rows, _ = _reorder_rows(ctx.input_lod("X"), table.order)
    dx = array_module(dout).zeros_like(x)
    dx[rows] = dout
    return dx, None
