"""Executor.run overhead: a 3-op program fed a [64, 784] float32 batch vs the same kernels called directly.

Prints one JSON line. Run: python tools/bench_executor.py [--calls 2000]
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np

import minifluid as fluid
from minifluid.ops.registry import get_op_spec


def build():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 784])
        b = main.global_block()
        w = b.create_parameter("w", [784, 16])
        bias = b.create_parameter("bias", [16])
        h, hb, loss = b.create_var("h", dtype=None), b.create_var("hb", dtype=None), b.create_var("loss", dtype=None)
        b.append_op("mul", {"X": x, "Y": w}, {"Out": h})
        b.append_op("elementwise_add", {"X": h, "Y": bias}, {"Out": hb})
        b.append_op("mean", {"X": hb}, {"Out": loss})
    return main, loss


def median_us(fn, calls):
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    rng = np.random.RandomState(0)
    xv = rng.rand(64, 784).astype("float32")
    wv = rng.rand(784, 16).astype("float32")
    bv = rng.rand(16).astype("float32")
    prog, loss = build()
    scope = fluid.Scope()
    scope.var("w").get_tensor().set(wv, fluid.CPUPlace())
    scope.var("bias").get_tensor().set(bv, fluid.CPUPlace())
    exe = fluid.Executor(fluid.CPUPlace())
    feed, fetch = {"x": xv}, [loss]

    def run_executor():
        exe.run(prog, feed=feed, fetch_list=fetch, scope=scope)

    mul, add, mean = (get_op_spec(t) for t in ("mul", "elementwise_add", "mean"))
    a_mul, a_add, a_mean = ({**get_op_spec(t).attrs} for t in ("mul", "elementwise_add", "mean"))

    def run_kernels():
        h = mul.kernel(a_mul, xv, wv)
        hb = add.kernel(a_add, h, bv)
        mean.kernel(a_mean, hb)

    for _ in range(200):  # warm up both paths (plan build, caches)
        run_executor()
        run_kernels()
    exe_us = median_us(run_executor, args.calls)
    kern_us = median_us(run_kernels, args.calls)
    print(json.dumps({
        "bench": "executor_run", "program": "mul+elementwise_add+mean", "feed": [64, 784], "calls": args.calls,
        "executor_us_per_call": round(exe_us, 2), "bare_kernels_us_per_call": round(kern_us, 2),
        "overhead_us": round(exe_us - kern_us, 2), "ratio": round(exe_us / kern_us, 3),
        "target_overhead_us": 25, "python": platform.python_version(), "numpy": np.__version__,
    }))


if __name__ == "__main__":
    main()
