"""NOTE [ Reusing freed memory ] (_malloc.py): once an Executor exists, a training step reuses the memory
the previous step freed instead of faulting in fresh pages. Counted in a fresh process (the setting is
per process): minor page faults per step, against a process whose malloc hands every array back to the OS
when it is freed (a fixed 64 KiB mmap threshold, set through the environment, which also turns minifluid's
setting off). glibc's own default thresholds are no baseline: whether they reuse memory depends on the
machine (0.2 faults per step on one host, 1,600 on another, against 3,600 with every array handed back)."""
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import resource
import numpy as np
import minifluid as fluid
main, startup = fluid.Program(), fluid.Program()
with fluid.program_guard(main, startup):
    x = fluid.data("x", [None, 512])
    h = x
    for _ in range(4):
        h = fluid.layers.fc(h, 512, act="relu")
    loss = fluid.layers.mean(h)
    fluid.optimizer.SGD(0.01).minimize(loss)
exe, scope = fluid.Executor(), fluid.Scope()
exe.run(startup, scope=scope)
feed = {"x": np.ones((256, 512), "float32")}  # 512 KiB activations
for _ in range(3):
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 5)
"""


def _faults_per_step(**env):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    full_env.update(env, OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=100, env=full_env)
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc and /proc page-fault counts")
def test_a_training_step_reuses_freed_memory_instead_of_faulting_in_new_pages():
    kept = _faults_per_step()
    returned = _faults_per_step(MALLOC_MMAP_THRESHOLD_="65536")  # every freed array goes back to the OS
    # each step allocates ~8 MiB of activations and gradients (2,000 pages): reused, nearly none fault
    assert kept < 200 < returned, (kept, returned)
