"""``fluid.core``: the names legacy code imports from the C++ core, backed by Python objects."""
from .errors import EOFException
from .executor.scope import Scope
from .lod_tensor import LoDTensor, LoDTensorArray
from .places import CPUPlace, CUDAPinnedPlace, CUDAPlace, get_cuda_device_count, is_compiled_with_cuda

EnforceNotMet = RuntimeError

__all__ = ["CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "EOFException", "EnforceNotMet", "LoDTensor", "LoDTensorArray",
           "Scope", "get_cuda_device_count", "is_compiled_with_cuda"]
