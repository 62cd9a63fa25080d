"""Run Paddle's op unit tests (the files built on its ``op_test.OpTest`` harness), unchanged, through
``python -m minifluid.compat``, and count what passes.

The files are Paddle's code and never live in this repository. Extract Paddle's unittests folder at a
release tag into a scratch folder, e.g. from the mirror that ``../shared/paddle-tests/get.sh`` reads:
    git -C MIRROR archive v1.8.5 python/paddle/fluid/tests/unittests | tar -x -C /tmp/pt
    python tools/run_op_tests.py /tmp/pt/python/paddle/fluid/tests/unittests --jobs 2
Every ``test_*.py`` there that imports ``op_test`` runs in that folder (its harness, ``op_test.py``,
``testsuite.py`` and ``white_list/``, sits beside it) as ``python -m minifluid.compat FILE -v`` with
``CPU_NUM=1``. A file's counts come from unittest's closing lines (``Ran N tests``, ``FAILED (failures=F,
errors=E, skipped=S)``): passed = N - F - E - S; the skips are the CUDA-only cases. A file that dies
before unittest reports (an import error, a timeout) counts as one error and no test run.

Usage:  python tools/run_op_tests.py DIR [--file NAME ...] [--jobs N] [--timeout S]
Prints one JSON line: totals, then per file ran / passed / failures / errors / skipped and, for a file
with failures, the first error line of its output.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys
import time

RAN = re.compile(r"^Ran (\d+) tests? in", re.M)
COUNTS = re.compile(r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)")
ERROR_LINE = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception|NotImplemented\w*)\b.*$", re.M)


def op_test_files(folder):
    """The test files in ``folder`` that use Paddle's OpTest harness."""
    found = []
    for path in sorted(pathlib.Path(folder).glob("test_*.py")):
        text = path.read_text(errors="replace")
        if re.search(r"^\s*from op_test import|^\s*import op_test", text, re.M):
            found.append(path.name)
    return found


def summarize(output, returncode, timed_out):
    """One file's counts from unittest's closing lines (module docstring)."""
    ran = RAN.findall(output)
    if timed_out or not ran:
        first = ERROR_LINE.findall(output)
        return {"ran": 0, "passed": 0, "failures": 0, "errors": 1, "skipped": 0,
                "first_error": "timeout" if timed_out else (first[-1][:200] if first else f"exit {returncode}")}
    tail = output[output.rfind("Ran "):]
    counts = {k: int(v) for k, v in COUNTS.findall(tail)}
    result = {"ran": int(ran[-1]), "failures": counts.get("failures", 0), "errors": counts.get("errors", 0),
              "skipped": counts.get("skipped", 0)}
    result["passed"] = result["ran"] - result["failures"] - result["errors"] - result["skipped"]
    if result["failures"] or result["errors"]:
        first = ERROR_LINE.findall(output)
        result["first_error"] = first[0][:200] if first else ""
    return result


def run_file(folder, name, timeout):
    env = dict(os.environ, CPU_NUM="1", PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "minifluid.compat", name, "-v"], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=timeout)
        result = summarize(proc.stdout + proc.stderr, proc.returncode, False)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
        result = summarize(out, None, True)
    result["seconds"] = round(time.perf_counter() - start, 1)
    return name, result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="Paddle's python/paddle/fluid/tests/unittests folder at some tag")
    ap.add_argument("--file", action="append", help="run only this file (repeatable)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per file")
    args = ap.parse_args(argv)
    if not (pathlib.Path(args.dir) / "op_test.py").exists():
        ap.error(f"{args.dir} has no op_test.py: pass Paddle's unittests folder (see the module docstring)")
    names = args.file or op_test_files(args.dir)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = dict(pool.map(lambda n: run_file(args.dir, n, args.timeout), names))
    totals = {k: sum(r[k] for r in results.values()) for k in ("ran", "passed", "failures", "errors", "skipped")}
    totals["files"] = len(results)
    totals["files_all_passed"] = sum(1 for r in results.values() if r["ran"] and not r["failures"] and not r["errors"])
    print(json.dumps({"totals": totals, "files": results}))


if __name__ == "__main__":
    main()
