"""Reader decorators: fluid's behaviour (REFERENCE F30-F38) and minifluid's error / shutdown guarantees."""
import collections
import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

import minifluid.reader as reader_mod
from minifluid.errors import ComposeNotAligned, ReaderKilledError, WorkerDiedError
from minifluid.reader import (MultiprocessReaderError, batch, buffered, cache, chain, compose, firstn,
                              map_readers, multiprocess_reader, shuffle, xmap_readers)


def counting(n):
    def reader():
        yield from range(n)
    return reader


def endless():
    i = 0
    while True:
        yield i
        i += 1


def failing_source():
    yield 1
    yield 2
    raise ValueError("boom from source")


def wait_until(predicate, timeout=3.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def no_threads(prefix):
    return wait_until(lambda: not [t for t in threading.enumerate() if t.name.startswith(prefix)])


def no_children():
    return wait_until(lambda: not [p for p in multiprocessing.active_children()
                                   if p.name.startswith("minifluid-mpreader")])


def test_public_names_are_sorted_and_exported():
    assert reader_mod.__all__ == sorted(reader_mod.__all__)
    assert all(hasattr(reader_mod, name) for name in reader_mod.__all__)


# --- F30 batch ------------------------------------------------------------------------------------

def test_batch_keeps_short_last_batch():
    assert list(batch(counting(10), 3)()) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_batch_drop_last():
    assert list(batch(counting(10), 3, drop_last=True)()) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]


@pytest.mark.parametrize("size", [0, -1])
def test_batch_rejects_non_positive_size_eagerly(size):
    with pytest.raises(ValueError) as excinfo:
        batch(counting(10), size)
    assert str(excinfo.value) == \
        f"batch_size should be a positive integeral value, but got batch_size={size}"


# --- F31 shuffle ----------------------------------------------------------------------------------

def test_shuffle_is_a_permutation_within_windows():
    out = list(shuffle(counting(100), 10)())
    assert sorted(out) == list(range(100))
    assert [sorted(out[i:i + 10]) for i in range(0, 100, 10)] == \
        [list(range(i, i + 10)) for i in range(0, 100, 10)]


def test_shuffle_emits_shuffled_remainder():
    out = list(shuffle(counting(25), 10)())
    assert sorted(out[20:]) == list(range(20, 25))
    assert sorted(out) == list(range(25))


@pytest.mark.parametrize("buf_size", [1, 0, -3])
def test_shuffle_small_buffer_is_identity(buf_size):
    assert list(shuffle(counting(20), buf_size)()) == list(range(20))


# --- F32 buffered ---------------------------------------------------------------------------------

@pytest.mark.timeout(30)
def test_buffered_keeps_order_and_unbounded_size():
    assert list(buffered(counting(50), 0)()) == list(range(50))
    assert list(buffered(counting(50), 3)()) == list(range(50))


@pytest.mark.timeout(30)
def test_buffered_serves_from_buffer_while_source_is_slow():
    def slow_source():
        for i in range(20):
            time.sleep(0.03)
            yield i

    it = buffered(slow_source, 10)()
    assert next(it) == 0
    time.sleep(0.3)  # the thread fills the buffer meanwhile
    gaps, received = [], []
    for _ in range(8):
        start = time.monotonic()
        received.append(next(it))
        gaps.append(time.monotonic() - start)
    it.close()
    assert received == list(range(1, 9))
    assert max(gaps) < 0.05, gaps
    assert sum(gaps[:5]) < 0.1, gaps  # unbuffered, five items would take 0.15 s


@pytest.mark.timeout(30)
def test_buffered_forwards_source_exception():
    out = []
    with pytest.raises(ReaderKilledError) as excinfo:
        for sample in buffered(failing_source, 4)():
            out.append(sample)
    assert out == [1, 2]
    error = excinfo.value
    assert isinstance(error, SystemError)
    assert isinstance(error.__cause__, ValueError)
    assert str(error.__cause__) == "boom from source"
    text = str(error)
    assert "Blocking queue is killed because the data reader raises an exception." in text
    assert "ValueError: boom from source" in text
    assert "minifluid-buffered" in text
    assert "Traceback" in text and "failing_source" in text
    assert no_threads("minifluid-buffered")


@pytest.mark.timeout(30)
def test_buffered_stops_its_thread_when_consumer_breaks():
    closed = threading.Event()

    def source():
        try:
            yield from endless()
        finally:
            closed.set()

    for sample in buffered(source, 2)():
        if sample == 3:
            break
    assert no_threads("minifluid-buffered")
    assert closed.is_set()  # the source generator was closed too


@pytest.mark.timeout(30)
def test_buffered_stops_its_thread_when_generator_is_dropped():
    it = buffered(lambda: endless(), 2)()
    assert [next(it), next(it)] == [0, 1]
    del it
    assert no_threads("minifluid-buffered")


# --- F33 compose ----------------------------------------------------------------------------------

def test_compose_builds_flat_tuples():
    pairs = lambda: iter([(1, "a"), (2, "b")])
    singles = lambda: iter([10, 20])
    nones = lambda: iter([None, None])
    assert list(compose(pairs, singles, nones)()) == [(1, "a", 10, None), (2, "b", 20, None)]


def test_compose_raises_after_common_prefix():
    out = []
    with pytest.raises(ComposeNotAligned) as excinfo:
        for sample in compose(counting(3), counting(5))():
            out.append(sample)
    assert isinstance(excinfo.value, ValueError)
    assert out == [(0, 0), (1, 1), (2, 2)]


def test_compose_not_aligned_is_reachable_where_legacy_scripts_catch_it():
    import minifluid.io
    import minifluid.reader
    assert minifluid.reader.ComposeNotAligned is minifluid.io.ComposeNotAligned is ComposeNotAligned


def test_compose_without_alignment_check_truncates():
    assert list(compose(counting(5), counting(3), check_alignment=False)()) == [(0, 0), (1, 1), (2, 2)]


def test_compose_rejects_unknown_keyword():
    with pytest.raises(TypeError):
        compose(counting(3), check_alinment=False)


# --- F34 chain / map_readers ----------------------------------------------------------------------

def test_chain_concatenates():
    assert list(chain(counting(3), lambda: iter("ab"), counting(2))()) == [0, 1, 2, "a", "b", 0, 1]


def test_map_readers_stops_at_shortest():
    assert list(map_readers(lambda a, b: a * 10 + b, counting(5), counting(3))()) == [0, 11, 22]
    assert list(map_readers(str, counting(3))()) == ["0", "1", "2"]


# --- F35 firstn -----------------------------------------------------------------------------------

def test_firstn_limits_and_reads_no_further():
    pulled = []

    def source():
        for i in endless():
            pulled.append(i)
            yield i

    assert list(firstn(source, 4)()) == [0, 1, 2, 3]
    assert pulled == [0, 1, 2, 3]
    assert list(firstn(counting(2), 5)()) == [0, 1]
    assert list(firstn(counting(2), 0)()) == []
    with pytest.raises(ValueError):
        firstn(counting(2), -1)


# --- F36 xmap_readers -----------------------------------------------------------------------------

def jittery_square(x):
    time.sleep(0.001 * ((x * 7) % 5))
    return x * x


@pytest.mark.timeout(30)
def test_xmap_ordered_equals_source_order_repeatedly():
    mapped = xmap_readers(jittery_square, counting(60), 4, 5, order=True)
    expected = [x * x for x in range(60)]
    assert list(mapped()) == expected
    assert list(mapped()) == expected
    assert no_threads("minifluid-xmap")


@pytest.mark.timeout(30)
def test_xmap_unordered_gives_same_multiset_repeatedly():
    mapped = xmap_readers(jittery_square, counting(60), 4, 5)
    expected = collections.Counter(x * x for x in range(60))
    assert collections.Counter(mapped()) == expected
    assert collections.Counter(mapped()) == expected


@pytest.mark.timeout(30)
def test_xmap_unbounded_buffers_and_single_thread():
    assert list(xmap_readers(lambda x: -x, counting(20), 1, 0, order=True)()) == [-x for x in range(20)]


def test_xmap_rejects_no_threads():
    with pytest.raises(ValueError):
        xmap_readers(str, counting(3), 0, 4)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("order", [True, False])
def test_xmap_forwards_mapper_exception(order):
    def mapper(x):
        if x == 5:
            raise KeyError("bad sample 5")
        return x

    out = []
    with pytest.raises(ReaderKilledError) as excinfo:
        for sample in xmap_readers(mapper, counting(50), 3, 4, order=order)():
            out.append(sample)
    if order:
        assert out == [0, 1, 2, 3, 4]
    assert isinstance(excinfo.value.__cause__, KeyError)
    text = str(excinfo.value)
    assert "KeyError: 'bad sample 5'" in text
    assert "Traceback" in text and "in mapper" in text
    assert "minifluid-xmap-" in text
    assert no_threads("minifluid-xmap")


@pytest.mark.timeout(30)
def test_xmap_forwards_source_exception_after_earlier_samples():
    out = []
    with pytest.raises(ReaderKilledError) as excinfo:
        for sample in xmap_readers(lambda x: x * 10, failing_source, 2, 2, order=True)():
            out.append(sample)
    assert out == [10, 20]
    assert str(excinfo.value.__cause__) == "boom from source"
    assert "failing_source" in str(excinfo.value)
    assert no_threads("minifluid-xmap")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("order", [True, False])
def test_xmap_stops_threads_when_consumer_breaks(order):
    for sample in xmap_readers(lambda x: x, lambda: endless(), 3, 2, order=order)():
        if sample >= 10:
            break
    assert no_threads("minifluid-xmap")


# --- F37 cache ------------------------------------------------------------------------------------

def test_cache_calls_reader_once_at_decoration():
    calls = []

    def source():
        calls.append(1)
        yield from [np.arange(2), "x"]

    cached = cache(source)
    assert calls == [1]
    first, second = list(cached()), list(cached())
    assert calls == [1]
    assert first[1] == second[1] == "x"
    assert first[0] is second[0]


# --- F38 multiprocess_reader ----------------------------------------------------------------------

@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_pipe", [True, False])
def test_multiprocess_reader_carries_numpy_multiset(use_pipe):
    def make(offset):
        return lambda: ((np.full((2, 3), offset + i, dtype="float32"), offset + i) for i in range(20))

    samples = list(multiprocess_reader([make(0), make(100), make(200)], use_pipe=use_pipe)())
    assert len(samples) == 60
    assert all(isinstance(s, tuple) for s in samples)  # pickle keeps tuples (fluid's JSON made lists)
    assert sorted(label for _, label in samples) == sorted(o + i for o in (0, 100, 200) for i in range(20))
    for image, label in samples:
        assert image.dtype == np.float32 and image.shape == (2, 3)
        np.testing.assert_array_equal(image, np.full((2, 3), label, dtype="float32"))
    assert no_children()


@pytest.mark.timeout(30)
def test_multiprocess_reader_is_repeatable():
    mp = multiprocess_reader([counting(5), counting(5)])
    assert sorted(mp()) == sorted(mp()) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_pipe", [True, False])
def test_multiprocess_reader_rejects_none_sample(use_pipe):
    with pytest.raises(MultiprocessReaderError) as excinfo:
        list(multiprocess_reader([lambda: iter([1, None, 2])], use_pipe=use_pipe)())
    assert isinstance(excinfo.value, ValueError)
    assert "multiprocess reader raises an exception" in str(excinfo.value)
    assert "sample has None" in str(excinfo.value)
    assert isinstance(excinfo.value.__cause__, ValueError)
    assert str(excinfo.value.__cause__) == "sample has None"
    assert no_children()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_pipe", [True, False])
def test_multiprocess_reader_forwards_child_exception(use_pipe):
    with pytest.raises(MultiprocessReaderError) as excinfo:
        list(multiprocess_reader([counting(3), failing_source], use_pipe=use_pipe)())
    error = excinfo.value
    assert str(error).startswith("multiprocess reader raises an exception")
    assert isinstance(error.__cause__, ValueError)
    assert str(error.__cause__) == "boom from source"
    text = str(error)
    assert "minifluid-mpreader-1" in text
    assert "Traceback" in text and "failing_source" in text
    assert no_children()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_pipe", [True, False])
def test_multiprocess_reader_stops_children_when_consumer_breaks(use_pipe):
    for sample in multiprocess_reader([lambda: endless(), lambda: endless()], use_pipe=use_pipe)():
        if sample > 50:
            break
    assert no_children()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_pipe", [True, False])
def test_multiprocess_reader_notices_killed_child(use_pipe):
    def slow():
        for i in endless():
            time.sleep(0.01)
            yield i

    it = multiprocess_reader([slow], use_pipe=use_pipe)()
    next(it)
    (child,) = [p for p in multiprocessing.active_children() if p.name == "minifluid-mpreader-0"]
    pid = child.pid
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(MultiprocessReaderError) as excinfo:  # unnoticed, the endless child hangs it
        for _ in it:
            pass
    text = str(excinfo.value)
    assert f"pid {pid}" in text and "exit code -9" in text and "SIGKILL" in text
    assert isinstance(excinfo.value.__cause__, WorkerDiedError)
    assert no_children()


@pytest.mark.timeout(60)
def test_a_dead_reader_process_and_a_dead_loader_worker_are_told_in_one_sentence():
    """One worker-death message (loops.Child.died) for multiprocess_reader and the DataLoader workers:
    the same sentence but for who died, and the same WorkerDiedError text under the reader's error."""
    from minifluid.data.worker import ProcessBatchSource
    from minifluid.errors import QUEUE_KILLED_MESSAGE

    def slow():
        for i in endless():
            time.sleep(0.01)
            yield np.array([i])

    it = multiprocess_reader([slow])()
    next(it)
    (reader_pid,) = [p.pid for p in multiprocessing.active_children() if p.name == "minifluid-mpreader-0"]
    os.kill(reader_pid, signal.SIGKILL)
    with pytest.raises(MultiprocessReaderError) as reader_error:
        for _ in it:
            pass
    source = ProcessBatchSource(lambda: ([x] for x in slow()))
    try:
        next(source)
        worker_pid = source.worker_pids[0]
        os.kill(worker_pid, signal.SIGKILL)
        with pytest.raises(WorkerDiedError) as worker_error:
            for _ in source:
                pass
    finally:
        source.close()
    died = reader_error.value.__cause__
    assert isinstance(died, WorkerDiedError)
    assert str(reader_error.value) == f"multiprocess reader raises an exception: {died.detail}"
    said = [str(died).replace(f"multiprocess_reader process minifluid-mpreader-0 (pid {reader_pid})", "WHO"),
            str(worker_error.value).replace(f"DataLoader worker minifluid-worker-0 (pid {worker_pid})", "WHO")]
    assert said[0] == said[1] == (f"{QUEUE_KILLED_MESSAGE}\n  WHO was killed by signal SIGKILL (exit code -9). "
                                  "SIGKILL usually means the out-of-memory killer (see `dmesg`) or an external kill.")
    assert no_children()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_pipe", [True, False])
def test_multiprocess_reader_child_killed_in_the_middle_of_a_big_sample_is_reported_not_a_hang(use_pipe):
    def small_then_big():
        yield 0
        yield np.ones(2_000_000)  # 16 MB: its write blocks half-way while nobody reads the pipe

    it = multiprocess_reader([small_then_big], use_pipe=use_pipe)()
    assert next(it) == 0
    (child,) = [p for p in multiprocessing.active_children() if p.name == "minifluid-mpreader-0"]
    time.sleep(0.5)  # the child is now blocked in the middle of the big sample's message
    os.kill(child.pid, signal.SIGKILL)
    with pytest.raises(MultiprocessReaderError, match="SIGKILL") as excinfo:
        next(it)
    assert isinstance(excinfo.value.__cause__, WorkerDiedError)
    it.close()
    assert no_children()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_pipe", [True, False])
def test_multiprocess_reader_notices_a_dead_child_while_a_sibling_keeps_producing(use_pipe):
    def killed_after_three():
        yield from range(3)
        os.kill(os.getpid(), signal.SIGKILL)
        yield 3

    def endless_slow():
        for i in endless():
            time.sleep(0.01)
            yield i

    with pytest.raises(MultiprocessReaderError, match="SIGKILL"):  # unnoticed, the sibling never ends
        for _ in multiprocess_reader([killed_after_three, endless_slow], use_pipe=use_pipe)():
            pass
    assert no_children()


def test_multiprocess_reader_needs_readers():
    with pytest.raises(ValueError):
        multiprocess_reader([])
