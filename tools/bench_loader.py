"""Benchmark DataLoader.from_generator against a bare numpy loop (and PyTorch's DataLoader when installed).

Prints ONE JSON line: batches/s for a sample generator of pre-made (float32[784], int64[1]) samples at
batch 64 and for a batch generator of pre-made [64, 784] / [64, 1] batches, each through the iterable
loader, the non-iterable loader running a one-op program (``mean`` of the image), and a bare loop in
the consumer's thread (the same generator converted with the same function, no queue, no thread).

    python tools/bench_loader.py [--batches 300] [--repeat 5] [--capacity 64] [--multiprocess]

``--multiprocess`` runs the loaders with ``use_multiprocess=True`` (worker process + shared memory),
the transport meant for heavy readers; with these trivial readers it measures the transport's cost.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import minifluid as fluid  # noqa: E402
from minifluid.data import adapters  # noqa: E402
from minifluid.data.feeder import SlotSpec  # noqa: E402

BATCH = 64


def make_data(num_batches, distinct=100):
    """``num_batches`` batches' worth of samples and batches (``distinct`` different ones, repeated)."""
    rng = np.random.RandomState(0)
    images = rng.rand(distinct * BATCH, 784).astype("float32")
    labels = rng.randint(0, 10, size=(distinct * BATCH, 1)).astype("int64")
    samples = [(images[i], labels[i]) for i in range(len(images))]
    batches = [(images[i:i + BATCH].copy(), labels[i:i + BATCH].copy()) for i in range(0, len(images), BATCH)]
    reps = -(-num_batches // distinct)
    return (samples * reps)[:num_batches * BATCH], (batches * reps)[:num_batches]


def best_rate(fn, num_batches, repeat):
    """Batches per second of the fastest of ``repeat`` runs (``fn`` returns the batch count)."""
    best = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        n = fn()
        elapsed = time.perf_counter() - start
        assert n == num_batches, (n, num_batches)
        best = max(best, n / elapsed)
    return best


def build(iterable, capacity, use_multiprocess):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = fluid.data(name="image", shape=[None, 784], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=capacity, iterable=iterable,
                                                    use_multiprocess=use_multiprocess)
        loss = fluid.layers.mean(image)
    return main, loader, loss


def run_iterable(loader):
    n = 0
    for _ in loader():
        n += 1
    return n


def run_non_iterable(exe, main, loader, loss):
    n = 0
    loader.start()
    try:
        while True:
            exe.run(main, fetch_list=[loss])
            n += 1
    except fluid.core.EOFException:
        loader.reset()
    return n


def torch_rate(samples, batches, num_batches, repeat):
    try:
        import torch  # noqa: PLC0415 - optional comparison
        from torch.utils.data import DataLoader as TorchLoader  # noqa: PLC0415
    except Exception as e:  # not installed (or broken): say so in the JSON
        return {"torch": f"unavailable ({type(e).__name__})"}
    torch.set_num_threads(1)

    class Samples(torch.utils.data.Dataset):
        def __len__(self):
            return len(samples)

        def __getitem__(self, i):
            return samples[i]

    sample_loader = TorchLoader(Samples(), batch_size=BATCH, num_workers=0)
    batch_loader = TorchLoader(batches, batch_size=None, num_workers=0)
    return {"torch_sample_bps": round(best_rate(lambda: sum(1 for _ in sample_loader), num_batches, repeat), 1),
            "torch_batch_bps": round(best_rate(lambda: sum(1 for _ in batch_loader), num_batches, repeat), 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--capacity", type=int, default=64)
    parser.add_argument("--multiprocess", action="store_true")
    args = parser.parse_args()
    nb, rep = args.batches, args.repeat
    samples, batches = make_data(nb)

    def sample_gen():
        return iter(samples)

    def batch_gen():
        return iter(batches)

    specs = [SlotSpec("image", (-1, 784), np.dtype("float32")), SlotSpec("label", (-1, 1), np.dtype("int64"))]
    bare_sample_reader = adapters.from_sample_generator(sample_gen, BATCH, True, specs)
    bare_batch_reader = adapters.from_batch_generator(batch_gen, 2)
    res = {"batch_size": BATCH, "batches": nb, "capacity": args.capacity, "multiprocess": args.multiprocess}
    res["bare_sample_bps"] = best_rate(lambda: sum(1 for _ in bare_sample_reader()), nb, rep)
    res["bare_batch_bps"] = best_rate(lambda: sum(1 for _ in bare_batch_reader()), nb, rep)

    exe = fluid.Executor(fluid.CPUPlace())
    main_prog, _, loss = build(True, args.capacity, args.multiprocess)

    def bare_run_sample():
        n = 0
        for image, label in bare_sample_reader():
            exe.run(main_prog, feed={"image": image, "label": label}, fetch_list=[loss])
            n += 1
        return n
    res["bare_sample_plus_run_bps"] = best_rate(bare_run_sample, nb, rep)

    places = fluid.cpu_places(1)
    for kind, setter, gen in (("sample", "set_sample_generator", sample_gen), ("batch", "set_batch_generator", batch_gen)):
        _, loader, _ = build(True, args.capacity, args.multiprocess)
        kwargs = {"batch_size": BATCH} if kind == "sample" else {}
        getattr(loader, setter)(gen, places=places, **kwargs)
        res[f"iterable_{kind}_bps"] = best_rate(lambda: run_iterable(loader), nb, rep)
        main_ni, loader_ni, loss_ni = build(False, args.capacity, args.multiprocess)
        getattr(loader_ni, setter)(gen, **kwargs)
        res[f"non_iterable_{kind}_bps"] = best_rate(lambda: run_non_iterable(exe, main_ni, loader_ni, loss_ni), nb, rep)
        res[f"non_iterable_{kind}_verdict"] = loader_ni.bottleneck()
    res.update(torch_rate(samples, batches, nb, rep))
    for key in list(res):
        if key.endswith("_bps"):
            res[key] = round(res[key], 1)
    res["iterable_sample_vs_bare"] = round(res["iterable_sample_bps"] / res["bare_sample_bps"], 3)
    res["non_iterable_sample_vs_bare"] = round(res["non_iterable_sample_bps"] / res["bare_sample_bps"], 3)
    res["non_iterable_sample_vs_bare_plus_run"] = round(
        res["non_iterable_sample_bps"] / res["bare_sample_plus_run_bps"], 3)
    res["iterable_batch_us_per_batch"] = round(1e6 / res["iterable_batch_bps"], 2)
    res["non_iterable_batch_us_per_batch"] = round(1e6 / res["non_iterable_batch_bps"], 2)
    res["targets_met"] = {
        "iterable_sample>=0.8x_bare": res["iterable_sample_vs_bare"] >= 0.8,
        "batch_path<=30us": res["iterable_batch_us_per_batch"] <= 30,
        "non_iterable_one_op>=0.5x_bare": res["non_iterable_sample_vs_bare"] >= 0.5,
    }
    print(json.dumps(res))


if __name__ == "__main__":
    main()
