"""fluid.profiler: every op step timed while it is on, fluid's per-op-type table, its sorting and errors."""
import json
import re

import numpy as np
import pytest

import minifluid as fluid
from minifluid import profiler
from minifluid.executor import timing

ROW = re.compile(r"^(thread\d+::\w+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", re.M)


@pytest.fixture(autouse=True)
def profiler_off():
    yield
    timing.recorder = None


def _program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float32")
        y = fluid.layers.scale(x, scale=2.0)
        z = fluid.layers.relu(y)
    return main, z


def _table(text):
    return {m[1]: (int(m[2]), *map(float, m.groups()[2:])) for m in ROW.finditer(text)}


def test_the_table_has_fluids_columns_and_exact_figures_from_a_scripted_clock(monkeypatch, capsys):
    # run 1: scale 1 ms, relu 2 ms; run 2: scale 3 ms, relu 6 ms
    ticks = iter(np.cumsum([0, 1, 0, 2, 0, 3, 0, 6]) / 1e3)
    monkeypatch.setattr(timing, "clock", lambda: float(next(ticks)))
    main, z = _program()
    exe = fluid.Executor(fluid.CPUPlace())
    with profiler.profiler("CPU", "total"):
        for _ in range(2):
            exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[z])
    out = capsys.readouterr().out
    assert "------------------------->     Profiling Report     <-------------------------" in out
    assert "Place: CPU\nTime unit: ms\nSorted by total time in descending order in the same thread" in out
    assert re.search(r"^Event\s+Calls\s+Total\s+Min\.\s+Max\.\s+Ave\.\s+Ratio\.$", out, re.M)
    rows = _table(out)
    assert list(rows) == ["thread0::relu", "thread0::scale"]  # by total, descending
    calls, total, low, high, ave, ratio = rows["thread0::relu"]
    assert (calls, total, low, high, ave) == (2, 8.0, 2.0, 6.0, 4.0) and ratio == pytest.approx(2 / 3, rel=1e-5)
    calls, total, low, high, ave, ratio = rows["thread0::scale"]
    assert (calls, total, low, high, ave) == (2, 4.0, 1.0, 3.0, 2.0) and ratio == pytest.approx(1 / 3, rel=1e-5)


@pytest.mark.parametrize("key, column", [("calls", 0), ("total", 1), ("min", 2), ("max", 3), ("ave", 4)])
def test_every_sorted_key_sorts_descending_by_its_column(capsys, key, column):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 64], "float32")
        h = fluid.layers.fc(fluid.layers.fc(x, 64, act="tanh"), 8, act="softmax")
        loss = fluid.layers.mean(h)
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    profiler.start_profiler("CPU")
    for _ in range(3):
        exe.run(main, feed={"x": np.ones((16, 64), "float32")}, fetch_list=[loss])
    profiler.stop_profiler(key)
    out = capsys.readouterr().out
    assert f"Sorted by {profiler._SORTED_BY[key]} in descending order" in out
    rows = list(_table(out).values())
    assert len(rows) == len({op.type for op in main.global_block().ops})
    values = [row[column] for row in rows]
    assert values == sorted(values, reverse=True)
    assert sum(row[5] for row in rows) == pytest.approx(1.0, rel=1e-4)
    assert {row[0] for row in rows} >= {3, 6}  # mul runs twice per step (two fc layers), mean once


def test_default_order_is_first_end_time_and_reset_forgets_earlier_runs(capsys):
    main, z = _program()
    exe = fluid.Executor(fluid.CPUPlace())
    profiler.start_profiler("GPU")  # fluid's report says CUDA for it
    for _ in range(3):
        exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[z])
    profiler.reset_profiler()
    for _ in range(2):
        exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[z])
    profiler.stop_profiler()
    out = capsys.readouterr().out
    assert "Place: CUDA" in out and "Sorted by event first end time" in out
    rows = _table(out)
    assert list(rows) == ["thread0::scale", "thread0::relu"]  # the program's order
    assert [row[0] for row in rows.values()] == [2, 2]


def test_off_the_executor_runs_the_plans_own_steps_and_records_nothing(capsys):
    main, z = _program()
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": np.ones((2, 4), "float32")}
    with profiler.profiler("CPU"):
        exe.run(main, feed=feed, fetch_list=[z])
    capsys.readouterr()
    plan = next(iter(exe._plans[main].values()))
    seen = []
    plan.steps[:] = [lambda env, lods, s=s: (seen.append(s), s(env, lods)) for s in plan.steps]
    result, = exe.run(main, feed=feed, fetch_list=[z])
    assert len(seen) == 2 and np.allclose(result, 2.0)  # the untimed steps ran, the table stays unprinted
    profiler.stop_profiler()
    assert capsys.readouterr().out == "" and timing.recorder is None


def test_data_parallel_replicas_are_timed_too(capsys):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], "float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    with profiler.profiler("CPU", "calls"):
        exe.run(compiled, feed={"x": np.ones((4, 4), "float32")}, fetch_list=[loss])
    rows = _table(capsys.readouterr().out)
    assert rows["thread0::mul"][0] == 2 and rows["thread0::sgd"][0] == 2  # 2 replicas; 2 parameters updated once


def test_state_all_writes_a_chrome_trace_of_every_op_call(tmp_path, capsys):
    main, z = _program()
    exe = fluid.Executor(fluid.CPUPlace())
    path = tmp_path / "trace.json"
    with profiler.profiler("All", "ave", str(path)):
        for _ in range(2):
            exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[z])
    events = json.loads(path.read_text())["traceEvents"]
    assert [e["name"] for e in events] == ["scale", "relu"] * 2
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["tid"] == "thread0" for e in events)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert "Place: All" in capsys.readouterr().out


@pytest.mark.parametrize("call, message", [
    (lambda: profiler.start_profiler("TPU"), "The state must be 'CPU' or 'GPU' or 'All'."),
    (lambda: profiler.start_profiler("CPU", "Everything"),
     "tracer option must be 'Default', 'OpDetail', 'AllOpDetail'."),
])
def test_bad_arguments_get_fluids_messages(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message and timing.recorder is None


def test_a_bad_sorted_key_leaves_the_profiler_on():
    profiler.start_profiler("CPU")
    with pytest.raises(ValueError, match="The sorted_key must be None or in 'calls', 'total', 'max', 'min' and 'ave'"):
        profiler.stop_profiler("median")
    assert timing.recorder is not None


def test_compat_path_and_cuda_profiler():
    from minifluid import compat
    compat.install()
    try:
        import paddle.fluid.profiler as paddle_profiler
        assert paddle_profiler.profiler is profiler.profiler and fluid.profiler is profiler
    finally:
        compat.uninstall()
    with pytest.raises(NotImplementedError, match="fluid.profiler.profiler"):
        profiler.cuda_profiler("out.txt")
