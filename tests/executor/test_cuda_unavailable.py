"""Asking for a GPU where none can be used stops at the call, naming the cause (issue 14.1)."""
import re
import sys
import types

import pytest

import minifluid as fluid
from minifluid import places
from minifluid.errors import CUDAUnavailableError
from minifluid.ops import registry


@pytest.fixture
def fake_cupy(monkeypatch):
    """Install a stand-in ``cupy`` module (or None: not installed) and re-probe; undone afterwards."""
    def install(module):
        monkeypatch.setitem(sys.modules, "cupy", module)
        places._cuda_probe.cache_clear()
    monkeypatch.setattr(registry, "_cupy", registry._cupy)
    yield install
    places._cuda_probe.cache_clear()


def _cupy_with(get_device_count):
    runtime = types.SimpleNamespace(getDeviceCount=get_device_count)
    return types.SimpleNamespace(__version__="13.3.0", cuda=types.SimpleNamespace(runtime=runtime))


def _no_driver():
    raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")


def _every_gpu_request():
    return [fluid.cuda_places, lambda: fluid.cuda_places(0), lambda: fluid.CUDAPlace(0).array_module()]


def test_without_cupy_every_gpu_request_says_install_the_extra(fake_cupy):
    fake_cupy(None)  # `import cupy` raises ModuleNotFoundError, as when it is not installed
    assert fluid.core.get_cuda_device_count() == 0 and not fluid.is_compiled_with_cuda()
    for ask in _every_gpu_request():
        with pytest.raises(CUDAUnavailableError, match=r"CuPy is not installed.*minifluid\[gpu\]"):
            ask()
    with pytest.raises(CUDAUnavailableError, match=r"cuda_places\(\).*or use fluid\.cpu_places\(\)"):
        fluid.cuda_places()
    with pytest.raises(CUDAUnavailableError, match=r"CUDAPlace\(0\) cannot be used.*or use fluid\.CPUPlace\(\)"):
        fluid.CUDAPlace(0).array_module()


@pytest.mark.parametrize("count, cause", [(_no_driver, r"finds no usable GPU \(RuntimeError: cudaErrorInsufficient"),
                                          (lambda: 0, "finds no GPU")])
def test_cupy_installed_without_a_usable_gpu_names_that_and_not_the_extra(fake_cupy, monkeypatch, count, cause):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    fake_cupy(_cupy_with(count))
    assert fluid.core.get_cuda_device_count() == 0
    for ask in _every_gpu_request():
        with pytest.raises(CUDAUnavailableError) as info:
            ask()
        message = str(info.value)
        assert "CuPy 13.3.0 is installed but" in message and "CUDA_VISIBLE_DEVICES=''" in message
        assert "nvidia-smi" in message and "pip install" not in message and "[gpu]" not in message
        assert re.search(cause, message)


def test_gpu_request_is_an_assertion_error_too_as_in_fluid(fake_cupy):
    fake_cupy(None)
    try:
        places = fluid.cuda_places()
    except AssertionError:  # fluid: `assert core.is_compiled_with_cuda(), "Not compiled with CUDA"`
        places = fluid.cpu_places(1)
    assert places == [fluid.CPUPlace()]


def test_with_gpus_places_follow_the_device_count_and_reject_unknown_ids(fake_cupy, monkeypatch):
    monkeypatch.delenv("FLAGS_selected_gpus", raising=False)
    cupy = _cupy_with(lambda: 2)
    fake_cupy(cupy)
    assert fluid.core.get_cuda_device_count() == 2 and fluid.is_compiled_with_cuda()
    assert fluid.cuda_places() == [fluid.CUDAPlace(0), fluid.CUDAPlace(1)]
    assert fluid.cuda_places(1) == [fluid.CUDAPlace(1)]
    assert fluid.CUDAPlace(1).array_module() is cupy
    with pytest.raises(CUDAUnavailableError, match=r"CUDAPlace\(2\) cannot be used: minifluid sees 2 GPU\(s\), "
                                                   r"ids 0 to 1.*pick a visible device id"):
        fluid.CUDAPlace(2).array_module()
    monkeypatch.setenv("FLAGS_selected_gpus", "1")
    assert fluid.cuda_places() == [fluid.CUDAPlace(1)]
