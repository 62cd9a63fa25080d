"""The Executor's device path, exercised on CPU with a stand-in device array type.

On a GPU place the Executor moves feeds and every kernel result with the place's ``asarray``
(``cupy.asarray``); here a numpy subclass plays the device array so the mechanism is tested
without a GPU. The real CuPy run is in tests that skip without one.
"""
import numpy as np
import pytest

import minifluid as fluid


class DeviceArray(np.ndarray):
    """Marks arrays that went through the fake device's ``asarray``."""


class _FakeDeviceModule:
    @staticmethod
    def asarray(a):
        return np.asarray(a).view(DeviceArray)


class FakeGPUPlace(fluid.CPUPlace):
    def is_gpu_place(self):
        return True

    def array_module(self):
        return _FakeDeviceModule


def _mlp():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4])
        y = fluid.data("y", [None, 1], dtype="int64")
        h = fluid.layers.fc(x, 8, act="relu")
        loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 3), y))
        fluid.optimizer.Adam(0.05).minimize(loss)
    return main, startup, loss


def _train(place):
    main, startup, loss = _mlp()
    scope, exe = fluid.Scope(), fluid.Executor(place)
    rng = np.random.RandomState(0)
    feed = {"x": rng.rand(6, 4).astype("float32"), "y": rng.randint(0, 3, (6, 1)).astype("int64")}
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0] for _ in range(3)]
    return scope, main, losses


def test_gpu_place_keeps_every_value_on_the_device_and_matches_cpu():
    scope, main, losses = _train(FakeGPUPlace())
    _, _, cpu_losses = _train(fluid.CPUPlace())
    for p in main.all_parameters():
        assert isinstance(scope.find_value(p.name), DeviceArray), p.name
    assert isinstance(scope.find_value("x"), DeviceArray)
    np.testing.assert_allclose(np.concatenate(losses), np.concatenate(cpu_losses), rtol=1e-6)


@pytest.mark.skipif(fluid.is_compiled_with_cuda(), reason="checks the no-GPU behaviour")
def test_cuda_place_without_gpu_fails_at_first_run_with_a_clear_error():
    main, startup, loss = _mlp()
    with pytest.raises(RuntimeError, match=r"CUDAPlace\(0\) cannot be used"):
        fluid.Executor(fluid.CUDAPlace(0)).run(startup, scope=fluid.Scope())


@pytest.mark.skipif(not fluid.is_compiled_with_cuda(), reason="needs CuPy and a CUDA GPU")
def test_real_cuda_training_matches_cpu():
    scope, main, losses = _train(fluid.CUDAPlace(0))
    _, _, cpu_losses = _train(fluid.CPUPlace())
    np.testing.assert_allclose(np.concatenate(losses), np.concatenate(cpu_losses), rtol=1e-4)
