"""Seed 001 ("Asynchronous Data Reading"): the user's train/test script, run as written with
``import minifluid as fluid`` (CPU places instead of CUDA, the bundled digits instead of MNIST)."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dataset import digits


def build(iterable):
    def network():
        # Create data holder.
        image = fluid.data(name='image', dtype='float32', shape=[None, 64])
        label = fluid.data(name='label', dtype='int64', shape=[None, 1])
        # Create DataLoader object.
        reader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=64, iterable=iterable)
        # Define model.
        fc = fluid.layers.fc(image, size=10)
        xe = fluid.layers.softmax_with_cross_entropy(fc, label)
        loss = fluid.layers.reduce_mean(xe)
        return loss, reader

    train_prog, train_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(train_prog, train_startup):
        with fluid.unique_name.guard():
            train_loss, train_loader = network()
            adam = fluid.optimizer.Adam(learning_rate=0.01)
            adam.minimize(train_loss)
    test_prog, test_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(test_prog, test_startup):
        with fluid.unique_name.guard():
            test_loss, test_loader = network()
    return train_prog, train_startup, train_loss, train_loader, test_prog, test_startup, test_loss, test_loader


def run_iterable(program, exe, loss, data_loader):
    losses = []
    for data in data_loader():
        loss_value = exe.run(program=program, feed=data, fetch_list=[loss])
        losses.append(float(np.array(loss_value[0]).reshape(-1)[0]))
    return losses


def run_non_iterable(program, exe, loss, data_loader):
    losses = []
    data_loader.start()
    try:
        while True:
            loss_value = exe.run(program=program, fetch_list=[loss])
            losses.append(float(np.array(loss_value[0]).reshape(-1)[0]))
    except fluid.core.EOFException:
        data_loader.reset()
    return losses


@pytest.mark.timeout(300)
@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("iterable", [True, False])
def test_seed_001_train_and_test(iterable, compiled, monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    np.random.seed(0)
    (train_prog, train_startup, train_loss, train_loader,
     test_prog, test_startup, test_loss, test_loader) = build(iterable)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)

    # Run startup_program for initialization.
    exe.run(train_startup)
    exe.run(test_startup)
    assert sorted(p.name for p in train_prog.all_parameters()) == ["fc_0.b_0", "fc_0.w_0"]

    if compiled:  # Compile programs (two CPU places: CPU_NUM=2).
        train_prog = fluid.CompiledProgram(train_prog).with_data_parallel(loss_name=train_loss.name)
        test_prog = fluid.CompiledProgram(test_prog).with_data_parallel(share_vars_from=train_prog)

    # Configure data source of DataLoader.
    places = (fluid.cpu_places() if compiled else fluid.cpu_places(1)) if iterable else None
    train_loader.set_sample_list_generator(
        fluid.io.shuffle(fluid.io.batch(digits.train(), 64), buf_size=1024), places=places)
    test_loader.set_sample_list_generator(fluid.io.batch(digits.test(), 64), places=places)

    run = run_iterable if iterable else run_non_iterable
    test_means = []
    for epoch_id in range(4):
        train_losses = run(train_prog, exe, train_loss, train_loader)
        test_losses = run(test_prog, exe, test_loss, test_loader)
        # 1437 samples -> 23 batches of 64; on 2 places the incomplete last round is dropped
        assert len(train_losses) == (11 if compiled else 23)
        assert len(test_losses) == (3 if compiled else 6)
        test_means.append(np.mean(test_losses))
    assert all(np.isfinite(test_means))
    assert test_means[-1] < test_means[0] * 0.7, test_means
