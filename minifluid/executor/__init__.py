"""Running Programs: Scope, feed/fetch handling, Executor."""
from .executor import Executor
from .feed_fetch import as_lodtensor as _as_lodtensor  # noqa: F401  (fluid.executor._as_lodtensor)
from ..lod_tensor import LoDTensor, LoDTensorArray
from .scope import Scope, global_scope, scope_guard

__all__ = ["Executor", "Scope", "as_numpy", "global_scope", "scope_guard"]


def as_numpy(tensor):
    """A fetched LoDTensor (or a list / LoDTensorArray of them) as numpy arrays, as fluid's; a tensor that
    carries LoD raises, since its array alone loses the sequence boundaries."""
    if isinstance(tensor, (list, LoDTensorArray)):
        return [as_numpy(t) for t in tensor]
    if not isinstance(tensor, LoDTensor):
        raise TypeError(f"as_numpy expects a LoDTensor, got {type(tensor).__name__}")
    if tensor.lod():
        raise RuntimeError("Some of your fetched tensors hold LoD information. They can not be completely cast to "
                           "Python ndarray. Please set the parameter 'return_numpy' as 'False' to return LoDTensor "
                           "itself directly.")
    return tensor.__array__(copy=True) if tensor._is_initialized() else None
