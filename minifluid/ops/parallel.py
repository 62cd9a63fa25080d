"""Intra-op threads: one kernel's independent pieces (chunks of images) spread over the cores.

NOTE [ Intra-op threads ]
A conv step is mostly GEMMs over im2col chunks that do not depend on each other. OpenBLAS's own threads
split each GEMM call, which for the skinny GEMMs of a conv net (16-64 output channels) gained nothing:
ResNet-20 ran at the same step time on one and two OpenBLAS threads, while the im2col copies stayed on
one core. ``for_each(n, fn)`` instead hands whole pieces (im2col + GEMM of a chunk) to the threads, so
both the copies and the GEMMs run on every core and each chunk stays in its core's cache.

- Threads: ``num_threads()`` -- OMP_NUM_THREADS, else OPENBLAS_NUM_THREADS, else the CPUs this process
  may run on; ``set_num_threads`` changes it. The calling thread works
  too, beside ``num_threads() - 1`` pool threads that sleep between calls (they never spin).
- Hand-off: each pool thread sleeps on a lock of its own; a call sets the job, releases those locks and
  later takes each thread's 'done' lock back: two futex wake-ups per thread and call. A
  ``concurrent.futures`` pool (a Future, a condition variable and a queue per piece of work) took 48 us
  from submit to the thread running and 73 us to the caller seeing it end, against 16 and 31 us for bare
  locks; a ResNet-20 step makes ~140 calls. One caller at a time owns the pool: a call from another
  thread while it is busy runs its pieces inline, in order.
- Scheduling: the pieces are taken from a shared counter, so a thread that the OS delays holds up at
  most the piece it is on. Results come back in piece order, whichever thread made them; kernels that
  sum partial results sum them in that order, so a result does not depend on the thread count or on
  which thread ran what.
- OpenBLAS runs one thread once the pool exists: our threads already fill the cores. Its count is set
  once and left there: every change of OpenBLAS's count starts new OpenBLAS threads that spin for
  ~0.1 s (NOTE [ BLAS threads and background feeding ] in blas.py), and toggling it around each
  kernel left a spinning thread beside every conv (ResNet-20 steps ~15% slower than with one setting).
  Large GEMMs of other ops use ``matmul`` below, which splits them over the same threads; elementwise
  kernels use ``elementwise`` (blocks of a result it allocates) or ``into`` (blocks of an output the
  kernel allocated, written in place: no block temporaries to copy).
- Errors: the first failing piece's exception (by piece order) reaches the caller with its traceback,
  after every thread has stopped taking pieces; the other pieces are not started.
- Nesting: ``for_each`` called from inside a piece runs inline. A child process after ``fork`` starts
  with no pool (``os.register_at_fork``) and makes its own on first use; pool threads are daemons, idle
  between calls, and end with the interpreter. ``set_num_threads`` ends the old pool's threads at once,
  or when the call using it returns.
"""
import itertools
import os
import threading

import numpy as np

from . import blas as _blas

__all__ = ["elementwise", "for_each", "into", "matmul", "num_threads", "set_num_threads", "zeros_for"]

_lock = threading.Lock()
_local = threading.local()
_pool = None
_threads = None


def _default_threads():
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        value = os.environ.get(name, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def num_threads():
    """How many threads ``for_each`` uses (the caller's included)."""
    global _threads
    if _threads is None:
        _threads = _default_threads()
    return _threads


def set_num_threads(n):
    """Use ``n`` threads in kernels from now on (the caller's included; 1: no pool)."""
    global _threads, _pool
    n = int(n)
    if n < 1:
        raise ValueError(f"set_num_threads: the thread count must be at least 1, got {n}")
    with _lock:
        _threads, old, _pool = n, _pool, None
    if old is not None:
        _close_when_idle(old)


class _Pool:
    """``size`` daemon threads that run one job (a callable) at a time, woken through per-thread locks."""

    def __init__(self, size):
        self.size, self.job, self.busy, self.replaced, self.closed = size, None, threading.Lock(), False, False
        self._go = [threading.Lock() for _ in range(size)]
        self._done = [threading.Lock() for _ in range(size)]
        self.threads = [threading.Thread(target=self._serve, args=(k,), name=f"minifluid-kernel-{k}", daemon=True)
                        for k in range(size)]
        for k, thread in enumerate(self.threads):
            self._go[k].acquire()
            self._done[k].acquire()
            thread.start()

    def _serve(self, k):
        go, done = self._go[k], self._done[k]
        while True:
            go.acquire()
            job = self.job
            if job is None:  # close(): this pool is replaced
                return
            try:
                job()
            finally:
                done.release()

    def run(self, job, helpers):
        """``job()`` on the caller and on ``helpers`` pool threads; returns when every one has returned.
        The caller holds ``busy``."""
        self.job = job
        for k in range(helpers):
            self._go[k].release()
        try:
            job()
        finally:
            for k in range(helpers):
                self._done[k].acquire()
            self.job = None

    def close(self):
        """End the threads once (they are idle: the caller holds ``busy``)."""
        if not self.closed:
            self.closed, self.job = True, None
            for go in self._go:
                go.release()


def _get_pool(size):
    """The pool of ``size`` helper threads; OpenBLAS goes to one thread when the first one is made."""
    global _pool
    with _lock:
        if _pool is None or _pool.size != size:
            old, _pool = _pool, _Pool(size)
            if old is not None:
                _close_when_idle(old)
            if (_blas.get_num_threads() or 1) > 1:
                _blas.set_num_threads(1)
        return _pool


def _close_when_idle(pool):
    """Close a replaced pool now if no call is using it, else when the call that is ends (``for_each``
    checks ``replaced`` after releasing ``busy``, which is set here before ``busy`` is tried)."""
    pool.replaced = True
    if pool.busy.acquire(blocking=False):
        pool.close()
        pool.busy.release()


def _forget_pool_after_fork():
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def for_each(n, fn):
    """``[fn(0), ..., fn(n - 1)]``, the calls spread over the intra-op threads (NOTE [ Intra-op threads ])."""
    threads = min(num_threads(), n)
    if threads <= 1 or getattr(_local, "inside", False):
        return [fn(i) for i in range(n)]
    pool = _get_pool(num_threads() - 1)
    if not pool.busy.acquire(blocking=False):  # another thread's call has the pool: run inline
        return [fn(i) for i in range(n)]
    if pool.closed:  # replaced by set_num_threads since _get_pool returned it
        pool.busy.release()
        return [fn(i) for i in range(n)]
    results, errors, counter = [None] * n, {}, itertools.count()

    def work():
        _local.inside = True
        try:
            for i in counter:
                if i >= n or errors:
                    return
                try:
                    results[i] = fn(i)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller below
                    errors[i] = exc
                    return
        finally:
            _local.inside = False
    try:
        pool.run(work, threads - 1)
    finally:
        pool.busy.release()
        if pool.replaced:
            _close_when_idle(pool)
    if errors:
        raise errors[min(errors)]
    return results


SPLIT_FLOPS = 1 << 24  # smaller GEMMs run whole: splitting costs more than it saves


def matmul(a, b):
    """``a @ b`` for 2-D numpy arrays, split over the intra-op threads when large: by rows of ``a`` or,
    when ``b`` is wider than ``a`` is tall, by columns of ``b`` (no split sums, so the result does not
    depend on the thread count)."""
    (m, k), n = a.shape, b.shape[1]
    threads = num_threads()
    if (threads <= 1 or 2 * m * n * k < SPLIT_FLOPS or type(a) is not np.ndarray or type(b) is not np.ndarray
            or getattr(_local, "inside", False)):
        return a @ b
    out = np.empty((m, n), dtype=np.result_type(a, b))
    rows = m >= n
    size = m if rows else n
    bounds = [size * i // threads for i in range(threads + 1)]

    def block(i):
        lo, hi = bounds[i], bounds[i + 1]
        if rows:
            np.matmul(a[lo:hi], b, out=out[lo:hi])
        else:
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])
    for_each(threads, block)
    return out


BLOCK_BYTES = 1 << 20  # elementwise blocks: each stays in cache across a kernel's temporaries
ELEMENTWISE_MIN_BYTES = 4 << 20  # smaller tensors run whole: a block's overhead would not pay


def _flat(a):
    """A 1-D view of ``a`` in its memory order, or None when ``a`` is not one dense run of memory
    (never a copy: its axes sorted by stride must be C-contiguous)."""
    if a.flags.c_contiguous:
        return a.reshape(-1)
    if a.ndim == 4:  # an NCHW-shaped view of channels-last memory (conv, pool, batch_norm outputs)
        nhwc = a.transpose(0, 2, 3, 1)
        if nhwc.flags.c_contiguous:
            return nhwc.reshape(-1)
    in_memory_order = a.transpose(sorted(range(a.ndim), key=lambda i: -a.strides[i]))
    return in_memory_order.reshape(-1) if in_memory_order.flags.c_contiguous else None


def elementwise(fn, *arrays):
    """``fn(*arrays)`` for same-shape, same-layout numpy arrays, computed block by block over their memory
    (each block's temporaries stay in cache) on the intra-op threads; the result keeps their layout.
    Arrays that are small, differ in layout or are not dense are handed to ``fn`` whole."""
    first = arrays[0]
    flats = None if num_threads() <= 1 or first.nbytes < ELEMENTWISE_MIN_BYTES else _dense_flats(arrays)
    if flats is None:
        return fn(*arrays)
    step = max(1, BLOCK_BYTES // first.itemsize)
    bounds = list(range(0, first.size, step)) + [first.size]
    piece = fn(*(f[:bounds[1]] for f in flats))  # the first block, in the caller: the result's dtype
    out = np.empty_like(first, dtype=piece.dtype)
    out_flat = _flat(out)
    out_flat[:bounds[1]] = piece

    def block(i):
        out_flat[bounds[i]:bounds[i + 1]] = fn(*(f[bounds[i]:bounds[i + 1]] for f in flats))
    for_each(len(bounds) - 2, lambda i: block(i + 1))
    return out


def into(fn, out, *arrays):
    """``fn(out, *arrays)`` that writes its result into ``out``, run on the same blocks of every array when
    ``out`` and ``arrays`` are dense numpy arrays of one shape and layout: on the intra-op threads in blocks
    of about BLOCK_BYTES when large, else as one call on 1-D views of their memory (``zeros_for`` then gives
    ``fn`` a zero array rather than a scalar). Anything else is handed to ``fn`` whole. Returns ``out``."""
    flats = _dense_flats((out,) + arrays)
    if flats is None:
        fn(out, *arrays)
    elif out.nbytes < ELEMENTWISE_MIN_BYTES:
        fn(*flats)
    else:
        step = max(1, BLOCK_BYTES // out.itemsize)
        bounds = list(range(0, out.size, step)) + [out.size]
        for_each(len(bounds) - 1, lambda i: fn(*(f[bounds[i]:bounds[i + 1]] for f in flats)))
    return out


def _dense_flats(arrays):
    """1-D views of the memory of same-shape, same-strides dense numpy arrays, else None (also inside
    a piece of ``for_each``: a nested call runs whole)."""
    first = arrays[0]
    if getattr(_local, "inside", False) or any(type(a) is not np.ndarray or a.shape != first.shape
                                               or a.strides != first.strides for a in arrays):
        return None
    flats = [_flat(a) for a in arrays]
    return None if any(f is None for f in flats) else flats


_zeros = {}


def zeros_for(block):
    """A read-only zero array like the 1-D numpy ``block`` (numpy's maximum/minimum against an array run
    2-3x faster than against a scalar: they are vectorised only for two arrays), else the scalar 0."""
    if type(block) is not np.ndarray or block.ndim != 1:
        return 0
    zeros = _zeros.get(block.dtype)
    if zeros is None or zeros.size < block.size:
        zeros = np.zeros(max(block.size, BLOCK_BYTES // block.itemsize), dtype=block.dtype)
        zeros.flags.writeable = False
        _zeros[block.dtype] = zeros
    return zeros[:block.size]
