"""Executor.run: prepare a plan once per (program version, feed names, fetch names), then run it.

NOTE [ Execution plans ]
Analysing a Program (looking up op specs, binding attrs, resolving slot names,
finding feed specs and validating fetch names) happens once, in ``build_plan``.
A plan is a list of small closures, one per op, each reading its inputs from the
scope's value dict and writing its outputs back. Plans are cached per Program in a
WeakKeyDictionary and keyed by ``program._version``, which every edit bumps, so a
changed Program can never run a stale plan. Nothing in a plan refers back to its Program
(steps keep the names and attrs they need, a context op only a weak reference to its Operator),
so the cache never keeps a Program alive. The per-call path is: cache lookup,
feed conversion + checks, the op loop, fetch. Sub-blocks get plans the same way, keyed by
their index (NOTE [ Execution contexts and sub-blocks ] in context.py).

NOTE [ Freeing intermediates ]
Block 0's plan drops each intermediate value from the scope right after the last op that reads it, as
fluid's eager garbage collection does (fluid keeps them in a local scope deleted when the run ends), so
a training step holds only the activations the backward pass still needs. Computed once per plan by
``_dead_after``: a name is dropped when the plan writes it before any op reads it (a value carried in
from an earlier run stays), its variable is not persistable, it is neither fed nor fetched (nor a
saved program's feed / fetch op's variable), no other block names it (a sub-block reads and writes the
values around it) and no context op names it in its attrs. Persistables, feeds, fetch targets and the
values a run does not write stay; ``scope.find_var`` of a dropped intermediate returns None
after the run, as in fluid.

LoD is decided here too: an op that moves LoD (a context op, a ``produces_lod`` op, or a
``share_lod`` rule whose input can carry LoD) gets a step that sets or clears its outputs' LoD;
every other op's step never looks at LoD. An input can carry LoD when its variable has
``lod_level`` > 0 (as fluid tracks it while building), when it is fed a LoDTensor with LoD (the
names fed with LoD are part of the plan's key, so a LoDTensor fed into a ``lod_level`` 0 variable
still reaches ``embedding`` and the sequence ops), or when an earlier op of the block moved LoD into
it (``compile_ops`` follows the ops in order). A sub-block's inputs come from the enclosing run, so
every op of a sub-block that has a LoD rule moves LoD.
"""
import operator
import weakref
from typing import NamedTuple

import numpy as np

from ..errors import FEEDING_ERRORS
from .._malloc import keep_freed_memory
from ..framework.program import Program, default_main_program
from ..lod_tensor import LoDTensor, LoDTensorArray, float_friendly
from ..ops.io import FEED_FETCH_OPS
from ..ops.registry import EMPTY_VAR_NAME, get_op_spec
from ..ops.tensor_array import TensorArray
from ..places import CPUPlace
from . import prune as _prune
from . import timing as _timing
from .context import ExecutionContext, Frame, current_frame
from .feed_fetch import (FeedSpec, feed_into, fetch_names, forget_lod, lod_feed_names, normalize_feed,
                         warn_unknown_feed)
from .scope import global_scope

__all__ = ["Executor", "build_plan", "compile_ops", "Plan", "resolve_feeds_and_fetches", "start_arrays"]


class Plan:
    """Everything ``Executor.run`` needs that depends only on the Program and the names."""

    __slots__ = ("feeds", "steps", "fetches", "to_device", "needs_frame", "owned", "lod_free", "persistables",
                 "declared_in")

    def __init__(self, feeds, steps, fetches, to_device=None, needs_frame=False, owned=frozenset(),
                 lod_free=frozenset()):
        self.feeds, self.steps, self.fetches = feeds, steps, fetches
        self.to_device = to_device
        self.needs_frame = needs_frame  # a context op is among the steps: run them inside a Frame
        self.owned = owned  # the names the block declares (a sub-block's own variables)
        self.lod_free = lod_free  # names written by steps that never look at LoD (compile_ops)
        self.persistables = ()  # block 0's persistable variables, declared in a scope at its first run
        self.declared_in = weakref.WeakSet()  # the scopes they are declared in


class _OpName(NamedTuple):
    """What a step's error messages say about its op (a step keeps no reference to the Operator)."""
    type: str
    inputs: dict
    outputs: dict


def _missing_input_error(op, env, names):
    missing = [n for n in names if n not in env or env[n] is None]
    return RuntimeError(
        f"Operator {op.type!r} needs variable(s) {missing}, which are not initialized in the scope. "
        "Feed them, or run the startup program first (exe.run(fluid.default_startup_program())).")


def _kernel_failed(op, env, names, e):
    """In a step's ``except``: the clear error for inputs that have no value, or None once ``e`` is
    annotated with the op (the step then re-raises ``e``)."""
    if isinstance(e, (KeyError, TypeError, AttributeError)) and any(n not in env or env[n] is None for n in names):
        return _missing_input_error(op, env, names)
    if not isinstance(e, FEEDING_ERRORS):
        e.add_note(f"(in minifluid operator {op.type!r}, inputs {op.inputs}, outputs {op.outputs})")
    return None


def _lod_sources(op, spec, carriers=None):
    """(output name, input name) pairs of the op's share_lod rule whose input can carry LoD: its variable
    has ``lod_level`` > 0 or is among ``carriers`` (None: any input can)."""
    block = op.block
    pairs = []
    for out_slot, in_slot in spec.share_lod:
        src = (op.inputs.get(in_slot) or [None])[0]
        var = block._find_var_recursive(src) if src is not None else None
        if var is not None and (var.lod_level or spec.context or carriers is None or src in carriers):
            pairs += [(name, src) for name in op.outputs.get(out_slot) or ()]
    return pairs


def compile_ops(ops, to_device=None, lod_names=None, lod_free=None, fed=()):
    """One step per op, in order (see the NOTE). ``lod_names``: the names that may hold LoD before the
    first op (those fed with LoD); None: any input may (a sub-block). ``lod_free`` (a set) collects the
    outputs of the steps that never look at LoD: a run clears a LoD an earlier run left on them. ``fed``:
    the names a run feeds (an op that updates one in place gets a copy: the array is the caller's)."""
    carriers = None if lod_names is None else set(lod_names)
    steps = []
    for op in ops:
        spec = get_op_spec(op.type)
        shared = _lod_sources(op, spec, carriers)
        step = _compile_op(op, to_device, shared, fed)
        step.op_type = op.type  # what the profiler's table calls it (NOTE [ Profiling op steps ] in timing.py)
        steps.append(step)
        if carriers is not None:
            # a reader's outputs (produces_lod) carry LoD as their variables' lod_level declares
            carriers.update(op.output_arg_names if spec.context else (o for o, _ in shared))
        if lod_free is not None and not (shared or spec.context or spec.produces_lod):
            lod_free.update(op.output_arg_names)
    return steps


def _on_device(to_device, value):
    """Move a kernel result (array, tuple/list of them, LoDTensor, None) with ``to_device``."""
    if value is None or isinstance(value, (str, bytes)):
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_on_device(to_device, v) for v in value)
    if isinstance(value, LoDTensor):
        return LoDTensor(to_device(value._array), value._lod, value._placement)
    return to_device(value) if hasattr(value, "__array_interface__") else value


def _copied_inputs(op, spec, fed):
    """The input positions of an in-place kernel (registry.py ``inplace``) that must get a copy: the output
    is another variable, or the input is fed (NOTE [ In-place optimizer updates ] in ops/optimizer.py)."""
    positions = []
    for out_slot, in_slot in spec.inplace:
        source, target = op.inputs.get(in_slot) or [], op.outputs.get(out_slot) or []
        if source and (source != target or source[0] in fed):
            positions.append(spec.inputs.index(in_slot))
    return positions


def _compile_op(op, to_device=None, shared=None, fed=()):
    """One closure ``step(env, lods)`` that runs ``op`` against a value dict; ``shared``: the op's
    (output, input) LoD pairs to carry (default: those whose input variable has ``lod_level`` > 0).

    On a GPU place ``to_device`` (``cupy.asarray``) moves every kernel result to the device, so
    host-made values (initialisers, reader batches) meet device-resident ones as CuPy arrays; on
    CPU nothing is added to the step.
    """
    spec = get_op_spec(op.type)
    fn = _context_kernel(op, spec, to_device) if spec.context else spec.bind(op)
    op_name = _OpName(op.type, op.inputs, op.outputs)
    if to_device is not None and not spec.context:
        host_fn = fn
        fn = lambda *args: _on_device(to_device, host_fn(*args))  # noqa: E731
    copied = _copied_inputs(op, spec, fed) if spec.inplace else ()
    if copied:
        in_place_fn = fn

        def fn(*args):
            args = list(args)
            for i in copied:
                args[i] = args[i].copy()
            return in_place_fn(*args)
    in_refs = []
    for slot in spec.inputs:
        names = op.inputs.get(slot) or []
        in_refs.append(list(names) if slot in spec.duplicable else (names[0] if names else None))
    out_refs = []
    for slot in spec.outputs:
        names = op.outputs.get(slot) or []
        out_refs.append(list(names) if slot in spec.duplicable else (names[0] if names else None))
    all_in = [n for ref in in_refs if ref is not None for n in ([ref] if isinstance(ref, str) else ref)]
    simple_in = all(isinstance(r, str) for r in in_refs)
    if simple_in and len(in_refs) == 1:
        only = in_refs[0]
        get_args = lambda env: (env[only],)  # noqa: E731
    elif simple_in and in_refs:
        getter = operator.itemgetter(*in_refs)
        get_args = getter
    elif any(EMPTY_VAR_NAME in r for r in in_refs if isinstance(r, list)):  # py_func's grad op: None for it
        def get_args(env):
            return [None if r is None else env[r] if isinstance(r, str) else
                    [None if n == EMPTY_VAR_NAME else env[n] for n in r] for r in in_refs]
    else:
        def get_args(env):
            return [None if r is None else env[r] if isinstance(r, str) else [env[n] for n in r]
                    for r in in_refs]
    single_out = len(out_refs) == 1 and isinstance(out_refs[0], str)
    out0 = out_refs[0] if single_out else None
    if shared is None:
        shared = _lod_sources(op, spec, ())
    lod_aware = spec.produces_lod or spec.context or bool(shared)

    def store(env, lods, result, new_lods):
        results = (result,) if len(out_refs) == 1 else result
        for ref, value in zip(out_refs, results):
            if not ref or value is None:
                continue
            if isinstance(ref, str):
                ref, value = [ref], [value]
            for name, v in zip(ref, value):
                if lod_aware:  # an op that moves LoD also clears a stale one
                    if isinstance(v, LoDTensor):
                        lod, v = v._lod, v._array
                    else:
                        lod = new_lods.get(name)
                    if lod:
                        lods[name] = lod
                    else:
                        forget_lod(lods, name)
                env[name] = v

    if lod_aware:
        context = spec.context

        def step(env, lods):
            try:
                result, new_lods = fn(*get_args(env)) if context else (fn(*get_args(env)), {})
            except Exception as e:
                error = _kernel_failed(op_name, env, all_in, e)
                if error is not None:
                    raise error from None
                raise
            for out_name, in_name in shared:
                if out_name not in new_lods:
                    new_lods[out_name] = lods.get(in_name)
            store(env, lods, result, new_lods)
        return step

    def step(env, lods):
        try:
            result = fn(*get_args(env))
        except Exception as e:
            error = _kernel_failed(op_name, env, all_in, e)
            if error is not None:
                raise error from None
            raise
        if single_out:
            env[out0] = result
        else:
            store(env, lods, result, None)
    return step


def _context_kernel(op, spec, to_device=None):
    """``fn(*inputs) -> (result, output LoDs)``: the context kernel called with an ExecutionContext."""
    kernel, op_ref = spec.kernel, weakref.ref(op)  # the Operator lives as long as its Program runs

    def call(*args):
        op = op_ref()
        ctx = ExecutionContext(op, current_frame())
        result = kernel(ctx, op.attrs, *args)
        return (result if to_device is None else _on_device(to_device, result)), ctx.out_lods
    return call


def _dead_after(block, ops, keep):
    """Per op of ``ops`` (block 0's, in run order): the names to drop from the scope once it has run
    (NOTE [ Freeing intermediates ])."""
    elsewhere = {name for other in block.program.blocks if other is not block for op in other.ops
                 for name in op.input_arg_names + op.output_arg_names}
    seen, written_first, last = set(), set(), {}
    for i, op in enumerate(ops):
        reads = op.input_arg_names
        if get_op_spec(op.type).context:  # a context op may look a value up by a name in its attrs
            reads = reads + [v for value in op.attrs.values() for v in (value if isinstance(value, (list, tuple))
                                                                         else [value]) if isinstance(v, str)]
        for name in reads:
            seen.add(name)
            last[name] = i
        for name in op.output_arg_names:
            if name not in seen:
                seen.add(name)
                written_first.add(name)
            last[name] = i
    dead = [[] for _ in ops]
    for name in sorted(written_first - keep - elsewhere):
        var = block._find_var_recursive(name)
        if var is not None and not var.persistable:
            dead[last[name]].append(name)
    return dead


def _freeing(step, dead):
    """``step`` followed by dropping the values (and LoDs) named in ``dead`` from the run's scope."""
    def run(env, lods):
        step(env, lods)
        for name in dead:
            env.pop(name, None)
            lods.pop(name, None)
    run.op_type = step.op_type  # the profiler's name for it (timing.py)
    return run


def resolve_feeds_and_fetches(block, feed_names, fetch_list_names):
    """FeedSpec per fed name (None, with fluid's warning, for a name the program lacks); raises for
    a fetch name the program lacks. Shared by Executor and CompiledProgram plans."""
    feeds = {}
    for name in feed_names:
        var = block._find_var_recursive(name)
        if var is None:
            warn_unknown_feed(name)
        feeds[name] = FeedSpec(var) if var is not None else None
    for name in fetch_list_names:
        if block._find_var_recursive(name) is None:
            raise ValueError(f"Cannot fetch variable {name!r}: it is not in the program (fetch_list names a "
                             "variable the program does not define)")
    return feeds


def build_plan(program, feed_names, fetch_list_names, block_idx=0, to_device=None, lod_feeds=None):
    """The Plan of one block; ``lod_feeds``: the fed names whose values carry LoD (None for a sub-block:
    any input may, see the NOTE)."""
    block = program.block(block_idx)
    if program.num_blocks > 1:
        from ..framework import graph  # noqa: PLC0415 - networkx takes ~0.3 s to import: only for sub-blocks
        cycle = graph.block_cycle(program)
        if cycle is not None:
            raise ValueError(f"Program blocks {cycle} run each other in a cycle (an op's sub-block is its own "
                             "block or an ancestor): running them would never end")
    feeds = resolve_feeds_and_fetches(block, feed_names, fetch_list_names)
    lod_free = set()
    ops = [op for op in block.ops if op.type not in FEED_FETCH_OPS]
    steps = compile_ops(ops, to_device, lod_feeds if block_idx == 0 else None, lod_free, frozenset(feed_names))
    if block_idx == 0:
        keep = set(feed_names) | set(fetch_list_names) | {name for op in block.ops if op.type in FEED_FETCH_OPS
                                                           for name in op.input_arg_names + op.output_arg_names}
        steps = [_freeing(step, dead) if dead else step for step, dead in zip(steps, _dead_after(block, ops, keep))]
    start = start_arrays(block)
    if start is not None:
        steps.insert(0, start)
    # persistable values are updated in place by optimizer kernels: fetch a copy of those
    fetches = tuple((name, bool(getattr(block._find_var_recursive(name), "persistable", False)))
                    for name in fetch_list_names)
    needs_frame = any(get_op_spec(op.type).context for op in block.ops)
    plan = Plan(feeds, steps, fetches, to_device, needs_frame, frozenset(block.vars), frozenset(lod_free))
    if block_idx == 0:
        plan.persistables = persistable_names(block)
    return plan


def start_arrays(block):
    """The step that starts each run of ``block`` with its tensor arrays empty (ops/tensor_array.py), or None."""
    arrays = [name for name, var in block.vars.items() if var.type == "LOD_TENSOR_ARRAY" and not var.persistable]
    if not arrays:
        return None

    def start(env, lods):
        for name in arrays:
            env[name] = TensorArray()
    return start


def persistable_names(block):
    """The block's persistable tensors: a run declares them in its scope, as fluid creates every persistable
    variable before running (``scope.find_var`` finds one even when no op of the run wrote it)."""
    return tuple(name for name, var in block.vars.items()
                 if var.persistable and var.type == "LOD_TENSOR")


def declare(names, scope):
    """Declare ``names`` in ``scope`` (no value yet) where it has no entry for them."""
    values = scope._vars
    for name in names:
        if name not in values:
            values[name] = None


class Executor:
    """Runs Programs on a place. The scope holds every value between runs."""

    def __init__(self, place=None):
        self.place = place if place is not None else CPUPlace()
        self._plans = weakref.WeakKeyDictionary()
        self._pruned_programs = weakref.WeakKeyDictionary()  # program -> {prune key: pruned copy} (prune.py)
        self._to_device = None  # cupy.asarray on a GPU place, resolved at the first run
        keep_freed_memory()  # NOTE [ Reusing freed memory ] in _malloc.py

    def close(self):
        self._plans.clear()
        self._pruned_programs.clear()

    def _device_mover(self):
        """None on CPU; on a GPU place ``cupy.asarray`` (a clear error when there is no usable GPU)."""
        if self._to_device is None and self.place.is_gpu_place():
            self._to_device = self.place.array_module().asarray
        return self._to_device

    def _plan(self, program, feed_names, fetch_list_names, block_idx=0, lod_feeds=()):
        per_program = self._plans.get(program)
        if per_program is None:
            per_program = self._plans[program] = {}
        key = (program._version, feed_names, fetch_list_names, block_idx, lod_feeds)
        plan = per_program.get(key)
        if plan is None:
            if len(per_program) > 64:  # a Program edited in a loop: keep the cache small
                per_program.clear()
            plan = per_program[key] = build_plan(program, feed_names, fetch_list_names, block_idx,
                                                 self._device_mover(), lod_feeds)
        return plan

    def run(self, program=None, feed=None, fetch_list=None, feed_var_name="feed", fetch_var_name="fetch",
            scope=None, return_numpy=True, use_program_cache=False, return_merged=True, use_prune=False):
        """Run block 0 of ``program`` once; returns the fetched values in ``fetch_list`` order. With
        ``use_prune``, or optimizer ops in ``fetch_list``, only the ops the fetches need run
        (NOTE [ Pruning at run time ] in prune.py)."""
        if program is None:
            program = default_main_program()
        scope = scope if scope is not None else global_scope()
        if use_prune or (isinstance(fetch_list, (list, tuple)) and _prune._needs_split(fetch_list)):
            program, feed, fetch_list = self._pruned(program, feed, fetch_list, use_prune)
        scheduled = getattr(program, "_program", program)
        if scheduled.lr_sheduler is not None:  # paddle 2.x static mode: the scheduler's current rate
            rate = np.array([scheduled.lr_sheduler()], dtype="float32")
            scope._vars[scheduled._lr_var_name] = rate if self._device_mover() is None else self._to_device(rate)
        if not isinstance(program, Program):
            runner = getattr(program, "_run_with", None)
            if runner is None:
                raise TypeError(f"Executor.run needs a Program or CompiledProgram, got {type(program).__name__}")
            return runner(self, feed, fetch_list, scope, return_numpy, return_merged)
        feed = normalize_feed(feed)
        plan = self._plan(program, tuple(feed), fetch_names(fetch_list), 0, lod_feed_names(feed))
        feed_into(plan.feeds, feed, scope._vars, scope._lods, plan.to_device)
        return self._execute(plan, program, scope, return_numpy)

    def _pruned(self, program, feed, fetch_list, use_prune):
        """(program, feed, fetch list) to run: a pruned copy when asked for or when optimizer ops are fetched."""
        fetches, optimize_ops = _prune.split_optimize_ops(fetch_list)
        if not (use_prune or optimize_ops):
            return program, feed, fetches
        per_program = self._pruned_programs.get(program)
        if per_program is None:
            per_program = self._pruned_programs[program] = {}
        key = _prune.prune_cache_key(program, feed, fetch_list if isinstance(fetch_list, (list, tuple)) else fetches)
        pruned = per_program.get(key)
        if pruned is None:
            if len(per_program) > 64:
                per_program.clear()
            pruned = per_program[key] = self._prune_program(program, feed, fetches, optimize_ops)
        return pruned, _prune.update_feed(pruned, feed), fetches

    def _prune_program(self, program, feed=None, fetch_list=None, optimize_ops=None):
        """A copy of ``program`` with only the ops ``fetch_list`` and ``optimize_ops`` need (prune.py)."""
        return _prune.prune_program(program, feed, fetch_list or [], optimize_ops or [])

    def _execute(self, plan, program, scope, return_numpy=True):
        """Run a plan whose feeds are in ``scope`` (inside a Frame when it has context ops)."""
        if plan.persistables and scope not in plan.declared_in:
            declare(plan.persistables, scope)
            plan.declared_in.add(scope)
        if plan.needs_frame:
            with Frame(self, program, scope, scope._vars, scope._lods):
                return self._run_plan(plan, scope._vars, scope._lods, return_numpy)
        return self._run_plan(plan, scope._vars, scope._lods, return_numpy)

    def train_from_dataset(self, program=None, dataset=None, scope=None, thread=0, debug=False, fetch_list=None,
                           fetch_info=None, print_period=100, fetch_handler=None):
        """Run ``program`` on every batch of ``dataset`` (a fluid.dataset QueueDataset/InMemoryDataset):
        ``thread`` readers (0: the dataset's thread count) feed it in turn; the ``fetch_list`` values are
        printed with their ``fetch_info`` every ``print_period`` batches of reader 0. Returns None.
        The dataset runs it (data/dataset_run.py)."""
        if dataset is None:
            raise RuntimeError("dataset is need and should be initialized")
        return dataset._run(self, program, scope, thread, debug, fetch_list, fetch_info, print_period, fetch_handler)

    def infer_from_dataset(self, program=None, dataset=None, scope=None, thread=0, debug=False, fetch_list=None,
                           fetch_info=None, print_period=100, fetch_handler=None):
        """``train_from_dataset`` for evaluation: the same run (pass a test clone of the program)."""
        return self.train_from_dataset(program, dataset, scope, thread, debug, fetch_list, fetch_info, print_period,
                                       fetch_handler)

    @staticmethod
    def _run_plan(plan, env, lods, return_numpy=True):
        if lods:  # a LoD an earlier run (another plan) left where this plan writes none
            for name in plan.lod_free.intersection(lods):
                forget_lod(lods, name)
        for step in plan.steps if _timing.recorder is None else _timing.recorder.timed(plan.steps):
            step(env, lods)
        return [_fetch_value(env, lods, name, copy, return_numpy) for name, copy in plan.fetches]


def _fetch_value(env, lods, name, copy, return_numpy):
    value = env.get(name)
    if value is None:
        return None
    if isinstance(value, TensorArray):  # fluid's LoDTensorArray: a list of arrays (return_numpy) or LoDTensors
        entries = [(None, None) if e is None else e for e in value]
        if return_numpy:
            return [v for v, _ in entries]
        return LoDTensorArray(LoDTensor(v, lod) for v, lod in entries)
    if copy:
        value = value.copy()
    lod = lods.get(name)
    if return_numpy:
        if lod:
            raise RuntimeError(
                "Some of your fetched tensors hold LoD information. They can not be completely cast to "
                f"Python ndarray (variable {name!r}). Please set the parameter 'return_numpy' as 'False' "
                "to return LoDTensor itself directly.")
        value = value.get() if hasattr(value, "get") and not isinstance(value, np.ndarray) else value
        return float_friendly(value)
    return LoDTensor(value, lod)
