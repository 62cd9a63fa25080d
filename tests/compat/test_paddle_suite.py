"""Paddle's own data-pipeline unit tests, run unchanged through ``python -m minifluid.compat``.

The files are Paddle's code and never live here: ``../shared/paddle-tests/get.sh`` writes them into the
folder named by ``PADDLE_TESTS_DIR`` (default ``../shared/paddle-tests``). Without them the test skips.
``tools/run_paddle_tests.py`` runs each file in its own process and counts the methods unittest
reported ``ok``, the GPU-only methods left out.
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TESTS_DIR = pathlib.Path(os.environ.get("PADDLE_TESTS_DIR", ROOT.parent / "shared" / "paddle-tests"))
REQUIRED = {"v2.0.0": (100, 109), "v1.8.5": (48, 50)}


@pytest.mark.timeout(900)
@pytest.mark.skipif(not all((TESTS_DIR / tag).is_dir() for tag in REQUIRED),
                    reason=f"Paddle's tests are not in {TESTS_DIR} (see ../shared/paddle-tests/README.md)")
def test_paddle_data_pipeline_tests_pass_unchanged():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "run_paddle_tests.py"), str(TESTS_DIR)],
                         capture_output=True, text=True, check=True, timeout=880).stdout
    report = json.loads(out)
    for tag, (need, total) in REQUIRED.items():
        got = report[tag]
        failing = {name: entry["failing"] for name, entry in got["files"].items() if "failing" in entry}
        assert got["methods"] == total, f"{tag}: counted {got['methods']} methods, expected {total}"
        assert got["passed"] >= need, f"{tag}: {got['passed']} of {total} passed (need {need}); failing: {failing}"
