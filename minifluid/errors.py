"""User-visible errors, and the one way errors cross thread and process boundaries.

NOTE [ Errors cross boundaries as values ]
A background loop (producer thread, worker process, prefetch thread, decorator
thread) never lets an exception die inside itself. It catches everything, wraps
it in an ``ExceptionWrapper`` (type, message, formatted traceback, where it
happened) and pushes the wrapper to the consumer. The consumer calls
``wrapper.reraise()``: the user gets fluid's ``SystemError``-compatible
``ReaderKilledError`` whose message keeps fluid's wording *and* the original
type, message and producer-side traceback, with the original exception (or a
rebuilt copy, when it crossed a process boundary) as ``__cause__``.
"""
import pickle
import sys
import traceback

__all__ = ["EOFException", "ReaderKilledError", "ExceptionWrapper", "WorkerDiedError", "FeedConversionError",
           "ReaderTimeoutError", "LoaderStateError", "ConcurrentReadError", "FEEDING_ERRORS", "ConversionFailed",
           "ComposeNotAligned", "CUDAUnavailableError", "QUEUE_KILLED_MESSAGE", "CONCURRENT_READ_MESSAGE",
           "check_type"]

QUEUE_KILLED_MESSAGE = "Blocking queue is killed because the data reader raises an exception."


class EOFException(Exception):
    """Raised by ``Executor.run`` when a non-iterable reader has no next data (fluid's core.EOFException)."""

    def __init__(self, message="There is no next data."):
        super().__init__(message)


class ReaderKilledError(SystemError, RuntimeError):
    """The data reader failed. Paddle 2.0 raised a bare ``SystemError`` with QUEUE_KILLED_MESSAGE here and
    fluid 1.8 a ``core.EnforceNotMet``, which minifluid's core spells ``RuntimeError``: this is both, so
    ``except SystemError`` and ``except fluid.core.EnforceNotMet`` catch it."""


class WorkerDiedError(ReaderKilledError):
    """A worker process died without reporting (killed by a signal, segfault, os._exit)."""


class ReaderTimeoutError(ReaderKilledError):
    """No batch arrived within the loader's ``timeout``; a SystemError like fluid's queue-killed error."""


class FeedConversionError(ReaderKilledError):
    """The reader ran fine, but what it gave could not be converted to the feed variables' tensors;
    ``__cause__`` (a TypeError or ValueError) names the variable, the sample or field, what was
    expected and what came."""


class LoaderStateError(RuntimeError):
    """The loader cannot give a batch in its state now (not started; being read by another thread)."""


CONCURRENT_READ_MESSAGE = (
    "This DataLoader is already being read by thread {!r}: a loader hands out one epoch's batches to one reader at "
    "a time (two threads would each get an unpredictable share, out of order). Give each thread its own "
    "DataLoader, or read in one thread and hand the batches on.")


class ConcurrentReadError(LoaderStateError):
    """A second thread tried to read a loader while another one reads it (``CONCURRENT_READ_MESSAGE``)."""


FEEDING_ERRORS = (EOFException, ReaderKilledError, LoaderStateError)
"""What a loader raises through ``exe.run`` as it is: the executor adds no operator note to these (the
``read`` op is not what failed)."""


class ConversionFailed(Exception):
    """Carries a conversion error (``error``) of batch ``batch_index`` out of a feeding loop, so that
    ``ExceptionWrapper`` tells it from the reader's own failure. Never reaches the user."""

    def __init__(self, error, batch_index):
        super().__init__(error, batch_index)
        self.error, self.batch_index = error, batch_index


class ComposeNotAligned(ValueError):
    """``reader.compose`` got readers of different lengths."""


class CUDAUnavailableError(RuntimeError, AssertionError):
    """A GPU was asked for and none can be used; the message names why (CuPy missing, no device).

    fluid asserted "Not compiled with CUDA" here, so ``except AssertionError`` keeps catching it.
    """


class _RemoteError(Exception):
    """Stand-in for an exception whose class could not be rebuilt in this process."""


class ExceptionWrapper:
    """Captures an exception where it happens so the consumer can re-raise it with context.

    Args:
        exc_info: a ``sys.exc_info()`` triple; defaults to the exception being handled. A
            ``ConversionFailed`` is unwrapped: the consumer then gets a ``FeedConversionError``.
        where: short description of the producer ("thread minifluid-producer", "worker pid 123").
    """

    def __init__(self, exc_info=None, where="background thread"):
        exc_type, exc, tb = exc_info or sys.exc_info()
        self.batch_index = None  # set for a conversion error: the batch that could not be converted
        if isinstance(exc, ConversionFailed):  # our own frames only: the message says all there is
            self.batch_index, exc = exc.batch_index, exc.error.with_traceback(None)
            exc_type, tb = type(exc), None
        self.exc_type = exc_type
        self.message = str(exc)
        self.where = where
        self.traceback_text = "".join(traceback.format_exception(exc_type, exc, tb))
        self.exc = exc

    def __getstate__(self):
        """Pickle the exception only if it survives the trip; otherwise keep type name and text."""
        state = dict(self.__dict__)
        try:
            pickle.loads(pickle.dumps(self.exc))
        except Exception:
            state["exc"] = None
        try:
            pickle.loads(pickle.dumps(self.exc_type))
        except Exception:
            state["exc_type"] = None
        state["type_name"] = getattr(self.exc_type, "__qualname__", "Exception") if self.exc_type else \
            getattr(type(self.exc), "__qualname__", "Exception")
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    @property
    def type_name(self):
        return self.__dict__.get("type_name") or self.exc_type.__qualname__

    def cause(self):
        """The original exception, or a rebuilt one of the same type when it crossed a process."""
        if self.exc is not None:
            return self.exc
        exc_type = self.exc_type if isinstance(self.exc_type, type) else _RemoteError
        try:
            return exc_type(self.message)
        except Exception:
            return _RemoteError(f"{self.type_name}: {self.message}")

    def error(self, error_cls=ReaderKilledError, header=QUEUE_KILLED_MESSAGE):
        """Build the consumer-side exception (not raised), chained to the original. The producer's
        traceback is printed once, in this message: the cause is attached without its own."""
        if self.batch_index is not None and error_cls is ReaderKilledError:
            err = FeedConversionError(
                f"The data reader's batch {self.batch_index} (counting from 0) could not be converted to the "
                f"feed variables' tensors in {self.where}:\n  {self.type_name}: {self.message}")
        else:
            err = error_cls(f"{header}\n  Original error in {self.where}: {self.type_name}: {self.message}\n"
                            f"  Traceback from the producer:\n{_indent(self.traceback_text)}")
        err.__cause__ = self.cause().with_traceback(None)
        return err

    def reraise(self, error_cls=ReaderKilledError, header=QUEUE_KILLED_MESSAGE):
        raise self.error(error_cls, header)


def _indent(text, prefix="    "):
    return "".join(prefix + line for line in text.splitlines(True))


def check_type(value, name, types, api):
    """fluid's argument check: ``value`` must be one of ``types`` (TypeError naming the argument otherwise)."""
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise TypeError(f"The type of '{name}' in {api} must be {tuple(t.__name__ for t in types)}, but received "
                        f"{type(value).__name__}. ")
