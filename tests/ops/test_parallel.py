"""The intra-op threads (NOTE [ Intra-op threads ] in minifluid/ops/parallel.py): pieces spread over the threads,
results in piece order, errors reach the caller, nesting and concurrent callers do not deadlock, a forked child
gets a pool of its own, and OpenBLAS is left on one thread once the pool exists."""
import os
import subprocess
import sys
import threading
import traceback

import numpy as np
import pytest

from minifluid.ops import blas as _blas
from minifluid.ops import parallel


@pytest.fixture
def three_threads(monkeypatch):
    monkeypatch.setattr(parallel, "_threads", 3)


def test_results_come_back_in_piece_order_and_more_than_one_thread_works(three_threads):
    barrier, names = threading.Barrier(3, timeout=10), set()

    def piece(i):
        if i < 3:
            barrier.wait()  # the first three pieces can only pass when three threads hold one each
        names.add(threading.current_thread().name)
        return i * i

    assert parallel.for_each(50, piece) == [i * i for i in range(50)]
    assert len(names) == 3 and threading.current_thread().name in names


def test_the_first_failing_piece_reaches_the_caller_with_its_traceback(three_threads):
    started = []

    def piece(i):
        started.append(i)
        if i in (5, 9):
            raise KeyError(f"piece {i} failed")
        return i

    with pytest.raises(KeyError, match="piece 5 failed") as info:
        parallel.for_each(200, piece)
    assert "piece" in [frame.name for frame in traceback.extract_tb(info.tb)]
    assert len(started) < 200  # no piece is started once one has failed
    assert parallel.for_each(4, lambda i: i) == [0, 1, 2, 3]  # the pool still works


def test_for_each_inside_a_piece_runs_inline(three_threads):
    outer = parallel.for_each(6, lambda i: parallel.for_each(4, lambda j: (i, j, threading.current_thread().name)))
    for i, inner in enumerate(outer):
        assert [item[:2] for item in inner] == [(i, j) for j in range(4)]
        assert len({item[2] for item in inner}) == 1  # one thread ran the whole inner loop


@pytest.mark.timeout(60)
def test_concurrent_callers_each_get_their_own_results(three_threads):
    failures = []

    def caller(k):
        for rep in range(200):
            got = parallel.for_each(7, lambda i: (k, rep, i))
            if got != [(k, rep, i) for i in range(7)]:
                failures.append((k, rep, got))

    callers = [threading.Thread(target=caller, args=(k,)) for k in range(3)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert not failures


@pytest.mark.parametrize("shape", [(300, 200, 150), (40, 300, 900), (2, 3, 4)])
def test_matmul_splits_by_rows_or_columns_and_equals_the_whole(three_threads, monkeypatch, shape):
    monkeypatch.setattr(parallel, "SPLIT_FLOPS", 1)
    m, k, n = shape
    rng = np.random.RandomState(0)
    a, b = rng.rand(m, k).astype("float32"), rng.rand(k, n).astype("float32")
    got = parallel.matmul(a, b)
    assert got.dtype == np.float32 and got.shape == (m, n)
    np.testing.assert_allclose(got, a @ b, rtol=1e-5)


def test_set_num_threads_refuses_zero():
    with pytest.raises(ValueError, match="at least 1, got 0"):
        parallel.set_num_threads(0)


FORK_SCRIPT = """
import os, sys, threading
from minifluid.ops import blas as _blas
from minifluid.ops import parallel
parallel.set_num_threads(2)
assert parallel.for_each(8, lambda i: i) == list(range(8))
print(_blas.get_num_threads())
pid = os.fork()
if pid == 0:
    barrier = threading.Barrier(2, timeout=10)  # passes only if a second thread takes a piece
    try:
        got = parallel.for_each(40, lambda i: (barrier.wait() if i < 2 else None) or i)
    except threading.BrokenBarrierError:
        os._exit(4)
    os._exit(0 if got == list(range(40)) else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.timeout(60)
def test_a_forked_child_makes_its_own_pool_and_openblas_stays_on_one_thread():
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", FORK_SCRIPT], env=env, capture_output=True, text=True, timeout=50)
    assert out.returncode == 0, out.stderr
    if _blas.get_num_threads() is not None:
        assert out.stdout.split() == ["1"]  # the pool set OpenBLAS to one thread


def test_elementwise_runs_in_blocks_keeps_the_layout_and_equals_the_whole(three_threads, monkeypatch):
    monkeypatch.setattr(parallel, "ELEMENTWISE_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "BLOCK_BYTES", 4096)
    rng = np.random.RandomState(0)
    x = rng.randn(6, 20, 30, 7).astype("float32").transpose(0, 3, 1, 2)  # channels-last memory, NCHW shape
    d = rng.randn(6, 20, 30, 7).astype("float32").transpose(0, 3, 1, 2)
    sizes = []

    def fn(a, b):
        sizes.append(a.size)
        return np.maximum(a, 0) * b
    got = parallel.elementwise(fn, x, d)
    assert len(sizes) > 10 and max(sizes) == 1024  # blocks of 4096 bytes, not the whole
    assert got.strides == x.strides and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.maximum(x, 0) * d)


def test_elementwise_hands_mismatched_or_strided_arrays_over_whole(three_threads, monkeypatch):
    monkeypatch.setattr(parallel, "ELEMENTWISE_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "BLOCK_BYTES", 64)
    x = np.arange(600, dtype="float32").reshape(20, 30)
    for a, b in ((x, np.ascontiguousarray(x.T).T), (x[:, ::2], x[:, 1::2])):  # layouts differ; not dense
        shapes = []
        got = parallel.elementwise(lambda p, q: shapes.append(p.shape) or p - q, a, b)
        assert shapes == [a.shape]
        np.testing.assert_array_equal(got, a - b)


@pytest.mark.parametrize("op", ["relu", "sigmoid", "tanh", "leaky_relu", "elu"])
def test_activation_kernels_in_blocks_equal_the_whole(three_threads, monkeypatch, op):
    from minifluid.ops.registry import get_op_spec
    spec = get_op_spec(op)
    rng = np.random.RandomState(1)
    x = rng.randn(4, 9, 11, 5).astype("float32").transpose(0, 3, 1, 2)
    d = rng.randn(4, 9, 11, 5).astype("float32").transpose(0, 3, 1, 2)
    results = []
    for min_bytes in (1 << 40, 1):  # whole; blocks of 256 bytes
        monkeypatch.setattr(parallel, "ELEMENTWISE_MIN_BYTES", min_bytes)
        monkeypatch.setattr(parallel, "BLOCK_BYTES", 256)
        out = spec.kernel(spec.attrs, x)
        results.append((out, spec.grad(spec.attrs, (x,), (out,), (d,), (True,))[0]))
    for whole, blocked in zip(*results):
        assert blocked.strides == whole.strides
        np.testing.assert_array_equal(blocked, whole)


def test_into_writes_every_block_of_the_output_once_and_hands_mismatched_arrays_over_whole(three_threads,
                                                                                         monkeypatch):
    monkeypatch.setattr(parallel, "ELEMENTWISE_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "BLOCK_BYTES", 256)
    rng = np.random.RandomState(0)
    x = rng.randn(3, 8, 9, 5).astype("float32").transpose(0, 3, 1, 2)  # channels-last memory
    calls = []

    def neg(out, a):
        calls.append(a.shape)
        np.negative(a, out=out)
        out += 0 if a.ndim > 1 else 1  # 1-D blocks add 1: every element must be written by exactly one block
    out = parallel.into(neg, np.empty_like(x), x)
    assert len(calls) == -(-x.size // 64) and all(len(s) == 1 for s in calls)
    np.testing.assert_array_equal(out, 1 - x)
    calls.clear()
    nchw = np.ascontiguousarray(x)  # same values, another memory order: one call on the arrays as they are
    parallel.into(lambda o, a, b: calls.append(a.shape) or np.subtract(a, b, out=o), np.empty_like(x), x, nchw)
    assert calls == [x.shape]


@pytest.mark.parametrize("blocks", [False, True])
def test_relu_and_its_gradient_match_fluid_in_any_layout(three_threads, monkeypatch, blocks):
    """out = max(x, 0); dx = dout * (out > 0) (a NaN output passes 0 back, as in fluid's relu_grad)."""
    from minifluid.ops.registry import get_op_spec
    if blocks:
        monkeypatch.setattr(parallel, "ELEMENTWISE_MIN_BYTES", 1)
        monkeypatch.setattr(parallel, "BLOCK_BYTES", 128)
    spec = get_op_spec("relu")
    rng = np.random.RandomState(2)
    x = rng.randn(2, 6, 7, 3).astype("float32").transpose(0, 3, 1, 2)
    x[0, 0, 0, :3] = [0.0, np.nan, -np.inf]
    out = spec.kernel(spec.attrs, x)
    np.testing.assert_array_equal(out, np.where(x > 0, x, np.where(np.isnan(x), x, 0)))
    finite = np.nan_to_num(x, nan=2.0, neginf=-1.0)
    for dout in (rng.randn(*x.shape).astype("float32"),  # NCHW memory against a channels-last output
                 np.ascontiguousarray(finite.transpose(0, 2, 3, 1) * 3).transpose(0, 3, 1, 2)):
        dx = spec.grad(spec.attrs, (None,), (out,), (dout,), (True,))[0]
        np.testing.assert_array_equal(dx, dout * (out > 0))


@pytest.mark.timeout(60)
def test_set_num_threads_during_a_call_ends_the_old_pool_once_the_call_returns():
    def kernel_threads():
        return {t for t in threading.enumerate() if t.name.startswith("minifluid-kernel")}
    before = parallel.num_threads()
    inside, release, got = threading.Event(), threading.Event(), []
    try:
        parallel.set_num_threads(3)
        parallel.for_each(3, lambda i: i)
        old_threads = kernel_threads()
        assert len(old_threads) >= 2

        def piece(i):
            if i == 0:
                inside.set()
                assert release.wait(20)
            return i

        caller = threading.Thread(target=lambda: got.append(parallel.for_each(6, piece)))
        caller.start()
        assert inside.wait(20)
        parallel.set_num_threads(2)  # the old pool is in use: it ends when that call returns
        assert parallel.for_each(4, lambda i: i * 2) == [0, 2, 4, 6]  # a new pool serves new calls meanwhile
        release.set()
        caller.join(20)
        assert got == [list(range(6))]
        for t in old_threads:
            t.join(20)
            assert not t.is_alive()
    finally:
        release.set()
        parallel.set_num_threads(before)


@pytest.mark.timeout(60)
def test_thread_count_changes_racing_concurrent_callers_never_hang_or_mix_results():
    before, failures, stop = parallel.num_threads(), [], threading.Event()

    def caller(k):
        rep = 0
        while not stop.is_set() or rep < 50:
            got = parallel.for_each(5, lambda i: (k, rep, i))
            if got != [(k, rep, i) for i in range(5)]:
                failures.append((k, rep, got))
            rep += 1

    callers = [threading.Thread(target=caller, args=(k,)) for k in range(3)]
    try:
        for t in callers:
            t.start()
        for n in range(200):
            parallel.set_num_threads(2 + n % 3)
        stop.set()
        for t in callers:
            t.join(30)
            assert not t.is_alive()
    finally:
        stop.set()
        parallel.set_num_threads(before)
    assert not failures
    parallel.for_each(3, lambda i: i)
    current = set(parallel._pool.threads)
    for t in threading.enumerate():  # every replaced pool's threads end
        if t.name.startswith("minifluid-kernel") and t not in current:
            t.join(20)
            assert not t.is_alive()
