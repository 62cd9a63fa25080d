"""FeedReader: where Programs and the iterable loader take batches from.

It sits between a loader's stage (prefetch.py) and its consumers: the iterable loop, the ``read``
op of a non-iterable program (ops/io.py) and CompiledProgram (``read_round`` / ``stage``). It owns
the per-epoch diagnosis counters and the read op's need_check_feed checks (REFERENCE J64).
"""
import threading
import time
from collections import deque
from types import SimpleNamespace

from ..errors import CONCURRENT_READ_MESSAGE, ConcurrentReadError, EOFException, LoaderStateError, ReaderKilledError
from ..executor.feed_fetch import FeedSpec
from ..lod_tensor import LoDTensor
from . import adapters
from .diagnosis import EpochStats, publish
from .loops import timed_out
from .queue import END_OF_DATA, QueueTimeout

__all__ = ["CONCURRENT_READ_MESSAGE", "ConcurrentReadError", "FeedReader", "NOT_STARTED_MESSAGE",
           "PRODUCER_THREAD_NAME"]

PRODUCER_THREAD_NAME = "minifluid-producer"

NOT_STARTED_MESSAGE = (
    "The DataLoader feeding this program is not started: call loader.start() before exe.run(), and "
    "loader.reset() after catching fluid.core.EOFException at the end of each epoch.")


def _field_checks(slots):
    """(index, FeedSpec) of each need_check_feed slot: the read op's checks (REFERENCE J64), by the same
    FeedSpec as ``exe.run(feed=...)``'s."""
    return [(i, FeedSpec(SimpleNamespace(name=s.name, shape=s.shape, dtype=s.dtype, need_check_feed=True,
                                         persistable=False), read_op=True))
            for i, s in enumerate(slots) if s.need_check and s.shape is not None]


def _check_fields(batch, checks):
    """The read op's checks of need_check_feed slots; cheap when they pass."""
    for i, spec in checks:
        field = batch[i]
        spec.validate(field._array if isinstance(field, LoDTensor) else field)


class FeedReader:
    """Where Programs and the iterable loader take batches from (a batch: one field per slot).

    The scope holds it under the READER variables of a non-iterable loader; CompiledProgram calls
    ``read_round`` for one batch per place and ``stage`` to hand each replica's ``read`` op its batch.
    """

    def __init__(self, slots, capacity, check_feed):
        self._slots = slots
        self._checks = _field_checks(slots) if check_feed else ()
        self._staged = deque()
        self._pending_error = None  # a reader error met in the middle of a round: raised at the next read
        self._stage = None
        self._generation = None  # the queue generation of the current epoch (None: no epoch, or pushes by hand)
        self._reading = threading.Lock()  # held while a read waits: a second reader is refused (CONCURRENT_READ)
        self._reader_name = None
        self.started = False
        self.external = False  # someone took the queue to push by hand (J66): no start() needed
        self.stats = EpochStats(capacity)
        self.last_stats = None
        self.label = None  # callable -> "train loader #1 (...)": names the epochs in EPOCH_HISTORY

    def set_stage(self, stage):
        """Read from ``stage`` (see prefetch.py) from now on."""
        self._stage = stage

    def begin_epoch(self, stage, generation=None):
        """Start reading from ``stage`` with fresh counters; ``generation`` is the queue generation the
        epoch's producer pushes with (a wait of this epoch ends when the queue is reset)."""
        self._stage, self.started, self._generation = stage, True, generation
        self._staged.clear()
        self._pending_error = None
        self.last_stats = self.stats
        self.stats = EpochStats(self.stats.capacity, self.stats.epoch + 1, stage.capacity())

    def end_epoch(self):
        """Stop reading: drop staged batches and stop the stage (the stage itself may be reused)."""
        publish(self.stats, self.label() if self.label is not None else None)
        self.started, self._generation = False, None
        self._staged.clear()
        self._pending_error = None
        if self._stage is not None:
            self._stage.stop()

    def stage(self, batch):
        """Make ``batch`` the next one ``read_next`` returns (before anything queued)."""
        self._staged.append(batch)

    def read_next(self):
        """One batch; EOFException at the end, ReaderKilledError (chained) if the reader failed."""
        if self._staged:
            return self._staged.popleft()
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error
        # the epoch's generation is read before `started`: a reset() from another thread after this
        # point ends the wait below with EOF (BlockingQueue.pop), before it, `started` is False
        stage, generation = self._stage, self._generation
        if not self.started and not self.external:
            raise LoaderStateError(NOT_STARTED_MESSAGE)
        if not self._reading.acquire(False):
            raise ConcurrentReadError(CONCURRENT_READ_MESSAGE.format(self._reader_name))
        try:
            self._reader_name = threading.current_thread().name
            occupancy = stage.occupancy()
            start = time.perf_counter()
            batch = stage.get(generation)
        except QueueTimeout:
            raise timed_out(f"thread {PRODUCER_THREAD_NAME}", stage.timeout) from None
        finally:
            self._reading.release()
        if batch is END_OF_DATA:
            raise EOFException()
        self.stats.record(start, time.perf_counter(), occupancy)
        if self._slots is not None and len(batch) != len(self._slots):
            raise ValueError(f"{adapters.FIELD_COUNT_MESSAGE} (got {len(batch)} fields for "
                             f"{[s.name for s in self._slots]})")
        if self._checks:
            _check_fields(batch, self._checks)
        return batch

    def read_round(self, num_places, drop_last=True):
        """Up to ``num_places`` batches in order (K68); EOFException when none, or when fewer than
        ``num_places`` are left and ``drop_last`` (K70). A reader error after some batches of the round
        ends it the same way: without ``drop_last`` the batches made before it are returned and the error
        is raised by the next read."""
        if num_places < 1:
            raise ValueError(f"read_round needs at least one place, but was asked for {num_places}")
        batches = []
        try:
            for _ in range(num_places):
                batches.append(self.read_next())
        except EOFException:
            if not batches or drop_last:
                raise
        except ReaderKilledError as error:  # reader failure, worker death, timeout
            if not batches or drop_last:
                raise
            self._pending_error = error
        return batches
