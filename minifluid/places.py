"""Places: where tensors live. CPU is numpy; CUDA is CuPy, used only when really present."""
import functools
import os
import sys

import numpy as np

from .errors import CUDAUnavailableError
from .ops import registry

__all__ = ["CPUPlace", "CUDAPlace", "CUDAPinnedPlace", "Place", "cpu_places", "cuda_places",
           "get_cuda_device_count", "is_compiled_with_cuda", "non_empty_places", "place_array_module"]


class _Place:
    _TYPE = None  # fluid's ``Place._type()``: the kind's index in its place variant (CUDA 0, CPU 2, pinned 3)

    def is_gpu_place(self):
        return False

    def is_cpu_place(self):
        return False

    def is_cuda_pinned_place(self):
        return False

    def _type(self):
        return self._TYPE

    def _equals(self, other):
        """fluid's place comparison: same kind and device (``other`` may be a ``core.Place``)."""
        return self == (other._place if isinstance(other, Place) else other)

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self.__dict__.items()))))


class CPUPlace(_Place):
    _TYPE = 2

    def is_cpu_place(self):
        return True

    def array_module(self):
        return np

    def __repr__(self):
        return "CPUPlace"


class CUDAPinnedPlace(CPUPlace):
    _TYPE = 3

    def is_cuda_pinned_place(self):
        return True

    def __repr__(self):
        return "CUDAPinnedPlace"


class CUDAPlace(_Place):
    """A GPU. Constructing one is always allowed; running on it needs CuPy and a device."""

    _TYPE = 0

    def __init__(self, device_id=0):
        self.device_id = int(device_id)

    def is_gpu_place(self):
        return True

    def gpu_device_id(self):
        return self.device_id

    get_device_id = gpu_device_id

    def array_module(self):
        """CuPy, once the device exists; otherwise ``CUDAUnavailableError`` naming the cause."""
        count = get_cuda_device_count()
        if not 0 <= self.device_id < count:
            _raise_unavailable(f"{self!r} cannot be used", "fluid.CPUPlace()",
                               f"minifluid sees {count} GPU(s), ids 0 to {count - 1}" if count else None)
        return registry._cupy

    def __repr__(self):
        return f"CUDAPlace({self.device_id})"


class Place:
    """fluid's ``core.Place``: a holder of any place, set with ``set_place`` (an executor's place, say)."""

    def __init__(self):
        self._place = CPUPlace()

    def set_place(self, place):
        self._place = place._place if isinstance(place, Place) else place

    def __getattr__(self, name):  # is_gpu_place, gpu_device_id, _type, ...: the held place's
        if name == "_place":
            raise AttributeError(name)
        return getattr(self._place, name)

    def _equals(self, other):
        return self._place._equals(other)

    def __eq__(self, other):
        return self._place._equals(other)

    def __hash__(self):
        return hash(self._place)

    def __repr__(self):
        return repr(self._place)


_INSTALL = 'install the GPU extra (pip install "minifluid[gpu]") on a machine with an NVIDIA GPU'
_MATCH = "install the cupy-cuda package that matches this machine's CUDA version"
_DRIVER = "check the NVIDIA driver (nvidia-smi) and CUDA_VISIBLE_DEVICES"


@functools.lru_cache(maxsize=1)
def _cuda_probe():
    """(number of usable GPUs, why there is none, what to do): asked of CuPy once per process."""
    try:
        import cupy  # noqa: PLC0415 - optional GPU extra, imported only when a GPU is asked about
    except ModuleNotFoundError as exc:
        if exc.name == "cupy":
            return 0, "CuPy is not installed", _INSTALL
        return 0, f"CuPy is installed but does not import ({type(exc).__name__}: {exc})", _MATCH
    except Exception as exc:  # a CuPy build for another CUDA version fails here with its own error types
        return 0, f"CuPy is installed but does not import ({type(exc).__name__}: {exc})", _MATCH
    version = getattr(cupy, "__version__", "?")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = "" if visible is None else f"; CUDA_VISIBLE_DEVICES={visible!r}"
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # no driver, driver too old, ...: CuPy reports it as a CUDA runtime error
        return 0, f"CuPy {version} is installed but finds no usable GPU ({type(exc).__name__}: {exc}{where})", _DRIVER
    if count <= 0:
        return 0, f"CuPy {version} is installed but finds no GPU{where}", _DRIVER
    registry._enable_cupy(cupy)
    return count, None, None


def _raise_unavailable(what, cpu_alternative, reason=None):
    count, why, fix = _cuda_probe()
    if count:
        reason, fix = reason, "pick a visible device id"
    raise CUDAUnavailableError(f"{what}: {reason or why}. To fix: {fix}, or use {cpu_alternative}.")


def get_cuda_device_count():
    """The number of GPUs minifluid can run on (0 without CuPy or without a usable GPU)."""
    return _cuda_probe()[0]


def is_compiled_with_cuda():
    """True only when CuPy imports and sees at least one GPU."""
    return get_cuda_device_count() > 0


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
    """CUDAPlaces for ``device_ids`` (an int or a list; default: ``FLAGS_selected_gpus``, else every GPU).

    Raises:
        CUDAUnavailableError: there is no usable GPU (CuPy missing, or no device), as fluid stops
            with "Not compiled with CUDA"; an empty list would only fail much later.
    """
    if not is_compiled_with_cuda():
        _raise_unavailable("fluid.cuda_places() needs a CUDA GPU and minifluid can use none",
                           "fluid.cpu_places()")
    if device_ids is None:
        selected = os.environ.get("FLAGS_selected_gpus")
        device_ids = [int(s) for s in selected.split(",")] if selected else range(get_cuda_device_count())
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
