"""Parts every feeding loop shares: argument meanings, the stall warning, and (see below) the loops.

The loaders (``data/loader.py``, ``data/dataloader.py``), the worker processes (``data/worker.py``) and
the reader decorators (``reader/parallel.py``) take these from here, so a timeout, a stall or an
end of data means the same thing everywhere.
"""
import numbers
import time
import traceback
import warnings

__all__ = ["STALL_WARNING_S", "DataLoaderStallWarning", "StallWatch", "creation_site", "wait_seconds"]

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
    """

    __slots__ = ("describe", "batches")

    def __init__(self, describe):
        self.describe = describe
        self.batches = 0  # batches taken so far (the consumer counts them; for the message)

    @staticmethod
    def deadline(start=None):
        """When a wait that starts now (or at ``start``) should warn: a ``time.monotonic()`` value."""
        return (time.monotonic() if start is None else start) + STALL_WARNING_S

    def warn(self, waited):
        warnings.warn(f"{self.describe()} has waited {waited:.0f} s for its next batch ({self.batches} read so "
                      "far); its reader may be stuck. It keeps waiting (timeout=None waits forever); pass "
                      "timeout=SECONDS to get an error instead.", DataLoaderStallWarning, stacklevel=2)
