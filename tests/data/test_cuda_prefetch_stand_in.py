"""The CUDA double buffer (data/prefetch.py) run against a stand-in for CuPy that copies *late*.

No GPU here, so the real CuPy tests skip. This stand-in keeps what makes the CUDA stage hard: a
host-to-device copy issued on a stream happens only when something waits for it (an event's
``synchronize``, or the consumer reading what its stream waited on), so a pinned staging buffer
reused too early, or a batch handed out without its event, shows up as wrong bytes. Device arrays
start as -1 everywhere, so a copy that never ran is visible too.
"""
import threading
import time

import numpy as np
import pytest

import minifluid as fluid
from minifluid.errors import ReaderKilledError
from minifluid.lod_tensor import LoDTensor
from minifluid.data.leak_checks import process_gone, shm_segments

_LOCK = threading.RLock()  # one lock for every stand-in stream: no lock-order questions


class _Event:
    def __init__(self, stream, index):
        self.stream, self.index = stream, index

    def synchronize(self):
        self.stream.run_until(self.index)


class _Stream:
    """Queued operations run in order, only when waited for. The current stream is per thread."""

    null = None
    _local = threading.local()

    def __init__(self, non_blocking=False):
        self.ops, self.done = [], 0

    @classmethod
    def current(cls):
        return getattr(cls._local, "stream", None) or cls.null

    def __enter__(self):
        self._outer, _Stream._local.stream = getattr(_Stream._local, "stream", None), self
        return self

    def __exit__(self, *exc):
        _Stream._local.stream = self._outer

    def enqueue(self, op):
        with _LOCK:
            self.ops.append(op)

    def record(self):
        with _LOCK:
            return _Event(self, len(self.ops))

    def wait_event(self, event):
        self.enqueue(event.synchronize)  # what this stream runs next waits for the event first

    def run_until(self, index):
        with _LOCK:
            while self.done < index:
                op = self.ops[self.done]
                self.done += 1
                op()


class _DeviceArray(np.ndarray):
    def set(self, host, stream=None):
        (stream or _Stream.current()).enqueue(lambda: np.copyto(self.view(np.ndarray), host))  # reads host later


class _Pinned(bytearray):
    def size(self):
        return len(self)


class _Device:
    def __init__(self, device_id):
        self.id = device_id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class _Cuda:
    Device = _Device
    Stream = _Stream

    @staticmethod
    def alloc_pinned_memory(nbytes):
        return _Pinned(nbytes)

    @staticmethod
    def get_current_stream():
        return _Stream.current()


class FakeCupy:
    cuda = _Cuda
    ndarray = _DeviceArray

    @staticmethod
    def empty(shape, dtype):
        return np.full(shape, -1, dtype).view(_DeviceArray)

    @staticmethod
    def consumer_reads():
        """What reading a device array on the host does: the consumer's stream finishes its work."""
        _Stream.null.run_until(len(_Stream.null.ops))


class StandInCudaPlace(fluid.CUDAPlace):
    def array_module(self):
        return FakeCupy


@pytest.fixture(autouse=True)
def fresh_streams():
    _Stream.null = _Stream()
    yield


def _batches(num, rows=lambda k: 2 + k % 5):
    """Batch k: x = k + [0, 1, ...] with a row count that varies (the pinned buffers must grow)."""
    def gen():
        for k in range(num):
            n = rows(k)
            yield [(k + np.arange(n * 3, dtype="float32")).reshape(n, 3), np.full((n, 1), k, "int64")]
    return gen


def _loader(gen, use_multiprocess=False):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4,
                                                    use_multiprocess=use_multiprocess)
    loader.set_batch_generator(gen, places=StandInCudaPlace(0))
    return loader


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "minifluid-prefetch"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_multiprocess", [False, True], ids=["thread", "worker"])
def test_every_batch_arrives_in_order_on_the_device_even_when_all_are_read_after_the_epoch(use_multiprocess):
    gen = _batches(40)
    loader = _loader(gen, use_multiprocess)
    held = [step[0] for step in loader()]  # keep every batch; read none until the epoch is over
    FakeCupy.consumer_reads()
    assert len(held) == 40
    for k, (feed, (x, y)) in enumerate(zip(held, gen())):
        assert isinstance(feed["x"], LoDTensor) and isinstance(feed["x"]._array, _DeviceArray)
        np.testing.assert_array_equal(np.asarray(feed["x"]._array), x, err_msg=f"batch {k}")
        np.testing.assert_array_equal(np.asarray(feed["y"]._array), y, err_msg=f"batch {k}")
    assert _prefetch_threads() == []
    if use_multiprocess:  # the worker's batches came through shared memory; all of it is released
        pids, deadline = loader._worker_pids(), time.monotonic() + 2
        while time.monotonic() < deadline and not (all(map(process_gone, pids)) and shm_segments() == []):
            time.sleep(0.02)
        assert pids and all(map(process_gone, pids)) and shm_segments() == []


@pytest.mark.timeout(30)
def test_a_reader_error_arrives_after_the_batches_before_it_with_its_cause():
    def gen():
        yield from _batches(3)()
        raise FileNotFoundError("no such file: /data/part-00003")
    got, err = [], None
    try:
        for step in _loader(gen)():
            got.append(step[0])
    except ReaderKilledError as e:
        err = e
    FakeCupy.consumer_reads()
    assert [int(np.asarray(f["y"]._array)[0, 0]) for f in got] == [0, 1, 2]
    assert err is not None and type(err.__cause__) is FileNotFoundError
    assert "/data/part-00003" in str(err)
    assert _prefetch_threads() == []


@pytest.mark.timeout(30)
def test_break_and_the_next_epoch_start_over_and_leave_no_prefetch_thread():
    loader = _loader(_batches(30))
    for epoch in range(3):
        firsts = []
        for step, feed in enumerate(loader()):
            firsts.append(feed[0])
            if step == 4:
                break
        FakeCupy.consumer_reads()
        assert [int(np.asarray(f["y"]._array)[0, 0]) for f in firsts] == [0, 1, 2, 3, 4], epoch
    assert _prefetch_threads() == []


@pytest.mark.timeout(30)
def test_two_devices_take_batches_in_turn_and_each_tensor_names_its_device():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4)
    loader.set_batch_generator(_batches(10), places=[StandInCudaPlace(0), StandInCudaPlace(1)])
    steps = list(loader())
    FakeCupy.consumer_reads()
    assert len(steps) == 5
    for s, step in enumerate(steps):
        assert [feed["y"]._placement.device_id for feed in step] == [0, 1]
        assert [int(np.asarray(feed["y"]._array)[0, 0]) for feed in step] == [2 * s, 2 * s + 1]


@pytest.mark.timeout(30)
def test_use_pinned_memory_false_copies_from_the_batches_themselves(monkeypatch):
    from minifluid.data import options
    allocations = []
    monkeypatch.setattr(_Cuda, "alloc_pinned_memory", staticmethod(lambda n: allocations.append(n) or _Pinned(n)))
    monkeypatch.setattr(options.use_pinned_memory, "value", None)  # the default; restored after the test
    gen = _batches(6)
    held = [step[0] for step in _loader(gen)()]
    assert allocations, "pinned staging buffers are the default"
    allocations.clear()
    options.use_pinned_memory(False)
    held = [step[0] for step in _loader(gen)()]
    FakeCupy.consumer_reads()
    assert allocations == []
    for (x, y), feed in zip(gen(), held):
        np.testing.assert_array_equal(np.asarray(feed["x"]._array), x)
    with pytest.raises(AssertionError):
        options.use_pinned_memory("no")
