"""Keep OpenBLAS's worker threads from fighting the feeding threads for the cores.

NOTE [ BLAS threads and background feeding ]
numpy's OpenBLAS splits even small matmuls across all cores and its workers spin while waiting.
When a DataLoader producer thread (or a dataset-loader thread) runs beside the training step,
one of those workers is regularly descheduled and the matmul waits for it: on a 2-core machine
the MLP step of examples/train_digits.py measured 15x slower (7 ms per 64x64x128 matmul instead
of 10-70 us). So when minifluid starts a background feeding thread it caps OpenBLAS at
``cpu_count - 1`` threads (1 on 2 cores), once per process, unless the user chose a thread count
through OPENBLAS_NUM_THREADS / OMP_NUM_THREADS (then we leave it alone). This is the same C call
threadpoolctl makes; it touches only the OpenBLAS libraries already loaded.
Worker processes keep a core busy too, so starting one caps OpenBLAS as well, and *before* the fork:
OpenBLAS stops its pool at fork, and a cap set afterwards starts a new pool whose thread spins for
~0.1 s of CPU (measured: 0.09 s during a 1 s epoch, beside a busy worker on 2 cores).
"""
import ctypes
import logging
import os


__all__ = ["get_num_threads", "set_num_threads", "limit_for_background_threads"]

logger = logging.getLogger("minifluid")
_SETTERS = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")
_USER_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MINIFLUID_KEEP_BLAS_THREADS")
_done = False


_found = None


def _openblas_libraries():
    """(get, set) C functions of every OpenBLAS mapped into this process (Linux /proc/self/maps), looked
    up once they are found (ops/parallel.py reads and sets the count around every parallel kernel)."""
    global _found
    if _found is None:
        found = _find_openblas()
        if not found:
            return found
        _found = found
    return _found


def _find_openblas():
    paths = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip().split(" ")[-1]
                if "openblas" in os.path.basename(path).lower() and path.endswith(".so") or ".so." in path \
                        and "openblas" in path.lower():
                    if path not in paths:
                        paths.append(path)
    except OSError:
        return []
    found = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        if getter is not None and setter is not None:
            getter.restype = ctypes.c_int
            found.append((getter, setter))
    return found


def get_num_threads():
    """OpenBLAS's thread count (the largest over loaded copies), or None without OpenBLAS."""
    counts = [getter() for getter, _ in _openblas_libraries()]
    return max(counts) if counts else None


def set_num_threads(n):
    for _, setter in _openblas_libraries():
        setter(ctypes.c_int(int(n)))



def limit_for_background_threads():
    """Cap OpenBLAS at cpu_count - 1 threads, once, unless the user set a thread count."""
    global _done
    if _done:
        return
    _done = True
    if any(os.environ.get(name) for name in _USER_ENV):
        return
    target = max(1, (os.cpu_count() or 1) - 1)
    current = get_num_threads()
    if current is not None and current > target:
        set_num_threads(target)
        logger.info("minifluid: OpenBLAS limited to %d thread(s) while feeding threads run "
                    "(NOTE [ BLAS threads and background feeding ]; set OPENBLAS_NUM_THREADS to choose)", target)
