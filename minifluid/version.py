"""Versions: minifluid's own, and the fluid release whose API it emulates (``paddle.version``).

``__version__`` is minifluid's package version: setup.cfg reads it from here
(``version = attr: minifluid.version.__version__``), so it is written once. ``full_version`` and
its parts are the fluid level legacy scripts see as ``paddle.__version__``, ``fluid.__version__``
and ``paddle.version.full_version``, and what ``require_version`` checks against.
"""
import re

__version__ = "0.1.0"

full_version = "1.8.5"
major, minor, patch = full_version.split(".")
rc = "0"
istaged = True
commit = f"minifluid-{__version__}"
with_mkl = "OFF"

__all__ = ["commit", "full_version", "istaged", "major", "minor", "mkl", "patch", "rc", "require_version", "show",
           "with_mkl"]

_VERSION_FORMAT = re.compile(r"\d+(\.\d+){0,3}")


def show():
    """Print the emulated fluid version, part by part (as ``paddle.version.show()`` does)."""
    for name in ("full_version", "major", "minor", "patch", "rc"):
        print(f"{name}:", globals()[name])


def mkl():
    """'OFF': minifluid runs on numpy's BLAS, not a PaddlePaddle build with MKL."""
    return with_mkl


def _parts(version):
    return [int(p) for p in (version.split(".") + ["0"] * 4)[:4]]


def require_version(min_version, max_version=None):
    """Check that the emulated fluid version lies in [min_version, max_version], as fluid 1.8 does.

    Args:
        min_version (str): the lowest acceptable version, like '1.4.0' (up to four numbers).
        max_version (str, optional): the highest acceptable version; None (default) accepts any
            version from ``min_version`` on.

    Raises:
        TypeError: ``min_version`` is not a str, or ``max_version`` is neither a str nor None.
        ValueError: a version is not in the format ``\\d+(\\.\\d+){0,3}``.
        Exception: fluid's "VersionError: ..." when the emulated version is outside the range.
    """
    if not isinstance(min_version, str):
        raise TypeError(f"The type of 'min_version' in require_version must be str, but received "
                        f"{type(min_version)}.")
    if not isinstance(max_version, (str, type(None))):
        raise TypeError(f"The type of 'max_version' in require_version must be str or type(None), but "
                        f"received {type(max_version)}.")
    for arg, value in (("min_version", min_version), ("max_version", max_version)):
        if value is not None and not _VERSION_FORMAT.fullmatch(value):
            raise ValueError(f"The value of '{arg}' in require_version must be in format '\\d+(\\.\\d+){{0,3}}', "
                             f"like '1.5.2.0', but received {value}")
    installed = _parts(full_version)[:3] + [int(rc)]
    if max_version is not None:
        if not _parts(min_version) <= installed <= _parts(max_version):
            raise Exception(f"VersionError: PaddlePaddle version in [{min_version}, {max_version}] required, but "
                            f"{full_version} installed.")
    elif installed < _parts(min_version):
        raise Exception(f"VersionError: PaddlePaddle version {min_version} or higher is required, but "
                        f"{full_version} installed, please upgrade your PaddlePaddle to {min_version} or other "
                        "higher version.")
