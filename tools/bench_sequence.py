"""Training throughput of a stacked-LSTM text classifier on LoD batches, next to PyTorch's nn.LSTM on packed
sequences (when ``torch`` is importable).

The model, the same arithmetic on both sides: ids (vocabulary 5,000) -> embedding 128 -> [fc 4 * 128 ->
dynamic_lstm 128 (no peepholes)] x 2 -> sequence_pool max over time -> fc 2 softmax -> cross_entropy -> mean,
trained with Adam (lr 1e-3); PyTorch: nn.Embedding -> nn.LSTM(128, 128, num_layers=2) over a
PackedSequence -> max over each sequence's valid steps -> nn.Linear(128, 2) -> CrossEntropyLoss, Adam. The
fc before each dynamic_lstm is the input projection nn.LSTM holds inside. Batches of 32 sequences with
lengths drawn uniformly from 20-200, pre-made, the same for both; each side runs its steps alternately with the
other's after a warm-up, with the same number of BLAS threads (``--threads``, default 1: the shared 2-core
machines this runs on are usually busy). Prints ONE JSON line: samples/s of each (32 / median step time),
``ratio`` = minifluid / torch, and both first losses (ln 2 ~ 0.69 at the start).

Run: python tools/bench_sequence.py [--steps 8] [--warmup 2] [--threads 1]
torch is never a dependency: run from an environment that has both, e.g.
``PYTHONPATH=$PWD /tmp/tv/bin/python tools/bench_sequence.py``.
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np

import minifluid as fluid
from minifluid.ops import blas as _blas

VOCAB, EMB, HIDDEN, BATCH, CLASSES = 5000, 128, 128, 32, 2
MIN_LEN, MAX_LEN = 20, 200


def make_batches(n, seed=0):
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n):
        lengths = rng.integers(MIN_LEN, MAX_LEN + 1, BATCH)
        ids = rng.integers(0, VOCAB, (int(lengths.sum()), 1))
        batches.append((ids, lengths, rng.integers(0, CLASSES, (BATCH, 1))))
    return batches


# --- minifluid ----------------------------------------------------------------------------------------------
def build_minifluid():
    words = fluid.layers.data("words", [1], dtype="int64", lod_level=1)
    label = fluid.layers.data("label", [1], dtype="int64")
    hidden = fluid.layers.embedding(words, size=[VOCAB, EMB])
    for _ in range(2):
        hidden, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(hidden, 4 * HIDDEN), 4 * HIDDEN, use_peepholes=False)
    pooled = fluid.layers.sequence_pool(hidden, "max")
    prediction = fluid.layers.fc(pooled, CLASSES, act="softmax")
    loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
    fluid.optimizer.Adam(1e-3).minimize(loss)
    return loss


class MinifluidSide:
    name = "minifluid"

    def __init__(self):
        self.main, startup = fluid.Program(), fluid.Program()
        self.main.random_seed = startup.random_seed = 1
        with fluid.program_guard(self.main, startup), fluid.unique_name.guard():
            self.loss = build_minifluid()
        self.exe, self.scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        self.exe.run(startup, scope=self.scope)

    def step(self, batch):
        ids, lengths, labels = batch
        feed = {"words": fluid.create_lod_tensor(ids, [lengths.tolist()], fluid.CPUPlace()), "label": labels}
        return float(self.exe.run(self.main, feed=feed, fetch_list=[self.loss], scope=self.scope)[0][0])


# --- PyTorch ----------------------------------------------------------------------------------------------------
class TorchSide:
    name = "torch"

    def __init__(self, torch, threads):
        from torch import nn
        from torch.nn.utils.rnn import pack_sequence, pad_packed_sequence
        torch.manual_seed(1)
        torch.set_num_threads(threads)
        self.torch, self.pack, self.unpack = torch, pack_sequence, pad_packed_sequence

        class Net(nn.Module):
            def __init__(net):
                super().__init__()
                net.emb, net.lstm, net.out = nn.Embedding(VOCAB, EMB), nn.LSTM(EMB, HIDDEN, 2), nn.Linear(HIDDEN, CLASSES)

            def forward(net, seqs):
                packed = self.pack([net.emb(s) for s in seqs], enforce_sorted=False)
                out, _ = net.lstm(packed)
                padded, _ = self.unpack(out, padding_value=-1e30)
                return net.out(padded.max(dim=0).values)
        self.net = Net()
        self.opt = torch.optim.Adam(self.net.parameters(), 1e-3)
        self.loss_fn = nn.CrossEntropyLoss()

    def step(self, batch):
        ids, lengths, labels = batch
        torch = self.torch
        flat = torch.from_numpy(ids[:, 0])
        seqs = list(torch.split(flat, lengths.tolist()))
        self.opt.zero_grad()
        loss = self.loss_fn(self.net(seqs), torch.from_numpy(labels[:, 0]))
        loss.backward()
        self.opt.step()
        return loss.item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8, help="timed steps per side (default 8)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps per side first (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads of both sides (default 1)")
    args = parser.parse_args()
    _blas.set_num_threads(args.threads)
    sides = [MinifluidSide()]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        sides.append(TorchSide(torch, args.threads))
    batches = make_batches(args.warmup + args.steps)
    times = {s.name: [] for s in sides}
    first = {}
    for i, batch in enumerate(batches):
        for side in sides:
            start = time.perf_counter()
            loss = side.step(batch)
            if i >= args.warmup:
                times[side.name].append(time.perf_counter() - start)
            first.setdefault(side.name, loss)
    result = {"bench": "sequence", "model": "emb128-[fc+lstm128]x2-maxpool-fc2", "batch": BATCH,
              "lengths": [MIN_LEN, MAX_LEN], "steps": args.steps, "threads": args.threads,
              "machine": platform.machine()}
    for name, ts in times.items():
        median = statistics.median(ts)
        result[f"{name}_step_ms"] = round(median * 1e3, 1)
        result[f"{name}_samples_per_s"] = round(BATCH / median, 1)
        result[f"{name}_first_loss"] = round(first[name], 4)
    if torch is not None:
        result["ratio"] = round(result["minifluid_samples_per_s"] / result["torch_samples_per_s"], 2)
        result["torch_version"] = torch.__version__
    else:
        result["torch"] = "not importable: run from an environment with torch for the comparison"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
