"""Files minifluid wrote before it wrote fluid's formats: read where that is safe, refused clearly otherwise.

minifluid 0.1 saved each variable as a numpy ``.npy`` file (no extension), a ``filename=`` file as a
numpy ``.npz`` archive, and ``__model__`` as a pickle of its Program object. The numpy files are read
with ``allow_pickle=False`` (no code can run) and a ``DeprecationWarning``; a pickled Program is read
only through ``safe_pickle.load_legacy_program``, which builds nothing but minifluid's graph classes.
"""
import importlib
import io
import pickle
import warnings
import zipfile

import numpy as np

from . import safe_pickle
from .tensor_file import ModelFormatError

__all__ = ["NPY_MAGIC", "ZIP_MAGIC", "read_npy", "read_npz", "read_pickled_program", "warn_legacy"]

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def warn_legacy(source, what):
    warnings.warn(f"{source} is {what}, the format minifluid wrote before it wrote fluid's; reading it is "
                  "deprecated: save it again to get fluid's format (which Paddle reads too)",
                  DeprecationWarning, stacklevel=4)


def read_npy(f, source, name):
    """One variable from an old ``.npy`` parameter file (the file object is positioned at its start)."""
    warn_legacy(source, "a numpy .npy file")
    try:
        return np.load(f, allow_pickle=False), []
    except ValueError as e:
        raise ModelFormatError(f"{source} (variable {name!r}) is a numpy .npy file that cannot be read "
                               f"without unpickling, which minifluid never does: {e}") from None


def read_npz(data, source, names):
    """The named variables from an old ``.npz`` combined file (its bytes)."""
    warn_legacy(source, "a numpy .npz archive")
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, zipfile.BadZipFile) as e:
        raise ModelFormatError(f"{source} is a damaged .npz archive: {e}") from None
    with archive:
        missing = [n for n in names if n not in archive.files]
        if missing:
            raise ModelFormatError(f"{source} holds no variable(s) {missing} (it has {sorted(archive.files)})")
        return {n: (archive[n], []) for n in names}


# The classes a pickled minifluid 0.1 Program may hold: graph objects and the plain attribute objects of
# Parameters (regularizers, gradient clips). Unpickling only creates them (no __init__ runs for NEWOBJ).
_PROGRAM_CLASSES = {
    "minifluid.framework.program": {"Program"}, "minifluid.framework.block": {"Block"},
    "minifluid.framework.variable": {"Variable", "Parameter", "VarType"},
    "minifluid.framework.operator": {"Operator"},
    "minifluid.regularizer": {"L1DecayRegularizer", "L2DecayRegularizer"},
    "minifluid.clip": {"GradientClipByValue", "GradientClipByNorm", "GradientClipByGlobalNorm"},
}


def _enum_member(cls, name):
    """A pickled ``VarType.X`` is ``getattr(VarType, "X")``: only that, with an upper-case member name."""
    if getattr(cls, "__name__", None) != "VarType" or not isinstance(name, str) or not name.isupper():
        raise safe_pickle.UnsafePickleError(f"refusing getattr({cls!r}, {name!r})")
    return getattr(cls, name)


class _ProgramUnpickler(safe_pickle.RestrictedUnpickler):
    def find_class(self, module, name):
        if name in _PROGRAM_CLASSES.get(module, ()):
            return getattr(importlib.import_module(module), name)
        if (module, name) == ("builtins", "getattr"):
            return _enum_member
        return super().find_class(module, name)


def read_pickled_program(data, source, program_cls):
    """A Program from an old pickled ``__model__``, built only from minifluid's graph classes."""
    warn_legacy(source, "a pickled minifluid Program")
    try:
        program = _ProgramUnpickler(io.BytesIO(data), source).load()
    except pickle.UnpicklingError as e:
        raise ModelFormatError(f"{source} is a pickle minifluid cannot read safely: {e}") from None
    if not isinstance(program, program_cls):
        raise ModelFormatError(f"{source} is a pickle of a {type(program).__name__}, not of a minifluid Program")
    feeds = getattr(program, "_minifluid_feed_target_names", None)
    fetches = getattr(program, "_minifluid_fetch_target_names", None)
    if feeds is None or fetches is None:
        raise ModelFormatError(f"{source} is a pickled Program without the feed/fetch names of an inference model")
    return program, list(feeds), list(fetches)
