"""File formats: fluid's binary LoDTensor files (``tensor_file``), restricted unpickling of Paddle's
pickled checkpoints (``safe_pickle``), and the files minifluid 0.1 wrote (``legacy``). The program
format (ProgramDesc) lives with the graph IR, in ``framework/program_desc.py``."""
from .safe_pickle import UnsafePickleError
from .tensor_file import ModelFormatError

__all__ = ["ModelFormatError", "UnsafePickleError"]
