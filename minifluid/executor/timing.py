"""Per-op-step timing while ``fluid.profiler`` is on (the report itself is in ``minifluid/profiler.py``).

NOTE [ Profiling op steps ]
Every place that runs a plan's steps loops over ``steps if timing.recorder is None else
timing.recorder.timed(steps)``: with the profiler off a run pays one module-attribute test, nothing per
step. With it on, each step list is swapped for a list of timed twins, built once per list while the
recorder lives. A twin times its step with ``perf_counter`` and adds the time to its op type's row for
the running thread (rows are keyed by thread, so threads never share a row). ``compile_ops`` names each
step's op type in ``step.op_type``; a step without one runs untimed.
"""
import math
import threading
import time

__all__ = ["Recorder", "recorder"]

recorder = None
"""The active Recorder while the profiler is on, else None."""
clock = time.perf_counter
"""What a timed step reads (a test may swap in a scripted clock before the profiler starts)."""


class Recorder:
    """Op-type rows ``{(thread id, op type): [calls, total, min, max, first end]}`` in seconds; with
    ``timeline`` also every (thread id, op type, start, end) for a trace file."""

    def __init__(self, timeline=False):
        self.rows = {}
        self.events = [] if timeline else None
        self._timed = {}

    def reset(self):
        self.rows.clear()
        if self.events is not None:
            self.events.clear()

    def timed(self, steps):
        """The timed twin of the step list ``steps`` (the same list object gets the same twin)."""
        entry = self._timed.get(id(steps))
        if entry is None or entry[0] is not steps:
            entry = self._timed[id(steps)] = (steps, [self._wrap(step) for step in steps])
        return entry[1]

    def _wrap(self, step):
        op_type = getattr(step, "op_type", None)
        if op_type is None:
            return step
        rows, events, now, ident = self.rows, self.events, clock, threading.get_ident

        def timed_step(env, lods):
            start = now()
            try:
                step(env, lods)
            finally:
                end = now()
                key = (ident(), op_type)
                row = rows.get(key)
                if row is None:
                    row = rows[key] = [0, 0.0, math.inf, 0.0, end]
                spent = end - start
                row[0] += 1
                row[1] += spent
                if spent < row[2]:
                    row[2] = spent
                if spent > row[3]:
                    row[3] = spent
                if events is not None:
                    events.append((key[0], op_type, start, end))
        timed_step.op_type = op_type
        return timed_step
