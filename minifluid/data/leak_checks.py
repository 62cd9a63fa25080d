"""Leak checks for tests of the feeding runtime: threads left alive, shared-memory segments left in
/dev/shm, worker processes not gone. Kept apart from the op checker (``minifluid.testing``), which has
no business importing the shared-memory transport."""
import gc
import os
import threading
import time

from .shm import SHM_DIR

__all__ = ["live_threads", "process_gone", "shm_segments"]


def live_threads(name, timeout=3.0):
    """Threads called ``name`` still alive after up to ``timeout`` seconds (leak checks in tests)."""
    gc.collect()
    deadline = time.monotonic() + timeout
    while True:
        alive = [t for t in threading.enumerate() if t.name == name]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.01)


def shm_segments(pid=None):
    """minifluid's shared-memory segments (``/dev/shm/mf_<pid>_*``) of ``pid`` (default: this process)."""
    prefix = f"mf_{os.getpid() if pid is None else pid}_"
    return [n for n in os.listdir(SHM_DIR) if n.startswith(prefix)]


def process_gone(pid):
    """True when ``pid`` has exited (a zombie nobody reaps counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
