"""Places: where tensors live. CPU is numpy; CUDA is CuPy, used only when really present."""
import functools
import os
import sys

import numpy as np

from .ops import registry

__all__ = ["CPUPlace", "CUDAPlace", "CUDAPinnedPlace", "cpu_places", "cuda_places",
           "is_compiled_with_cuda", "non_empty_places", "place_array_module"]


class _Place:
    def is_gpu_place(self):
        return False

    def is_cpu_place(self):
        return False

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self.__dict__.items()))))


class CPUPlace(_Place):
    def is_cpu_place(self):
        return True

    def array_module(self):
        return np

    def __repr__(self):
        return "CPUPlace"


class CUDAPinnedPlace(CPUPlace):
    def __repr__(self):
        return "CUDAPinnedPlace"


class CUDAPlace(_Place):
    """A GPU. Constructing one is always allowed; running on it needs CuPy and a device."""

    def __init__(self, device_id=0):
        self.device_id = int(device_id)

    def is_gpu_place(self):
        return True

    def gpu_device_id(self):
        return self.device_id

    def array_module(self):
        if not is_compiled_with_cuda():
            raise RuntimeError(
                f"CUDAPlace({self.device_id}) cannot be used: minifluid found no CUDA GPU with CuPy. "
                "Install the GPU extra (pip install minifluid[gpu]) on a machine with an NVIDIA GPU, "
                "or use fluid.CPUPlace().")
        import cupy  # noqa: PLC0415 - optional GPU extra, imported only when a GPU place is used
        return cupy

    def __repr__(self):
        return f"CUDAPlace({self.device_id})"


@functools.lru_cache(maxsize=1)
def is_compiled_with_cuda():
    """True only when CuPy imports and sees at least one GPU."""
    cupy = registry._enable_cupy()
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def place_array_module(place):
    return place.array_module() if place is not None else np


def _cpu_num():
    if "CPU_NUM" not in os.environ:
        sys.stderr.write("!!! The CPU_NUM is not specified, you should set CPU_NUM in the environment "
                         "variable list. CPU_NUM indicates that how many CPUPlace are used in the current "
                         "task. And if this parameter are set as N (equal to the number of physical CPU "
                         "core) the program may be faster. CPU_NUM has been set to 1 by default.\n")
        os.environ["CPU_NUM"] = "1"
    return int(os.environ["CPU_NUM"])


def cpu_places(device_count=None):
    """``device_count`` CPUPlaces (default: the CPU_NUM environment variable, else 1)."""
    return [CPUPlace() for _ in range(device_count or _cpu_num())]


def cuda_places(device_ids=None):
    if device_ids is None:
        selected = os.environ.get("FLAGS_selected_gpus")
        if selected:
            device_ids = [int(s) for s in selected.split(",")]
        else:
            count = registry._enable_cupy().cuda.runtime.getDeviceCount() if is_compiled_with_cuda() else 0
            device_ids = range(count)
    elif not isinstance(device_ids, (list, tuple)):
        device_ids = [device_ids]
    return [CUDAPlace(i) for i in device_ids]


def non_empty_places(places, user):
    """``places`` (one place or a list) as a list; ValueError when it is empty: ``user`` (say "an iterable
    DataLoader") would otherwise feed nothing, forever."""
    places = list(places) if isinstance(places, (list, tuple)) else [places]
    if not places:
        raise ValueError(
            f"places is empty: {user} needs at least one place. fluid.cpu_places() is empty when the CPU_NUM "
            f"environment variable is 0 (here CPU_NUM={os.environ.get('CPU_NUM')!r}), and fluid.cuda_places() "
            "when no GPU is selected. Pass fluid.CPUPlace() (or fluid.cpu_places(1)), or set CPU_NUM to a "
            "positive number.")
    return places
