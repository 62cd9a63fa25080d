"""``python -m minifluid.compat SCRIPT [ARGS...]``: run a legacy fluid script on minifluid."""
import runpy
import sys

from . import install, uninstall


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    script = argv[0]
    sys.argv = argv
    install()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        uninstall()
    return 0


if __name__ == "__main__":
    sys.exit(main())
