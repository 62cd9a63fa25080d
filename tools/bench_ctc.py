"""Time of the CTC ops through the Executor: warpctc's loss with its gradient (a program computing the CTC loss of
fed logits and fetching d(sum loss)/d(logits)) and edit_distance, next to PyTorch's ctc_loss forward + backward
on the same logits (when ``torch`` is importable), whose losses and gradients it also compares.

Batch: 32 LoD sequences of 100-150 frames over 96 classes (blank 0) with labels of 10-30 tokens; edit_distance
on 256 pairs of 0-40 tokens. Each side runs alternately after a warm-up; prints ONE JSON line: median ms per
step of each, ``ratio`` = minifluid / torch, and the largest loss and gradient differences.

Run: python tools/bench_ctc.py [--steps 10] [--threads 1]
torch is never a dependency: ``PYTHONPATH=$PWD /tmp/tv/bin/python tools/bench_ctc.py``.
"""
import argparse
import json
import statistics
import time

import numpy as np

import minifluid as fluid
from minifluid.lod_tensor import LoDTensor
from minifluid.ops import blas as _blas

BATCH, CLASSES, PAIRS = 32, 96, 256


def _ctc_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, CLASSES], "float32", lod_level=1)
        y = fluid.data("y", [None, 1], "int32", lod_level=1)
        x.stop_gradient = False
        loss = fluid.layers.warpctc(x, y)
        grad, = fluid.gradients([fluid.layers.reduce_sum(loss)], [x])
    return main, [loss, grad]


def _edit_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        h, r = fluid.data("h", [None, 40], "int64"), fluid.data("r", [None, 40], "int64")
        hl, rl = fluid.data("hl", [None], "int64"), fluid.data("rl", [None], "int64")
        dist, _ = fluid.layers.edit_distance(h, r, False, input_length=hl, label_length=rl)
    return main, [dist]


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    _blas.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    t_lens, l_lens = rng.integers(100, 151, BATCH), rng.integers(10, 31, BATCH)
    logits = rng.standard_normal((int(t_lens.sum()), CLASSES)).astype("float32")
    labels = rng.integers(1, CLASSES, (int(l_lens.sum()), 1)).astype("int32")
    ctc_feed = {"x": LoDTensor(logits, [t_lens.tolist()]), "y": LoDTensor(labels, [l_lens.tolist()])}
    edit_feed = {"h": rng.integers(0, 30, (PAIRS, 40)), "r": rng.integers(0, 30, (PAIRS, 40)),
                 "hl": rng.integers(0, 41, PAIRS), "rl": rng.integers(1, 41, PAIRS)}
    exe = fluid.Executor(fluid.CPUPlace())
    ctc_prog, ctc_fetch = _ctc_program()
    edit_prog, edit_fetch = _edit_program()
    run_ctc = lambda: exe.run(ctc_prog, feed=ctc_feed, fetch_list=ctc_fetch)  # noqa: E731
    run_edit = lambda: exe.run(edit_prog, feed=edit_feed, fetch_list=edit_fetch)  # noqa: E731
    torch_step = None
    try:
        import torch
        torch.set_num_threads(args.threads)
        bounds = np.concatenate([[0], np.cumsum(t_lens)])
        padded = np.zeros((int(t_lens.max()), BATCH, CLASSES), "float32")
        for b in range(BATCH):
            padded[:t_lens[b], b] = logits[bounds[b]:bounds[b + 1]]
        targets, tl, ll = torch.tensor(labels.reshape(-1).astype("int64")), torch.tensor(t_lens), torch.tensor(l_lens)

        def torch_step():
            xt = torch.tensor(padded, requires_grad=True)
            loss = torch.nn.functional.ctc_loss(torch.log_softmax(xt, 2), targets, tl, ll, reduction="none")
            loss.sum().backward()
            return loss.detach().numpy(), xt.grad.numpy()
    except ImportError:
        pass
    for _ in range(2):
        run_ctc(), run_edit(), torch_step and torch_step()
    ours, edits, theirs = [], [], []
    for _ in range(args.steps):
        seconds, (loss, grad) = _timed(run_ctc)
        ours.append(seconds)
        edits.append(_timed(run_edit)[0])
        if torch_step:
            seconds, (t_loss, t_grad) = _timed(torch_step)
            theirs.append(seconds)
    result = {"warpctc_ms": round(1e3 * statistics.median(ours), 2),
              "edit_distance_ms": round(1e3 * statistics.median(edits), 2)}
    if torch_step:
        rows = np.concatenate([t_grad[:t, b] for b, t in enumerate(t_lens)])
        result.update(torch_ctc_ms=round(1e3 * statistics.median(theirs), 2),
                      ratio=round(statistics.median(ours) / statistics.median(theirs), 2),
                      max_loss_diff=float(np.abs(loss.reshape(-1) - t_loss).max()),
                      max_grad_diff=float(np.abs(grad - rows).max()))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
