"""``fluid.layers.device``: fluid's place helper for graph builders, and its ``get_places`` op (registered
here, beside the layer, because its kernel needs the place classes)."""
import warnings

from ..framework import unique_name
from ..framework.variable import VarType
from ..ops.registry import register_op
from ..places import CPUPlace, CUDAPlace, cpu_places, get_cuda_device_count
from .helper import LayerHelper

__all__ = ["get_places"]

_DEVICE_TYPES = ("CUDA", "CPU", "AUTO")


def get_places(device_count=None, device_type=None):
    """A PLACE_LIST variable that the ``get_places`` op fills, when the program runs, with ``device_count``
    places (0 or None: all) of ``device_type``: "CPU", "CUDA" or "AUTO" (the default: the kind of the
    Executor's place; the CPU count is ``CPU_NUM``).

    Deprecated in fluid since 0.15 (its ParallelDo is gone): ``fluid.cpu_places()`` / ``fluid.cuda_places()``
    give the place list that ``CompiledProgram.with_data_parallel(places=...)`` takes."""
    warnings.warn("fluid.layers.get_places is deprecated since fluid 0.15; use fluid.cpu_places() or "
                  "fluid.cuda_places()", DeprecationWarning, stacklevel=2)
    if device_type is not None and str(device_type) not in _DEVICE_TYPES:
        raise ValueError(f"get_places: device_type should be one of {list(_DEVICE_TYPES)}, got {device_type!r}")
    helper = LayerHelper("get_places")
    out = helper.create_variable(name=unique_name.generate(helper.name + ".out"), type=VarType.PLACE_LIST,
                                 dtype=None)
    attrs = {} if device_count is None else {"device_count": int(device_count)}
    if device_type is not None:
        attrs["device_type"] = str(device_type)
    helper.append_op(type="get_places", outputs={"Out": [out]}, attrs=attrs)
    return out


@register_op("get_places", inputs=(), outputs=("Out",), attrs={"device_count": 0, "device_type": "AUTO"},
             context=True, no_gradient=True)
def _get_places_forward(ctx, attrs):
    """The list of places (a PLACE_LIST's value)."""
    kind = attrs["device_type"]
    if kind not in _DEVICE_TYPES:
        raise ValueError(f"get_places: attribute device_type should be one of {list(_DEVICE_TYPES)}, got {kind!r}")
    gpu = ctx.place.is_gpu_place() if kind == "AUTO" else kind == "CUDA"
    count = attrs["device_count"]
    if not gpu:
        return [CPUPlace() for _ in range(count)] if count else cpu_places()
    found = get_cuda_device_count()
    if count > found or not (count or found):
        raise ValueError(f"get_places: only {found} CUDA devices found, cannot set to {count or 'all'}")
    return [CUDAPlace(i) for i in range(count or found)]
