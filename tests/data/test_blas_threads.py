import os
import subprocess
import sys

import pytest

SCRIPT = """
import numpy as np, minifluid as fluid
from minifluid.ops import blas as _blas
before = _blas.get_num_threads()
main = fluid.Program()
with fluid.program_guard(main):
    x = fluid.data("x", [None, 2])
loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2)
loader.set_batch_generator(lambda: iter([[np.ones((1, 2), "float32")]]), places=fluid.CPUPlace())
list(loader())
print(before, _blas.get_num_threads())
"""


def _run(env, script=SCRIPT):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")} | env
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [None if v == "None" else int(v) for v in out.stdout.split()]


@pytest.mark.timeout(60)
def test_feeding_thread_caps_openblas_unless_the_user_chose():
    before, after = _run({})
    if before is None:
        pytest.skip("numpy is not linked against OpenBLAS here")
    assert after <= max(1, (os.cpu_count() or 1) - 1)
    assert after <= before
    chosen_before, chosen_after = _run({"OPENBLAS_NUM_THREADS": "2"})
    assert chosen_after == chosen_before


WORKER_SCRIPT = """
import os, numpy as np, minifluid as fluid
from minifluid.ops import blas as _blas
main = fluid.Program()
with fluid.program_guard(main):
    x = fluid.data("x", [None, 2])
loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2, use_multiprocess=True)
loader.set_batch_generator(lambda: iter([[np.ones((1, 2), "float32")]] * 3), places=fluid.CPUPlace())
assert len(list(loader())) == 3
print(_blas.get_num_threads(), len(os.listdir("/proc/self/task")))
"""


@pytest.mark.timeout(60)
def test_a_worker_caps_openblas_before_it_forks_so_no_new_blas_thread_is_left_spinning():
    blas_threads, threads = _run({}, WORKER_SCRIPT)
    if blas_threads is not None:
        assert blas_threads <= max(1, (os.cpu_count() or 1) - 1)
    # the worker is gone and the multiprocess path has no producer thread: only the main thread is left
    # (capping after the fork left OpenBLAS's new server thread running here)
    assert threads == 1, f"{threads} threads left in the parent after a multiprocess epoch"
