"""Reader failures, timeouts, worker processes and clean shutdown (REFERENCE L73-L76, "goes beyond" 1-3, 5, 9)."""
import itertools
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import minifluid as fluid
from minifluid.data.loader import PRODUCER_THREAD_NAME
from minifluid.data.worker import ReaderTimeoutError
from minifluid.errors import QUEUE_KILLED_MESSAGE, ReaderKilledError
from minifluid.data.leak_checks import live_threads

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def live_producers(timeout=3.0):
    """Producer threads still alive after a short grace period (they are joined by the loader)."""
    return live_threads(PRODUCER_THREAD_NAME, timeout)


def build(iterable, **kwargs):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=4, iterable=iterable, **kwargs)
        loss = fluid.layers.mean(image)
    return main, loader, loss


def failing_batches():
    for i in range(3):
        yield np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")
    raise ValueError("cannot open /data/part-00003")


def read_all(iterable, main, loader, loss):
    """Values read before the failure, and the error."""
    got = []
    exe = fluid.Executor(fluid.CPUPlace())
    try:
        if iterable:
            for step in loader():
                got.append(int(np.asarray(step[0]["label"])[0, 0]))
        else:
            loader.start()
            while True:
                got.append(int(exe.run(main, fetch_list=["label"])[0][0, 0]))
    except Exception as e:  # noqa: BLE001 - the test inspects it
        return got, e
    return got, None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("multiprocess", [False, True])
@pytest.mark.parametrize("iterable", [True, False])
def test_reader_exception_reaches_the_consumer_with_its_cause(iterable, multiprocess):
    main, loader, loss = build(iterable, use_multiprocess=multiprocess)
    loader.set_batch_generator(failing_batches, places=fluid.CPUPlace() if iterable else None)
    got, err = read_all(iterable, main, loader, loss)
    assert got == [0, 1, 2]  # batches made before the failure come first
    assert isinstance(err, ReaderKilledError) and isinstance(err, SystemError)
    assert not isinstance(err, fluid.core.EOFException)
    text = str(err)
    assert QUEUE_KILLED_MESSAGE in text and "ValueError" in text and "cannot open /data/part-00003" in text
    assert "failing_batches" in text  # the producer-side traceback
    assert isinstance(err.__cause__, ValueError) and "part-00003" in str(err.__cause__)
    if not iterable:
        with pytest.raises(ReaderKilledError):  # it keeps failing until reset, never hangs
            fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[loss])
        loader.reset()
    assert not live_producers()


@pytest.mark.timeout(60)
def test_error_before_any_batch_and_recovery_after_reset():
    main, loader, loss = build(False)

    def broken():
        raise KeyError("no such column")
        yield  # noqa: unreachable - makes this a generator

    loader.set_batch_generator(broken)
    got, err = read_all(False, main, loader, loss)
    assert got == [] and isinstance(err.__cause__, KeyError)
    loader.reset()
    loader.set_batch_generator(lambda: iter([(np.zeros([1, 4], "float32"), np.zeros([1, 1], "int64"))]))
    got, err = read_all(False, main, loader, loss)
    assert got == [0] and isinstance(err, fluid.core.EOFException)
    loader.reset()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("multiprocess", [False, True])
def test_multiprocess_transport_gives_the_same_batches(multiprocess):
    main, loader, loss = build(True, use_multiprocess=multiprocess)

    def reader():
        for i in range(8):
            yield np.full(4, i, "float32"), np.array([i])

    loader.set_sample_generator(reader, batch_size=2, places=fluid.cpu_places(2))
    steps = [[np.asarray(d["image"]).copy() for d in step] for step in loader()]
    assert [[a[:, 0].tolist() for a in s] for s in steps] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    assert not live_producers()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("multiprocess", [False, True])
def test_timeout_raises_instead_of_waiting_forever(multiprocess):
    main, loader, loss = build(True, use_multiprocess=multiprocess, timeout=0.3)

    def slow():
        yield np.zeros([1, 4], "float32"), np.zeros([1, 1], "int64")
        time.sleep(3)
        yield np.zeros([1, 4], "float32"), np.zeros([1, 1], "int64")

    loader.set_batch_generator(slow, places=fluid.CPUPlace())
    it = iter(loader)
    next(it)
    with pytest.raises(ReaderTimeoutError, match="timeout"):
        next(it)


@pytest.mark.timeout(60)
def test_garbage_collected_loader_stops_its_producer():
    def endless():
        while True:
            yield np.zeros([1, 4], "float32"), np.zeros([1, 1], "int64")

    main, loader, loss = build(False)
    loader.set_batch_generator(endless)
    loader.start()
    time.sleep(0.05)
    del loader, main, loss
    assert not live_producers()
    _, loader, _ = build(True)
    loader.set_batch_generator(endless, places=fluid.CPUPlace())
    it = iter(loader)
    next(it)
    del it  # an abandoned epoch (like `break`)
    assert not live_producers()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("iterable", [True, False])
def test_script_abandoning_an_epoch_exits_cleanly(iterable):
    script = textwrap.dedent(f"""
        import numpy as np, minifluid as fluid
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=2, iterable={iterable})
        loss = fluid.layers.mean(image)
        def endless():
            while True:
                yield np.zeros([2, 4], "float32"), np.zeros([2, 1], "int64")
        exe = fluid.Executor(fluid.CPUPlace())
        if {iterable}:
            loader.set_batch_generator(endless, places=fluid.CPUPlace())
            for i, data in enumerate(loader()):
                exe.run(feed=data, fetch_list=[loss])
                if i == 3:
                    break
        else:
            loader.set_batch_generator(endless)
            loader.start()
            for _ in range(3):
                exe.run(fetch_list=[loss])
        print("done")
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"


@pytest.mark.timeout(60)
def test_multiprocess_early_reset_leaves_no_process_thread_or_segment():
    main, loader, loss = build(False, use_multiprocess=True)

    def endless():
        for i in itertools.count():
            yield np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")

    loader.set_batch_generator(endless)
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(5):
        loader.start()
        assert [int(exe.run(main, fetch_list=["label"])[0][0, 0]) for _ in range(3)] == [0, 1, 2]
        loader.reset()
    assert not live_producers()
    assert multiprocessing.active_children() == []
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"mf_{os.getpid()}_")]
