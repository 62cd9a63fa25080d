"""Seed 001 whole: fluid's static DataLoader guide, on the embedded digits, in both loader modes.

Train and test programs are built by one ``network()`` under ``unique_name.guard()`` (shared
parameters), compiled for data parallelism over ``fluid.cpu_places(2)``, and fed by
``DataLoader.from_generator`` in iterable mode (``for data in loader()``) and in non-iterable mode
(``start()`` / ``EOFException`` / ``reset()``). Each generator batch is one place's batch.

Run:  python examples/static_dataloader_modes.py [--epochs 3] [--batch-size 64]
"""
import argparse

import numpy as np

import minifluid as fluid
from minifluid.dataset import digits


def network(iterable):
    image = fluid.data(name="image", dtype="float32", shape=[None, 64])
    label = fluid.data(name="label", dtype="int64", shape=[None, 1])
    loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=64, iterable=iterable)
    hidden = fluid.layers.fc(image, size=64, act="relu")
    fc = fluid.layers.fc(hidden, size=10)
    xe = fluid.layers.softmax_with_cross_entropy(fc, label)
    loss = fluid.layers.reduce_mean(xe)
    return loss, loader


def build(iterable, places):
    train_prog, train_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(train_prog, train_startup):
        with fluid.unique_name.guard():
            train_loss, train_loader = network(iterable)
            fluid.optimizer.Adam(learning_rate=0.01).minimize(train_loss)
    test_prog, test_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(test_prog, test_startup):
        with fluid.unique_name.guard():
            test_loss, test_loader = network(iterable)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(train_startup)
    exe.run(test_startup)
    train_prog = fluid.CompiledProgram(train_prog).with_data_parallel(loss_name=train_loss.name, places=places)
    test_prog = fluid.CompiledProgram(test_prog).with_data_parallel(share_vars_from=train_prog, places=places)
    return exe, (train_prog, train_loss, train_loader), (test_prog, test_loss, test_loader)


def run_iterable(program, exe, loss, data_loader):
    losses = []
    for data in data_loader():
        (loss_value,) = exe.run(program=program, feed=data, fetch_list=[loss])
        losses.append(float(np.mean(loss_value)))
    return losses


def run_non_iterable(program, exe, loss, data_loader):
    losses = []
    data_loader.start()
    try:
        while True:
            (loss_value,) = exe.run(program=program, fetch_list=[loss])
            losses.append(float(np.mean(loss_value)))
    except fluid.core.EOFException:
        data_loader.reset()
    return losses


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args(argv)
    places = fluid.cpu_places(2)
    for iterable, run in ((True, run_iterable), (False, run_non_iterable)):
        mode = "iterable" if iterable else "non_iterable"
        with fluid.scope_guard(fluid.Scope()):
            exe, (train_prog, train_loss, train_loader), (test_prog, test_loss, test_loader) = \
                build(iterable, places)
            loader_places = places if iterable else None
            train_loader.set_sample_list_generator(
                fluid.io.shuffle(fluid.io.batch(digits.train(), args.batch_size), buf_size=1024),
                places=loader_places)
            test_loader.set_sample_list_generator(fluid.io.batch(digits.test(), args.batch_size),
                                                  places=loader_places)
            for epoch in range(args.epochs):
                train_losses = run(train_prog, exe, train_loss, train_loader)
                test_losses = run(test_prog, exe, test_loss, test_loader)
                print(f"[{mode}] epoch {epoch}: {len(train_losses)} train steps, train loss "
                      f"{np.mean(train_losses):.4f}, {len(test_losses)} test steps, test loss "
                      f"{np.mean(test_losses):.4f}", flush=True)


if __name__ == "__main__":
    main()
