"""Recomputation in the backward pass: ``append_backward(loss, checkpoints=[...])``, as RecomputeOptimizer
(optimizer/recompute.py) calls it.

NOTE [ Recompute segments ]
The ops the loss depends on are cut into segments by the checkpoints, ordered by the last op writing each (a
variable no op writes, such as a feed, comes first): from the first op reading checkpoint k to the last op
writing checkpoint k + 1, plus one segment from the first op up to the first segment when that starts later; a
single checkpoint makes one segment, up to its last writer. Ops after the last segment, and between segments,
are differentiated as usual.
Values kept from the forward pass ("held"): the checkpoints, the variables no op on the path writes (feeds,
parameters), values crossing a segment's border (written inside and read after it, or read inside and written
before it), dropout seeds and the outputs of random ops (recomputing them would draw other numbers).
When the reverse walk (backward.py) reaches a segment's first grad op, it appends again every op of the segment
that writes a value not held, with each such value renamed ``<name>.subprog_<i>`` (i counts segments from the
last, as fluid names them); the segment's grad ops read those copies. A copy's persistable outputs (batch_norm's
running statistics) go to scratch variables, so a recomputation does not update them twice. The executor frees
every value after its last reader (NOTE [ Freeing intermediates ] in executor/executor.py): the activations
inside a segment die during the forward pass and live again only while their segment is differentiated.
Each dropout op on the path gets a ``seed`` op before it (its Seed input) so the recomputed mask is the first one.
Ops with sub-blocks (While, cond) cannot be inside a segment.
"""
import warnings
from collections import defaultdict

from .framework import unique_name
from .framework.variable import Variable

__all__ = ["Recompute"]

_RANDOM_OPS = frozenset({"uniform_random", "gaussian_random", "uniform_random_batch_size_like", "randint",
                         "gaussian_random_batch_size_like", "truncated_gaussian_random", "randperm", "sampling_id",
                         "random_crop", "seed"})


def _checkpoint_names(checkpoints):
    if not isinstance(checkpoints, (list, tuple)):
        raise TypeError(f"checkpoints must be a list of Variables, got {type(checkpoints).__name__}")
    names = []
    for c in checkpoints:
        if not isinstance(c, (Variable, str)):
            raise TypeError(f"checkpoints must be Variables (or their names), got {type(c).__name__}: {c!r}")
        names.append(c if isinstance(c, str) else c.name)
    return list(dict.fromkeys(names))


def _path(block, loss_name):
    """The ops of ``block`` the loss depends on, in program order."""
    last = max((i for i, op in enumerate(block.ops) if loss_name in op.output_arg_names), default=-1)
    needed, path = {loss_name}, []
    for op in reversed(block.ops[:last + 1]):
        if any(n in needed for n in op.output_arg_names):
            path.append(op)
            needed.update(op.input_arg_names)
    return path[::-1]


def _seed_dropouts(block, ops):
    """A ``seed`` op before every training dropout without a Seed input, wired into it (fluid's rule: the op's
    own seed when fix_seed is set, else a new random one each run)."""
    for op in ops:
        if op.type != "dropout" or op.input("Seed") or op.attr("is_test"):
            continue
        name = unique_name.generate("seed")
        seed = block.create_var(name=unique_name.generate(name + ".tmp"), shape=[1], dtype="int32",
                                stop_gradient=True)
        block._insert_op(block.ops.index(op), "seed", outputs={"Out": [seed.name]},
                         attrs={"seed": int(op.attr("seed")) if op.attr("fix_seed") else 0})
        op.inputs["Seed"] = [seed.name]


class Recompute:
    """The segments of one append_backward and what the reverse walk appends for them."""

    def __init__(self, block, loss, checkpoints):
        names = _checkpoint_names(checkpoints)
        self.block = block
        _seed_dropouts(block, _path(block, loss.name))
        ops = _path(block, loss.name)
        readers, writers = defaultdict(list), defaultdict(list)
        for i, op in enumerate(ops):
            for n in op.input_arg_names:
                readers[n].append(i)
            for n in op.output_arg_names:
                writers[n].append(i)
        unused = [n for n in names if n not in readers and n not in writers]
        if unused:
            warnings.warn(f"Recompute: checkpoints {unused} are not on the loss's path; they are ignored",
                          stacklevel=4)
        names = sorted((n for n in names if n not in unused), key=lambda n: max(writers[n], default=-1))
        segments = self._segments(names, readers, writers)
        held = set(names) | {n for n in readers if not writers[n]}
        held.update(n for op in ops if op.type in _RANDOM_OPS for n in op.output_arg_names)
        for start, end in segments:
            for op in ops[start:end]:
                held.update(n for n in op.output_arg_names if any(j >= end for j in readers[n]))
                held.update(n for n in op.input_arg_names if any(j < start for j in writers[n]))
        self.segment_of, self.plans, self.done = {}, [], set()
        for k, (start, end) in enumerate(segments):
            suffix = f".subprog_{len(segments) - 1 - k}"
            self.plans.append(self._plan(ops[start:end], held, suffix))
            self.segment_of.update((id(op), k) for op in ops[start:end])
        self.checkpoints, self.segments, self.held = names, segments, held

    @staticmethod
    def _segments(names, readers, writers):
        if len(names) == 1:
            end = max(writers[names[0]], default=-1)
            segments = [(0, end + 1)] if end > 0 else []
        else:
            segments = [(min(readers[a], default=len(readers) + len(writers)), max(writers[b], default=-1) + 1)
                        for a, b in zip(names, names[1:])]
            segments = [(s, e) for s, e in segments if s < e - 1]
        if segments and segments[0][0] != 0:
            segments.insert(0, (0, segments[0][0]))
        return segments

    def _plan(self, ops, held, suffix):
        """(ops to append again, forward name -> its copy's name) for one segment."""
        for op in ops:
            if op.attrs.get("sub_block") is not None:
                raise ValueError(f"Recompute: a {op.type!r} op (it runs a sub-block) lies between checkpoints; "
                                 "recomputation cannot repeat it: choose checkpoints around it")

        def kept(n):
            v = self.block._find_var_recursive(n)
            return n in held or v is None or v.persistable
        rename = {n: n + suffix for op in ops for n in op.input_arg_names + op.output_arg_names if not kept(n)}
        again = [op for op in ops if any(not kept(n) for n in op.output_arg_names)]
        for n, copy in rename.items():
            v = self.block._find_var_recursive(n)
            self.block.create_var(name=copy, shape=v.shape, dtype=v.dtype, lod_level=v.lod_level,
                                  stop_gradient=v.stop_gradient)
        return again, rename

    def before(self, walk, op):
        """Called before the grad ops of forward ``op``: on a segment's first, append its recomputation.
        Returns the renaming its grad ops need (None outside segments)."""
        k = self.segment_of.get(id(op))
        if k is None:
            return None
        again, rename = self.plans[k]
        if k not in self.done:
            self.done.add(k)
            for fwd in again:
                ins = {slot: [rename.get(n, n) for n in names] for slot, names in fwd.inputs.items()}
                outs = {slot: [rename.get(n) or self._scratch(n, fwd) for n in names]
                        for slot, names in fwd.outputs.items()}
                walk._append(fwd.type, ins, outs, fwd.attrs)
        return rename

    def _scratch(self, name, op):
        """A held output of a copy keeps its name (same value); a persistable one gets a scratch variable."""
        v = self.block._find_var_recursive(name)
        if v is None or not v.persistable:
            return name
        scratch = f"{name}.subprog_scratch"
        self.block.create_var(name=scratch, shape=v.shape, dtype=v.dtype, lod_level=v.lod_level)
        return scratch

    @staticmethod
    def rename(ops, rename):
        """Point the forward values the grad ``ops`` read to their recomputed copies."""
        for op in ops:
            op.inputs = {slot: [rename.get(n, n) for n in names] for slot, names in op.inputs.items()}
