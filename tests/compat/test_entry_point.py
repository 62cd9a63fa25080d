"""``python -m minifluid.compat`` runs a script exactly as ``python`` would (issue 14.2)."""
import signal
import subprocess
import sys
import textwrap

import pytest

import minifluid

SCRIPT = textwrap.dedent("""\
    import sys
    import helper  # a sibling module: found only when sys.path[0] is this script's folder
    print("path0", sys.path[0])
    print("file", __file__)
    print("argv", sys.argv)
    print("name", __name__, "main", sys.modules["__main__"].__dict__ is globals(), "spec", __spec__)
    def fail():
        raise ValueError("bad value " + helper.WORD)
    if "raise" in sys.argv:
        fail()
    if "interrupt" in sys.argv:
        raise KeyboardInterrupt
    if "exit3" in sys.argv:
        sys.exit(3)
    if "exitmsg" in sys.argv:
        sys.exit("stopped by the script")
    if "hook" in sys.argv:
        sys.excepthook = lambda t, e, tb: print("hook saw", t.__name__, tb.tb_frame.f_code.co_filename)
        fail()
""")


@pytest.fixture
def project(tmp_path):
    """A legacy project split over two files in a folder, and a cwd elsewhere."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text(SCRIPT)
    (tmp_path / "proj" / "helper.py").write_text('WORD = "from helper"\n')
    (tmp_path / "proj" / "pkg").mkdir()
    (tmp_path / "proj" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "proj" / "pkg" / "run.py").write_text(SCRIPT)
    (tmp_path / "elsewhere").mkdir()
    return tmp_path


def _python(*args, cwd):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args", [["ok", "--lr", "0.1"], ["raise"], ["interrupt"], ["exit3"], ["exitmsg"], ["hook"]])
def test_script_runs_as_python_would_run_it(project, args):
    cwd = project / "elsewhere"
    plain = _python("../proj/train.py", *args, cwd=cwd)
    compat = _python("-m", "minifluid.compat", "../proj/train.py", *args, cwd=cwd)
    assert (compat.returncode, compat.stdout, compat.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert f"path0 {project / 'proj'}\n" in compat.stdout and f"file {cwd}/../proj/train.py\n" in compat.stdout
    assert f"argv {['../proj/train.py', *args]}" in compat.stdout and "name __main__ main True spec None" in compat.stdout
    expected_status = {"raise": 1, "interrupt": -signal.SIGINT, "exit3": 3, "exitmsg": 1, "hook": 1}.get(args[0], 0)
    assert compat.returncode == expected_status
    if args == ["hook"]:  # the script's own excepthook sees the script's frames first
        assert f"hook saw ValueError {cwd}/../proj/train.py" in compat.stdout
    if args == ["raise"]:  # CPython's traceback: the script's frames only
        assert compat.stderr.startswith(f'Traceback (most recent call last):\n  File "{cwd}/../proj/train.py", line 10')
        assert "minifluid" not in compat.stderr and compat.stderr.endswith("ValueError: bad value from helper\n")


@pytest.mark.parametrize("args", [["ok", "-x"], ["raise"], ["exit3"]])
def test_dash_m_runs_a_module_as_python_dash_m_would(project, args):
    cwd = project / "proj"
    plain = _python("-m", "pkg.run", *args, cwd=cwd)
    compat = _python("-m", "minifluid.compat", "-m", "pkg.run", *args, cwd=cwd)
    strip = lambda text: "\n".join(l for l in text.splitlines() if not l.startswith("name "))  # spec repr has an id
    assert (compat.returncode, strip(compat.stdout), compat.stderr) == (plain.returncode, strip(plain.stdout),
                                                                        plain.stderr)
    assert f"argv {[str(cwd / 'pkg' / 'run.py'), *args]}" in compat.stdout and f"path0 {cwd}\n" in compat.stdout
    missing = _python("-m", "minifluid.compat", "-m", "no_such_module", cwd=cwd)
    assert missing.returncode == 1 and missing.stderr == f"{sys.executable}: No module named no_such_module\n"


def test_legacy_imports_resolve_inside_a_multi_file_project(project):
    (project / "proj" / "helper.py").write_text("import paddle.fluid as fluid\nWORD = fluid.__version__\n")
    proc = _python("-m", "minifluid.compat", "../proj/train.py", "raise", cwd=project / "elsewhere")
    assert proc.returncode == 1 and proc.stderr.endswith("ValueError: bad value 1.8.5\n"), proc.stderr


def test_help_version_and_usage_errors(tmp_path):
    for flag in ("-h", "--help"):
        proc = _python("-m", "minifluid.compat", flag, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m minifluid.compat")
        assert "-m MODULE" in proc.stdout and "--version" in proc.stdout
    proc = _python("-m", "minifluid.compat", "--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == f"minifluid {minifluid.__version__} (PaddlePaddle fluid 1.8.5 API)\n"
    for args, error in [((), "give a script to run"), (("--bogus", "x.py"), "unknown option '--bogus'"),
                        (("-m",), "-m needs a module name")]:
        proc = _python("-m", "minifluid.compat", *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.startswith("usage:") and error in proc.stderr, proc.stderr
    proc = _python("-m", "minifluid.compat", "missing.py", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == (f"{sys.executable}: can't open file "
                                                    f"{str(tmp_path / 'missing.py')!r}: [Errno 2] No such file or directory\n")
