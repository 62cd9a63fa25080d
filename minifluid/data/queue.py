"""BlockingQueue: the one synchronisation primitive of the feeding pipeline (fluid's LoDTensorBlockingQueue).

Bounded FIFO with back-pressure. ``close()`` means "no more items": the consumer drains what is
queued, then sees ``END_OF_DATA``. ``kill(wrapper)`` means "the producer failed": pushes are refused
with the error, the consumer still drains the batches produced before the failure (minifluid goes
beyond fluid, which dropped them) and then raises ``ReaderKilledError`` chained to the original
exception. See NOTE [ DataLoader.from_generator: epoch, queue and stage ] in ``loader.py`` for who calls what.

One Condition guards everything. Waits are sliced (``loops.POLL_INTERVAL``) so a consumer notices a
producer that died without closing the queue; nothing busy-waits.

NOTE [ Queue wake level ]
Producer and consumer are Python threads sharing one GIL. Waking a waiting consumer for every single
item makes the two threads trade the GIL (and an OS wake-up) once per batch, which costs a fast
pipeline about a third of its throughput. With ``wake_level=k > 1`` a consumer that found the queue
empty is woken only when k items are queued (or the queue is closed), and a producer blocked on a full
queue only when k slots are free, so each hand-over moves k batches. A consumer never waits more
than ``WAKE_DELAY`` with items queued, so a slow or hand-driven producer still gets its items read.
Two designs measured and rejected (2-vCPU VM, batches of 64 x float32[784], median of 7 rounds):
* the producer waits until the consumer has taken its group (a rendezvous): 53 us/batch vs 26.5,
  because waking a thread on an idle vCPU takes hundreds of microseconds there and the rendezvous
  puts that on the critical path; the producer must never wait for the consumer to wake up;
* a conversion that holds the GIL (``bytearray().join`` of the samples, 12.7 us/batch alone vs
  23.0 for ``np.array``): 28.3 us/batch through the queue, because a woken consumer only gets the
  GIL at the producer's next release (numpy's copies release it many times per batch) or after the
  5 ms switch interval. The same starvation would hit a training step coming back from BLAS, so
  conversion in producer threads keeps numpy's GIL-releasing copies.
What the wake level cannot remove: when both threads have Python work (the non-iterable loader with
``exe.run`` in the consumer), they hand the GIL back and forth whatever the queue does (``perf stat``:
~2 context switches per batch at wake level 8 and 16 alike). Each hand-over across vCPUs costs a
wake-up, so on the VM the same process runs at either ~16k or ~24k batches/s depending on where the
scheduler put the two threads (``taskset -c 0``: ~0.52x the bare loop, every time). Re-measured on
another day, the GIL-holding conversion made every path faster in absolute terms (non-iterable 25k vs
16k batches/s) but it keeps the starvation hazard above, so it stays rejected.
"""
import os
import threading
import time
from collections import deque
from dataclasses import dataclass

from ..errors import QUEUE_KILLED_MESSAGE, ExceptionWrapper, ReaderKilledError
from .loops import END_OF_DATA, POLL_INTERVAL

__all__ = ["BlockingQueue", "OrderedMultiDeviceQueue", "END_OF_DATA", "NOTHING", "QueueTimeout", "POLL_INTERVAL",
           "WAKE_DELAY"]

WAKE_DELAY = 0.005
"""Longest a consumer waits for ``wake_level`` items while fewer are queued (NOTE [ Queue wake level ])."""


@dataclass(frozen=True)
class _Nothing:
    """Returned by ``try_pop`` when no item is ready."""


NOTHING = _Nothing()


class QueueTimeout(TimeoutError):
    """``push``/``pop`` gave up after the caller's timeout."""


class _ProducerDied(RuntimeError):
    """The producer stopped without closing or killing the queue."""


class BlockingQueue:
    """Bounded FIFO between one producer and one consumer (more of either are safe, too).

    Args:
        capacity (int): maximum number of queued items; must be > 0.
        speed_test_mode (bool, default from FLAGS_reader_queue_speed_test_mode): ``pop`` returns the
            head without removing it, so a consumer can measure its compute ceiling.
        wake_level (int, default 1): items moved per hand-over (NOTE [ Queue wake level ]).
    """

    def __init__(self, capacity, speed_test_mode=None, wake_level=1):
        if capacity is None or int(capacity) <= 0:
            raise ValueError(f"The capacity of a blocking queue must be greater than 0, but received {capacity}")
        self._capacity = int(capacity)
        self._wake_level = max(1, min(int(wake_level), self._capacity))
        self._room_level = self._capacity - self._wake_level  # wake a blocked producer at this size
        self._items = deque()
        self._cond = threading.Condition(threading.Lock())
        self._closed = False
        self._killed_by = None
        self._generation = 0
        self._put_waiters = 0
        self._get_waiters = 0
        self._producer_alive = None
        if speed_test_mode is None:
            speed_test_mode = os.environ.get("FLAGS_reader_queue_speed_test_mode", "").lower() in ("1", "true")
        self._speed_test = bool(speed_test_mode)
        self.reader = None
        """The object that reads this queue for a Program (set by the loader; see ops/io.py)."""

    # --- producer side -------------------------------------------------------------------
    def push(self, item, timeout=None, generation=None):
        """Enqueue ``item``, blocking while full. False (not enqueued) once closed, or when
        ``generation`` is stale (the queue was reopened since the producer started).

        Raises:
            ReaderKilledError: the queue was killed.
            QueueTimeout: still full after ``timeout`` seconds.
        """
        cond = self._cond
        with cond:
            items = self._items
            if len(items) >= self._capacity:
                deadline = None if timeout is None else time.monotonic() + timeout
                while len(items) >= self._capacity and not self._closed:
                    self._wait(deadline, put=True)
            if self._killed_by is not None:
                raise self._killed_error()
            if self._closed or (generation is not None and generation != self._generation):
                return False
            items.append(item)
            if self._get_waiters and len(items) >= self._wake_level:
                cond.notify()
            return True

    def close(self, generation=None):
        """No more items: waiters wake, pushes return False, pops drain then get END_OF_DATA.
        A stale ``generation`` (the queue was reopened since) makes it a no-op."""
        with self._cond:
            if generation is not None and generation != self._generation:
                return
            self._closed = True
            self._cond.notify_all()

    def kill(self, exc_wrapper=None, generation=None):
        """Close with an error: pushes raise, pops drain then raise ReaderKilledError (chained).
        ``exc_wrapper`` is an ExceptionWrapper (anything with its ``error(cls, header)``); a stale
        ``generation`` makes it a no-op."""
        if exc_wrapper is None:
            try:
                raise RuntimeError("the blocking queue was killed")
            except RuntimeError:
                exc_wrapper = ExceptionWrapper(where="BlockingQueue.kill()")
        with self._cond:
            if generation is not None and generation != self._generation:
                return
            self._killed_by = exc_wrapper
            self._closed = True
            self._cond.notify_all()

    # --- consumer side -------------------------------------------------------------------
    def pop(self, timeout=None, generation=None, stall=None):
        """The next item (FIFO), blocking while empty and open; END_OF_DATA once closed and drained,
        and at once (or as soon as it happens) when ``generation`` is stale: the queue was reset or
        reopened for another epoch, so the epoch this consumer waits in has ended.

        Args:
            stall (loops.StallWatch or None): warned once if the wait reaches ``loops.STALL_WARNING_S``.

        Raises:
            ReaderKilledError: killed and drained; ``__cause__`` is the producer's exception.
            QueueTimeout: still empty after ``timeout`` seconds.
        """
        cond = self._cond
        with cond:
            items = self._items
            if generation is not None and generation != self._generation:
                return END_OF_DATA
            if not items and not self._closed:
                start = time.monotonic()
                deadline = None if timeout is None else start + timeout
                warn_at = None if stall is None else stall.deadline(start)
                waited = False
                while len(items) < self._wake_level and not self._closed and not (waited and items):
                    if warn_at is not None and time.monotonic() >= warn_at:
                        warn_at = stall.warn(time.monotonic() - start)
                    self._wait(deadline, put=False, wake_at=warn_at)
                    waited = True
                    if generation is not None and generation != self._generation:
                        return END_OF_DATA
            if not items:
                if self._killed_by is not None:
                    raise self._killed_error()
                return END_OF_DATA
            if self._speed_test:
                return items[0]
            item = items.popleft()
            if self._put_waiters and len(items) <= self._room_level:
                cond.notify()
            return item

    def try_pop(self):
        """The next item if one is queued now, else NOTHING (never raises, never blocks)."""
        with self._cond:
            if not self._items:
                return NOTHING
            if self._speed_test:
                return self._items[0]
            item = self._items.popleft()
            if self._put_waiters and len(self._items) <= self._room_level:
                self._cond.notify()
            return item

    def take_ready(self, max_items, generation=None):
        """Up to ``max_items`` items queued now, in order, under one lock (never blocks, never raises);
        lets the consumer move a whole hand-over group at once (NOTE [ Queue wake level ]). Nothing
        when ``generation`` is stale (see ``pop``)."""
        with self._cond:
            items = self._items
            if not items or self._speed_test or (generation is not None and generation != self._generation):
                return ()
            taken = [items.popleft() for _ in range(min(max_items, len(items)))]
            if self._put_waiters and len(items) <= self._room_level:
                self._cond.notify()
            return taken

    # --- lifecycle -------------------------------------------------------------------------
    def reopen(self):
        """Empty the queue and open it for a new producer (fluid: on start and reset).

        Raises:
            RuntimeError: the queue was killed; call ``reset()`` to clear the error first.
        """
        with self._cond:
            if self._killed_by is not None:
                raise RuntimeError("Cannot reopen a killed blocking queue (its reader raised an exception); "
                                   "call reset() to clear the error first.")
            self._reopen_locked()

    def reset(self):
        """Like ``reopen`` but also clears a kill: the queue is as new (loader.reset() uses this)."""
        with self._cond:
            self._killed_by = None
            self._reopen_locked()

    def _reopen_locked(self):
        self._items.clear()
        self._closed = False
        self._producer_alive = None  # the next producer registers itself
        self._generation += 1
        self._cond.notify_all()

    def watch_producer(self, is_alive):
        """Let waiters notice a producer that died without closing: ``is_alive()`` is polled."""
        self._producer_alive = is_alive

    # --- inspection ------------------------------------------------------------------------
    def size(self):
        return len(self._items)

    __len__ = size

    def capacity(self):
        return self._capacity

    def is_closed(self):
        return self._closed

    def is_killed(self):
        return self._killed_by is not None

    @property
    def killed_by(self):
        """The ExceptionWrapper given to ``kill`` (None when not killed)."""
        return self._killed_by

    @property
    def generation(self):
        """Bumped by every reopen/reset; producers push with it so a stale one is refused."""
        return self._generation

    # --- internals -------------------------------------------------------------------------
    def _killed_error(self):
        return self._killed_by.error(ReaderKilledError, QUEUE_KILLED_MESSAGE)

    def _wait(self, deadline, put, wake_at=None):
        """One bounded wait on the condition (lock held); raises QueueTimeout past ``deadline``; returns
        by ``wake_at`` (a ``time.monotonic()`` value) at the latest."""
        slice_s = POLL_INTERVAL if self._producer_alive is not None else None
        if not put and self._wake_level > 1:
            slice_s = WAKE_DELAY
        now = time.monotonic()
        if deadline is not None:
            remaining = deadline - now
            if remaining <= 0:
                raise QueueTimeout(f"blocking queue {'push' if put else 'pop'} timed out "
                                   f"(size {len(self._items)}, capacity {self._capacity})")
            slice_s = remaining if slice_s is None else min(slice_s, remaining)
        if wake_at is not None:
            slice_s = max(0.0, wake_at - now) if slice_s is None else max(0.0, min(slice_s, wake_at - now))
        if put:
            self._put_waiters += 1
        else:
            self._get_waiters += 1
        try:
            self._cond.wait(slice_s)
        finally:
            if put:
                self._put_waiters -= 1
            else:
                self._get_waiters -= 1
        alive = self._producer_alive
        if not put and alive is not None and not self._items and not self._closed and not alive():
            try:
                raise _ProducerDied("the producer of this blocking queue stopped without closing it")
            except _ProducerDied:
                self._killed_by = ExceptionWrapper(where="BlockingQueue liveness check")
            self._closed = True


class OrderedMultiDeviceQueue:
    """fluid's ordered multi-device queue (G44): ``n`` sub-queues of ceil(capacity / n), round-robin.

    minifluid's loader keeps order with one FIFO queue and rounds of ``n`` pops instead (see
    ``feed_reader.FeedReader.read_round``); this class exists for code written against fluid's queue.
    """

    def __init__(self, capacity):
        if capacity is None or int(capacity) <= 0:
            raise ValueError(f"The capacity of a blocking queue must be greater than 0, but received {capacity}")
        self._capacity = int(capacity)
        self._queues = []
        self._next = 0
        self._inited = threading.Event()

    def set_device_count(self, n):
        per = -(-self._capacity // n)
        self._queues = [BlockingQueue(per) for _ in range(n)]
        self._next = 0
        self._inited.set()

    def wait_for_inited(self, milliseconds):
        return self._inited.wait(milliseconds / 1000.0)

    def push(self, item):
        q = self._queues[self._next]
        self._next = (self._next + 1) % len(self._queues)
        return q.push(item)

    def pop(self, device=0, timeout=None):
        return self._queues[device].pop(timeout)

    def close(self):
        for q in self._queues:
            q.close()

    def kill(self, exc_wrapper=None):
        for q in self._queues:
            q.kill(exc_wrapper)

    def reset(self):
        self.set_device_count(len(self._queues))

    def size(self):
        return sum(q.size() for q in self._queues)

    def capacity(self):
        return self._capacity

    def device_queue(self, device):
        return self._queues[device]
