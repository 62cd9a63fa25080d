"""Is a training loop reader-bound or compute-bound? Runs SCRIPT and reads the loaders' counters.

Usage:  python tools/profile_loader.py SCRIPT [ARGS...]
        python tools/profile_loader.py --compat LEGACY_FLUID_SCRIPT [ARGS...]

Every ``DataLoader.from_generator`` / ``PyReader`` epoch the script runs is recorded (batches,
mean queue occupancy, time the consumer waited for data vs. computed); at the end this prints one
line per epoch and an overall verdict, plus a JSON line. Inside your own code the same one-liner
is ``print(loader.bottleneck())`` after an epoch.
"""
import json
import runpy
import sys

from minifluid.data.diagnosis import EPOCH_HISTORY, verdict_of


def overall(history):
    """Every epoch added up, judged by the same rule as one epoch (``verdict_of``)."""
    batches = sum(s["batches"] for s, _ in history)
    wait = sum(s["wait_s"] for s, _ in history)
    compute = sum(s["compute_s"] for s, _ in history)
    total = {"batches": batches, "wait_s": wait, "compute_s": compute,
             "wait_fraction": wait / (wait + compute) if wait + compute > 0 else 0.0,
             "mean_queue_occupancy": sum(s["mean_queue_occupancy"] * s["batches"] for s, _ in history) / batches,
             "queue_capacity": sum(s["queue_capacity"] * s["batches"] for s, _ in history) / batches}
    advice = verdict_of(total, steady_batches=batches - len(history))
    return {"epochs": len(history), "batches": batches, "wait_s": round(wait, 4), "compute_s": round(compute, 4),
            "wait_fraction": round(total["wait_fraction"], 4), "verdict": advice.split(":")[0], "advice": advice}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    compat = bool(argv) and argv[0] == "--compat"
    argv = argv[1:] if compat else argv
    if not argv:
        print(__doc__)
        return 2
    sys.argv = argv
    if compat:
        from minifluid import compat as compat_module  # noqa: PLC0415 - only for legacy scripts
        compat_module.install()
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            print(f"(the script exited with status {exit_.code})", file=sys.stderr)
    history = list(EPOCH_HISTORY)
    print("\n== loader profile ==")
    if not history:
        print("no DataLoader epochs were recorded (the script fed exe.run directly?)")
        return 1
    for i, (summary, verdict) in enumerate(history):
        print(f"epoch #{i}: {summary['batches']} batches, waited {summary['wait_s']:.3f}s, "
              f"computed {summary['compute_s']:.3f}s -> {verdict}")
    result = overall(history)
    print(f"overall: {result['advice']} (over {result['batches']} batches)")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
