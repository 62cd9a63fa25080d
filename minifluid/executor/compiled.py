"""CompiledProgram.with_data_parallel: one replica per place, gradients averaged before the optimizer.

NOTE [ Data parallel on CPU ]
Ops are split by ``op_role``: the compute part (forward + backward) runs once per
place on that place's share of the feed, in a child environment layered over the
scope (``ChainMap``: reads fall through to parameters, writes stay local). The
gradients the optimizer ops read are averaged across replicas (fluid's
scale-by-1/P + allreduce), written to the scope, and the optimizer part runs once. A fetched gradient
is what fluid's replica holds: the average for those, its own over P for any other.
Replicas run one after another: on numpy this equals P devices in lock-step.

NOTE [ Splitting a dict feed ]
Each fed value is split on dim 0 with fluid's rule (``split_feed``), so a batch smaller than the
number of places gives fewer parts, and only that many replicas run (fluid's partial feed; the
averaged gradients are over the replicas that ran). A persistable variable fed one row (a learning
rate, say) is copied to every place. The non-persistable variables must give equal numbers of parts,
and the persistable ones as many or more: a feed whose rows would go unused is a ValueError, never a
silent drop.
"""
import weakref
from collections import ChainMap

import numpy as np

from ..framework.block import Block
from ..framework.program import Program
from ..lod_tensor import LoDTensor, LoDTensorArray
from ..ops.io import FEED_FETCH_OPS
from ..ops.registry import GRAD_SUFFIX, OpRole
from ..places import cpu_places, cuda_places, non_empty_places
from . import timing as _timing
from .build_strategy import BuildStrategy, ExecutionStrategy
from .context import Frame
from .executor import _fetch_value, compile_ops, declare, persistable_names, resolve_feeds_and_fetches, start_arrays
from .feed_fetch import convert_feed_value, feed_into, fetch_names, split_feed

__all__ = ["CompiledProgram", "BuildStrategy", "ExecutionStrategy"]


_DATA_PARALLEL = "CompiledProgram.with_data_parallel (one replica per place)"


class _ParallelPlan:
    __slots__ = ("feeds", "compute", "optimize", "grads", "params", "fetches", "reader", "persistables", "declared_in",
                 "borrowed", "branch_optimizer")


def _is_optimize(op):
    return bool(int(op.attrs.get("op_role", 0)) & (OpRole.Optimize | OpRole.LRSched))


def _optimizes(block):
    """``block`` (or a block its ops run) updates parameters: an optimizer minimized inside control flow."""
    return any(_is_optimize(op) or isinstance(op.attrs.get("sub_block"), Block) and _optimizes(op.attrs["sub_block"])
               for op in block.ops)


def _build_parallel_plan(program, feed_names, fetch_list_names):
    block = program.global_block()
    plan = _ParallelPlan()
    plan.feeds = resolve_feeds_and_fetches(block, feed_names, fetch_list_names)
    compute_ops = [op for op in block.ops if not _is_optimize(op) and op.type not in FEED_FETCH_OPS]
    optimize_ops = [op for op in block.ops if _is_optimize(op)]
    written = {n for op in compute_ops for n in op.output_arg_names}
    plan.grads = sorted({n for op in optimize_ops for n in op.input_arg_names
                         if n in written and not getattr(block._find_var_recursive(n), "persistable", False)})
    plan.borrowed = sorted({n for op in optimize_ops for n in op.input_arg_names if n in feed_names
                            and not getattr(block._find_var_recursive(n), "persistable", False)})
    plan.params = {p.name for p in block.all_parameters() if p.trainable}
    plan.branch_optimizer = any(_optimizes(op.attrs["sub_block"]) for op in block.ops
                                if isinstance(op.attrs.get("sub_block"), Block))
    plan.compute = compile_ops(compute_ops, lod_names=feed_names, fed=frozenset(feed_names))  # any fed name may
    start = start_arrays(block)  # each replica's run starts the block's tensor arrays empty, as a Program's does
    if start is not None:
        plan.compute.insert(0, start)
    plan.optimize = compile_ops(optimize_ops, lod_names=(), fed=frozenset(feed_names))  # carry LoD on a place
    plan.fetches = fetch_list_names
    plan.persistables, plan.declared_in = persistable_names(block), weakref.WeakSet()
    read_ops = [op for op in block.ops if op.type == "read"]
    plan.reader = (read_ops[0].input("Reader")[0], read_ops[0].attrs.get("drop_last", True)) if read_ops else None
    return plan


def _scale_fetched_grads(plan, envs, scope):
    """Fetched gradients as fluid's CoeffNumDevice gives them: each replica's loss gradient is 1/P, so a
    gradient the optimizer reads is the all-reduced average on every place and any other is its replica's
    value over P (NOTE [ Data parallel on CPU ])."""
    for name in plan.fetches:
        values = [env.maps[0].get(name) for env, _ in envs]
        if GRAD_SUFFIX not in name or len(envs) < 2 or any(getattr(v, "dtype", None) is None for v in values):
            continue
        if name in plan.grads and name in scope._vars:
            values = [scope._vars[name]] * len(envs)
        elif name[:-len(GRAD_SUFFIX)] in plan.params:  # all-reduced even with no optimizer
            values = [sum(values[1:], values[0]) / len(envs)] * len(envs)
        elif values[0].dtype.kind == "f":
            values = [v / len(envs) for v in values]
        for (env, _), value in zip(envs, values):
            env.maps[0][name] = value


def _merged(name, per_device):
    """One fetched value from every place's, joined on dim 0; a tensor array entry by entry (fluid's merge)."""
    first = per_device[0]
    if not isinstance(first, list):
        arrays = [np.asarray(v) for v in per_device]
        merged = np.concatenate([a.reshape(1) if a.ndim == 0 else a for a in arrays], axis=0)
        if isinstance(first, LoDTensor):  # as fluid merges them: the places' sequences one after another
            lods = [v.recursive_sequence_lengths() for v in per_device]
            lod = [sum((lod[k] for lod in lods), []) for k in range(len(lods[0]))] if all(lods) else None
            merged = LoDTensor(merged, lod)
        return merged
    if len({len(v) for v in per_device}) > 1:
        raise ValueError(f"Cannot merge the tensor array {name!r} fetched from {len(per_device)} places: they hold "
                         f"{[len(v) for v in per_device]} entries (fetch it with return_merged=False)")
    entries = [_merged(name, [v[k] for v in per_device]) for k in range(len(first))]
    if not isinstance(first, LoDTensorArray):
        return entries
    merged = LoDTensorArray()
    for k, value in enumerate(entries):  # sequences of every place one after another
        parts = [v[k].recursive_sequence_lengths() for v in per_device]
        depth = len(parts[0]) if all(len(p) == len(parts[0]) for p in parts) else 0
        merged.append(LoDTensor(value, [sum((p[level] for p in parts), []) for level in range(depth)]))
    return merged


def _split_dict(feed, num_places, specs):
    """One feed dict split on dim 0 across the places (NOTE [ Splitting a dict feed ])."""
    parts, persistable = {}, set()
    for name, value in feed.items():
        spec = specs.get(name)
        chunks = [LoDTensor(array, lod) if lod else array
                  for array, lod in split_feed(*convert_feed_value(name, value, spec), num_places)]
        if spec is not None and spec.persistable:
            persistable.add(name)
            if len(chunks) == 1:
                chunks *= num_places
        parts[name] = chunks
    counts = {}
    for name, chunks in parts.items():
        counts.setdefault(name in persistable, {})[name] = len(chunks)
    for kind, of_kind in counts.items():
        if len(set(of_kind.values())) > 1:
            raise ValueError(
                f"The feeded number of different {'persistable' if kind else 'non-persistable'} variables should "
                f"be the same: split across {num_places} places they give {of_kind} parts, and running the "
                "smallest number of places would leave the others' rows unused. Feed as many rows to each.")
    data_parts = next(iter(counts.get(False, counts.get(True, {0: 0})).values()))
    state_parts = next(iter(counts.get(True, {0: data_parts}).values()))
    if state_parts < data_parts:
        raise ValueError(
            "The feeded number of persistable variables should not be less than non-persistable variables: "
            f"{counts[True]} parts for {counts[False]} (feed one row of a persistable variable to copy it to "
            f"every place, or as many rows as the places used, {data_parts})")
    return [{name: chunks[k] for name, chunks in parts.items()} for k in range(data_parts)]


class CompiledProgram:
    """Wraps a Program; ``with_data_parallel`` runs it on several places."""

    def __init__(self, program_or_graph, build_strategy=None):
        if not isinstance(program_or_graph, Program):
            raise TypeError(f"CompiledProgram needs a Program, got {type(program_or_graph).__name__}")
        self._program = program_or_graph
        self._places = None
        self._data_parallel = False
        self._loss_name = None
        self._share_vars_from = None
        self._build_strategy = build_strategy
        self._compiled_for = None  # (scope, place) of the first compile or run
        self._plans = {}
        self._is_inference, self._infer_config, self._predictor = False, None, None

    def with_data_parallel(self, loss_name=None, build_strategy=None, exec_strategy=None,
                           share_vars_from=None, places=None):
        self._data_parallel = True
        self._loss_name = loss_name
        self._share_vars_from = share_vars_from
        if build_strategy is not None:
            self._build_strategy = build_strategy
        self._places = non_empty_places(places, _DATA_PARALLEL) if places is not None else None
        return self

    def with_inference_optimize(self, config):
        """Run through a native predictor of ``config`` (a ``core.NativeConfig``: the saved model's
        folder): ``exe.run(compiled, feed=[PaddleTensor, ...])`` returns PaddleTensors (inference_api.py)."""
        if not hasattr(config, "_create_predictor"):
            raise TypeError(f"with_inference_optimize needs a fluid.core.NativeConfig, got {type(config).__name__}")
        self._data_parallel, self._is_inference, self._infer_config = False, True, config
        return self

    def _compile(self, scope, place):
        """Bind this program to ``scope`` and ``place`` (fluid's checks: compiling again for another scope
        or place is a ValueError, and so is sharing variables from a program that is not data parallel
        or has not run). ``Executor.run`` binds it on the first run; it may run on other scopes after."""
        if self._compiled_for is not None:
            scope0, place0 = self._compiled_for
            if scope is not None and scope is not scope0:
                raise ValueError("Cannot compile program with different scope.")
            if place is not None and not place0._equals(place):
                raise ValueError("Cannot compile program with different place.")
            return self
        source = self._share_vars_from
        if self._data_parallel and source is not None:
            if not source._data_parallel:
                raise ValueError("The shared Program is not data parallel, cannot share variables from it.")
            if source._compiled_for is None:
                raise ValueError("The shared Program is not compiled and executed, so there is no variables to "
                                 "share.")
        self._compiled_for = (scope, place)
        if self._build_strategy is not None:  # NOTE [ Build passes ] in build_strategy.py
            self._build_strategy._finalize_strategy_and_create_passes().apply(self._program)
        return self

    def _resolve_places(self, exe):
        if self._places is None:
            self._places = non_empty_places(cuda_places() if exe.place.is_gpu_place() else cpu_places(), _DATA_PARALLEL)
        return self._places

    def _plan(self, feed_names, fetch_list_names):
        key = (self._program._version, feed_names, fetch_list_names)
        plan = self._plans.get(key)
        if plan is None:
            self._plans.clear()
            plan = self._plans[key] = _build_parallel_plan(self._program, feed_names, fetch_list_names)
        return plan

    def _run_with(self, exe, feed, fetch_list, scope, return_numpy, return_merged):
        if self._compiled_for is None:
            self._compile(scope, exe.place)
        if self._is_inference:
            if self._predictor is None:
                self._predictor = self._infer_config._create_predictor()
            return self._predictor.run(feed)
        if not self._data_parallel:
            return exe.run(self._program, feed=feed, fetch_list=fetch_list, scope=scope, return_numpy=return_numpy)
        num_places = len(self._resolve_places(exe))
        fetches = fetch_names(fetch_list)
        if isinstance(feed, dict):  # one feed for all places: its lists are cast with the variables' dtypes
            plan = self._plan(tuple(feed), fetches)
            per_place = self._split(feed, num_places, plan.feeds)
        else:
            per_place = self._split(feed, num_places)
            plan = self._plan(tuple(per_place[0]) if per_place else (), fetches)
        if scope not in plan.declared_in:  # as a Program's run does (executor.py persistable_names)
            declare(plan.persistables, scope)
            plan.declared_in.add(scope)
        if num_places > 1 and plan.branch_optimizer:
            raise NotImplementedError("If optimizer is used in control flow, training on multi-places is not "
                                      f"supported now (the program updates parameters inside a sub-block; run it "
                                      f"on one place, not {num_places})")
        staged = None
        if not per_place and plan.reader is not None:  # non-iterable loader: one batch per place
            staged = scope.find_value(plan.reader[0]).read_round(num_places, plan.reader[1])
            per_place = [{} for _ in staged]
        envs = self._run_replicas(exe, self._program, plan, per_place, scope, staged)
        self._average_grads(plan, envs, scope)
        # a fed variable the update reads (a learning rate fed each step): the first place's value, for the update
        lent = [n for n in plan.borrowed if envs and n in envs[0][0].maps[0] and scope._vars.get(n) is None]
        for name in lent:
            scope._vars[name] = envs[0][0].maps[0][name]
        try:
            with Frame(exe, self._program, scope, scope._vars, scope._lods):
                for step in plan.optimize if _timing.recorder is None else _timing.recorder.timed(plan.optimize):
                    step(scope._vars, scope._lods)
        finally:
            for name in lent:
                scope._vars.pop(name, None)
        _scale_fetched_grads(plan, envs, scope)
        return self._collect(plan, envs, return_numpy, return_merged)

    @staticmethod
    def _split(feed, num_places, specs=None):
        """Per-place feed dicts, by fluid's rules (REFERENCE D21); ``specs`` (name -> FeedSpec) give the
        dtype a list or scalar in a dict feed is converted to (D16) and which variables are persistable."""
        if feed is None or (isinstance(feed, dict) and not feed):
            return []
        if isinstance(feed, dict):
            return _split_dict(feed, num_places, specs or {})
        if isinstance(feed, (list, tuple)):
            if len(feed) > num_places:
                raise ValueError("Feed a list of tensor, the list should be the same size as places "
                                 f"(got {len(feed)} dicts for {num_places} places)")
            out = []
            for d in feed:
                if not isinstance(d, dict):
                    raise TypeError("Each element of feed list should be a dict")
                if d:  # an empty dict: no data for that place (an unordered loader's last step), it sits out
                    out.append(d)
            return out
        raise TypeError(f"feed requires dict as its Parameter. But you passed in {type(feed)}")

    @staticmethod
    def _run_replicas(exe, program, plan, per_place, scope, staged_batches):
        envs = []
        for k, place_feed in enumerate(per_place):
            env, lods = ChainMap({}, scope._vars), ChainMap({}, scope._lods)
            if staged_batches is not None:
                scope.find_value(plan.reader[0]).stage(staged_batches[k])
            feed_into(plan.feeds, place_feed, env, lods)
            with Frame(exe, program, scope, env, lods):  # for context ops (executor/context.py)
                for step in plan.compute if _timing.recorder is None else _timing.recorder.timed(plan.compute):
                    step(env, lods)
            envs.append((env, lods))
        return envs

    @staticmethod
    def _average_grads(plan, envs, scope):
        if not envs:
            return
        for name in plan.grads:
            values = [env.maps[0][name] for env, _ in envs if name in env.maps[0]]
            if values:
                total = values[0].copy() if len(values) > 1 else values[0]
                for v in values[1:]:
                    total += v
                scope._vars[name] = total / len(values) if len(values) > 1 else total

    @staticmethod
    def _collect(plan, envs, return_numpy, return_merged):
        results = []
        for name in plan.fetches:
            per_device = [_fetch_value(env, lods, name, False, return_numpy) for env, lods in envs]
            if return_merged and per_device and all(v is not None for v in per_device):
                results.append(_merged(name, per_device))
            else:
                results.append(per_device)
        return results

