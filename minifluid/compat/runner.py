"""Run a script or a module as ``python PATH`` / ``python -m NAME`` would: the script's folder first on
sys.path, its ``__file__``, a fresh ``__main__`` module, CPython's messages for a missing file or
module. The caller sets ``sys.argv`` and reports what escapes (``python -m minifluid.compat`` prints
CPython's traceback; ``tools/profile_loader.py`` goes on to print its profile).
"""
import builtins
import importlib.machinery
import io
import os
import runpy
import sys
import types
import zipfile

__all__ = ["run_module", "run_script"]


def run_script(path):
    """``python PATH``: a source file, or a folder / zip file with a __main__.py."""
    if os.path.isdir(path) or zipfile.is_zipfile(path):
        _set_path0(os.path.abspath(path))
        runpy._run_module_as_main("__main__", alter_argv=False)  # what CPython itself calls here
        return 0
    filename = os.path.join(os.getcwd(), path)  # CPython's __file__: absolute, but not normalised
    try:
        with io.open_code(filename) as f:
            source = f.read()
    except OSError as err:
        print(f"{sys.executable}: can't open file {filename!r}: [Errno {err.errno}] {err.strerror}",
              file=sys.stderr)
        return 2
    _set_path0(os.path.dirname(os.path.realpath(filename)))
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=filename, __cached__=None, __builtins__=builtins,
                           __loader__=importlib.machinery.SourceFileLoader("__main__", filename))
    sys.modules["__main__"] = module
    exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
    return 0


def run_module(name):
    """``python -m NAME``: sys.path[0] stays the current folder, as it already is for us."""
    sys.modules["__main__"] = types.ModuleType("__main__")  # the module's globals, not this runner's
    runpy._run_module_as_main(name, alter_argv=True)  # CPython's own -m path (its messages too)
    return 0


def _set_path0(folder):
    if not sys.flags.safe_path:  # python -P adds no script folder; `-m minifluid.compat` added none either
        sys.path[0] = folder
