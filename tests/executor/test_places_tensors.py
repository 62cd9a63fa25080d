import numpy as np
import pytest

import minifluid as fluid


def test_cpu_places_reads_cpu_num(monkeypatch, capsys):
    monkeypatch.delenv("CPU_NUM", raising=False)
    assert fluid.cpu_places() == [fluid.CPUPlace()]
    assert "CPU_NUM" in capsys.readouterr().err
    monkeypatch.setenv("CPU_NUM", "3")
    assert len(fluid.cpu_places()) == 3
    assert len(fluid.cpu_places(2)) == 2


@pytest.mark.skipif(fluid.is_compiled_with_cuda(), reason="checks the no-GPU behaviour")
def test_cuda_place_constructs_but_fails_clearly_when_used():
    place = fluid.CUDAPlace(0)
    assert repr(place) == "CUDAPlace(0)" and place.is_gpu_place()
    with pytest.raises(RuntimeError, match="CUDAPlace\\(0\\) cannot be used.*CPUPlace"):
        fluid.LoDTensor().set(np.ones(2), place)


def test_lod_tensor_api_and_zero_copy():
    a = np.arange(6, dtype="float32").reshape(3, 2)
    t = fluid.LoDTensor()
    t.set(a, fluid.CPUPlace())
    assert t.shape() == [3, 2]
    assert np.shares_memory(np.array(t, copy=False), a) and np.asarray(t) is a
    t.set_recursive_sequence_lengths([[1, 2]])
    assert t.recursive_sequence_lengths() == [[1, 2]] and t.lod() == [[0, 1, 3]]
    assert t.has_valid_recursive_sequence_lengths()
    t.set_recursive_sequence_lengths([[1, 1]])
    assert not t.has_valid_recursive_sequence_lengths()


def test_create_lod_tensor_from_list_and_array():
    t = fluid.create_lod_tensor([[1, 2, 3], [4, 5]], [[3, 2]], fluid.CPUPlace())
    assert t.shape() == [5, 1] and t.recursive_sequence_lengths() == [[3, 2]]
    with pytest.raises(ValueError):
        fluid.create_lod_tensor(np.ones((4, 1)), [[3, 2]], fluid.CPUPlace())


def test_core_names():
    assert issubclass(fluid.core.EOFException, Exception)
    assert fluid.core.LoDTensor is fluid.LoDTensor and fluid.core.Scope is fluid.Scope


def test_np_array_of_a_parameter_is_a_snapshot_that_in_place_updates_leave_alone():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1, param_attr="w"))
        fluid.optimizer.SGD(0.5).minimize(loss)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    tensor = scope.find_var("w").get_tensor()
    before, live = np.array(tensor), np.asarray(tensor)
    exe.run(main, feed={"x": np.ones((4, 2), "float32")}, scope=scope)
    np.testing.assert_allclose(np.array(tensor), before - 0.5)  # d(mean(x w + b))/dw = 1 for x of ones
    np.testing.assert_array_equal(live, np.array(tensor))  # asarray may share the parameter's memory
