"""Faults around worker processes and multi-place rounds (issue 23 points 6, 8, 9, 10, 12, 14)."""
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import minifluid as fluid
from minifluid.data import loops
from minifluid.data.leak_checks import shm_segments
from minifluid.data.shm import SHM_LIMIT_ENV
from minifluid.data.worker import ProcessBatchSource, ProcessPoolBatchSource, ReaderTimeoutError, SharedMemoryFullError
from minifluid.errors import ReaderKilledError

from .test_loader_errors import build

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))



def batch(i):
    return np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")


def three_then_fail():
    for i in range(3):
        yield batch(i)
    raise ValueError("cannot open /data/part-00003")


def labels(step):
    return [int(np.asarray(d["label"])[0, 0]) for d in step]


# --- 9: a batch made before a failure is delivered on several places too ----------------------------------
@pytest.mark.timeout(60)
@pytest.mark.parametrize("use_multiprocess", [False, True])
def test_two_places_without_drop_last_deliver_the_batch_made_before_a_failure(use_multiprocess):
    _, loader, _ = build(True, use_multiprocess=use_multiprocess, drop_last=False)
    loader.set_batch_generator(three_then_fail, places=fluid.cpu_places(2))
    got = []
    with pytest.raises(ReaderKilledError, match="part-00003"):
        for step in loader():
            got.append(labels(step))
    assert got == [[0, 1], [2]]


@pytest.mark.timeout(60)
def test_data_parallel_non_iterable_runs_the_last_batch_then_raises():
    main, loader, loss = build(False, drop_last=False)
    loader.set_batch_generator(three_then_fail)
    exe = fluid.Executor(fluid.CPUPlace())
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    loader.start()
    got = []
    try:
        with pytest.raises(ReaderKilledError, match="part-00003"):
            while True:
                got.append([int(v[0, 0]) for v in exe.run(compiled, fetch_list=["label"], return_merged=False)[0]])
    finally:
        loader.reset()
    assert got == [[0, 1], [2]]


@pytest.mark.timeout(60)
def test_with_drop_last_a_short_round_before_a_failure_is_dropped_as_at_the_end():
    _, loader, _ = build(True, drop_last=True)
    loader.set_batch_generator(three_then_fail, places=fluid.cpu_places(2))
    got = []
    with pytest.raises(ReaderKilledError, match="part-00003"):
        for step in loader():
            got.append(labels(step))
    assert got == [[0, 1]]


# --- 10: a worker's reader raising SystemExit / KeyboardInterrupt / GeneratorExit keeps its type ----------
def raising(exc_type):
    def reader():
        yield batch(0)
        raise exc_type("the reader gave up")
    return reader


class RaisingDataset(fluid.io.Dataset):
    def __init__(self, exc_type):
        self.exc_type = exc_type

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 4:
            raise self.exc_type("the reader gave up")
        return np.full([4], i, "float32"), np.array([i], "int64")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("exc_type", [SystemExit, KeyboardInterrupt, GeneratorExit])
@pytest.mark.parametrize("transport", ["thread", "worker", "pool"])
def test_a_reader_raising_a_base_exception_is_reported_with_its_type(transport, exc_type):
    if transport == "pool":
        loader = fluid.io.DataLoader(RaisingDataset(exc_type), batch_size=2, num_workers=2, return_list=True)
        got = []
        with pytest.raises(ReaderKilledError) as info:
            for _, label in loader:
                got.append(int(label[0, 0]))
        assert got == [0, 2]
    else:
        _, loader, _ = build(True, use_multiprocess=transport == "worker")
        loader.set_batch_generator(raising(exc_type), places=fluid.CPUPlace())
        got = []
        with pytest.raises(ReaderKilledError) as info:
            for step in loader():
                got.extend(labels(step))
        assert got == [0]
    assert type(info.value.__cause__) is exc_type
    assert f"{exc_type.__name__}: the reader gave up" in str(info.value)
    assert "without reporting an error" not in str(info.value)
    assert multiprocessing.active_children() == []


# --- 6: an application that ignores SIGCHLD --------------------------------------------------------------
SIGCHLD_SCRIPT = textwrap.dedent("""
    import json, multiprocessing, os, signal, sys
    import numpy as np
    import minifluid as fluid
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # e.g. a server that never waits for its children

    image = fluid.data(name="image", shape=[None, 4], dtype="float32")
    label = fluid.data(name="label", shape=[None, 1], dtype="int64")
    loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=4, use_multiprocess=True)
    def batches():
        for i in range(6):
            yield np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")
    loader.set_batch_generator(batches, places=fluid.CPUPlace())

    class Data(fluid.io.Dataset):
        def __len__(self):
            return 12
        def __getitem__(self, i):
            return np.full([4], i, "float32"), np.array([i], "int64")
    dataset_loader = fluid.io.DataLoader(Data(), batch_size=2, num_workers=2, return_list=True)

    def epoch(n):
        steps = [int(np.asarray(s[0]["label"])[0, 0]) for s in loader()]
        assert steps == list(range(6)), steps
        for i, _ in enumerate(dataset_loader):
            if n % 2 and i == 1:
                break  # leave early too
    for n in range(3):
        epoch(n)
    fds = len(os.listdir("/proc/self/fd"))
    for n in range(20):
        epoch(n)
    it = iter(loader)
    next(it)
    os.kill(loader._worker_pids()[0], signal.SIGKILL)
    try:
        while True:
            next(it)  # (a batch kept in a variable would keep its shared-memory slot, and that slot's fd)
        died = "no error"
    except SystemError as e:
        died = str(e)
    print(json.dumps({"fd_growth": len(os.listdir("/proc/self/fd")) - fds, "died": died,
                      "children": len(multiprocessing.active_children())}))
""")


@pytest.mark.timeout(120)
def test_epochs_end_cleanly_when_the_application_ignores_sigchld():
    proc = subprocess.run([sys.executable, "-c", SIGCHLD_SCRIPT], cwd=REPO, capture_output=True, text=True,
                          timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ValueError" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["fd_growth"] <= 0 and res["children"] == 0, res
    assert "DataLoader worker minifluid-worker-0" in res["died"] and "SIGCHLD is ignored" in res["died"], res


# --- 12: shared memory filled by kept batches; a dispatch timeout keeps the batches already made ----------
@pytest.mark.timeout(60)
def test_a_full_dev_shm_from_kept_batches_says_to_copy_what_is_kept(monkeypatch):
    capacity, batch_bytes = 2, 64 * 1024
    monkeypatch.setenv(SHM_LIMIT_ENV, str((capacity + 3) * batch_bytes))
    source = ProcessBatchSource(lambda: ([np.full([batch_bytes // 4], i, np.float32)] for i in range(100)),
                                capacity=capacity)
    kept = []
    with pytest.raises(SharedMemoryFullError) as info:
        for (field,) in source:
            kept.append(field[:1])  # a slice of every batch, as a metrics loop keeps
    message = str(info.value)
    assert "still in use by your code" in message and "np.array(x)" in message, message
    assert "lower the capacity or batch size" not in message  # that advice does not fit this case
    assert multiprocessing.active_children() == [] and shm_segments() == []


def _fast_then_stuck(indices):
    if indices[0] == 1:
        time.sleep(60)
    return [np.asarray(indices[:1], np.int64)]


@pytest.mark.timeout(60)
def test_a_timeout_while_handing_out_a_big_index_list_comes_after_the_batches_made():
    tasks = [[0], [1], list(range(2, 150_002))]  # the big list cannot enter the pipe of the stuck worker
    source = ProcessPoolBatchSource(_fast_then_stuck, tasks, num_workers=1, capacity=3, timeout=1)
    got = []
    with pytest.raises(ReaderTimeoutError):
        for (field,) in source:
            got.append(int(field[0]))
    assert got == [0]  # batch 0 was made before the timeout; it used to be dropped
    assert multiprocessing.active_children() == [] and shm_segments() == []


# --- 14: a loader waiting long for a batch says so --------------------------------------------------------
class Gate:
    """Shut until a DataLoaderStallWarning is shown (or 30 s pass); ``warnings`` keeps what was shown.
    A process-shared event, so a reader in a forked worker waits on it too."""

    def __init__(self, monkeypatch):
        self.event, self.warnings = multiprocessing.get_context("fork").Event(), []
        monkeypatch.setattr(loops, "STALL_WARNING_S", 0.3)
        real_show = warnings.showwarning

        def show(message, category, *args, **kwargs):
            if issubclass(category, loops.DataLoaderStallWarning):
                self.warnings.append(str(message))
                self.event.set()
            else:
                real_show(message, category, *args, **kwargs)
        monkeypatch.setattr(warnings, "showwarning", show)

    def wait(self):
        self.event.wait(30)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["iterable", "non_iterable", "multiprocess", "dataset", "dataset_workers"])
def test_a_stall_is_reported_with_the_loaders_name_and_it_keeps_waiting(kind, monkeypatch):
    gate = Gate(monkeypatch)
    if kind.startswith("dataset"):
        class Slow(fluid.io.Dataset):
            def __len__(self):
                return 2

            def __getitem__(self, i):
                if i == 1:
                    gate.wait()
                return np.full([4], i, "float32")
        loader = fluid.io.DataLoader(Slow(), batch_size=1, return_list=True,
                                     num_workers=2 if kind == "dataset_workers" else 0)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            got = [int(np.asarray(b[0])[0, 0]) for b in loader]
        name = "DataLoader(Slow, num_workers="
    else:
        main, loader, _ = build(kind != "non_iterable", use_multiprocess=kind == "multiprocess")

        def slow():
            yield batch(0)
            gate.wait()
            yield batch(1)
        loader.set_batch_generator(slow, places=None if kind == "non_iterable" else fluid.CPUPlace())
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            if kind == "non_iterable":
                exe, got = fluid.Executor(fluid.CPUPlace()), []
                loader.start()
                try:
                    while True:
                        got.append(int(exe.run(main, fetch_list=["label"])[0][0, 0]))
                except fluid.core.EOFException:
                    loader.reset()
            else:
                got = [int(np.asarray(s[0]["label"])[0, 0]) for s in loader()]
        name = "DataLoader.from_generator(feed_list=['image', 'label'])"
    assert got == [0, 1]  # it kept waiting, and got the batch
    assert gate.warnings, "no DataLoaderStallWarning"
    text = gate.warnings[0]
    site = "test_worker_faults.py" if kind.startswith("dataset") else "test_loader_errors.py"  # where it was built
    assert name in text and f"created at {os.path.join(REPO, 'tests', 'data', site)}:" in text, text
    assert "has waited" in text and "timeout=" in text, text
