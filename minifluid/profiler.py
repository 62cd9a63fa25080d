"""``fluid.profiler``: time every op the Executor runs and print fluid's per-op-type table.

While the profiler is on, each op step of every plan the Executor, a CompiledProgram or a sub-block
runs is timed (minifluid/executor/timing.py; off, it costs nothing per op). ``stop_profiler`` prints,
per thread, one row per op type: calls, total, min, max and average milliseconds and the type's share of
that thread's op time, sorted as ``sorted_key`` asks. With ``state='All'`` it also writes every op call
to ``profile_path`` as a Chrome trace (JSON: open it in chrome://tracing or Perfetto), where fluid wrote
its own timeline protobuf for its ``tools/timeline.py`` to convert.
"""
import contextlib
import json
import math
import sys
import threading

from .executor import timing

__all__ = ["cuda_profiler", "profiler", "reset_profiler", "start_profiler", "stop_profiler"]

_STATES = {"CPU": "CPU", "GPU": "CUDA", "All": "All"}  # state -> the report's "Place:"
_TRACER_OPTIONS = ("Default", "OpDetail", "AllOpDetail")
_SORTED_BY = {None: "event first end time", "calls": "number of calls", "total": "total time",
              "max": "maximum time", "min": "minimum time", "ave": "average time"}
_SORT_COLUMN = {"calls": 0, "total": 1, "min": 2, "max": 3, "ave": 4}
_DATA_WIDTH = 12
_state = None


def is_profiler_enabled():
    return timing.recorder is not None


def start_profiler(state, tracer_option="Default"):
    """Turn the profiler on (nothing happens when it already is). ``state``: 'CPU', 'GPU' or 'All'
    ('All' also keeps every op call for the trace file)."""
    global _state
    if timing.recorder is not None:
        return
    if state not in _STATES:
        raise ValueError("The state must be 'CPU' or 'GPU' or 'All'.")
    if tracer_option not in _TRACER_OPTIONS:
        raise ValueError("tracer option must be 'Default', 'OpDetail', 'AllOpDetail'.")
    _state = state
    timing.recorder = timing.Recorder(timeline=state == "All")


def reset_profiler():
    """Forget the times recorded so far (the profiler stays on)."""
    if timing.recorder is not None:
        timing.recorder.reset()


def stop_profiler(sorted_key=None, profile_path="/tmp/profile"):
    """Turn the profiler off and print the table (nothing happens when it is off). ``sorted_key``: None
    (first end time), 'calls', 'total', 'max', 'min' or 'ave' (descending)."""
    recorder = timing.recorder
    if recorder is None:
        return
    if sorted_key not in _SORTED_BY:
        raise ValueError("The sorted_key must be None or in 'calls', 'total', 'max', 'min' and 'ave'")
    timing.recorder = None
    sys.stdout.write(report(recorder.rows, sorted_key, _STATES[_state]))
    sys.stdout.flush()
    if recorder.events is not None:
        write_trace(recorder.events, profile_path)


@contextlib.contextmanager
def profiler(state, sorted_key=None, profile_path="/tmp/profile", tracer_option="Default"):
    """``with fluid.profiler.profiler('CPU', 'total'):`` profile the block, print the table after it."""
    start_profiler(state, tracer_option)
    try:
        yield
    finally:
        stop_profiler(sorted_key, profile_path)


def cuda_profiler(output_file, output_mode=None, config=None):
    """fluid's NVIDIA nvprof session: minifluid does not drive nvprof."""
    if output_mode not in (None, "kvp", "csv"):
        raise ValueError("The output mode must be 'kvp' or 'csv'.")
    raise NotImplementedError("fluid.profiler.cuda_profiler (NVIDIA nvprof) is not implemented by minifluid; use "
                              "fluid.profiler.profiler('All', sorted_key, profile_path), which times every op and "
                              "writes a Chrome trace to profile_path")


def _thread_names(first_end):
    """{thread id: 'threadN'} from {thread id: its first op's end}: the main thread first, then the others."""
    main = threading.main_thread().ident
    order = sorted(first_end, key=lambda t: (t != main, first_end[t]))
    return {thread: f"thread{i}" for i, thread in enumerate(order)}


def table_rows(rows, sorted_key=None):
    """[(event name, calls, total, min, max, ave, ratio)] in ms, per thread, sorted as fluid sorts."""
    first_end = {}
    for (thread, _), row in rows.items():
        first_end[thread] = min(first_end.get(thread, math.inf), row[4])
    names = _thread_names(first_end)
    out = []
    for thread in names:
        mine = [(op_type, row) for (t, op_type), row in rows.items() if t == thread]
        thread_total = sum(row[1] for _, row in mine) or 1.0
        items = [(f"{names[thread]}::{op_type}", row[0], row[1] * 1e3, row[2] * 1e3, row[3] * 1e3,
                  row[1] * 1e3 / row[0], row[1] / thread_total, row[4]) for op_type, row in mine]
        if sorted_key is None:
            items.sort(key=lambda item: item[7])
        else:
            column = _SORT_COLUMN[sorted_key] + 1
            items.sort(key=lambda item: item[column], reverse=True)
        out += [item[:7] for item in items]
    return out


def _number(value):
    return f"{value:.6g}"  # what C++'s default stream formatting prints


def report(rows, sorted_key=None, place="CPU"):
    """fluid's profiling report for ``rows`` (Recorder.rows)."""
    items = table_rows(rows, sorted_key)
    name_width = max([len(item[0]) for item in items] + [len("Event")]) + 4
    lines = ["", "------------------------->     Profiling Report     <-------------------------", "",
             f"Place: {place}", "Time unit: ms",
             f"Sorted by {_SORTED_BY[sorted_key]} in descending order in the same thread", "", "",
             "-------------------------       Event Summary       -------------------------", "",
             "Event".ljust(name_width) + "".join(h.ljust(_DATA_WIDTH) for h in
                                                 ("Calls", "Total", "Min.", "Max.", "Ave.", "Ratio."))]
    for name, calls, *times in items:
        lines.append(name.ljust(name_width) + str(calls).ljust(_DATA_WIDTH)
                     + "".join(_number(t).ljust(_DATA_WIDTH) for t in times))
    return "\n".join(line.rstrip() for line in lines) + "\n"


def write_trace(events, path):
    """Every op call as a Chrome trace event ('X', microseconds from the first call)."""
    first_end = {}
    for thread, _, _, end in events:
        first_end.setdefault(thread, end)  # a thread's events are appended in the order they end
    names = _thread_names(first_end)
    origin = min((start for _, _, start, _ in events), default=0.0)
    trace = [{"name": op_type, "cat": "Operator", "ph": "X", "pid": 0, "tid": names[thread],
              "ts": round((start - origin) * 1e6, 3), "dur": round((end - start) * 1e6, 3)}
             for thread, op_type, start, end in events]
    with open(path, "w") as f:
        json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
