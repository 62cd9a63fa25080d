"""MultiSlot parse rate: minifluid's vectorised parser vs a plain-Python parser, on generated files.

Two files are generated (one sample per line): "ctr" has 26 sparse id slots (1-5 ids of up to 10 digits
each) and an int label, the shape of a CTR dataset; "mixed" adds a dense slot of 13 floats. For each,
in the same run and in alternating rounds, it times
* ``vectorised``: ``multislot.parse_lines`` over the file's chunks, as the dataset readers run it;
* ``python``: the plain-Python baseline, per line ``line.split()`` then ``int(t)`` per token (``float(t)``
  for the mixed file's tokens), which does not even check the format or build the batches;
* ``queue_dataset``: the whole reading path, ``DataLoader.from_dataset`` over a QueueDataset with one
  reader thread: read, parse, batch (512 samples) and hand over every batch as LoDTensors.
Rates are lines per second, of wall-clock time and of this process's CPU time (best round; the CPU
figures hold on a machine shared with other work); ``*_vs_python[_cpu]`` are medians of same-round ratios.

Prints one JSON line. Run: python tools/bench_multislot.py [--lines 50000] [--rounds 3]
"""
import argparse
import json
import os
import platform
import statistics
import tempfile
import time

import numpy as np

import minifluid as fluid
from minifluid.data.file_dataset import read_chunks
from minifluid.data.multislot import parse_lines, slot_formats

SPARSE_SLOTS, DENSE_WIDTH = 26, 13


def write_file(path, lines, dense, seed):
    rng = np.random.RandomState(seed)
    counts = rng.randint(1, 6, size=(lines, SPARSE_SLOTS))
    ids = iter(rng.randint(0, 10 ** 10, size=int(counts.sum())).tolist())
    floats = iter(np.round(rng.rand(lines * DENSE_WIDTH), 6).tolist())
    labels = rng.randint(0, 2, size=lines).tolist()
    with open(path, "w") as f:
        for row, label in zip(counts.tolist(), labels):
            parts = []
            for n in row:
                parts.append(str(n))
                parts.extend(str(next(ids)) for _ in range(n))
            if dense:
                parts.append(str(DENSE_WIDTH))
                parts.extend(repr(next(floats)) for _ in range(DENSE_WIDTH))
            parts += ["1", str(label)]
            f.write(" ".join(parts) + "\n")


def variables(dense):
    program = fluid.Program()
    with fluid.program_guard(program, fluid.Program()):
        out = [fluid.layers.data(name=f"s{i}", shape=[1], dtype="int64", lod_level=1) for i in range(SPARSE_SLOTS)]
        if dense:
            out.append(fluid.data(name="dense", shape=[None, DENSE_WIDTH], dtype="float32"))
        out.append(fluid.data(name="label", shape=[None, 1], dtype="int64"))
    return out


def vectorised(path, formats):
    return sum(len(parse_lines(data, formats, path, line)) for data, line in read_chunks(path))


def python_baseline(path, convert):
    n = 0
    with open(path, "rb") as f:
        for line in f:
            [convert(t) for t in line.split()]
            n += 1
    return n


def queue_dataset(path, feed_vars):
    ds = fluid.DatasetFactory().create_dataset("QueueDataset")
    ds.set_use_var(feed_vars)
    ds.set_batch_size(512)
    ds.set_filelist([path])
    loader = fluid.io.DataLoader.from_dataset(ds, [fluid.CPUPlace()], drop_last=False)
    return sum(len(step[0]["label"].recursive_sequence_lengths() or np.asarray(step[0]["label"])) for step in loader)


def rate(fn, *args):
    """(lines per wall-clock second, lines per CPU second of this process, lines)."""
    wall, cpu = time.perf_counter(), time.process_time()
    lines = fn(*args)
    return lines / (time.perf_counter() - wall), lines / max(time.process_time() - cpu, 1e-9), lines


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    started = time.perf_counter()
    result = {"lines": args.lines, "rounds": args.rounds}
    with tempfile.TemporaryDirectory() as tmp:
        for name, dense, convert in (("ctr", False, int), ("mixed", True, float)):
            path = os.path.join(tmp, f"{name}.txt")
            write_file(path, args.lines, dense, seed=len(name))
            feed_vars = variables(dense)
            formats = slot_formats(feed_vars)
            rates = {"vectorised": [], "python": [], "queue_dataset": []}
            for _ in range(args.rounds):
                for key, (fn, arg) in (("vectorised", (vectorised, formats)), ("python", (python_baseline, convert)),
                                       ("queue_dataset", (queue_dataset, feed_vars))):
                    wall, cpu, lines = rate(fn, path, arg)
                    assert lines == args.lines, (key, lines)
                    rates[key].append((wall, cpu))
            entry = result[name] = {"MB": round(os.path.getsize(path) / 1e6, 1)}
            for key, runs in rates.items():
                entry[f"{key}_lines_per_s"] = round(max(w for w, _ in runs))
                entry[f"{key}_lines_per_cpu_s"] = round(max(c for _, c in runs))
            for key in ("vectorised", "queue_dataset"):
                for unit, i in (("", 0), ("_cpu", 1)):
                    entry[f"{key}_vs_python{unit}"] = round(statistics.median(
                        a[i] / b[i] for a, b in zip(rates[key], rates["python"])), 2)
    result["python"] = platform.python_version()
    result["numpy"] = np.__version__
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
