"""Benchmark a While loop: its cost per iteration at N=100 and N=1000 and what it builds.

Prints ONE JSON line. The loop body is ``acc = 0.5 * acc + x`` on a float64 [8, 16] tensor, carried
in a tensor array (read entry i, write entry i + 1) with the counter and condition updates of a fluid
loop: 5 ops per iteration (read_from_array, scale, elementwise_add, increment, write_to_array) plus
less_than. Fields:
* ``us_per_iter_N100`` / ``us_per_iter_N1000``: the best of ``--repeat`` runs of the whole program,
  over N, in CPU time of this process (``time.process_time``: on a shared machine wall time also
  counts the time other processes hold the core, which a 50 ms run meets far more often than a 3 ms
  one); ``linearity``: the N=1000 time over ten times the N=100 time (1.0: exactly linear; the fixed
  cost of a run makes it a little below 1);
* ``op_calls_N100`` / ``op_calls_N1000``: kernels called in one run (counted by wrapping every step),
  ``ops_per_iter``: their growth per iteration;
* ``plans_built``: plans the Executor built over all runs of both programs (one per block and program:
  no per-iteration analysis);
* ``numpy_us_per_iter``: the same arithmetic in a plain numpy loop (``acc = 0.5 * acc + x``, also
  appending to a list as the array does), and ``overhead_vs_numpy``: the loop's time per iteration
  over it.

Usage: ``.venv/bin/python tools/bench_control_flow.py [--repeat 5]``
"""
import argparse
import json
import time

import numpy as np

import minifluid as fluid
from minifluid.executor import executor as executor_module

L = fluid.layers


def build(n):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [8, 16], "float64")
        i = L.fill_constant([1], "int64", 0)
        limit = L.fill_constant([1], "int64", n)
        arr = L.array_write(x, i)
        cond = L.less_than(i, limit)
        loop = L.While(cond)
        with loop.block():
            acc = L.elementwise_add(L.scale(L.array_read(arr, i), 0.5), x)
            L.increment(i, in_place=True)
            L.array_write(acc, i, arr)
            L.less_than(i, limit, cond=cond)
        return main, L.array_read(arr, i)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    built, calls = [], [0]
    real_build, real_compile = executor_module.build_plan, executor_module._compile_op

    def counting_build(*a, **k):
        built.append(a[3] if len(a) > 3 else k.get("block_idx", 0))
        return real_build(*a, **k)

    def counting_compile(op, *args, **kwargs):
        step = real_compile(op, *args, **kwargs)

        def counted(env, lods):
            calls[0] += 1
            step(env, lods)
        return counted
    executor_module.build_plan, executor_module._compile_op = counting_build, counting_compile
    x = np.random.RandomState(0).uniform(-1, 1, (8, 16))
    result = {"bench": "control_flow_while"}
    exe = fluid.Executor()
    for n in (100, 1000):
        program, last = build(n)
        scope = fluid.Scope()
        got, = exe.run(program, feed={"x": x}, fetch_list=[last], scope=scope)
        want = x.copy()
        for _ in range(n):
            want = 0.5 * want + x
        assert np.allclose(got, want), "the loop computed something else"
        calls[0] = 0
        exe.run(program, feed={"x": x}, fetch_list=[last], scope=scope)
        result[f"op_calls_N{n}"] = calls[0]
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.process_time()
            exe.run(program, feed={"x": x}, fetch_list=[last], scope=scope)
            best = min(best, time.process_time() - t0)
        result[f"us_per_iter_N{n}"] = round(best / n * 1e6, 2)
    result["ops_per_iter"] = (result["op_calls_N1000"] - result["op_calls_N100"]) / 900
    result["linearity"] = round(result["us_per_iter_N1000"] / result["us_per_iter_N100"], 3)
    result["plans_built"] = len(built)
    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.process_time()
        acc, kept = x.copy(), []
        for _ in range(1000):
            acc = 0.5 * acc + x
            kept.append(acc)
        best = min(best, time.process_time() - t0)
    result["numpy_us_per_iter"] = round(best / 1000 * 1e6, 2)
    result["overhead_vs_numpy"] = round(result["us_per_iter_N1000"] / result["numpy_us_per_iter"], 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
