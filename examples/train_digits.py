"""Train an MLP on the embedded 8x8 digits with the program shape of fluid's DataLoader user guide.

A train program and a test program are built by the same ``network()`` under
``fluid.unique_name.guard()``, so they name, and therefore share, the same parameters in the
global scope. Adam(learning_rate=0.01) minimizes the mean softmax cross entropy; after each epoch
the test program reports accuracy. Exits with status 1 if the final test accuracy is below 0.95.

Run:  python examples/train_digits.py [--epochs 10] [--batch-size 64] [--seed 1] [--mode feed]
"""
import argparse
import sys

import numpy as np

import minifluid as fluid
from minifluid.dataset import digits

TARGET_ACCURACY = 0.95


def mlp(image):
    hidden = fluid.layers.fc(image, size=128, act="relu")
    return fluid.layers.fc(hidden, size=10)


def network(model=mlp):
    """Data variables, model, loss and accuracy; called once per program."""
    image = fluid.data(name="image", shape=[None, 64], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    logits = model(image)
    loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    accuracy = fluid.layers.accuracy(input=logits, label=label)
    return loss, accuracy


def build_programs(model, seed, learning_rate=0.01):
    train_prog, train_startup = fluid.Program(), fluid.Program()
    test_prog, test_startup = fluid.Program(), fluid.Program()
    for prog in (train_prog, train_startup, test_prog, test_startup):
        prog.random_seed = seed
    with fluid.program_guard(train_prog, train_startup):
        with fluid.unique_name.guard():
            train_loss, _ = network(model)
            fluid.optimizer.Adam(learning_rate=learning_rate).minimize(train_loss)
    with fluid.program_guard(test_prog, test_startup):
        with fluid.unique_name.guard():
            test_loss, test_acc = network(model)
    test_prog = test_prog.clone(for_test=True)  # batch_norm / dropout in inference mode
    return (train_prog, train_startup, train_loss), (test_prog, test_startup, test_loss, test_acc)


def sample_batches(reader, batch_size, rng=None):
    """Batches of (images [B, 64] float32, labels [B, 1] int64) from a sample reader, shuffled by ``rng``."""
    samples = list(reader())
    order = rng.permutation(len(samples)) if rng is not None else np.arange(len(samples))
    for start in range(0, len(order), batch_size):
        chunk = [samples[i] for i in order[start:start + batch_size]]
        images = np.stack([s[0] for s in chunk]).astype("float32")
        labels = np.array([s[1] for s in chunk], dtype="int64").reshape(-1, 1)
        yield {"image": images, "label": labels}


def run_feed(exe, program, fetch, batches):
    """``--mode feed``: one ``exe.run(feed=...)`` per batch; returns the fetched values per batch."""
    return [exe.run(program, feed=feed, fetch_list=fetch) for feed in batches]


MODES = {"feed": run_feed}  # "iterable" / "non_iterable" arrive with the DataLoader


def train(model=mlp, epochs=10, batch_size=64, seed=1, mode="feed", learning_rate=0.01, tag="mlp"):
    """Train and evaluate; returns the list of per-epoch test accuracies."""
    (train_prog, train_startup, train_loss), (test_prog, test_startup, test_loss, test_acc) = \
        build_programs(model, seed, learning_rate)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    run = MODES[mode]
    rng = np.random.RandomState(seed)
    np.random.seed(seed)  # ops whose seed is 0 (program seed 0) draw from numpy's global generator
    test_batches = list(sample_batches(digits.test(), batch_size))
    sizes = [len(b["label"]) for b in test_batches]
    accuracies = []
    with fluid.scope_guard(scope):
        exe.run(train_startup)
        exe.run(test_startup)  # same names and seed: the shared parameters get the same values
        for epoch in range(epochs):
            losses = run(exe, train_prog, [train_loss], sample_batches(digits.train(), batch_size, rng))
            results = run(exe, test_prog, [test_acc], test_batches)
            accuracy = float(np.average([float(np.ravel(r[0])[0]) for r in results], weights=sizes))
            loss = float(np.mean([np.ravel(r[0])[0] for r in losses]))
            accuracies.append(accuracy)
            print(f"[{tag}] epoch {epoch}: train loss {loss:.4f}, test accuracy {accuracy:.4f}", flush=True)
    return accuracies


def parse_args(argv=None, default_epochs=10):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=default_epochs)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=sorted(MODES), default="feed")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    accuracies = train(mlp, args.epochs, args.batch_size, args.seed, args.mode)
    print(f"[mlp] final test accuracy {accuracies[-1]:.4f}")
    return 0 if accuracies[-1] >= TARGET_ACCURACY else 1


if __name__ == "__main__":
    sys.exit(main())
