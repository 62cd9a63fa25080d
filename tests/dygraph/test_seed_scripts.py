"""Seeds 000 and 002, run as their users would: ``python -m minifluid.compat SCRIPT`` in a subprocess."""
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

LEGACY = pathlib.Path(__file__).resolve().parents[2] / "examples" / "legacy"


def _run(script, cwd):
    proc = subprocess.run([sys.executable, "-m", "minifluid.compat", str(LEGACY / script)], cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.timeout(60)
def test_seed000_dygraph_dataloader_guide(tmp_path):
    out = _run("dygraph_dataloader_seed000.py", tmp_path)
    assert "sample generator: image [32, 64] float32, label [32, 1] int64" in out
    assert "sample list generator: image [16, 64] float32, label [16, 1] int64" in out
    assert "batch generator: image [16, 64] float32, label [16, 1] int64" in out
    for mp in ("False", "True"):
        losses = [float(v) for v in re.findall(rf"use_multiprocess={mp} epoch \d: mean loss ([\d.]+) over 89", out)]
        assert len(losses) == 3, out
        assert losses[0] > losses[1] > losses[2], losses
        assert losses[-1] < 0.8 * losses[0], losses


@pytest.mark.timeout(60)
def test_seed002_paddle2_dataset_notebook(tmp_path):
    out = _run("paddle2_dataset_seed002.py", tmp_path)
    assert out.splitlines()[:3] == ["0 [100, 64] [100]", "1 [100, 64] [100]", "2 [100, 64] [100]"]
    losses = [float(v) for v in re.findall(r"loss is: \[([\d.]+)\]", out)]
    assert len(losses) == 30, out  # 10 epochs, batches 0, 5, 10
    # the first epoch against the last three (9 losses; unseeded, as in the notebook: 30 runs gave
    # 0.24-0.54, and the last epoch alone once gave 0.58 in CI); a model that does not learn gives ~1
    first, last = sum(losses[:3]) / 3, sum(losses[-9:]) / 9
    assert last < 0.7 * first, losses
    saved = pathlib.Path(re.search(r"^saved the parameters to (.+)$", out, re.M).group(1))
    try:
        assert saved.is_file() and saved.name == "mnist"  # paddle.save(model.state_dict(), .../'mnist')
        assert list(tmp_path.iterdir()) == []  # nothing written into the current folder
    finally:
        shutil.rmtree(saved.parent, ignore_errors=True)
