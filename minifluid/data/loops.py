"""The feeding runtime's loop parts, written once: the end-of-data marker, the poll and join times,
the queue-filling thread, the process manager, the epoch iterator, and what a timeout, a stall and a
Ctrl-C in a cleanup mean. Used by ``DataLoader.from_generator`` (``data/loader.py``), the dataset
loader (``data/dataloader.py``), the shared-memory workers (``data/worker.py``) and the reader
decorators (``reader/parallel.py``).

NOTE [ Feeding: topology and shutdown ]
Every pipeline is a chain of producers and one consumer:

    reader (user code) --> feeder thread (ThreadSource) --push--> BlockingQueue --pop--> consumer
    reader (user code) --> worker process (worker.py) --pipe + shared memory--> consumer

* Producers never let an exception die in them: they wrap it (``ExceptionWrapper``, NOTE [ Errors
  cross boundaries as values ] in errors.py) and send it after the items made before it; a
  conversion failure travels as ``ConversionFailed``. The end of data is ``END_OF_DATA`` (one marker
  for queues, pipes and decorator threads alike; ``EndOfData(source)`` says which producer ended).
* Nothing blocks for longer than ``POLL_INTERVAL`` without re-checking whether it must stop or whether
  its producers are still alive (a worker checks its parent every ``WORKER_POLL_INTERVAL``), so a
  death is noticed and a stop obeyed within that time.
* Stopping is closing: the consumer closes the queue (a push blocked on a full queue returns, the
  feeder ends at its next push) or the worker source (its workers are stopped by ``stop_processes``:
  SIGTERM, SIGKILL after ``PROCESS_JOIN_TIMEOUT``). ``DataLoader.from_generator`` and the decorators never
  wait for user code: a feeder busy in the reader finishes in the background (``ThreadSource.close``
  joins only a feeder in its own code, for at most ``THREAD_JOIN_TIMEOUT``); the dataset loader's
  ``close()`` and ``break`` wait that long for a ``__getitem__`` in progress, so its thread is gone after. A waiting consumer is woken by the close: queue waits are bound to an
  epoch's generation and end with EOF when it is reset, worker waits end when ``stopping`` is set.
* An epoch ends (``EpochIterator``) at its end of data, on any error out of a step, by ``close()``, and
  when its iterator is dropped (a ``break``: a finalizer, in which a Ctrl-C is deferred to the end of
  the cleanup by ``interrupts_deferred`` and then delivered to the program).
* A consumer waiting ``STALL_WARNING_S`` for one batch warns once (``StallWatch``); ``timeout``
  (``wait_seconds``) turns a wait into ``ReaderTimeoutError``.
"""
import _thread
import contextlib
import logging
import numbers
import os
import signal
import sys
import threading
import time
import traceback
import warnings
import weakref
from dataclasses import dataclass
from multiprocessing import popen_fork
from multiprocessing.context import ForkProcess

from .._blas import limit_for_background_threads
from ..errors import (QUEUE_KILLED_MESSAGE, ConcurrentReadError, ConversionFailed, ExceptionWrapper, ReaderKilledError,
                      ReaderTimeoutError)

__all__ = ["END_OF_DATA", "POLL_INTERVAL", "PROCESS_JOIN_TIMEOUT", "STALL_WARNING_S", "THREAD_JOIN_TIMEOUT",
           "UNKNOWN_EXIT_STATUS", "WORKER_POLL_INTERVAL", "DataLoaderStallWarning", "EndOfData", "EpochIterator",
           "Forwarded", "StallWatch", "ThreadSource", "creation_site", "describe_exit", "fill_queue",
           "interrupts_deferred", "start_process", "stop_processes", "wait_seconds"]

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
        getattr(source, "close", lambda: None)()


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
            raise ReaderTimeoutError(f"{QUEUE_KILLED_MESSAGE}\n  No batch from thread {self.name} within "
                                     f"timeout={self._timeout} s; pass a larger `timeout` (None or 0 waits "
                                     "forever) if the reader is just slow.") from None
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


def start_process(target, args, name):
    """Fork and start a daemonic child running ``target(*args)``; returns the started process."""
    process = _Process(target=target, args=args, name=name, daemon=True)
    process.start()
    return process


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


def stop_processes(processes):
    """Stop and release ``processes`` (started by ``start_process``): SIGTERM, a join of at most
    ``PROCESS_JOIN_TIMEOUT`` each, SIGKILL for what is left, then their fds. A
    KeyboardInterrupt meanwhile is raised again once everything is released."""
    interrupted = False
    for process in processes:
        try:
            if process.exitcode is None:
                process.terminate()
        except KeyboardInterrupt:
            interrupted = True
    for process in processes:
        while True:
            try:
                process.join(PROCESS_JOIN_TIMEOUT)
                if process.exitcode is None:
                    process.kill()
                    process.join()
                process.close()
                break
            except KeyboardInterrupt:
                interrupted = True
                _kill_quietly(process)
    if interrupted:
        raise KeyboardInterrupt


def _kill_quietly(process):
    try:
        if process.exitcode is None:
            process.kill()
    except (KeyboardInterrupt, ValueError):
        pass

