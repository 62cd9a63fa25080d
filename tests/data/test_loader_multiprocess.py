"""Worker-process loaders under faults, as the user sees them (issue #5; REFERENCE N79-N83, "goes beyond" 1-3, 5, 9).

Three ways of reading through worker processes, each driven the way a user drives it:
* ``iterable``: ``DataLoader.from_generator(..., use_multiprocess=True)``, ``for data in loader():``;
* ``non_iterable``: the same with ``iterable=False``: ``start()``, ``exe.run`` until EOFException, ``reset()``;
* ``dataset``: ``fluid.io.DataLoader(dataset, batch_size=2, num_workers=2)``.
Every failure must reach the consumer as a clear error (never a hang or a bus error), and every way of
leaving an epoch must leave no worker process and no shared-memory segment behind.
"""
import faulthandler
import gc
import itertools
import multiprocessing
import os
import re
import resource
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import minifluid as fluid
from minifluid.data.shm import SHM_LIMIT_ENV
from minifluid.data.worker import ReaderTimeoutError, SharedMemoryFullError
from minifluid.errors import QUEUE_KILLED_MESSAGE, ReaderKilledError, WorkerDiedError
from minifluid.data.leak_checks import process_gone, shm_segments as our_segments

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ["iterable", "non_iterable", "dataset"]


# --- helpers ------------------------------------------------------------------------------------------
def assert_released(pids, timeout=2.0):
    """Every worker in ``pids`` has exited, and no child process and no segment of ours is left."""
    assert pids, "the loader reported no worker pids"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (all(map(process_gone, pids)) and not our_segments()):
        time.sleep(0.02)
    assert [p for p in pids if not process_gone(p)] == []
    assert our_segments() == []
    assert multiprocessing.active_children() == []


def no_core_dump():
    """In a worker about to be killed with SIGSEGV: no core file, no faulthandler dump on stderr."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.disable()


class Plan:
    """What the reader does for batch ``b``: stall from ``stall_from`` on, raise at ``raise_at``; the
    image field is ``width(b)`` wide. Runs in the worker (the loaders fork; nothing is pickled)."""

    def __init__(self, stall_from=None, raise_at=None, width=lambda b: 4, batches=None):
        self.stall_from, self.raise_at, self.width, self.batches = stall_from, raise_at, width, batches

    def step(self, b):
        if self.raise_at is not None and b == self.raise_at:
            raise ValueError(f"cannot open /data/part-{b:05d}")
        if self.stall_from is not None and b >= self.stall_from:
            time.sleep(60)

    def batch(self, b):
        self.step(b)
        return np.full([2, self.width(b)], b, "float32"), np.full([2, 1], b, "int64")

    def generator(self):
        no_core_dump()  # in the worker
        for b in itertools.count() if self.batches is None else range(self.batches):
            yield self.batch(b)


class PlanDataset(fluid.io.Dataset):
    """Samples 2b and 2b+1 make batch b (batch_size=2)."""

    def __init__(self, plan):
        self.plan = plan

    def __len__(self):
        return 2 * (self.plan.batches or 10**6)

    def __getitem__(self, i):
        b = i // 2
        self.plan.step(b)
        return np.full([self.plan.width(b)], b, "float32"), np.array([b], "int64")


class Harness:
    """One loader of ``kind`` reading ``plan``; ``values()`` yields each step's label, ``pids()`` the workers."""

    def __init__(self, kind, plan, timeout=None, capacity=4):
        self.kind, self.plan = kind, plan
        self.epoch_iter = None
        if kind == "dataset":
            self.loader = fluid.io.DataLoader(PlanDataset(plan), batch_size=2, num_workers=2, return_list=True,
                                              timeout=timeout or 0, worker_init_fn=lambda worker_id: no_core_dump())
            return
        self.main = fluid.Program()
        with fluid.program_guard(self.main, fluid.Program()):
            image = fluid.data(name="image", shape=[None, -1], dtype="float32")
            label = fluid.data(name="label", shape=[None, 1], dtype="int64")
            self.loader = fluid.io.DataLoader.from_generator(
                feed_list=[image, label], capacity=capacity, iterable=kind == "iterable", use_multiprocess=True,
                timeout=timeout)
        self.loader.set_batch_generator(plan.generator, places=fluid.CPUPlace() if kind == "iterable" else None)
        self.exe = fluid.Executor(fluid.CPUPlace())

    def values(self):
        if self.kind == "iterable":
            for step in self.loader():
                yield int(np.asarray(step[0]["label"])[0, 0])
        elif self.kind == "non_iterable":
            self.loader.start()
            try:
                while True:
                    yield int(self.exe.run(self.main, fetch_list=["label"])[0][0, 0])
            except fluid.core.EOFException:
                self.loader.reset()
        else:
            self.epoch_iter = iter(self.loader)
            for image, label in self.epoch_iter:
                yield int(label[0, 0])

    def pids(self):
        if self.kind == "dataset":
            return self.epoch_iter._worker_pids()
        return self.loader._worker_pids()

    def next_worker(self, b):
        """Pid of the worker that makes batch ``b``."""
        pids = self.pids()
        return pids[b % len(pids)]

    def finish(self):
        if self.kind == "non_iterable":
            self.loader.reset()


def consume(harness, on_step=None):
    """(labels read, the exception that ended the epoch or None, time.monotonic() at that exception)."""
    got = []
    try:
        for value in harness.values():
            got.append(value)
            if on_step is not None:
                on_step(len(got) - 1)
    except Exception as e:  # noqa: BLE001 - the tests inspect it
        return got, e, time.monotonic()
    return got, None, time.monotonic()


# --- big samples: stacked by the worker straight into shared memory ------------------------------------
def big_sample_loader(use_multiprocess, image_shape, iterable=True):
    """Samples of float64 [3, 32, 64] (48 KB, deferred into the slot) read into a float32 slot."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        image = fluid.data(name="image", shape=[None, *image_shape], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=3, iterable=iterable,
                                                    use_multiprocess=use_multiprocess)

    def samples():
        rng = np.random.RandomState(0)
        for i in range(22):
            yield rng.rand(3, 32, 64), np.array([i])
    loader.set_sample_generator(samples, batch_size=4, drop_last=False,
                                places=fluid.CPUPlace() if iterable else None)
    return main, loader


@pytest.mark.timeout(30)
@pytest.mark.parametrize("image_shape", [(3, 32, 64), (3 * 32 * 64,)], ids=["as_is", "reshaped"])
def test_big_samples_through_workers_equal_the_threaded_loader(image_shape):
    def epoch(use_multiprocess):
        _, loader = big_sample_loader(use_multiprocess, image_shape)
        steps = [(np.array(s[0]["image"]), np.array(s[0]["label"])) for s in loader()]
        return steps, loader._worker_pids()
    got, pids = epoch(True)
    want, _ = epoch(False)
    assert [len(label) for _, label in got] == [4, 4, 4, 4, 4, 2]
    for (image, label), (image_ref, label_ref) in zip(got, want, strict=True):
        assert image.dtype == np.float32 and image.shape == image_ref.shape == (len(label), *image_shape)
        np.testing.assert_array_equal(image, image_ref)
        np.testing.assert_array_equal(label, label_ref)
    assert_released(pids)


@pytest.mark.timeout(30)
def test_big_samples_that_do_not_fit_the_declared_shape_fail_in_the_worker_with_fluids_message():
    main, loader = big_sample_loader(True, (1000,), iterable=False)
    exe = fluid.Executor(fluid.CPUPlace())
    loader.start()
    pids = loader._worker_pids()
    with pytest.raises(ReaderKilledError, match=r"Reshape error\. What is defined in data layer is") as info:
        exe.run(main, fetch_list=["label"])
    assert type(info.value.__cause__) is ValueError
    loader.reset()
    assert_released(pids)


# --- failures -----------------------------------------------------------------------------------------
@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", KINDS)
def test_worker_exception_reaches_the_consumer_with_cause_and_worker_traceback(kind):
    harness = Harness(kind, Plan(raise_at=3))
    got, err, _ = consume(harness)
    pids = harness.pids()
    assert got == [0, 1, 2]  # the batches made before the failure come first
    assert isinstance(err, ReaderKilledError) and isinstance(err, SystemError)
    assert not isinstance(err, fluid.core.EOFException)
    text = str(err)
    assert QUEUE_KILLED_MESSAGE in text
    assert "ValueError: cannot open /data/part-00003" in text
    assert "Traceback from the producer" in text and "in step" in text  # the worker-side traceback
    assert f"pid {harness.next_worker(3)}" in text  # which worker
    assert type(err.__cause__) is ValueError and str(err.__cause__) == "cannot open /data/part-00003"
    if kind == "non_iterable":  # it keeps failing until reset(), never hangs
        with pytest.raises(ReaderKilledError, match="part-00003"):
            harness.exe.run(harness.main, fetch_list=["label"])
    harness.finish()
    assert_released(pids)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
@pytest.mark.parametrize("kind", KINDS)
def test_worker_killed_by_a_signal_is_reported_within_a_second(kind, sig):
    harness = Harness(kind, Plan(stall_from=2))
    killed = {}

    def kill_next_worker(step):
        if step == 1:  # every worker has made a batch (so it is past its start-up) and stalls next
            killed["pid"] = harness.next_worker(2)  # the worker whose batch the consumer waits for
            killed["all"] = harness.pids()
            os.kill(killed["pid"], sig)
            killed["t"] = time.monotonic()

    got, err, raised_at = consume(harness, kill_next_worker)
    assert isinstance(err, WorkerDiedError), err
    assert raised_at - killed["t"] < 2.0  # contract: within 1 s; the margin is for loaded machines
    text = str(err)
    assert QUEUE_KILLED_MESSAGE in text
    assert f"pid {killed['pid']}" in text and sig.name in text
    assert got == [0, 1]  # what was sent before the death still arrives
    harness.finish()
    assert_released(killed["all"])


@pytest.mark.timeout(30)
def test_pool_worker_killed_while_another_is_awaited_is_noticed_at_once():
    plan = Plan(stall_from=1)  # worker 1 stalls on batch 1, worker 0 on batch 2
    harness = Harness("dataset", plan)
    killed = {}

    def kill_worker_0(step):
        killed["pid"], killed["all"] = harness.pids()[0], harness.pids()
        os.kill(killed["pid"], signal.SIGKILL)
        killed["t"] = time.monotonic()

    got, err, raised_at = consume(harness, kill_worker_0)
    assert got == [0]
    assert isinstance(err, WorkerDiedError) and f"pid {killed['pid']}" in str(err) and "SIGKILL" in str(err)
    assert raised_at - killed["t"] < 2.0
    assert_released(killed["all"])


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", KINDS)
def test_stalled_worker_hits_the_timeout_with_a_clear_error(kind):
    harness = Harness(kind, Plan(stall_from=1), timeout=1)
    marks = []
    got, err, raised_at = consume(harness, lambda step: marks.append(time.monotonic()))
    pids = harness.pids()
    assert got == [0]
    assert isinstance(err, ReaderTimeoutError) and isinstance(err, ReaderKilledError), err
    text = str(err)
    assert QUEUE_KILLED_MESSAGE in text and "timeout=1 s" in text and "larger `timeout`" in text
    assert f"pid {harness.next_worker(1)}" in text
    assert 0.9 < raised_at - marks[0] < 5
    harness.finish()
    assert_released(pids)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", KINDS)
def test_too_small_dev_shm_is_a_clear_error_not_a_bus_error(kind, monkeypatch):
    monkeypatch.setenv(SHM_LIMIT_ENV, str(1_000_000))  # before the loader forks its workers
    harness = Harness(kind, Plan(width=lambda b: 16 if b == 0 else 2**19, batches=3))  # then 2 x 2 MiB
    got, err, _ = consume(harness)
    pids = harness.pids()
    assert got == [0]
    assert isinstance(err, SharedMemoryFullError) and isinstance(err, ReaderKilledError), err
    text = str(err)
    assert QUEUE_KILLED_MESSAGE in text
    need = int(re.search(r"needs (\d+) bytes", text).group(1))
    assert need >= 4 * 2**20  # the bytes one batch needs
    assert "/dev/shm has" in text and SHM_LIMIT_ENV in text
    assert "--shm-size" in text and "use_multiprocess=False" in text and "num_workers=0" in text  # the fix
    assert isinstance(err.__cause__, OSError)
    harness.finish()
    assert_released(pids)


def test_cuda_place_without_double_buffer_is_refused_with_use_multiprocess():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2, use_double_buffer=False,
                                                    use_multiprocess=True)
    with pytest.raises(RuntimeError, match="Place cannot be CUDAPlace when use_double_buffer is False"):
        loader.set_batch_generator(lambda: iter([]), places=fluid.CUDAPlace(0))


# --- leaving an epoch early ---------------------------------------------------------------------------
@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["iterable", "dataset"])
def test_break_mid_epoch_stops_the_workers_and_unlinks_every_segment(kind):
    harness = Harness(kind, Plan())
    for _ in range(2):  # twice: the second epoch starts fresh workers
        it = iter(harness.loader)
        pids = it._worker_pids() if kind == "dataset" else harness.loader._worker_pids()
        for i, step in enumerate(it):
            if i == 0:
                del it  # the for loop holds the only reference, as in `for data in loader():`
            if i == 3:
                break
        assert_released(pids)
        label = np.asarray(step[0]["label"]) if kind == "iterable" else step[1]
        assert (label == 3).all()  # the user's last batch stays readable after the workers are gone


@pytest.mark.timeout(30)
def test_reset_mid_epoch_stops_the_worker_and_the_next_epoch_starts_over():
    harness = Harness("non_iterable", Plan())
    for _ in range(3):
        harness.loader.start()
        assert [int(harness.exe.run(harness.main, fetch_list=["label"])[0][0, 0]) for _ in range(3)] == [0, 1, 2]
        pids = harness.pids()
        harness.loader.reset()
        assert_released(pids)
    harness.loader.reset()  # twice is fine


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", KINDS)
def test_garbage_collected_loader_stops_its_workers(kind):
    harness = Harness(kind, Plan())
    if kind == "iterable":
        assert int(np.asarray(next(harness.loader)[0]["label"])[0, 0]) == 0  # the loader's own epoch
        pids = harness.pids()
        del harness.loader
    elif kind == "non_iterable":
        harness.loader.start()
        harness.exe.run(harness.main, fetch_list=["label"])
        pids = harness.pids()
        del harness.loader, harness.main
    else:
        it = iter(harness.loader)
        next(it)
        pids = it._worker_pids()
        del it, harness.loader
    gc.collect()
    assert_released(pids)


SCRIPT = textwrap.dedent("""
    import itertools, multiprocessing, os, signal, sys, threading, time
    import numpy as np
    import minifluid as fluid

    KIND, ENDING = sys.argv[1], sys.argv[2]
    STALL_FROM = 3 if ENDING == "ctrl-c" else None

    def step(b):
        if STALL_FROM is not None and b >= STALL_FROM:
            time.sleep(60)

    def batches():
        for b in itertools.count():
            step(b)
            yield np.full([2, 4], b, "float32"), np.full([2, 1], b, "int64")

    class Data(fluid.io.Dataset):
        def __len__(self):
            return 10**6
        def __getitem__(self, i):
            step(i // 2)
            return np.full([4], i // 2, "float32"), np.array([i // 2], "int64")

    if KIND == "dataset":
        loader = fluid.io.DataLoader(Data(), batch_size=2, num_workers=2, return_list=True)
    else:
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=4,
                                                    iterable=KIND == "iterable", use_multiprocess=True)
        loader.set_batch_generator(batches, places=fluid.CPUPlace() if KIND == "iterable" else None)
        exe = fluid.Executor(fluid.CPUPlace())

    workers = []

    def labels():
        if KIND == "iterable":
            for data in loader():
                workers[:] = loader._worker_pids()
                yield int(np.asarray(data[0]["label"])[0, 0])
        elif KIND == "non_iterable":
            loader.start()
            workers[:] = loader._worker_pids()
            while True:
                yield int(exe.run(fetch_list=["label"])[0][0, 0])
        else:
            it = iter(loader)
            workers[:] = it._worker_pids()
            for image, label in it:
                yield int(label[0, 0])

    got = []
    if ENDING == "ctrl-c":
        try:
            for value in labels():
                got.append(value)
                if value == 2:  # the reader stalls from batch 3 on: Ctrl-C while the loader waits
                    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            print("no KeyboardInterrupt")
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            time.sleep(0.1)
            left = [n for n in os.listdir("/dev/shm") if n.startswith(f"mf_{os.getpid()}_")]
            print("after:", len(multiprocessing.active_children()), "children,", len(left), "segments")
    else:  # "break": leave the epoch and exit; "open": exit with the epoch still open
        values = labels()
        for value in values:
            got.append(value)
            if value == 3:
                break
        if ENDING == "break":  # what a `for data in loader():` ... `break` does (non_iterable: no reset())
            values.close()
            del values
        print("left the epoch")
    print("got", *got)
    print("pids", os.getpid(), *workers, flush=True)
""")


def run_script(kind, ending):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, kind, ending], capture_output=True, text=True,
                          timeout=50, cwd=REPO, env={**os.environ, "PYTHONPATH": REPO})
    lines = proc.stdout.splitlines()
    pids = [int(p) for p in next(line for line in lines if line.startswith("pids")).split()[1:]] \
        if any(line.startswith("pids") for line in lines) else []
    return proc, lines, pids


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_ctrl_c_mid_epoch_reaches_the_main_thread_and_leaves_nothing(kind):
    proc, lines, pids = run_script(kind, "ctrl-c")
    assert proc.returncode == 0, proc.stderr
    assert "KeyboardInterrupt" in lines, proc.stdout
    assert "after: 0 children, 0 segments" in lines
    assert "got 0 1 2" in lines
    parent, *workers = pids
    assert workers and all(map(process_gone, workers))
    assert our_segments(parent) == []


@pytest.mark.timeout(30)
def test_non_iterable_epoch_interrupted_while_waiting_says_so_instead_of_ending_as_if_data_ran_out():
    harness = Harness("non_iterable", Plan(batches=6))
    loader, exe = harness.loader, harness.exe
    loader.start()
    assert int(exe.run(harness.main, fetch_list=["label"])[0][0, 0]) == 0
    workers = loader._producer.stage.source._workers
    real_receive = workers.receive

    def interrupted(*args):  # what Ctrl-C does to a consumer blocked on the worker's pipe
        workers.receive = real_receive
        raise KeyboardInterrupt
    workers.receive = interrupted
    with pytest.raises(KeyboardInterrupt):
        exe.run(harness.main, fetch_list=["label"])
    with pytest.raises(ReaderKilledError, match="interrupted by KeyboardInterrupt") as e:
        exe.run(harness.main, fetch_list=["label"])  # not EOFException: 4 batches were never read
    assert type(e.value.__cause__) is KeyboardInterrupt
    assert_released(loader._worker_pids())
    loader.reset()
    assert list(harness.values()) == list(range(6))  # a fresh epoch reads everything


@pytest.mark.timeout(60)
@pytest.mark.parametrize("ending", ["break", "open"])
@pytest.mark.parametrize("kind", KINDS)
def test_interpreter_exit_mid_epoch_is_clean(kind, ending):
    proc, lines, pids = run_script(kind, ending)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no traceback, no resource_tracker warning, no "terminate called ..."
    assert "got 0 1 2 3" in lines
    parent, *workers = pids
    time.sleep(0.1)
    assert workers and all(map(process_gone, workers))  # no orphan worker
    assert our_segments(parent) == []


# --- soak ---------------------------------------------------------------------------------------------
def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.timeout(90)
def test_soak_200_epochs_breaking_early_leave_nothing_behind():
    harness = Harness("iterable", Plan(width=lambda b: 256))
    loader = harness.loader

    def epoch():
        for i, step in enumerate(loader()):
            assert int(np.asarray(step[0]["label"])[0, 0]) == i
            if i == 2:
                break

    for _ in range(20):  # warm-up: imports, allocator pools, the first forks
        epoch()
    gc.collect()
    fds, rss = len(os.listdir("/proc/self/fd")), _rss_bytes()
    for _ in range(200):
        epoch()
    gc.collect()
    assert our_segments() == []
    assert multiprocessing.active_children() == []
    assert len(os.listdir("/proc/self/fd")) <= fds + 2
    assert _rss_bytes() - rss < 8 * 2**20


class _RelayPlace(type(fluid.CPUPlace())):
    """A CPU place that claims to be a GPU place: makes a use_multiprocess loader take the relay-thread
    path it uses on CUDA places (worker -> producer thread -> queue), which this machine cannot reach."""

    def is_gpu_place(self):
        return True


@pytest.mark.timeout(30)
def test_relay_thread_path_of_cuda_places_forwards_errors_and_cleans_up():
    harness = Harness("iterable", Plan(raise_at=3))
    harness.loader._use_double_buffer = False  # the CUDA prefetch stage needs CuPy; the relay is what is tested
    harness.loader._places = [_RelayPlace()]
    threads = []
    got, err, _ = consume(harness, lambda step: threads.append(type(harness.loader._producer).__name__))
    pids = harness.pids()
    assert threads == ["_Producer"] * 3  # the relay thread, not the consumer reading the pipe itself
    assert got == [0, 1, 2]
    assert isinstance(err, ReaderKilledError) and "cannot open /data/part-00003" in str(err)
    assert type(err.__cause__) is ValueError
    assert_released(pids)
