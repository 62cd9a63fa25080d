"""usage: python -m minifluid.compat [-h] [--version] (SCRIPT | -m MODULE) [ARGS ...]

Run a legacy PaddlePaddle fluid 1.x (or paddle 2.x) script on minifluid, unchanged: inside it,
`import paddle`, `import paddle.fluid as fluid`, `from paddle.fluid import core`, ... resolve to
minifluid's modules. The script runs as `python SCRIPT ARGS` would run it: same sys.argv,
sys.path[0] (the script's folder), __file__, __name__ == "__main__", exit status and tracebacks.

  SCRIPT       the script: a .py file, or a folder or zip file holding __main__.py
  -m MODULE    run a module as `python -m MODULE ARGS` does (sys.path[0] is the current folder)
  ARGS         the script's own arguments (sys.argv[1:])
  -h, --help   show this help and exit
  --version    print minifluid's version and the fluid version it emulates, and exit
"""
import sys

from . import install, runner
from ..version import __version__, full_version

USAGE = __doc__.splitlines()[0]


def main(argv=None):
    """Parse our own options, then run the script or module; returns the exit status (or raises)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(f"{USAGE}\nerror: give a script to run, or -m MODULE (see --help)", file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if argv[0] == "--version":
        print(f"minifluid {__version__} (PaddlePaddle fluid {full_version} API)")
        return 0
    if argv[0] == "-m":
        if len(argv) < 2:
            print(f"{USAGE}\nerror: -m needs a module name", file=sys.stderr)
            return 2
        return _run(runner.run_module, argv[1], ["-m"] + argv[2:])
    if argv[0].startswith("-") and argv[0] != "-":
        print(f"{USAGE}\nerror: unknown option {argv[0]!r} (options go after the script's name)", file=sys.stderr)
        return 2
    return _run(runner.run_script, argv[0], argv)


def _run(runner, target, script_argv):
    """Run ``runner(target)`` as the program: CPython's tracebacks and exit status for what escapes it."""
    sys.modules.setdefault("minifluid.compat.__main__", sys.modules["__main__"])  # keep this module alive
    sys.argv = script_argv
    install()  # left installed: the script's threads and atexit hooks may still import paddle modules
    try:
        return runner(target)
    except SystemExit:
        raise  # sys.exit(code) / sys.exit("message"): the interpreter reports it, as for a script
    except BaseException as exc:
        # print the traceback from the script's first frame on, through the hook the script sees
        exc.__traceback__ = _from_the_script_on(exc.__traceback__)  # the default hook prints this one
        sys.excepthook(type(exc), exc, exc.__traceback__)
        sys.excepthook = _quiet  # then let the interpreter end as for any uncaught exception:
        raise  # status 1, or death by SIGINT after a clean shutdown for KeyboardInterrupt


def _quiet(*exc_info):
    """The exception was already reported with the script's frames only."""


def _from_the_script_on(tb):
    """``tb`` without the frames of this runner (the ones CPython would not have shown)."""
    first, ours = tb, (__file__, runner.__file__)
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in ours:
            first = tb.tb_next
        tb = tb.tb_next
    return first


if __name__ == "__main__":
    sys.exit(main())
