"""Run Paddle's fluid book tests, unchanged, through ``python -m minifluid.compat``.

The files are Paddle's code and never live in this repository: ``../shared/book-v1.5.1/get.sh`` writes
them into ``OUT/v1.5.1``; pass that folder, or name it in ``PADDLE_BOOK_DIR``. Each file runs from its own scratch copy of the whole folder (the tests
save models into their working folder and import their neighbours) as ``python -m minifluid.compat
FILE.py`` (``-v`` added for a ``unittest.main()`` file), with ``CPU_NUM=1`` and ``MINIFLUID_DATA_HOME``
pointing at small synthetic data written once by ``tools/make_book_data.py`` into a temporary folder.

Usage:  python tools/run_book_tests.py [DIR] [--file NAME] [--timeout S] [--scale F] [--verbose]
Prints one JSON line: per file ``end`` (exit status 0: it ran to the end), ``error`` or ``timeout``,
the exit status, the seconds, the first error line of its output and, for a unittest file, the
outcome of each test method.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
FILE_TIMEOUT_S = 300
METHOD = re.compile(r"^(?P<name>test\w*) \([\w.]+\)", re.M)
OUTCOME = re.compile(r"\.\.\. (ok|FAIL|ERROR|skipped)|^(ok|FAIL|ERROR|skipped)\b", re.M)


def default_dir():
    named = os.environ.get("PADDLE_BOOK_DIR")
    if named:
        return named
    candidates = (ROOT.parent / "shared" / "book-v1.5.1" / "v1.5.1", ROOT.parent / "pbook" / "v1.5.1")
    for candidate in candidates:
        if any(candidate.glob("test_*.py")):
            return str(candidate)
    return str(candidates[0])


def first_error(output):
    """The first exception line of the output (the line ending the first traceback), else None."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):"):
            for after in lines[i + 1:]:
                if after and not after[0].isspace() and not after.startswith("Traceback"):
                    return after
    return None


def methods(output):
    """{method: outcome} from unittest's -v output (a test's own prints may come between)."""
    heads = list(METHOD.finditer(output))
    found = {}
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(output)
        outcome = OUTCOME.search(output, head.end(), end)
        found[head["name"]] = (outcome.group(1) or outcome.group(2)) if outcome else "no result"
    return found


def run_file(path, data_home, scratch_root, timeout=FILE_TIMEOUT_S):
    scratch = pathlib.Path(tempfile.mkdtemp(prefix=path.stem + "-", dir=scratch_root))
    for neighbour in path.parent.glob("*.py"):
        shutil.copy(neighbour, scratch / neighbour.name)
    has_main = "unittest.main(" in path.read_text()
    cmd = [sys.executable, "-m", "minifluid.compat", path.name] + (["-v"] if has_main else [])
    env = dict(os.environ, CPU_NUM="1", MINIFLUID_DATA_HOME=str(data_home),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        out, rc = proc.stdout + proc.stderr, proc.returncode
        status = "end" if rc == 0 else "error"
    except subprocess.TimeoutExpired as exc:
        out = ((exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or "")
        out += ((exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or "")
        rc, status = None, "timeout"
    entry = {"status": status, "rc": rc, "seconds": round(time.perf_counter() - start, 1)}
    tail = [line.strip() for line in out.splitlines() if line.strip()]
    if status == "timeout":
        entry["error"] = f"timed out after {timeout:g} s; last output line: {tail[-1] if tail else '(none)'}"
    elif status != "end":
        entry["error"] = first_error(out) or (tail[-1] if tail else "(no output)")
    if has_main:
        entry["methods"] = methods(out)
    shutil.rmtree(scratch, ignore_errors=True)
    return entry, out


def run_all(folder, only=None, timeout=FILE_TIMEOUT_S, scale=0.01, jobs=2, verbose=False):
    files = sorted(p for p in folder.glob("test_*.py"))
    if only:
        files = [p for p in files if p.stem in only or p.name in only]
        missing = sorted(set(only) - {p.stem for p in files} - {p.name for p in files})
        if missing:
            raise SystemExit(f"no such book test in {folder}: {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="book-tests-") as tmp:
        data_home = pathlib.Path(tmp) / "data"
        subprocess.run([sys.executable, str(ROOT / "tools" / "make_book_data.py"), str(data_home),
                        "--scale", str(scale)], check=True, capture_output=True, text=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            runs = dict(zip(files, pool.map(lambda p: run_file(p, data_home, tmp, timeout), files)))
    report = {}
    for path in files:
        entry, out = runs[path]
        report[path.name] = entry
        if verbose and entry["status"] != "end":
            print(f"===== {path.name} ({entry['status']}, rc={entry['rc']})\n{out[-6000:]}", file=sys.stderr)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?", default=default_dir(), help="folder holding the book's test_*.py")
    parser.add_argument("--file", action="append", help="run only this file (repeatable)")
    parser.add_argument("--timeout", type=float, default=FILE_TIMEOUT_S, help="seconds per file")
    parser.add_argument("--scale", type=float, default=0.01, help="make_book_data.py's --scale")
    parser.add_argument("--jobs", type=int, default=2, help="files run at once")
    parser.add_argument("--verbose", action="store_true", help="print the output of unfinished files to stderr")
    args = parser.parse_args(argv)
    folder = pathlib.Path(args.dir)
    if not folder.is_dir():
        parser.error(f"{folder} does not exist: set PADDLE_BOOK_DIR to the folder of the book tests")
    report = run_all(folder, args.file, args.timeout, args.scale, args.jobs, args.verbose)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
