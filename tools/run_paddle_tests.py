"""Run Paddle's own data-pipeline unit tests, unchanged, through ``python -m minifluid.compat``.

The files are Paddle's code and never live in this repository: ``../shared/paddle-tests/get.sh``
writes them into ``<DIR>/v2.0.0`` and ``<DIR>/v1.8.5``. Each file runs in its own folder as
``python -m minifluid.compat FILE.py -v`` (``-m unittest -v MODULE`` for a file without
``unittest.main()``) with ``CPU_NUM=1``, as Paddle's CI ran them. A method counts as passed only
when unittest printed ``ok`` for it; a file that dies at import fails all its methods. The methods
that test nothing without CUDA (listed in ``../shared/paddle-tests/README.md``) are left out.

Usage:  python tools/run_paddle_tests.py [DIR] [--tag v2.0.0] [--file NAME] [--verbose]
Prints one JSON line: per tag, the methods counted and passed, and per file the failing methods.
"""
import argparse
import ast
import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_DIR = os.environ.get("PADDLE_TESTS_DIR", str(ROOT.parent / "shared" / "paddle-tests"))
TAGS = ("v2.0.0", "v1.8.5")
FILE_TIMEOUT_S = 300

# (tag, file stem, class, method); None matches any. At v1.8.5 TestDataLoaderWorkerLoop runs on CPU places,
# so it counts there (50 methods at v1.8.5, 109 at v2.0.0, as ../shared/paddle-tests/README.md counts them).
GPU_ONLY = [
    ("v2.0.0", None, "TestDataLoaderWorkerLoop", None),
    (None, "test_generator", None, "test_basic_generator_error"),
    (None, None, "TestDoubleBufferAPI", "test_double_buffer"),
] + [
    (None, stem, cls, "test_main")
    for stem in ("test_multiprocess_dataloader_static", "test_multiprocess_dataloader_dynamic",
                 "test_multiprocess_dataloader_iterable_dataset_static",
                 "test_multiprocess_dataloader_iterable_dataset_dynamic")
    for cls in ("TestStaticDataLoader", "TestStaticDataLoaderWithBatchedDataset",
                "TestDygraphDataLoader", "TestDygraphDataLoaderWithBatchedDataset")
]

STATUS = re.compile(r"^(?P<name>test\w*) \((?P<where>[\w.]+)\)", re.M)
WORDS = r"(ok|FAIL|ERROR|skipped|expected failure|unexpected success)"
OUTCOME = re.compile(rf"\.\.\. {WORDS}|^{WORDS}\b", re.M)


def gpu_only(tag, stem, cls, method):
    return any(all(want is None or want == got for want, got in zip(rule, (tag, stem, cls, method)))
               for rule in GPU_ONLY)


def declared_methods(path):
    """Every (class, method) unittest would run in ``path``: TestCase subclasses, inherited tests included."""
    tree = ast.parse(path.read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def bases(node):
        return [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]

    def is_case(name, seen=()):
        node = classes.get(name)
        if node is None or name in seen:
            return False
        return any(b == "TestCase" or is_case(b, seen + (name,)) for b in bases(node))

    def methods(name):
        node = classes.get(name)
        if node is None:
            return set()
        own = {f.name for f in node.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")}
        for b in bases(node):
            own |= methods(b)
        return own

    return sorted((c, m) for c in classes if is_case(c) for m in methods(c))


def run_file(path, timeout=FILE_TIMEOUT_S):
    has_main = "unittest.main(" in path.read_text()
    cmd = [sys.executable, "-m", "minifluid.compat"]
    cmd += [path.name, "-v"] if has_main else ["-m", "unittest", "-v", path.stem]
    env = dict(os.environ, CPU_NUM="1", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=path.parent, env=env, capture_output=True, text=True, timeout=timeout)
        out, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
        rc = "timeout"
    return parse(out), rc, out, time.perf_counter() - start


def parse(output):
    """{(class, method): outcome} from unittest's -v output (a test's own prints may split the line)."""
    heads = list(STATUS.finditer(output))
    results = {}
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(output)
        outcome = OUTCOME.search(output, head.end(), end)
        cls = head["where"].split(".")[-2] if head["where"].count(".") >= 2 else head["where"].split(".")[-1]
        results[(cls, head["name"])] = (outcome.group(1) or outcome.group(2)) if outcome else "no result"
    return results


def run_tag(folder, only=None, verbose=False):
    files = sorted(p for p in folder.glob("*.py") if p.name.startswith("test_") or p.name.endswith("_test.py"))
    if only:
        files = [p for p in files if p.stem in only or p.name in only]
    report = {"methods": 0, "passed": 0, "files": {}}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(files, pool.map(run_file, files)))
    for path in files:
        results, rc, out, seconds = runs[path]
        counted = [(c, m) for c, m in declared_methods(path) if not gpu_only(folder.name, path.stem, c, m)]
        passed = [cm for cm in counted if results.get(cm) == "ok"]
        failing = {f"{c}.{m}": results.get((c, m), "not run") for c, m in counted if (c, m) not in passed}
        report["methods"] += len(counted)
        report["passed"] += len(passed)
        entry = {"methods": len(counted), "passed": len(passed), "seconds": round(seconds, 1)}
        if failing:
            entry["failing"] = failing
            entry["rc"] = rc
        report["files"][path.name] = entry
        if verbose and failing:
            print(f"===== {folder.name}/{path.name} (rc={rc})\n{out[-6000:]}", file=sys.stderr)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?", default=DEFAULT_DIR, help="folder holding v2.0.0/ and v1.8.5/")
    parser.add_argument("--tag", action="append", choices=TAGS, help="run only this tag (repeatable)")
    parser.add_argument("--file", action="append", help="run only this file (repeatable)")
    parser.add_argument("--verbose", action="store_true", help="print the output of failing files to stderr")
    args = parser.parse_args(argv)
    base = pathlib.Path(args.dir)
    report = {}
    for tag in args.tag or TAGS:
        if not (base / tag).is_dir():
            parser.error(f"{base / tag} does not exist: run ../shared/paddle-tests/get.sh first")
        report[tag] = run_tag(base / tag, args.file, args.verbose)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
