"""``fluid.core``: the names legacy code imports from the C++ core, backed by Python objects."""
from .errors import EOFException
from .flags import registry as globals  # noqa: A001 - fluid's core.globals()
from .executor.scope import Scope
from .lod_tensor import LoDTensor, LoDTensorArray
from .framework.variable import VarType
from .inference_api import NativeConfig, PaddleBuf, PaddleDType, PaddleTensor, create_paddle_predictor
from .places import CPUPlace, CUDAPinnedPlace, CUDAPlace, Place, get_cuda_device_count, is_compiled_with_cuda

EnforceNotMet = RuntimeError
"""fluid's C++ enforcement error. minifluid's runtime errors are RuntimeErrors (a failing reader's
``ReaderKilledError`` too), so ``except core.EnforceNotMet`` catches what fluid's would."""

__all__ = ["CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "EOFException", "EnforceNotMet", "LoDTensor", "LoDTensorArray",
           "NativeConfig", "PaddleBuf", "PaddleDType", "PaddleTensor", "Place", "Scope", "VarDesc",
           "create_paddle_predictor", "get_cuda_device_count", "globals", "grad_var_suffix", "is_compiled_with_cuda"]


def _set_eager_deletion_mode(threshold, fraction, fast):
    """fluid's garbage-collection switch: minifluid's Executor always frees a variable after its last use
    (executor/plan.py), so the setting has nothing to change."""


def _set_fuse_parameter_group_size(size):
    """fluid's fused-gradient grouping (multi-device all-reduce): nothing to group in one process."""


class VarDesc:
    """fluid's ``core.VarDesc``, for its ``VarType`` enum (``core.VarDesc.VarType.FP32``)."""
    VarType = VarType


def grad_var_suffix():
    """The suffix of a variable's gradient name: ``x`` -> ``x@GRAD``."""
    return "@GRAD"
