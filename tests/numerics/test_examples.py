"""The training examples run as scripts and reach their accuracy targets (deterministic with a seed)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EPOCH = re.compile(r"\[(\w+)\] epoch (\d+): (\d+) batches, train loss ([\d.]+), test accuracy ([\d.]+)")


def _run(script, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=110)
    accuracies = {}
    for tag, epoch, _, _, acc in EPOCH.findall(proc.stdout):
        accuracies.setdefault(tag, []).append(float(acc))
    return proc, accuracies


@pytest.mark.timeout(120)
def test_train_digits_mlp_reaches_95_percent():
    proc, acc = _run("train_digits.py", "--seed", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(acc["mlp"]) == 10 and acc["mlp"][-1] >= 0.95


@pytest.mark.timeout(120)
def test_train_digits_is_deterministic_and_fails_below_target():
    first, acc1 = _run("train_digits.py", "--seed", "3", "--epochs", "2")
    second, acc2 = _run("train_digits.py", "--seed", "3", "--epochs", "2")
    assert acc1 == acc2 and len(acc1["mlp"]) == 2
    elapsed = re.compile(r"in \d+\.\d s\)")  # the run time printed last is the one thing allowed to differ
    assert elapsed.sub("", first.stdout) == elapsed.sub("", second.stdout)
    starved, acc = _run("train_digits.py", "--epochs", "1", "--batch-size", "1024")
    assert acc["mlp"][0] < 0.95 and starved.returncode == 1


@pytest.mark.timeout(120)
def test_lenet_beats_the_mlp_after_one_epoch():
    proc, acc = _run("train_lenet_digits.py", "--seed", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert acc["lenet"][0] > acc["mlp"][0]
    assert acc["lenet"][-1] >= 0.95


@pytest.mark.timeout(120)
def test_all_three_feeding_modes_train_identically():
    outputs = {}
    for mode in ("feed", "iterable", "non_iterable"):
        proc, _ = _run("train_digits.py", "--seed", "2", "--epochs", "2", "--mode", mode)
        assert proc.returncode in (0, 1), proc.stderr
        outputs[mode] = EPOCH.findall(proc.stdout)
    assert outputs["feed"] == outputs["iterable"] == outputs["non_iterable"]
    assert [int(batches) for _, _, batches, _, _ in outputs["iterable"]] == [23, 23]  # ceil(1437 / 64)
