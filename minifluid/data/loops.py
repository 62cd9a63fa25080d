"""Parts every feeding loop shares: argument meanings, the stall warning, and (see below) the loops.

The loaders (``data/loader.py``, ``data/dataloader.py``), the worker processes (``data/worker.py``) and
the reader decorators (``reader/parallel.py``) take these from here, so a timeout, a stall or an
end of data means the same thing everywhere.
"""
import _thread
import contextlib
import logging
import numbers
import signal
import sys
import threading
import time
import traceback
import warnings
import weakref

from .._blas import limit_for_background_threads
from ..errors import ConversionFailed, ExceptionWrapper, ReaderKilledError

__all__ = ["JOIN_TIMEOUT", "STALL_WARNING_S", "DataLoaderStallWarning", "Forwarded", "QueueFeeder", "StallWatch",
           "creation_site", "fill_queue", "interrupts_deferred", "wait_seconds"]

_log = logging.getLogger("minifluid.data")

JOIN_TIMEOUT = 5.0
"""Seconds ``QueueFeeder.close`` waits for a feeder thread that is in its own code (a push, closing its
source); a feeder busy in the user's code is not waited for."""

STALL_WARNING_S = 60.0
"""Seconds a consumer waits for one batch before a ``DataLoaderStallWarning`` names the loader (it goes on
waiting; pass ``timeout=`` to fail instead). Read at each wait, so tests may lower it."""


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
    close the queue at the end, kill it with the error on failure (errors cross as values: NOTE
    [ Errors cross boundaries as values ] in errors.py), and always close the source. ``busy[0]`` is
    True while the loop is in the source's (the user's) code."""
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


class QueueFeeder:
    """A daemon thread running ``fill_queue`` into ``queue`` (the producer of one epoch).

    ``close()`` closes this feeder's queue generation, so a push blocked on a full queue returns and
    the thread ends; it waits for the thread only while the thread is in its own code, never while it
    is in the user's (a slow batch, a stall): that code finishes in the background and its next push
    is refused (NOTE [ minifluid feeding: queues and shutdown ] in loader.py).
    """

    def __init__(self, source, queue, name, warn_reader_errors=False):
        self.queue, self.generation, self._busy = queue, queue.generation, [False]
        limit_for_background_threads()  # NOTE [ BLAS threads and background feeding ]
        self.thread = threading.Thread(target=fill_queue, name=name, daemon=True,
                                       args=(source, queue, self.generation, self._busy, warn_reader_errors))
        queue.watch_producer(self.thread.is_alive)
        self.thread.start()

    def close(self):
        """Stop pushing; wait (``JOIN_TIMEOUT`` at most) only for a thread not busy in user code."""
        self.queue.close(generation=self.generation)
        if not self._busy[0] and self.thread is not threading.current_thread():
            self.thread.join(JOIN_TIMEOUT)
