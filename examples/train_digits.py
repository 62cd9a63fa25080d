"""Train an MLP on the embedded 8x8 digits with the program shape of fluid's DataLoader user guide.

A train program and a test program are built by the same ``network()`` under
``fluid.unique_name.guard()``, so they name, and therefore share, the same parameters in the
global scope. Adam(learning_rate=0.01) minimizes the mean softmax cross entropy; after each epoch
the test program reports accuracy. Everything is seeded: two runs print the same numbers. Progress
shows as a tqdm bar when tqdm is installed (the ``progress`` extra), else as one line per epoch;
the elapsed time comes last. Exits with status 1, saying so, if the final test accuracy is below
0.95. Writes no file unless ``--plot PNG`` asks for one.

Run:  python examples/train_digits.py [--epochs 10] [--batch-size 64] [--seed 1]
      [--mode iterable|non_iterable|feed] [--plot curves.png]
"""
import argparse
import importlib.util
import os
import random
import sys
import time

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


def _epochs_with_progress(epochs, tag):
    """``range(epochs)`` under a tqdm bar when tqdm is installed (and stderr is a terminal), and the
    function that prints a result line without breaking the bar."""
    try:
        from tqdm import tqdm  # noqa: PLC0415 - optional (the `progress` extra)
    except ImportError:
        return range(epochs), print
    return tqdm(range(epochs), desc=tag, unit="epoch", disable=None), tqdm.write


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
        epoch_range, say = _epochs_with_progress(epochs, tag)
        for epoch in epoch_range:
            step_losses = run(exe, train_prog, [train_loss], train_reader, train_loader, feeder)
            counts = run(exe, test_prog, list(test_counts), test_reader, test_loader, feeder)
            correct, total = (sum(int(np.ravel(c[i])[0]) for c in counts) for i in (0, 1))
            accuracies.append(correct / total)
            losses.append(float(np.mean([np.ravel(r[0])[0] for r in step_losses])))
            say(f"[{tag}] epoch {epoch}: {len(step_losses)} batches, train loss {losses[-1]:.4f}, "
                f"test accuracy {accuracies[-1]:.4f}")
            sys.stdout.flush()
    return accuracies, losses


def _matplotlib():
    """pyplot (Agg backend), or None when matplotlib is not installed."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    import matplotlib  # noqa: PLC0415 - optional
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    return plt


def plot_curves(curves, target=TARGET_ACCURACY):
    """A figure of train loss and test accuracy per epoch (one line per model in ``curves``: {tag:
    (accuracies, losses)}), with axis labels, titles and the accuracy target as a dashed line."""
    plt = _matplotlib()
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415 - optional
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    for tag, (accs, losses) in curves.items():
        epochs = range(1, len(losses) + 1)
        ax_loss.plot(epochs, losses, marker="o", label=tag)
        ax_acc.plot(epochs, accs, marker="o", label=tag)
    ax_loss.set(title="Training loss", xlabel="epoch", ylabel="mean softmax cross entropy")
    ax_acc.axhline(target, color="gray", linestyle="--", label=f"target {target:.2f}")
    ax_acc.set(title="Test accuracy", xlabel="epoch", ylabel="accuracy")
    ax_acc.legend(loc="lower right")
    for ax in (ax_loss, ax_acc):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle("minifluid on the UCI digits")
    fig.tight_layout()
    return fig


def save_plot(path, curves):
    """``plot_curves(curves)`` written to ``path`` (PNG)."""
    fig = plot_curves(curves)
    fig.savefig(path, dpi=100)
    _matplotlib().close(fig)
    print(f"wrote {path}")


def _at_least(low):
    """An argparse type: an integer >= ``low`` (argparse names the option in its message)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value
    return parse


def parse_args(argv=None, default_epochs=10):
    """The examples' arguments, checked: a bad value stops here with argparse's usage message, as does
    ``--plot`` without matplotlib (before any training)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=_at_least(1), default=default_epochs,
                        help=f"passes over the training set (default {default_epochs})")
    parser.add_argument("--batch-size", type=_at_least(1), default=64, help="default 64")
    parser.add_argument("--seed", type=_at_least(0), default=1,
                        help="seeds shuffling and initialisation: the same seed prints the same numbers")
    parser.add_argument("--mode", choices=sorted(MODES), default="iterable",
                        help="feed: exe.run(feed=DataFeeder output); iterable / non_iterable: the DataLoader")
    parser.add_argument("--plot", metavar="PNG", help="save the loss and accuracy curves there (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.plot:
        if _matplotlib() is None:
            parser.error("--plot needs matplotlib, which is not installed: pip install matplotlib "
                         "(or leave out --plot)")
        folder = os.path.dirname(os.path.abspath(args.plot))
        if not os.path.isdir(folder):
            parser.error(f"--plot {args.plot}: the folder {folder} does not exist")
    return args


def _plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def main(argv=None):
    args = parse_args(argv)
    start = time.perf_counter()
    accuracies, losses = train(mlp, args.epochs, args.batch_size, args.seed, args.mode)
    print(f"[mlp] final test accuracy {accuracies[-1]:.4f} ({_plural(args.epochs, 'epoch')} in "
          f"{time.perf_counter() - start:.1f} s)")
    if args.plot:
        save_plot(args.plot, {"mlp": (accuracies, losses)})
    if accuracies[-1] < TARGET_ACCURACY:
        print(f"[mlp] below the target test accuracy {TARGET_ACCURACY} after {_plural(args.epochs, 'epoch')}: "
              "train longer (--epochs) for this run to pass (exit status 1)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
