"""Is a training loop reader-bound or compute-bound? Runs SCRIPT and reads the loaders' counters.

Every ``DataLoader.from_generator`` / ``PyReader`` epoch the script runs is recorded (batches, mean
occupancy of the loader's buffer, time the consumer waited for data vs. computed). At the end this
prints, for each loader (a train loader and a test loader are told apart by their program), one line
per epoch and its verdict, then an overall verdict and a JSON line. Inside your own code the same
one-liner is ``print(loader.bottleneck())`` after an epoch.
"""
import argparse
import json
import sys

from minifluid.compat import runner
from minifluid.data.diagnosis import EPOCH_HISTORY, verdict_of


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python tools/profile_loader.py", description=__doc__.split("\n\n")[0],
        epilog="example: python tools/profile_loader.py examples/train_digits.py --epochs 3")
    parser.add_argument("--compat", action="store_true",
                        help="run a legacy script (import paddle / paddle.fluid) through minifluid.compat")
    parser.add_argument("script", help="the training script, run as `python SCRIPT ARGS` would run it")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    return parser.parse_args(argv)


def overall(history):
    """Every epoch added up, judged by the same rule as one epoch (``verdict_of``)."""
    batches = sum(s["batches"] for s, _ in history)
    wait = sum(s["wait_s"] for s, _ in history)
    compute = sum(s["compute_s"] for s, _ in history)

    def weighted(key):
        return sum(s.get(key, s["queue_capacity"]) * s["batches"] for s, _ in history) / batches
    total = {"batches": batches, "wait_s": wait, "compute_s": compute,
             "wait_fraction": wait / (wait + compute) if wait + compute > 0 else 0.0,
             "mean_queue_occupancy": weighted("mean_queue_occupancy"), "queue_capacity": weighted("queue_capacity"),
             "buffer_capacity": weighted("buffer_capacity")}
    advice = verdict_of(total, steady_batches=batches - len(history))
    return {"epochs": len(history), "batches": batches, "wait_s": round(wait, 4), "compute_s": round(compute, 4),
            "wait_fraction": round(total["wait_fraction"], 4), "verdict": advice.split(":")[0], "advice": advice}


def by_loader(history):
    """{loader label: its epochs}, in the order the loaders first finished an epoch."""
    groups = {}
    for entry in history:
        groups.setdefault(entry[0].get("loader", "loader"), []).append(entry)
    return groups


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sys.argv = [args.script] + args.args
    if args.compat:
        from minifluid import compat  # noqa: PLC0415 - only for legacy scripts
        compat.install()
    try:
        status = runner.run_script(args.script)
    except SystemExit as exit_:
        status = exit_.code
    if status not in (None, 0):
        print(f"(the script exited with status {status})", file=sys.stderr)
    history = list(EPOCH_HISTORY)
    print("\n== loader profile ==")
    if not history:
        print("no DataLoader epochs were recorded (the script fed exe.run directly?)")
        return 1
    loaders = {}
    for label, epochs in by_loader(history).items():
        print(f"{label}:")
        for i, (summary, verdict) in enumerate(epochs):
            print(f"  epoch #{i}: {summary['batches']} batches, waited {summary['wait_s']:.3f}s, "
                  f"computed {summary['compute_s']:.3f}s -> {verdict}")
        loaders[label] = overall(epochs)
    result = overall(history)
    print(f"overall: {result['advice']} (over {result['batches']} batches of {len(loaders)} loader(s))")
    print(json.dumps(dict(result, loaders=loaders)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
