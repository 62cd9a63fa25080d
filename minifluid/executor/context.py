"""What a context kernel sees (ExecutionContext), the run it belongs to (Frame), and how a sub-block
sees the values around it (ChainEnv).

NOTE [ Execution contexts and sub-blocks ]
Most kernels see arrays only (ops/registry.py). An op registered with ``context=True`` gets an
``ExecutionContext`` as its first argument:
* LoD: ``input_lod(slot)`` is the LoD its input carries (recursive sequence lengths, [] for none);
  ``set_output_lod(slot, lod)`` sets an output's. An output it sets none for gets the op's
  ``share_lod`` rule, else no LoD. LoD lives beside the value (``Scope._lods``), never in kernels.
* ``find_value(name)``: the run's values, then the parent scopes of the scope the run was given
  (a program run in a child scope still finds its parent's parameters).
* ``run_block(block, scope=None, over=None)`` runs a sub-block. Its plan is built once per (program version,
  block) and cached by the Executor beside block 0's, so a loop of N iterations costs N runs of the
  cached steps and no analysis. The block's values live in ``scope`` (default: a fresh child of the
  op's scope, kept by nobody); a ChainEnv reads them first, then the enclosing run's. A write goes to
  the block's scope when the block declares the variable (or its scope already holds it), and otherwise
  to the enclosing run, so a loop body updates its counter, and fills a tensor array, in the parent
  (fluid's scope lookup). LoD goes where its value goes. ``over=(kept scope, its block)`` reads a
  kept scope of an earlier run of another block between the two (a gradient block reads its forward
  step's values: ops/control_flow.py). Blocks that would run themselves (an op running its own
  block or an ancestor) are refused when the plan is built (framework/graph.py, networkx).
* ``place`` (the executor's), ``LoDTensor`` (the type) and ``random``: the program's generator, a RandomState seeded with its
  ``random_seed`` that advances run after run, or numpy's global random state for seed 0.
Frames: ``Executor.run`` pushes a Frame on a per-thread stack only for plans that hold a context op
(``Plan.needs_frame``); plans without one run exactly as before. Each sub-block run pushes its own.
"""
import threading

import numpy as np

from ..lod_tensor import LoDTensor
from . import timing as _timing
from .scope import Scope

__all__ = ["ChainEnv", "ExecutionContext", "Frame", "current_frame"]

_local = threading.local()


def current_frame():
    """The innermost run on this thread (only context kernels ask)."""
    frames = getattr(_local, "frames", None)
    if not frames:
        raise RuntimeError("a context op ran outside Executor.run (no execution frame on this thread)")
    return frames[-1]


class Frame:
    """One run of one block: who runs it, which program, in which scope, over which values and LoDs.
    ``outer`` is the scope Executor.run was given; ``find_value`` continues in its parents."""

    __slots__ = ("executor", "program", "scope", "values", "lods", "outer")

    def __init__(self, executor, program, scope, values, lods, outer=None):
        self.executor, self.program, self.scope = executor, program, scope
        self.values, self.lods, self.outer = values, lods, outer if outer is not None else scope

    def __enter__(self):
        frames = getattr(_local, "frames", None)
        if frames is None:
            frames = _local.frames = []
        frames.append(self)
        return self

    def __exit__(self, *exc):
        _local.frames.pop()


class ChainEnv:
    """A sub-block's values (or LoDs): its scope's own, then the enclosing run's (see the NOTE).

    ``owned``: the names the block declares (always local). The LoD env of a block passes its value
    env as ``values`` so a LoD is written where its value lives."""

    __slots__ = ("local", "parent", "owned", "values")

    def __init__(self, local, parent, owned, values=None):
        self.local, self.parent, self.owned, self.values = local, parent, owned, values

    def is_local(self, name):
        if self.values is not None:
            return self.values.is_local(name)
        return name in self.owned or name in self.local

    def __getitem__(self, name):
        local = self.local
        return local[name] if name in local else self.parent[name]

    def get(self, name, default=None):
        local = self.local
        return local[name] if name in local else self.parent.get(name, default)

    def __contains__(self, name):
        return name in self.local or name in self.parent

    def __setitem__(self, name, value):
        if self.is_local(name):
            self.local[name] = value
        else:
            self.parent[name] = value

    def pop(self, name, default=None):
        return self.local.pop(name, default) if self.is_local(name) else self.parent.pop(name, default)


class ExecutionContext:
    """The first argument of a kernel registered with ``context=True`` (see the NOTE)."""

    __slots__ = ("op", "attrs", "_frame", "out_lods")
    LoDTensor = LoDTensor
    """The LoDTensor type, for a kernel that hands tensors to user code (ops/py_func.py; ops import no runtime)."""

    def __init__(self, op, frame):
        self.op, self.attrs, self._frame = op, op.attrs, frame
        self.out_lods = {}
        """Output variable name -> LoD set by the kernel (read by the executor after the call)."""

    def input_lod(self, slot, index=0):
        """The LoD of input ``slot``'s ``index``-th variable as recursive sequence lengths ([] for none)."""
        return self._frame.lods.get(self.op.inputs[slot][index]) or []

    def set_output_lod(self, slot, lod, index=0):
        """Give output ``slot``'s ``index``-th variable this LoD (recursive sequence lengths; [] for none)."""
        self.out_lods[self.op.outputs[slot][index]] = [list(level) for level in lod] if lod else []

    def value_lod(self, name):
        """The LoD ``name`` holds in this run (recursive sequence lengths; [] for none)."""
        return self._frame.lods.get(name) or []

    def find_value(self, name):
        """``name``'s value: the run's values, then the parent scopes of the run's scope (None if nowhere)."""
        value = self._frame.values.get(name)
        if value is None and self._frame.outer._parent is not None:
            value = self._frame.outer._parent.find_value(name)
        return value

    @property
    def scope(self):
        """The scope this op runs in (a sub-block's own scope inside run_block)."""
        return self._frame.scope

    @property
    def place(self):
        return self._frame.executor.place

    @property
    def random(self):
        """The program's random generator (see the NOTE)."""
        program = self._frame.program
        seed = program.random_seed
        if not seed:
            return np.random
        held = program.__dict__.get("_context_random")
        if held is None or held[0] != seed:
            held = program._context_random = (seed, np.random.RandomState(seed))
        return held[1]

    def run_block(self, block, scope=None, over=None):
        """Run ``block`` (a Block or its index) of this program once, in ``scope`` (default: a fresh child
        of this op's scope); returns that scope. ``over``: a (scope, block) pair, a kept scope of an
        earlier run of that block, read after ``scope`` and before the enclosing run (see the NOTE)."""
        frame = self._frame
        executor = frame.executor
        plan = executor._plan(frame.program, (), (), block if isinstance(block, int) else block.idx)
        if scope is None:
            scope = Scope(frame.scope)
        parent_values, parent_lods = frame.values, frame.lods
        if over is not None:
            kept, kept_block = over
            owned = executor._plan(frame.program, (), (), kept_block.idx).owned
            parent_values = ChainEnv(kept._vars, parent_values, owned)
            parent_lods = ChainEnv(kept._lods, parent_lods, owned, parent_values)
        values = ChainEnv(scope._vars, parent_values, plan.owned)
        lods = ChainEnv(scope._lods, parent_lods, plan.owned, values)
        with Frame(executor, frame.program, scope, values, lods, frame.outer):
            for step in plan.steps if _timing.recorder is None else _timing.recorder.timed(plan.steps):
                step(values, lods)
        return scope
