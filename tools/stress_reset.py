"""Stress reset() from another thread while exe.run waits for a batch (issue 23 points 2 and 4).

Each trial: start() a non-iterable loader whose reader is slow (a batch every ~0.5 ms, so the consumer
is often waiting in the queue or on the worker's pipe), run exe.run in a consumer thread until it
raises, and call reset() from the main thread after a random delay of 0-2 ms. The consumer must end
every time, with EOFException or the clear "not started" RuntimeError (reset() landed between two
runs); anything else is counted by type, and a consumer still running after HANG_S counts as a hang.

    python tools/stress_reset.py [--trials 2000] [--kinds thread,process] [--seed 0]

Prints ONE JSON line: per kind the trials, hangs, raw ValueErrors, outcome counts and seconds.
"""
import argparse
import collections
import json
import os
import random
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import minifluid as fluid  # noqa: E402
from minifluid.data.feed_reader import NOT_STARTED_MESSAGE  # noqa: E402

HANG_S = 20.0
"""Seconds after reset() returned that a consumer may still take to end before it counts as a hang."""


def _slow_batches():
    rng = random.Random()
    for i in range(10**9):
        if rng.random() < 0.5:
            time.sleep(0.0005)
        yield np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")


def _build(use_multiprocess):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=2, iterable=False,
                                                    use_multiprocess=use_multiprocess)
        loss = fluid.layers.mean(image)
    loader.set_batch_generator(_slow_batches)
    return main, loader, loss


def _outcome(error):
    if isinstance(error, fluid.core.EOFException):
        return "eof"
    if isinstance(error, RuntimeError) and str(error) == NOT_STARTED_MESSAGE:
        return "not_started"
    return f"{type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else ''}"


def run_trials(kind, trials, seed=0):
    """Run ``trials`` reset-from-another-thread trials of ``kind`` ("thread" or "process"); returns a dict
    with trials, hangs, raw_value_errors, outcomes and seconds. Stops at the first hang (it would leave a
    consumer thread blocked for good)."""
    rng = random.Random(seed)
    main, loader, loss = _build(kind == "process")
    exe = fluid.Executor(fluid.CPUPlace())
    outcomes, hangs, done = collections.Counter(), 0, 0
    started = time.perf_counter()
    for _ in range(trials):
        loader.start()
        result = []

        def consume():
            try:
                while True:
                    exe.run(main, fetch_list=[loss])
            except BaseException as e:  # noqa: BLE001 - every outcome is counted
                result.append(e)

        consumer = threading.Thread(target=consume, name="stress-consumer", daemon=True)
        consumer.start()
        time.sleep(rng.uniform(0.0, 0.002))
        loader.reset()
        consumer.join(HANG_S)
        done += 1
        if consumer.is_alive():
            hangs += 1
            break
        outcomes[_outcome(result[0])] += 1
    raw_value_errors = sum(n for k, n in outcomes.items() if k.startswith("ValueError"))
    return {"trials": done, "hangs": hangs, "raw_value_errors": raw_value_errors, "outcomes": dict(outcomes),
            "seconds": round(time.perf_counter() - started, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="trials per kind (default 2000)")
    parser.add_argument("--kinds", default="thread,process", help="comma-separated: thread, process")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.trials < 1:
        parser.error("--trials must be at least 1")
    kinds = args.kinds.split(",")
    if not set(kinds) <= {"thread", "process"}:
        parser.error(f"--kinds takes thread and/or process, got {args.kinds!r}")
    res = {"trials_per_kind": args.trials}
    for kind in kinds:
        res[kind] = run_trials(kind, args.trials, args.seed)
    res["hangs"] = sum(res[k]["hangs"] for k in kinds)
    res["raw_value_errors"] = sum(res[k]["raw_value_errors"] for k in kinds)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
