"""Train an MLP on the embedded 8x8 digits with the program shape of fluid's DataLoader user guide.

A train program and a test program are built by the same ``network()`` under
``fluid.unique_name.guard()``, so they name, and therefore share, the same parameters in the
global scope. Adam(learning_rate=0.01) minimizes the mean softmax cross entropy; after each epoch
the test program reports accuracy. Exits with status 1 if the final test accuracy is below 0.95.

Run:  python examples/train_digits.py [--epochs 10] [--batch-size 64] [--seed 1]
      [--mode iterable|non_iterable|feed] [--plot curves.png]
"""
import argparse
import random
import sys

import numpy as np

import minifluid as fluid
from minifluid.dataset import digits

TARGET_ACCURACY = 0.95


def mlp(image):
    hidden = fluid.layers.fc(image, size=128, act="relu")
    return fluid.layers.fc(hidden, size=10)


def network(model=mlp, mode="feed"):
    """Data variables (and, in loader modes, their DataLoader), model, loss and accuracy counters."""
    image = fluid.data(name="image", shape=[None, 64], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    loader = None
    if mode != "feed":  # created before the layers, as fluid's guide says (minifluid also accepts after)
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=16,
                                                    iterable=(mode == "iterable"))
    logits = model(image)
    loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    correct = fluid.layers.create_tensor(dtype="int32")
    total = fluid.layers.create_tensor(dtype="int32")
    fluid.layers.accuracy(input=logits, label=label, correct=correct, total=total)
    return loss, (correct, total), loader, (image, label)


def build_programs(model, seed, mode, learning_rate=0.01):
    """Train and test programs built by the same network() under unique_name.guard(): shared parameters."""
    train_prog, train_startup = fluid.Program(), fluid.Program()
    test_prog, test_startup = fluid.Program(), fluid.Program()
    for prog in (train_prog, train_startup, test_prog, test_startup):
        prog.random_seed = seed
    with fluid.program_guard(train_prog, train_startup):
        with fluid.unique_name.guard():
            train_loss, _, train_loader, feed_vars = network(model, mode)
            fluid.optimizer.Adam(learning_rate=learning_rate).minimize(train_loss)
    with fluid.program_guard(test_prog, test_startup):
        with fluid.unique_name.guard():
            _, test_counts, test_loader, _ = network(model, mode)
    test_prog = test_prog.clone(for_test=True)  # batch_norm / dropout in inference mode
    return (train_prog, train_startup, train_loss, train_loader, feed_vars), \
        (test_prog, test_startup, test_counts, test_loader)


def run_feed(exe, program, fetch, reader, loader, feeder):
    """``--mode feed``: DataFeeder turns each sample list into a feed dict for ``exe.run``."""
    return [exe.run(program, feed=feeder.feed(batch), fetch_list=fetch) for batch in reader()]


def run_iterable(exe, program, fetch, reader, loader, feeder):
    """``--mode iterable``: ``for data in loader():`` yields feeds (seed 001's run_iterable)."""
    loader.set_sample_list_generator(reader, places=fluid.CPUPlace())
    return [exe.run(program, feed=data, fetch_list=fetch) for data in loader()]


def run_non_iterable(exe, program, fetch, reader, loader, feeder):
    """``--mode non_iterable``: start(), exe.run() until EOFException, reset() (seed 001's run_non_iterable)."""
    loader.set_sample_list_generator(reader)
    results = []
    loader.start()
    try:
        while True:
            results.append(exe.run(program, fetch_list=fetch))
    except fluid.core.EOFException:
        loader.reset()
    return results


MODES = {"feed": run_feed, "iterable": run_iterable, "non_iterable": run_non_iterable}


def train(model=mlp, epochs=10, batch_size=64, seed=1, mode="feed", learning_rate=0.01, tag="mlp"):
    """Train and evaluate; returns (per-epoch test accuracies, per-epoch train losses)."""
    random.seed(seed)  # fluid.io.shuffle draws from Python's random
    np.random.seed(seed)  # ops whose seed is 0 (program seed 0) draw from numpy's global generator
    run = MODES[mode]
    train_reader = fluid.io.batch(fluid.io.shuffle(digits.train(), buf_size=2048), batch_size)
    test_reader = fluid.io.batch(digits.test(), batch_size)
    exe = fluid.Executor(fluid.CPUPlace())
    accuracies, losses = [], []
    with fluid.scope_guard(fluid.Scope()):  # loaders keep their queues in the global scope: build inside
        (train_prog, train_startup, train_loss, train_loader, feed_vars), \
            (test_prog, test_startup, test_counts, test_loader) = build_programs(model, seed, mode, learning_rate)
        feeder = fluid.DataFeeder(feed_list=list(feed_vars), place=fluid.CPUPlace(), program=train_prog)
        exe.run(train_startup)
        exe.run(test_startup)  # same names and seed: the shared parameters get the same values
        for epoch in range(epochs):
            step_losses = run(exe, train_prog, [train_loss], train_reader, train_loader, feeder)
            counts = run(exe, test_prog, list(test_counts), test_reader, test_loader, feeder)
            correct, total = (sum(int(np.ravel(c[i])[0]) for c in counts) for i in (0, 1))
            accuracies.append(correct / total)
            losses.append(float(np.mean([np.ravel(r[0])[0] for r in step_losses])))
            print(f"[{tag}] epoch {epoch}: {len(step_losses)} batches, train loss {losses[-1]:.4f}, "
                  f"test accuracy {accuracies[-1]:.4f}", flush=True)
    return accuracies, losses


def save_plot(path, curves):
    """Loss and accuracy per epoch as a PNG (needs matplotlib; says so when it is missing)."""
    try:
        import matplotlib  # noqa: PLC0415 - optional
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        print("--plot needs matplotlib (pip install matplotlib); no plot written", file=sys.stderr)
        return False
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    for tag, (accs, losses) in curves.items():
        ax_loss.plot(losses, marker="o", label=tag)
        ax_acc.plot(accs, marker="o", label=tag)
    ax_loss.set(title="train loss", xlabel="epoch")
    ax_acc.set(title="test accuracy", xlabel="epoch")
    ax_acc.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")
    return True


def parse_args(argv=None, default_epochs=10):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=default_epochs)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=sorted(MODES), default="iterable",
                        help="feed: exe.run(feed=DataFeeder output); iterable / non_iterable: the DataLoader")
    parser.add_argument("--plot", metavar="PNG", help="save loss/accuracy curves (matplotlib optional)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    accuracies, losses = train(mlp, args.epochs, args.batch_size, args.seed, args.mode)
    print(f"[mlp] final test accuracy {accuracies[-1]:.4f}")
    if args.plot:
        save_plot(args.plot, {"mlp": (accuracies, losses)})
    return 0 if accuracies[-1] >= TARGET_ACCURACY else 1


if __name__ == "__main__":
    sys.exit(main())
