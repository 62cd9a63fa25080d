"""``Executor.run(use_prune=True)``: run only the ops the fetches (and the chosen optimizer ops) need.

NOTE [ Pruning at run time ]
By default a run executes every op of the program, as fluid does. With ``use_prune=True``, or when the
fetch list holds optimizer ops (the first item ``Optimizer.minimize`` returns, or the whole tuple), the
Executor runs a pruned copy instead: the ops the fetched variables need, stopping at the fed variables,
plus the named optimizer ops and what they need (every optimizer op of the program when none is
named). A program with two optimizers thus trains through the one whose ops are fetched. The pruned copy
is made once per (program version, feed names, fetch list) and kept beside the program
(``Executor._pruned``), so later runs cost a dictionary lookup; fed names the pruned program no longer
declares are dropped from the feed with fluid's warning.
"""
import copy
import warnings

from ..framework.operator import Operator
from ..framework.variable import Variable

__all__ = ["split_optimize_ops", "prune_program", "update_feed", "prune_cache_key"]


def _needs_split(fetch_list):
    return any(not isinstance(item, (str, Variable)) for item in fetch_list)


def split_optimize_ops(fetch_list):
    """(fetch list without operators, optimizer ops) from a fetch list that may hold optimizer ops, lists
    of them, or ``minimize``'s (optimize_ops, params_grads) tuple; lists of variables are flattened."""
    if fetch_list is None:
        return [], []
    if isinstance(fetch_list, (str, Variable)):
        return [fetch_list], []
    if not _needs_split(fetch_list):
        return list(fetch_list), []
    fetches, optimize_ops = [], []

    def take(item):
        if isinstance(item, Operator):
            if not item._is_optimize_op():
                raise TypeError(f"The operator in fetch_list is not an optimize_op: {item.type!r}")
            optimize_ops.append(item)
        elif isinstance(item, (str, Variable)):
            fetches.append(item)
        else:
            raise TypeError(f"The item in fetch_list should be str, variable or optimize_op, but received "
                            f"{type(item).__name__}.")

    for item in fetch_list:
        if isinstance(item, list):
            for sub in item:
                take(sub)
        elif isinstance(item, tuple):  # Optimizer.minimize's (optimize_ops, params_grads)
            for sub in item[0]:
                take(sub)
        else:
            take(item)
    return fetches, optimize_ops


def _key_name(item):
    if isinstance(item, Operator):
        return ("op", id(item))
    return item if isinstance(item, str) else item.name


def prune_cache_key(program, feed, fetch_list):
    """What a pruned program depends on: the program's version, the fed names and the fetch list."""
    inner = getattr(program, "_program", program)
    items = []
    for item in fetch_list:
        if isinstance(item, tuple):
            item = item[0]
        items.append(tuple(_key_name(i) for i in item) if isinstance(item, list) else _key_name(item))
    return inner._version, tuple(_feed_names(feed)), tuple(items)


def _feed_names(feed):
    if isinstance(feed, dict):
        return list(feed)
    if isinstance(feed, (list, tuple)):
        return [name for each in feed for name in each]
    return []


def prune_program(program, feed, fetch_list, optimize_ops):
    """A pruned copy of ``program`` (a Program, or a CompiledProgram whose Program is pruned) keeping what
    ``fetch_list`` and ``optimize_ops`` need (all optimizer ops of the program when none is given)."""
    inner = getattr(program, "_program", None)
    origin = inner if inner is not None else program
    if not optimize_ops:
        optimize_ops = [op for block in origin.blocks for op in block.ops if op._is_optimize_op()]
    pruned = origin._prune_with_input(_feed_names(feed), list(fetch_list) + list(optimize_ops))
    if inner is None:
        return pruned
    compiled = copy.copy(program)  # the original keeps its own Program and plans
    compiled._program, compiled._plans = pruned, {}
    return compiled


def update_feed(program, feed):
    """``feed`` without the names the pruned ``program`` does not declare (fluid's warning for each)."""
    block = getattr(program, "_program", program).global_block()

    def keep(one):
        for name in [n for n in one if not block.has_var(n)]:
            warnings.warn(f"The variable {name} is not found in program. It is not declared or is pruned.",
                          stacklevel=4)
        return {n: v for n, v in one.items() if block.has_var(n)}

    if isinstance(feed, dict):
        return keep(feed)
    if isinstance(feed, (list, tuple)):
        return [keep(each) for each in feed]
    return feed
