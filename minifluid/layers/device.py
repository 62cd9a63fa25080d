"""``fluid.layers.device``: fluid's place helper for graph builders."""
import warnings

from ..places import cpu_places, cuda_places, get_cuda_device_count

__all__ = ["get_places"]


def get_places(device_count=None, device_type=None):
    """``device_count`` places (all by default) of ``device_type``: "CPU", "CUDA" (or "GPU"), or "AUTO"
    (the default: CUDA when a GPU is visible, else CPU, whose count is ``CPU_NUM``).

    Deprecated in fluid since 0.15 (its ParallelDo is gone); here it returns the place list that
    ``CompiledProgram.with_data_parallel(places=...)`` takes."""
    warnings.warn("fluid.layers.get_places is deprecated since fluid 0.15; use fluid.cpu_places() or "
                  "fluid.cuda_places()", DeprecationWarning, stacklevel=2)
    kind = (device_type or "AUTO").upper()
    if kind not in ("AUTO", "CPU", "CUDA", "GPU"):
        raise ValueError(f"get_places: device_type should be 'CPU', 'CUDA' or 'AUTO', got {device_type!r}")
    if kind == "CPU" or (kind == "AUTO" and get_cuda_device_count() == 0):
        return cpu_places(device_count)
    places = cuda_places()
    return places[:device_count] if device_count is not None else places
