"""``Executor.train_from_dataset`` / ``infer_from_dataset``: run a Program on every batch of a fluid.dataset
(the executor hands the run to the dataset, ``DatasetBase._run``, so it needs to know nothing of datasets).

fluid runs N "Hogwild" threads here, each running the program on its own reader's batches against
shared parameters, without locks. minifluid runs the N readers in loader threads (reading and
parsing overlap the computation) and the program in the caller's thread, taking the readers'
batches in turn (NOTE [ Dataset readers and rounds ] in dataset_feed.py): the same batches, the
parameter updates in a fixed order, no races. As in fluid, ``infer_from_dataset`` runs the program
as given (run a ``clone(for_test=True)`` to leave the parameters alone) and both return None.

Output, fluid's way: the ``fetch_list`` values after every ``print_period``-th batch of reader 0
(fluid's thread 0) on stdout, one "<fetch_info>\\t<name>\\t<tensor>" line each; with ``debug=True``,
every ``DEBUG_PERIOD`` batches, each op's mean time, the mean read time, the share of time spent
reading and the instances per second on stderr.
"""
import copy
import sys
import time

import numpy as np

from ..executor.feed_fetch import feed_into, fetch_names, lod_feed_names
from ..executor.scope import global_scope
from ..framework.program import default_main_program
from .dataset_feed import DatasetBatches, batch_samples

__all__ = ["DEBUG_PERIOD", "run_from_dataset"]

DEBUG_PERIOD = 100
"""Batches between two ``debug=True`` reports (fluid's HogwildWorker prints every 100)."""


def _tensor_text(tensor, place):
    """A fetched LoDTensor as fluid 2.0's printer writes it."""
    array = np.asarray(tensor)
    lod = tensor.lod()
    text = "  - lod: {%s}\n" % "".join("{%s}" % ", ".join(map(str, level)) for level in lod) if lod else ""
    data = " ".join(f"{x:g}" for x in array.reshape(-1).tolist())
    return (f"{text}  - place: {place}\n  - shape: [{', '.join(map(str, array.shape))}]\n  - layout: NCHW\n"
            f"  - dtype: {array.dtype.name}\n  - data: [{data}]")


class _OpTimes:
    """debug=True: the program's ops timed one by one, reported every DEBUG_PERIOD batches."""

    def __init__(self, program):
        self.op_types = [op.type for op in program.global_block().ops]
        self.op_seconds = [0.0] * len(self.op_types)
        self.batches = self.instances = 0
        self.read_seconds = self.total_seconds = 0.0

    def run(self, exe, program, feed, fetches, scope):
        """``exe.run(program, feed, fetches, scope, return_numpy=False)`` with every op timed."""
        plan = exe._plan(program, tuple(feed), tuple(fetches), 0, lod_feed_names(feed))
        feed_into(plan.feeds, feed, scope._vars, scope._lods, plan.to_device)
        timed = copy.copy(plan)
        timed.steps = [self._timed(step, i) for i, step in enumerate(plan.steps)]
        return exe._execute(timed, program, scope, return_numpy=False)

    def _timed(self, step, i):
        def run(env, lods):
            start = time.perf_counter()
            step(env, lods)
            self.op_seconds[i] += time.perf_counter() - start
        return run

    def count(self, read_seconds, total_seconds, instances):
        self.batches += 1
        self.instances += instances
        self.read_seconds += read_seconds
        self.total_seconds += total_seconds
        if self.batches % DEBUG_PERIOD == 0:
            n = self.batches
            for i, (op_type, seconds) in enumerate(zip(self.op_types, self.op_seconds)):
                print("op_name:[%d][%s], op_mean_time:[%fs]" % (i, op_type, seconds / n), file=sys.stderr)
            print("mean read time: %fs" % (self.read_seconds / n), file=sys.stderr)
            print("IO percent: %f" % (self.read_seconds / max(self.total_seconds, 1e-12) * 100), file=sys.stderr)
            print("%6.2f instances/s" % (self.instances / max(self.total_seconds, 1e-12)), file=sys.stderr,
                  flush=True)


def run_from_dataset(exe, program, dataset, scope=None, thread=0, debug=False, fetch_list=None, fetch_info=None,
                     print_period=100, fetch_handler=None):
    """The body of ``Executor.train_from_dataset`` / ``infer_from_dataset`` (see the module docstring)."""
    if fetch_handler is not None:
        raise NotImplementedError("train_from_dataset(fetch_handler=...) is not implemented by minifluid; use "
                                  "fetch_list with print_period")
    if thread <= 0 and dataset.thread_num <= 0:
        raise RuntimeError("You should set thread num first, either in Dataset or in Executor.train_from_dataset")
    program = default_main_program() if program is None else getattr(program, "_program", program)
    scope = global_scope() if scope is None else scope
    fetches = list(fetch_names(fetch_list)) if fetch_list else []
    info = list(fetch_info) if fetch_info else list(fetches)
    if len(info) != len(fetches):
        raise ValueError(f"fetch_info needs one entry per fetch_list variable: {len(info)} for {fetches}")
    if int(print_period) <= 0:
        raise ValueError(f"print_period must be a positive number of batches, got {print_period}")
    timing = _OpTimes(program) if debug else None
    batches = DatasetBatches(dataset, *dataset._training_readers(thread))
    block = program.global_block()
    fed = [(i, name) for i, name in enumerate(batches.names) if block._find_var_recursive(name) is not None]
    reader0_batches = 0
    try:
        while any(batches.live):
            for k in range(len(batches)):
                started = time.perf_counter()
                fields = batches.next(k)
                if fields is None:
                    continue
                read = time.perf_counter()
                feed = {name: fields[i] for i, name in fed}  # slots the program lacks are not fed
                show = k == 0 and fetches and (reader0_batches + 1) % print_period == 0
                wanted = fetches if show else []
                if timing is not None:
                    results = timing.run(exe, program, feed, wanted, scope)
                    timing.count(read - started, time.perf_counter() - started, batch_samples(fields))
                else:
                    results = exe.run(program, feed=feed, fetch_list=wanted, scope=scope, return_numpy=False)
                if k == 0:
                    reader0_batches += 1
                for label, name, value in zip(info, fetches, results if show else ()):
                    print(f"{label}\t{name}\t{_tensor_text(value, exe.place)}\t", flush=True)
    finally:
        batches.close()
    return None
