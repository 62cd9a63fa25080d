"""Worker processes that build batches and hand them to the consumer through shared memory.

NOTE [ Worker shutdown protocol ]
(The pipe and shared-memory part of NOTE [ Feeding: topology and shutdown ] in loops.py.)
Topology: one forked worker per pipe (a duplex ``multiprocessing.Pipe``). Worker -> parent: ``BatchMeta``
(the bytes are in a shared-memory slot, see NOTE [ Shared-memory slots: ownership and lifetime ] in
shm.py), then ``END_OF_DATA`` or one ``ExceptionWrapper``. Parent -> worker: ``_Ack`` (single worker: the
batches taken since the last one, sent every ``max(1, capacity // 4)`` batches, plus the slots freed
since) or ``_Task`` (pool: indices to fetch, plus freed slots).
* Workers are forked (the reader is never pickled), ignore SIGINT (Ctrl-C is the parent's to handle)
  and catch every ``Exception``: it goes to the parent as an ``ExceptionWrapper`` and the worker returns.
  They are daemonic (terminated with the parent), so a reader cannot start processes of its own.
* Flow control: a single worker keeps at most ``capacity`` batches un-taken and otherwise blocks on
  its pipe; a pool worker only works on tasks, and the parent keeps at most ``capacity`` tasks out.
* A worker never blocks for more than ``WORKER_POLL_INTERVAL`` without checking ``os.getppid()``. If
  the parent is gone (ppid changed, pipe EOF or a send fails) it unlinks all its segments and exits.
* The consumer waits on the worker whose batch is next in order (``loops.ProcessGroup.receive``, the
  process manager this module's ``_Workers`` extends) and never blocks for more than
  ``POLL_INTERVAL`` without checking that it is alive. Dead with nothing left in its pipe (EOF) ->
  ``WorkerDiedError`` (pid, signal name); no batch within ``timeout`` s -> ``ReaderTimeoutError``.
  Pipes are FIFO, so every batch a worker sent before its error or death is delivered first (in a
  pool, another worker's reported error surfaces when its turn comes, after all earlier batches;
  another worker's death, a non-zero exit code, is raised at once while the consumer waits).
* The parent's sends never block on a full pipe (``_Workers.send``): a task of many indices can fill
  it while the worker is busy, or is itself blocked sending a big batch (a large LoD) that we are not
  reading. While it waits for room the parent reads that worker's messages into ``handle.inbox``
  (delivered first, in order) and applies the same death and timeout checks.
* Shutdown is ``_Workers.stop`` (``loops.ProcessGroup.stop``), run exactly once through
  ``weakref.finalize``: by ``close()``, by the end of data, by any exception out of ``__next__`` (including KeyboardInterrupt), by garbage
  collection of the source (a ``break``) or at interpreter exit. It stops the workers
  (``stop_processes``: SIGTERM, SIGKILL after ``PROCESS_JOIN_TIMEOUT``, fds released, even when
  SIGCHLD is ignored), closes the pipes and then unlinks any segment name with the source's prefix (a
  worker may have died mid-allocation). It does nothing in a forked child that merely inherited the
  object. Arrays already handed out stay valid.
* ``close()`` from another thread (a user's ``reset()`` while ``exe.run`` waits for a batch) never
  shuts down under the consumer's feet: it sets ``_Workers.stopping``, which the consumer's waits
  check every ``POLL_INTERVAL``; the consumer then ends its epoch as at the end of data
  (StopIteration), and the shutdown runs once it has left (``_WorkerSource._using``). Only one thread
  ever waits on, reaps or closes a worker's process and pipe at a time.
"""
import itertools
import os
import pickle
import random
import select
import signal
import struct
import threading
import time
import weakref
from typing import NamedTuple

import numpy as np

from minifluid.data.loops import (END_OF_DATA, POLL_INTERVAL, WORKER_POLL_INTERVAL, Child, EndOfData, ProcessGroup,
                                  Readable, Stopped, ThreadSource, timed_out)
from minifluid.data.queue import BlockingQueue
from minifluid.data.shm import (BatchMeta, ShmAllocationError, SlotReader, SlotWriter, new_segment_prefix,
                                reclaim_stale_segments, unlink_segments)
from minifluid.errors import QUEUE_KILLED_MESSAGE, ConversionFailed, ExceptionWrapper, ReaderKilledError, ReaderTimeoutError

__all__ = ["KEPT_VIEWS", "ProcessBatchSource", "ProcessPoolBatchSource", "ReaderTimeoutError", "SharedMemoryFullError",
           "WorkerInfo", "get_worker_info", "open_batch_source"]

KEPT_VIEWS = 16
"""Batches, beyond a source's capacity, that the consumer may keep as views of shared memory; later
ones arrive as copies until kept ones are dropped (``SlotReader(copy_above=...)``)."""

class SharedMemoryFullError(ReaderKilledError):
    """/dev/shm could not hold a batch; ``__cause__`` is the worker's ``ShmAllocationError`` (ENOSPC)."""


class WorkerInfo(NamedTuple):
    """What ``get_worker_info()`` returns inside a worker: (id, num_workers, seed, dataset). ``dataset`` is
    the worker's own copy of the loader's dataset (an IterableDataset's ``__iter__`` or a
    ``worker_init_fn`` can split the stream with it); None for a generator's worker."""
    id: int
    num_workers: int
    seed: object
    dataset: object = None


class _Ack(NamedTuple):
    """Parent -> single worker: ``taken`` more batches taken; ``freed`` slots may be written again."""
    taken: int
    freed: tuple = ()


class _Task(NamedTuple):
    """Parent -> pool worker: build the batch for ``indices``; ``freed`` slots may be written again."""
    indices: tuple
    freed: tuple = ()


def _dumps(msg):
    """A message's bytes for ``conn.send_bytes`` (``conn.recv`` reads them): plain pickle, without the
    ForkingPickler and buffer ``conn.send`` builds per call; our messages need no special reducers."""
    return pickle.dumps(msg, pickle.HIGHEST_PROTOCOL)


def _framed(data):
    """``data`` with the length header ``Connection.recv_bytes`` expects (multiprocessing's framing)."""
    if len(data) > 0x7FFFFFFF:
        return struct.pack("!i", -1) + struct.pack("!Q", len(data)) + data
    return struct.pack("!i", len(data)) + data


def _write_some(fd, view):
    """Write what the pipe takes right now without blocking: the number of bytes written (0 when full)."""
    os.set_blocking(fd, False)
    try:
        return os.write(fd, view)
    except BlockingIOError:
        return 0
    finally:
        os.set_blocking(fd, True)


class _ParentGone(Exception):
    """Raised inside a worker when its parent process has exited or closed the pipe."""


_worker_info = None


def get_worker_info():
    """``WorkerInfo(id, num_workers, seed)`` inside a worker process, ``None`` in the parent."""
    return _worker_info


# --- worker side ------------------------------------------------------------------------------------
def _enter_worker(info, inherited):
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for conn in inherited:  # the parent's ends of our pipes: close them so a dead parent means EOF
        conn.close()
    _worker_info = info
    if info.seed is not None:
        random.seed(info.seed)
        np.random.seed(info.seed % 2**32)


def _recv(conn, readable, parent_pid, block=True):
    """Next message from the parent; None if ``block`` is False and none is waiting."""
    while not readable(WORKER_POLL_INTERVAL if block else 0):
        if not block:
            return None
        if os.getppid() != parent_pid:
            raise _ParentGone
    try:
        return conn.recv()
    except (EOFError, OSError):
        raise _ParentGone from None


def _send(conn, obj):
    try:
        conn.send_bytes(_dumps(obj))
    except OSError:
        raise _ParentGone from None


def _packed(writer, batch, index):
    """``writer.pack(batch)``; what fails there (a field of the wrong kind or shape) is the batch's
    conversion failing, not the reader (errors.ConversionFailed); a full /dev/shm stays itself."""
    try:
        return writer.pack(batch)
    except ShmAllocationError:
        raise
    except Exception as e:
        raise ConversionFailed(e, index) from None


def _run_worker(body, conn, inherited, prefix, capacity, info, worker_init_fn, who):
    """A worker process around ``body(writer, readable)``, its loop: the worker's set-up, its
    ``worker_init_fn``, what it raises reported to the parent (``who``: how the report names it), and
    its segments and pipe released at the end (all its segments when its parent is gone)."""
    _enter_worker(info, inherited)
    writer, parent_gone = SlotWriter(prefix, capacity), False
    try:
        try:
            if worker_init_fn is not None:
                worker_init_fn(info.id)
            body(writer, Readable(conn))
        except _ParentGone:
            raise
        except BaseException:  # SystemExit, KeyboardInterrupt, GeneratorExit too: the reader's, reported as such
            _send(conn, ExceptionWrapper(where=f"worker process {who}pid {os.getpid()})"))
    except _ParentGone:
        parent_gone = True
    finally:
        writer.close(unlink_all=parent_gone)
        conn.close()


def _worker_loop(conn, inherited, batch_reader, prefix, capacity, info, worker_init_fn, parent_pid, name):
    """Run ``batch_reader()`` and send each batch through a shared-memory slot (a stream worker)."""
    deferred = getattr(batch_reader, "deferred", None)  # fields built in the slot (data/adapters.py)

    def stream(writer, readable):
        credits = capacity
        for index, batch in enumerate(batch_reader() if deferred is None else deferred()):
            msg = _recv(conn, readable, parent_pid, block=credits == 0)
            while msg is not None:
                credits += msg.taken
                writer.release(msg.freed)
                msg = _recv(conn, readable, parent_pid, block=False)
            _send(conn, _packed(writer, batch, index))
            credits -= 1
        _send(conn, END_OF_DATA)
    _run_worker(stream, conn, inherited, prefix, capacity, info, worker_init_fn, f"{name} (")


def _pool_worker_loop(conn, inherited, fetch_batch, prefix, info, worker_init_fn, capacity, parent_pid, name):
    """Build the batch for each ``_Task`` with ``fetch_batch(indices)``, in task order (pool worker)."""
    fetch = getattr(fetch_batch, "deferred", fetch_batch)  # fields built in the slot (data/dataloader.py)

    def tasks(writer, readable):
        for index in itertools.count():
            task = _recv(conn, readable, parent_pid)
            writer.release(task.freed)
            _send(conn, _packed(writer, fetch(list(task.indices)), index))
    _run_worker(tasks, conn, inherited, prefix, capacity, info, worker_init_fn, f"{name} (worker {info.id}, ")


# --- parent side ------------------------------------------------------------------------------------
class _Handle(Child):
    __slots__ = ("reader",)

    def __init__(self, conn, name, role):
        super().__init__(conn, name, role)
        self.reader = None  # SlotReader, set by _Workers.start


class _Workers(ProcessGroup):
    """Parent-side state of one source's workers: the process group, their shared-memory segments'
    prefix, and sends that never block. Never references the source, so GC can run ``stop``."""

    child_class = _Handle
    _stale_checked = False

    def __init__(self, copy_above, stall=None):
        super().__init__("DataLoader worker", stall)
        self.copy_above = copy_above  # batches the consumer may keep as views, per worker (SlotReader)
        if not _Workers._stale_checked:
            _Workers._stale_checked = True
            reclaim_stale_segments()
        self.prefix = new_segment_prefix()

    def start(self, target, name, user_fn, *extra):
        """Fork a worker running ``target(conn, inherited, user_fn, prefix, *extra, parent_pid, name)``."""
        prefix = f"{self.prefix}{len(self.children)}_"
        handle = super().start(target, name, (user_fn, prefix, *extra, self.owner_pid, name))
        handle.reader = SlotReader(self.copy_above)

    def send(self, handle, msg, timeout=None):
        """Send ``msg`` without ever blocking on a full pipe. A big task (a batch of many indices) can fill
        it while the worker is busy, or is itself blocked sending us a big batch: then read what the
        worker sends meanwhile (``receive`` returns it first), and watch for its death and the timeout."""
        fd, frame = handle.conn.fileno(), memoryview(_framed(_dumps(msg)))
        deadline = None if timeout is None else time.monotonic() + timeout
        poller = None
        while True:
            try:
                frame = frame[_write_some(fd, frame):]
            except OSError:
                if not handle.readable(0):
                    raise handle.died() from None
                return  # it stopped after sending a report (or died): receive() reads what is left, in order
            if not frame:
                return
            if poller is None:
                poller = select.poll()
                poller.register(fd, select.POLLIN | select.POLLOUT)
            events = poller.poll(POLL_INTERVAL * 1000.0)
            if self.stopping:
                raise Stopped
            if any(event & select.POLLIN for _, event in events):
                try:
                    handle.inbox.append(handle.conn.recv())
                except (EOFError, OSError):
                    raise handle.died() from None
            elif not events:
                if not handle.process.is_alive():
                    raise handle.died()
                if deadline is not None and time.monotonic() >= deadline:
                    raise timed_out(f"worker {handle.name} (pid {handle.pid}), which took no new indices (it "
                                    "is still busy with earlier ones),", timeout)

    def release(self):
        """After the workers have stopped: their pipes, mappings and segments (NOTE [ Worker shutdown
        protocol ]); any segment name with our prefix, as a worker may have died mid-allocation."""
        try:
            super().release()
        finally:
            for h in self.children:
                if h.reader is not None:
                    h.reader.close()
            unlink_segments(self.prefix)


def _reader_error(wrapper):
    cls = SharedMemoryFullError if isinstance(wrapper.cause(), ShmAllocationError) else ReaderKilledError
    return wrapper.error(cls)


class _WorkerSource:
    """What both sources share: iteration, close(), context manager and diagnostics."""

    def __init__(self, timeout, capacity, stall=None):
        self._timeout = timeout
        self._workers = _Workers(copy_above=capacity + KEPT_VIEWS, stall=stall)
        self._closer = weakref.finalize(self, self._workers.stop)
        self._closed = False
        self._using = threading.RLock()  # held by the consumer in __next__ (NOTE [ Worker shutdown protocol ])

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            raise StopIteration
        with self._using:
            try:
                return self._next_batch()
            except BaseException as e:  # end of data, reader error, death, timeout, Ctrl-C: shut down first
                stopped = self._workers.stopping  # close() from another thread: the epoch just ends
                self.close()
                if stopped and not isinstance(e, KeyboardInterrupt):
                    raise StopIteration from None
                raise

    def _unpack_or_raise(self, handle, msg):
        if isinstance(msg, BatchMeta):
            try:
                return handle.reader.unpack(msg)
            except OSError as e:  # the name vanished from /dev/shm before we mapped it
                raise ReaderKilledError(
                    f"{QUEUE_KILLED_MESSAGE}\n  Could not map shared-memory segment /dev/shm/{msg.name} of "
                    f"DataLoader worker {handle.name} (pid {handle.pid}): {e}. Another process may have removed "
                    "it (a cleanup script, or a program sharing /dev/shm).") from e
        if isinstance(msg, EndOfData):
            raise StopIteration
        if isinstance(msg, ExceptionWrapper):
            raise _reader_error(msg)
        raise RuntimeError(f"minifluid worker protocol error: unexpected message {msg!r}")

    def close(self):
        """Stop the workers and release every process, fd and segment; safe to call again, and from
        another thread while one waits in ``next()`` (that wait then ends as at the end of data)."""
        self._closed = True
        self._workers.stopping = True
        with self._using:  # a waiting consumer leaves within POLL_INTERVAL
            self._closer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def ready(self):
        """1 when a message from the worker whose batch is next is already waiting in its pipe, else 0."""
        if self._closed:
            return 0
        handles = self._workers.children
        handle = handles[self._next_index() % len(handles)]
        try:
            return int(bool(handle.inbox) or handle.readable(0))
        except (OSError, ValueError):
            return 0

    def _next_index(self):
        return 0

    @property
    def worker_pids(self):
        """Pids of the worker processes (in worker-id order)."""
        return [h.pid for h in self._workers.children]

    @property
    def num_segments(self):
        """How many distinct shared-memory segments the consumer has mapped so far (the ring's size)."""
        return sum(h.reader.segments_seen for h in self._workers.children)


class ProcessBatchSource(_WorkerSource):
    """Runs ``batch_reader()`` in forked worker processes, each iterating it on its own (a stream: a
    generator, an IterableDataset); batches cross through shared memory.

    Args:
        batch_reader (callable): zero-arg callable returning an iterator of batches (lists or tuples of
            ndarrays / LoDTensors). It runs in the worker as is (fork), so closures and lambdas work.
        capacity (int, default 4): batches each worker may build ahead of the consumer.
        timeout (float or None): seconds to wait for one batch; None waits forever (death still noticed).
        name (str): the worker process's name (one worker; several are ``minifluid-worker-<id>``).
        num_workers (int, default 1): workers, each running ``batch_reader()`` in full; with several, split
            the stream by ``get_worker_info()`` (id, num_workers, dataset) as with PyTorch and paddle.
        dataset: what ``get_worker_info().dataset`` is in the workers (their copy of it).
        worker_init_fn (callable): ``worker_init_fn(worker_id)``, run in each worker before its reader.
        base_seed (int): with a dataset or several workers, worker k seeds ``random`` and ``np.random``
            with base_seed + k (drawn from the parent's ``np.random`` when None); one generator worker
            keeps the parent's RNG state.
        stall (loops.StallWatch or None): warns when one wait for a batch gets long.

    Batches come round-robin from the workers still running (worker 0's first, worker 1's first, ...);
    a worker whose reader ends leaves the rotation. ``next()`` returns the fields as numpy views onto
    shared memory (``LoDTensor`` where the reader gave one); a slot is reused only after every view of
    it is gone. Raises ``ReaderKilledError`` (reader raised), ``SharedMemoryFullError``, ``WorkerDiedError``
    or ``ReaderTimeoutError``.
    """

    def __init__(self, batch_reader, capacity=4, timeout=None, name="minifluid-worker-0", num_workers=1,
                 dataset=None, worker_init_fn=None, base_seed=None, stall=None):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        super().__init__(timeout, capacity, stall)
        self._ack_every = max(1, capacity // 4)  # one message per group of batches, not per batch
        self._taken = [0] * num_workers
        self._active, self._turn = list(range(num_workers)), 0  # workers still sending; whose batch is next
        seeded = num_workers > 1 or dataset is not None
        if seeded and base_seed is None:
            base_seed = int(np.random.randint(0, 2**31 - 1))
        for wid in range(num_workers):
            info = WorkerInfo(wid, num_workers, base_seed + wid if seeded else None, dataset)
            worker_name = name if num_workers == 1 else f"minifluid-worker-{wid}"
            self._workers.start(_worker_loop, worker_name, batch_reader, capacity, info, worker_init_fn)

    def _next_index(self):
        return self._active[self._turn] if self._active else 0

    def _next_batch(self):
        while self._active:
            wid = self._active[self._turn]
            handle = self._workers.children[wid]
            try:
                batch = self._unpack_or_raise(handle, self._workers.receive((handle,), self._timeout)[1])
            except StopIteration:  # this worker's reader has ended: the others go on
                del self._active[self._turn]
                self._turn = self._turn % len(self._active) if self._active else 0
                continue
            self._turn = (self._turn + 1) % len(self._active)
            self._acknowledge(wid, handle)
            return batch
        raise StopIteration

    def _acknowledge(self, wid, handle):
        self._taken[wid] += 1
        if self._taken[wid] >= self._ack_every:
            try:
                handle.conn.send_bytes(_dumps(_Ack(self._taken[wid], handle.reader.drain_freed())))
            except OSError:  # the worker already finished; what it sent is still in the pipe
                pass
            self._taken[wid] = 0


class ProcessPoolBatchSource(_WorkerSource):
    """N forked workers build batches from index lists in parallel; delivered in ``index_batches`` order.

    Args:
        fetch_batch (callable): ``fetch_batch(indices) -> batch`` (list of fields), run in a worker.
        index_batches (iterable): lists of ints, read lazily in the parent; batch i goes to worker i % N.
        num_workers (int): N >= 1.
        capacity (int, default 2 * N): index batches handed out ahead of the consumer.
        timeout (float or None): seconds to wait for one batch; None waits forever.
        worker_init_fn (callable): ``worker_init_fn(worker_id)``, run in each worker after seeding.
        base_seed (int): worker k seeds ``random`` and ``np.random`` with base_seed + k; drawn from the
            parent's ``np.random`` when None. ``get_worker_info()`` gives (id, num_workers, seed, dataset).
        dataset: what ``get_worker_info().dataset`` is in the workers (their copy of it).
        stall (loops.StallWatch or None): warns when one wait for a batch gets long.

    A timeout while handing out indices (a worker too busy to take a big index list) is raised after
    the batches of the index lists already handed out.
    """

    def __init__(self, fetch_batch, index_batches, num_workers, capacity=None, timeout=None,
                 worker_init_fn=None, base_seed=None, dataset=None, stall=None):
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        self._capacity = 2 * num_workers if capacity is None else max(1, capacity)
        super().__init__(timeout, self._capacity, stall)
        self._index_iter = iter(index_batches)
        self._sent = self._received = 0
        self._exhausted = False
        self._dispatch_error = None
        base_seed = int(np.random.randint(0, 2**31 - 1)) if base_seed is None else int(base_seed)
        for wid in range(num_workers):
            info = WorkerInfo(wid, num_workers, base_seed + wid, dataset)
            name = f"minifluid-worker-{wid}"
            self._workers.start(_pool_worker_loop, name, fetch_batch, info, worker_init_fn, self._capacity)

    def _dispatch(self):
        handles = self._workers.children
        while not self._exhausted and self._sent - self._received < self._capacity:
            try:
                indices = tuple(next(self._index_iter))
            except StopIteration:
                self._exhausted = True
                return
            handle = handles[self._sent % len(handles)]
            try:
                self._workers.send(handle, _Task(indices, handle.reader.drain_freed()), self._timeout)
            except ReaderTimeoutError as e:  # raised once the batches handed out before it are delivered
                self._dispatch_error, self._exhausted = e, True
                return
            self._sent += 1

    def _next_index(self):
        return self._received

    def _next_batch(self):
        self._dispatch()
        if self._received == self._sent:
            if self._dispatch_error is not None:
                raise self._dispatch_error
            raise StopIteration
        handle = self._workers.children[self._received % len(self._workers.children)]
        batch = self._unpack_or_raise(handle, self._workers.receive((handle,), self._timeout)[1])
        self._received += 1
        self._dispatch()
        return batch


def open_batch_source(batches=None, fetch=None, index_batches=None, num_workers=0, thread=None, capacity=4,
                      timeout=None, stall=None, queue=None, feeder=ThreadSource, **worker_args):
    """The one place a loader's transport is chosen (NOTE [ Feeding: topology and shutdown ] in loops.py).

    Args:
        batches (callable): zero-arg batch reader (a stream), or None with ``fetch``.
        fetch (callable), index_batches (iterable): a map-style reader: ``fetch(indices)`` per index list.
        num_workers (int): > 0: forked worker processes (``ProcessPoolBatchSource`` for ``fetch``, else
            ``ProcessBatchSource``); 0: read in this process.
        thread (str or None): read in a feeder thread of this name (``feeder``, a ``ThreadSource``) into
            ``queue`` (default: a new BlockingQueue of ``capacity``); with workers, the thread relays
            their batches. None: the consumer reads the workers' pipes, or the batches, itself.
        capacity, timeout, stall, **worker_args: for the source chosen.

    Returns:
        An iterator of batches with ``close()`` (a plain generator when read inline).
    """
    if num_workers > 0 and fetch is not None:
        items = ProcessPoolBatchSource(fetch, index_batches, num_workers, capacity=capacity, timeout=timeout,
                                       stall=stall, **worker_args)
    elif num_workers > 0:
        items = ProcessBatchSource(batches, capacity, timeout, num_workers=num_workers, stall=stall, **worker_args)
    else:
        items = batches() if fetch is None else (fetch(indices) for indices in index_batches)
    if thread is None:
        return items
    return feeder(items, queue if queue is not None else BlockingQueue(capacity), thread,
                  None if num_workers > 0 else timeout, stall)
