"""Keep freed array memory in the process instead of handing it back to the OS after every op.

NOTE [ Reusing freed memory ]
A training step allocates and frees the same large arrays every step (activations, their gradients,
a few MB each). glibc serves such sizes with mmap, or from the top of its heap which it trims back to
the OS once more than a dynamic threshold is free, so each step maps fresh pages and the kernel zero-fills
them on first touch: 40,000 page faults per ResNet-20 step at batch 128, and elementwise kernels that
touched new pages ran 3-4x slower than over reused memory (relu 65 ms -> 18 ms, batch_norm 120 ms -> 60 ms
per step on this 2-core machine). ``keep_freed_memory`` sets, once per process, glibc's mmap threshold to
its 32 MiB maximum and its trim threshold to 1 GiB, so freed arrays below 32 MiB go back to the heap and
are reused by the next step (8 page faults per step). Memory freed is then kept for reuse rather than
returned; the peak is unchanged. Nothing is changed when the user tuned malloc through the environment
(MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES, MINIFLUID_KEEP_MALLOC) or off glibc.
"""
import ctypes
import os

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_USER_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES", "MINIFLUID_KEEP_MALLOC")
_done = False


def keep_freed_memory():
    """Apply the NOTE's malloc settings once (a no-op after the first call, and off glibc)."""
    global _done
    if _done:
        return
    _done = True
    if any(os.environ.get(name) for name in _USER_ENV):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 1 << 30)
