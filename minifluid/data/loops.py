"""The feeding runtime's loop parts, written once: the end-of-data marker, the poll and join times,
the queue-filling thread, the process manager (``ProcessGroup``: fork, wait with death detection,
stop), the epoch iterator, and what a timeout, a death, a stall and a Ctrl-C in a cleanup mean. Used
by ``DataLoader.from_generator`` (``data/loader.py``), the dataset loader (``data/dataloader.py``),
the shared-memory workers (``data/worker.py``) and the reader decorators (``reader/parallel.py``).

NOTE [ Feeding: topology and shutdown ]
Every pipeline is a chain of producers and one consumer:

    reader (user code) --> feeder thread (ThreadSource) --push--> BlockingQueue --pop--> consumer
    reader (user code) --> worker process (ProcessGroup child) --pipe + shared memory--> consumer

Transport is chosen in one place, ``worker.open_batch_source`` (both loaders call it): read inline,
in a feeder thread, in worker processes, or workers relayed by a thread (CUDA places).

* Producers never let an exception die in them: they wrap it (``ExceptionWrapper``, NOTE [ Errors
  cross boundaries as values ] in errors.py) and send it after the items made before it; a
  conversion failure travels as ``ConversionFailed``. The end of data is ``END_OF_DATA`` (one marker
  for queues, pipes and decorator threads alike; ``EndOfData(source)`` says which producer ended).
* Nothing blocks for longer than ``POLL_INTERVAL`` without re-checking whether it must stop or whether
  its producers are still alive (a worker checks its parent every ``WORKER_POLL_INTERVAL``), so a
  death is noticed and a stop obeyed within that time. A death is told by one sentence
  (``Child.died``), a timeout by another (``timed_out``), whoever meets them.
* Stopping is closing: the consumer closes the queue (a push blocked on a full queue returns, the
  feeder ends at its next push) or the worker source (``ProcessGroup.stop``: SIGTERM, SIGKILL after
  ``PROCESS_JOIN_TIMEOUT``, finished even when a signal handler raises in the middle of it).
  ``DataLoader.from_generator`` and the decorators never wait for user code: a feeder busy in the
  reader finishes in the background (``ThreadSource.close`` joins only a feeder in its own code, for
  at most ``THREAD_JOIN_TIMEOUT``); the dataset loader's ``close()`` and ``break`` wait that long for
  a ``__getitem__`` in progress, so its thread is gone after. A waiting consumer is woken by the
  close: queue waits are bound to an epoch's generation and end with EOF when it is reset, worker
  waits end when ``stopping`` is set.
* An epoch ends (``EpochIterator``) at its end of data, on any error out of a step, by ``close()``, and
  when its iterator is dropped (a ``break``: a finalizer, in which a Ctrl-C is deferred to the end of
  the cleanup by ``interrupts_deferred`` and then delivered to the program).
* A consumer waiting ``STALL_WARNING_S`` for one batch warns once (``StallWatch``); ``timeout``
  (``wait_seconds``) turns a wait into ``ReaderTimeoutError``.

The three batch walks of ``DataLoader.from_generator``: where one batch goes, from the user's
generator to the kernels. Each side (a thread, a process) visits each module once; the two sides
meet in one module (queue.py, or shm.py over a pipe).
(a) Iterable, ``for data in loader(): exe.run(feed=data)`` (producer thread, then the consumer):
    1. ``_BatchGeneratorBatches._batches`` @ data/adapters.py: the user's batch, checked and converted
       (``_SampleListBatches._batches`` for samples: batched and stacked there)
    2. ``fill_queue`` @ data/loops.py: the ``minifluid-producer`` thread (``ThreadSource``) pushes it
    3. ``BlockingQueue.push`` -> ``BlockingQueue.take_ready`` / ``pop`` @ data/queue.py: hand-over,
       ``wake_level`` batches per wake-up
    4. ``ReadAheadStage.get`` @ data/prefetch.py: the CPU double buffer (``CudaPrefetchStage`` on GPU)
    5. ``FeedReader.read_next`` @ data/feed_reader.py: counted for ``bottleneck()``
    6. ``GeneratorLoader._next_step`` @ data/loader.py: LoDTensors per place, the feed dicts
    7. ``EpochIterator.__next__`` @ data/loops.py: returned to the ``for`` loop
    8. ``feed_into`` @ executor/feed_fetch.py (``Executor.run`` hands the feed on at once):
       ``FeedSpec.validate`` (the one feed check), then into the scope
    9. ``Executor._execute`` @ executor/executor.py: the plan's kernels read it
(b) Non-iterable, ``loader.start(); exe.run()`` and the program's ``read`` op: 1-3 as in (a), then
    4. ``ReadAheadStage.get`` @ data/prefetch.py
    5. ``FeedReader.read_next`` @ data/feed_reader.py: need_check_feed fields checked by
       ``FeedSpec.validate`` @ executor/feed_fetch.py (the same check as (a) 8, fluid's read-op words)
    6. ``_read_forward`` @ ops/io.py: the ``read`` kernel returns the fields (LoD with them)
    7. ``Executor._execute`` @ executor/executor.py: the read op's outputs, then the other kernels
(c) ``use_multiprocess=True`` on CPU places: worker process -> shared memory -> consumer:
    worker process:
    1. ``_BatchGeneratorBatches._batches`` @ data/adapters.py (``deferred``: fields left for the slot)
    2. ``_worker_loop`` @ data/worker.py: flow control (at most ``capacity`` batches un-taken)
    3. ``SlotWriter.pack`` @ data/shm.py: the fields written into a shared-memory slot; its
       ``BatchMeta`` goes down the worker's pipe
    consumer (the thread that reads):
    4. ``SlotReader.unpack`` @ data/shm.py: numpy views onto the slot, from the ``BatchMeta`` that
       ``ProcessGroup.receive`` @ data/loops.py took from the pipe (death, timeout, stall, stop
       watched) for ``ProcessBatchSource._next_batch`` @ data/worker.py
    5. ``WorkerStage.get`` @ data/prefetch.py: the stage is the pipe (no thread, no queue)
    6. ``FeedReader.read_next`` @ data/feed_reader.py
    7. then (a) 6-9 (iterable) or (b) 6-7 (the ``read`` op)
    On CUDA places a ``minifluid-producer`` thread relays 4's batches into a queue: (a) 2-9 follow.
"""
import _thread
import contextlib
import itertools
import logging
import numbers
import multiprocessing
import multiprocessing.connection
import os
import select
import signal
import sys
import threading
import time
import traceback
import warnings
import weakref
from collections import deque
from dataclasses import dataclass
from multiprocessing import popen_fork
from multiprocessing.context import ForkProcess

from ..ops.blas import limit_for_background_threads
from ..errors import (QUEUE_KILLED_MESSAGE, ConcurrentReadError, ConversionFailed, ExceptionWrapper, ReaderKilledError,
                      ReaderTimeoutError, WorkerDiedError)

__all__ = ["END_OF_DATA", "POLL_INTERVAL", "PROCESS_JOIN_TIMEOUT", "STALL_WARNING_S", "THREAD_JOIN_TIMEOUT",
           "UNKNOWN_EXIT_STATUS", "WORKER_POLL_INTERVAL", "Child", "DataLoaderStallWarning", "EndOfData",
           "EpochIterator", "Forwarded", "ProcessGroup", "Readable", "StallWatch", "Stopped", "ThreadSource",
           "close_iterator", "creation_site", "describe_exit", "fill_queue", "interrupts_deferred", "stop_processes",
           "timed_out", "wait_seconds"]

_log = logging.getLogger("minifluid.data")

POLL_INTERVAL = 0.05
"""Seconds any waiter (consumer, feeder, worker, decorator thread) blocks before re-checking whether it
must stop or whether its producers are still alive; it bounds how late a stop or a death is noticed."""

WORKER_POLL_INTERVAL = 0.2
"""Seconds a blocked worker process waits on its pipe before checking that its parent still exists."""

THREAD_JOIN_TIMEOUT = 5.0
"""Seconds ``ThreadSource.close`` waits for a feeder thread in its own code (a push, closing its source);
a feeder busy in the user's code is not waited for."""

PROCESS_JOIN_TIMEOUT = 1.0
"""Seconds to wait for a terminated (SIGTERM) child process before killing it (SIGKILL)."""

STALL_WARNING_S = 60.0
"""Seconds a consumer waits for one batch before a ``DataLoaderStallWarning`` names the loader (it goes on
waiting; pass ``timeout=`` to fail instead). Read at each wait, so tests may lower it."""

UNKNOWN_EXIT_STATUS = 256
"""The exit code of a child that ended but whose status was collected elsewhere (SIGCHLD ignored);
no real exit code (0-255) or signal (negative) has this value."""

SIGNAL_HINTS = {
    "SIGKILL": " SIGKILL usually means the out-of-memory killer (see `dmesg`) or an external kill.",
    "SIGBUS": " SIGBUS usually means /dev/shm is full: run docker with --shm-size=8g, or use "
              "use_multiprocess=False.",
    "SIGSEGV": " SIGSEGV means a crash in native code called by the reader.",
}


@dataclass(frozen=True)
class EndOfData:
    """No more items from a producer (a queue closed and drained, a worker, a decorator thread);
    ``source`` says which one where several feed one consumer. Pickles, to cross a pipe."""
    source: int = 0


END_OF_DATA = EndOfData()


class DataLoaderStallWarning(RuntimeWarning):
    """A loader has waited ``STALL_WARNING_S`` seconds for its next batch (its reader may be stuck)."""


def wait_seconds(timeout):
    """The one meaning of a loader's ``timeout``: seconds to wait for one batch; ``None`` or ``0`` wait
    forever (paddle's ``DataLoader(timeout=0)``). Returns None or the positive number.

    Raises:
        TypeError: not a number. AssertionError: negative (fluid's DataLoader checks it so; raised
        explicitly, so also under ``python -O``).
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"timeout must be a number of seconds (or None to wait forever), but received "
                        f"{timeout!r} ({type(timeout).__name__})")
    if timeout < 0:
        raise AssertionError(f"timeout should be a non-negative value (0 or None waits forever), but received "
                             f"{timeout}")
    return timeout if timeout > 0 else None


def timed_out(what, timeout):
    """The one timeout error: no batch from ``what`` (a thread or worker, named) within ``timeout`` s."""
    return ReaderTimeoutError(
        f"{QUEUE_KILLED_MESSAGE}\n  No batch from {what} within timeout={timeout} s. If the reader is just slow "
        "(large samples, slow disk, heavy start-up), pass a larger `timeout` (or timeout=None to wait forever).")


def creation_site():
    """``file:line`` of the user code that is creating a loader (the first frame outside minifluid)."""
    for frame in reversed(traceback.extract_stack(limit=12)[:-1]):
        if "/minifluid/" not in frame.filename.replace("\\", "/"):
            return f"{frame.filename}:{frame.lineno}"
    return "unknown"


class StallWatch:
    """Warns once per wait when a consumer has waited ``STALL_WARNING_S`` seconds for a batch.

    Args:
        describe (callable): returns the loader's description for the message (called only to warn).
            A bound method is held weakly: worker shutdown finalizers hold the watch, and must not keep
            the loader alive.
    """

    __slots__ = ("_describe",)

    def __init__(self, describe):
        self._describe = weakref.WeakMethod(describe) if hasattr(describe, "__self__") else lambda: describe

    def describe(self):
        describe = self._describe()
        return "a DataLoader" if describe is None else describe()

    @staticmethod
    def deadline(start=None):
        """When a wait that starts now (or at ``start``) should warn: a ``time.monotonic()`` value."""
        return (time.monotonic() if start is None else start) + STALL_WARNING_S

    def warn(self, waited):
        """Warn now (``waited`` seconds into the wait); returns None, the next deadline: once per wait."""
        warnings.warn(f"{self.describe()} has waited {waited:.1f} s for its next batch; its reader may be stuck. "
                      "It keeps waiting (timeout=None waits forever); pass timeout=SECONDS to get an error instead.",
                      DataLoaderStallWarning, stacklevel=2)
        return None


@contextlib.contextmanager
def interrupts_deferred():
    """Run a cleanup to its end even when Ctrl-C comes in the middle of it, then deliver the Ctrl-C.

    A cleanup run by a finalizer (a ``break`` drops the epoch's iterator) cannot raise: Python prints
    and drops what a finalizer raises, so a KeyboardInterrupt there would be lost and the cleanup left
    half done. In the main thread (where SIGINT goes) the handler is swapped for one that only records
    the signal; afterwards the signal is delivered again once the main thread has left the finalizer's
    frames (``_deliver_interrupt``), so the program's loop sees it. Elsewhere this does nothing.
    """
    handler = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(handler):
        yield
        return
    received = []
    signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        if received:
            _thread.start_new_thread(_deliver_interrupt, (threading.main_thread().ident, _cleanup_frames()))


_WEAKREF_FILE = sys.modules["weakref"].__file__


def _cleanup_frames():
    """The frames to leave before a deferred interrupt may be raised: from here up to the finalizer's
    ``weakref.finalize.__call__`` if there is one, else up to the function using ``interrupts_deferred``."""
    frames, frame = [], sys._getframe(1)
    while frame is not None:
        frames.append(frame)
        if frame.f_code.co_filename == _WEAKREF_FILE:
            return frames
        frame = frame.f_back
    return frames[:3]  # this generator's frame, contextlib's __exit__, the caller


def _deliver_interrupt(main_ident, frames):
    """Raise SIGINT's handler in the main thread once it runs none of ``frames`` (a finalizer's)."""
    while any(sys._current_frames().get(main_ident) is frame for frame in frames):
        time.sleep(0.001)  # a few bytecodes' time: the finalizer is returning
    _thread.interrupt_main()


class Forwarded:
    """Kill reason for an error that already is a consumer-side ReaderKilledError (from a worker)."""

    def __init__(self, error):
        self._error = error

    def error(self, error_cls=None, header=None):
        err = type(self._error)(*self._error.args)
        err.__cause__ = self._error.__cause__
        return err


def close_iterator(iterator):
    """Close ``iterator`` if it can be closed (a generator: its ``finally`` blocks run now)."""
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def fill_queue(source, queue, generation, busy, warn_reader_errors):
    """The queue-filling loop of a feeder thread: push every item of ``source`` with ``generation``,
    close the queue at the end, kill it with the error on failure, and always close the source.
    ``busy[0]`` is True while the loop is in the source's (the user's) code."""
    try:
        items = iter(source)
        while True:
            busy[0] = True
            try:
                item = next(items)
            except StopIteration:
                break
            finally:
                busy[0] = False
            if not queue.push(item, generation=generation):
                return  # the consumer closed (or reset) the queue: stop
        queue.close(generation=generation)
    except ReaderKilledError as e:  # a worker's error, relayed: already the consumer's error
        queue.kill(Forwarded(e), generation=generation)
    except BaseException as e:
        if warn_reader_errors and not isinstance(e, ConversionFailed):  # fluid's line, for reader errors
            _log.warning("Your reader has raised an exception! %s: %s", type(e).__name__, e)
        queue.kill(ExceptionWrapper(where=f"thread {threading.current_thread().name}"), generation=generation)
    finally:
        close_iterator(source)


class ThreadSource:
    """A daemon feeder thread running ``fill_queue`` from ``source`` into ``queue`` (a BlockingQueue),
    read by iterating this object (or through the queue by a loader's stage).

    Args:
        source (iterable): the items (batches, samples); user code runs while it is iterated.
        queue (BlockingQueue): where they go; ``close()`` closes this feeder's generation of it.
        name (str): the thread's name. timeout (float or None): per ``next()``; ``stall``: a StallWatch.
        warn_reader_errors (bool): log fluid's "Your reader has raised an exception!" line.
    """

    def __init__(self, source, queue, name, timeout=None, stall=None, warn_reader_errors=False):
        self.source, self.queue, self.generation, self._busy = source, queue, queue.generation, [False]
        self.name, self._timeout, self._stall = name, timeout, stall
        limit_for_background_threads()  # NOTE [ BLAS threads and background feeding ]
        self.thread = threading.Thread(target=fill_queue, name=name, daemon=True,
                                       args=(source, queue, self.generation, self._busy, warn_reader_errors))
        queue.watch_producer(self.thread.is_alive)
        self.thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        try:
            item = self.queue.pop(self._timeout, self.generation, self._stall)
        except TimeoutError:  # the queue's QueueTimeout
            self.close()
            raise timed_out(f"thread {self.name}", self._timeout) from None
        except BaseException:  # ReaderKilledError (chained to the thread's error), Ctrl-C
            self.close()
            raise
        if item is END_OF_DATA:
            self.close()
            raise StopIteration
        return item

    def close(self, wait_for_reader=False):
        """Stop pushing; wait (``THREAD_JOIN_TIMEOUT`` at most) for the thread while it is in its own code,
        or also while it is in the reader's with ``wait_for_reader``."""
        self.queue.close(generation=self.generation)
        if (wait_for_reader or not self._busy[0]) and self.thread is not threading.current_thread():
            self.thread.join(THREAD_JOIN_TIMEOUT)


class EpochIterator:
    """What a loader's ``iter()`` returns: ``next()`` is ``self._step()``. The epoch ends (``finish``,
    run once) at its end of data, on any error out of a step, by ``close()``, and when the iterator is
    dropped (a ``break``; NOTE above). ``finish`` must not refer to the iterator."""

    def __init__(self, finish):
        self._closer = weakref.finalize(self, _finish_epoch, finish)
        self._closer.atexit = False  # at exit, the loaders' own hooks stop what is still running

    def __iter__(self):
        return self

    def __next__(self):
        if not self._closer.alive:
            raise StopIteration
        try:
            return self._step()
        except ConcurrentReadError:  # another thread's read: the epoch goes on
            raise
        except BaseException:
            self.close()
            raise

    def _step(self):
        raise NotImplementedError

    def close(self):
        """End the epoch now (its thread or workers stop); safe to call again."""
        self._closer()


def _finish_epoch(finish):
    with interrupts_deferred():
        finish()


# --- the process manager ----------------------------------------------------------------------------
class _Popen(popen_fork.Popen):
    def poll(self, flag=os.WNOHANG):
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flag)
            except ChildProcessError:  # already reaped, by the kernel (SIGCHLD ignored) or by other code
                self.returncode = UNKNOWN_EXIT_STATUS
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class _Process(ForkProcess):
    @staticmethod
    def _Popen(process_obj):
        return _Popen(process_obj)


def describe_exit(process):
    """How ``process`` ended, as the end of a sentence: "was killed by signal SIGKILL (exit code -9).
    <hint>", "exited with code 1 without reporting an error.", that its status is unknown, or that it
    is still running."""
    code = process.exitcode
    if code is None:
        return "closed its pipe but is still running."
    if code == UNKNOWN_EXIT_STATUS:
        return ("ended without reporting an error; its exit status is unknown (SIGCHLD is ignored in this "
                "process, so the system discarded it).")
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by signal {name} (exit code {code}).{SIGNAL_HINTS.get(name, '')}"
    return f"exited with code {code} without reporting an error."


class Readable:
    """``conn.poll(timeout)`` for one pipe end without building a selector per call (2 us -> 0.2 us;
    the pipes are polled on every batch). Only for an open connection."""

    __slots__ = ("_poller",)

    def __init__(self, conn):
        self._poller = select.poll()
        self._poller.register(conn.fileno(), select.POLLIN)

    def __call__(self, timeout=0.0):
        """True when a message (or EOF) is waiting; waits up to ``timeout`` s (None: forever)."""
        return bool(self._poller.poll(None if timeout is None else timeout * 1000.0))


class Stopped(Exception):
    """Raised in a consumer's wait once ``ProcessGroup.stopping`` was set (a close() from another thread)."""


class Child:
    """One forked child of a ``ProcessGroup`` and the parent's end of its pipe (``conn``)."""

    __slots__ = ("process", "conn", "readable", "name", "pid", "role", "inbox")

    def __init__(self, conn, name, role):
        self.process, self.conn, self.name, self.pid, self.role = None, conn, name, None, role
        self.readable = Readable(conn)
        self.inbox = deque()  # messages read ahead (data/worker.py: while a send waits for room)

    def gone(self):
        """Ended, with nothing left in its pipe: it will send nothing more."""
        return self.process.exitcode is not None and not self.readable(0)

    def died(self):
        """The one worker-death error: ``WorkerDiedError`` naming the child, its pid and how it ended
        (its ``detail`` attribute is that sentence alone). Reaps the child first, so the exit is known."""
        self.process.join(PROCESS_JOIN_TIMEOUT)
        detail = f"{self.role} {self.name} (pid {self.pid}) {describe_exit(self.process)}"
        error = WorkerDiedError(f"{QUEUE_KILLED_MESSAGE}\n  {detail}")
        error.detail = detail
        return error


class ProcessGroup:
    """The one process manager (NOTE [ Feeding: topology and shutdown ]): forks daemonic children,
    each with a pipe to this process, waits for their messages while watching for deaths, a timeout,
    a long stall and ``stopping``, and stops them all (``stop``). Used by the shared-memory workers
    (data/worker.py) and ``multiprocess_reader`` (reader/parallel.py). Never references its user, so
    a finalizer may hold it.

    Args:
        role (str): how an error names a child ("DataLoader worker" -> "DataLoader worker NAME (pid N)").
        stall (StallWatch or None): warns when one wait gets long.
    """

    child_class = Child

    def __init__(self, role, stall=None):
        self.role, self.stall = role, stall
        self.stopping = False  # set by a close() from another thread; the consumer's waits end (Stopped)
        self.owner_pid = os.getpid()
        self.children = []

    def start(self, target, name, args, duplex=True):
        """Fork a child running ``target(conn, inherited, *args)``: ``conn`` its end of a new pipe
        (write-only unless ``duplex``), ``inherited`` the parent's pipe ends it must close (so that the
        parent's death reads as EOF). Returns its ``Child``."""
        # Before the fork: OpenBLAS shuts its thread pool down when we fork, and capping it afterwards
        # would start a fresh pool whose threads spin for ~0.1 s of CPU beside the busy child.
        limit_for_background_threads()  # NOTE [ BLAS threads and background feeding ]
        parent_conn, child_conn = multiprocessing.Pipe(duplex)
        inherited = [c.conn for c in self.children] + [parent_conn]
        child = self.child_class(parent_conn, name, self.role)
        self.children.append(child)
        try:
            child.process = _Process(target=target, args=(child_conn, inherited, *args), name=name, daemon=True)
            child.process.start()
        finally:  # only the child holds its end, so the child's death reads as EOF here
            child_conn.close()
        child.pid = child.process.pid
        return child

    def receive(self, waited, timeout=None):
        """``(child, message)``: the next message of one of ``waited`` (several: whichever is ready
        first). Every ``POLL_INTERVAL`` it checks ``stopping`` (``Stopped``), the death of a waited
        child (gone: ``WorkerDiedError``) or of any other with a non-zero exit code, the stall warning
        and ``timeout`` (``ReaderTimeoutError``)."""
        for child in waited:
            if child.inbox:
                return child, child.inbox.popleft()
        start = time.monotonic()
        deadline = None if timeout is None else start + timeout
        warn_at = None if self.stall is None else self.stall.deadline(start)
        while True:
            wait = POLL_INTERVAL
            if deadline is not None:
                wait = max(0.0, min(POLL_INTERVAL, deadline - time.monotonic()))
            child = _first_ready(waited, wait)
            if child is not None:
                try:
                    return child, child.conn.recv()
                except (EOFError, OSError):  # the only writer is gone (OSError: it died in mid-message)
                    if self.stopping:
                        raise Stopped from None
                    raise child.died() from None
            if self.stopping:
                raise Stopped
            for other in self.children:  # a waited child gone, or another one killed meanwhile
                if other.process.exitcode is not None and (other in waited and not other.readable(0)
                                                           or other not in waited and other.process.exitcode != 0):
                    raise other.died()
            if warn_at is not None and time.monotonic() >= warn_at:
                warn_at = self.stall.warn(time.monotonic() - start)
            if deadline is not None and time.monotonic() >= deadline:
                raise timed_out(f"worker {waited[0].name} (pid {waited[0].pid})", timeout)

    def stop(self):
        """Stop every child (``stop_processes``), then ``release`` what they used; a no-op in a forked copy."""
        if os.getpid() != self.owner_pid:
            return
        try:
            stop_processes([c.process for c in self.children if c.pid is not None])
        finally:
            self.release()

    def release(self):
        """Close the pipes (a subclass releases more: data/worker.py's shared memory)."""
        for child in self.children:
            child.conn.close()


def _first_ready(waited, wait):
    """The first of ``waited`` with a message (or EOF) ready within ``wait`` seconds, or None."""
    if len(waited) == 1:
        return waited[0] if waited[0].readable(wait) else None
    ready = multiprocessing.connection.wait([c.conn for c in waited], wait)
    return next((c for c in waited if c.conn in ready), None)


def stop_processes(processes):
    """Stop and release ``processes``: SIGTERM, a join of at most ``PROCESS_JOIN_TIMEOUT`` each, SIGKILL
    for what is left, then their fds. An exception meanwhile (a Ctrl-C, or what a signal handler raises:
    a test's timeout) does not cut the stop short: the first is raised again once all are released."""
    pending = []
    for process in processes:
        try:
            if process.exitcode is None:
                process.terminate()
        except BaseException as e:
            pending.append(e)
    for process in processes:
        for attempt in itertools.count():
            try:
                process.join(PROCESS_JOIN_TIMEOUT)
                if process.exitcode is None:
                    process.kill()
                    process.join()
                process.close()
                break
            except BaseException as e:  # wait again after an interruption; an error that repeats: give up
                pending.append(e)
                _kill_quietly(process)
                if attempt and not isinstance(e, KeyboardInterrupt):
                    break
    if pending:
        raise pending[0]


def _kill_quietly(process):
    try:
        if process.exitcode is None:
            process.kill()
    except BaseException:  # closed already, or interrupted again: the wait that follows decides
        pass
