"""ParallelExecutor, layers.device.get_places, fluid's layer module paths, memory_optimize (issue 17.1)."""
import importlib
import logging

import numpy as np
import pytest

import minifluid as fluid
from minifluid import compat


def _mlp():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4])
        y = fluid.data("y", [None, 1], dtype="int64")
        loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(x, 3), y))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss


def _batch():
    rng = np.random.RandomState(1)
    return {"x": rng.rand(6, 4).astype("float32"), "y": rng.randint(0, 3, (6, 1)).astype("int64")}


def _trained_params(run_step):
    main, startup, loss = _mlp()
    scope = fluid.Scope()
    fluid.Executor().run(startup, scope=scope)
    losses = [run_step(main, loss, scope) for _ in range(3)]
    return losses, {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}


def test_parallel_executor_steps_like_compiled_program_on_its_places(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    batch = _batch()

    def by_pe(main, loss, scope):
        pe = by_pe.pe = getattr(by_pe, "pe", None) or fluid.ParallelExecutor(
            use_cuda=False, loss_name=loss.name, main_program=main, scope=scope)
        return pe.run([loss.name], feed=batch)[0]

    def by_compiled(main, loss, scope):
        cp = by_compiled.cp = getattr(by_compiled, "cp", None) or fluid.CompiledProgram(main).with_data_parallel(
            loss_name=loss.name, places=fluid.cpu_places(2))
        return fluid.Executor().run(cp, feed=batch, fetch_list=[loss], scope=scope)[0]

    pe_losses, pe_params = _trained_params(by_pe)
    cp_losses, cp_params = _trained_params(by_compiled)
    assert by_pe.pe.device_count == 2
    assert np.asarray(pe_losses[0]).shape == (2,)  # one loss per place, merged as fluid returns them
    np.testing.assert_allclose(pe_losses, cp_losses, rtol=1e-6)
    assert pe_losses[-1].mean() < pe_losses[0].mean()
    for name in pe_params:
        np.testing.assert_allclose(pe_params[name], cp_params[name], rtol=1e-6)
    by_pe.pe.drop_local_exe_scopes()


def test_parallel_executor_feed_dict_and_share_vars_from(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "1")
    main, startup, loss = _mlp()
    scope = fluid.Scope()
    fluid.Executor().run(startup, scope=scope)
    train = fluid.ParallelExecutor(False, loss_name=loss.name, main_program=main, scope=scope)
    test = fluid.ParallelExecutor(False, main_program=main.clone(for_test=True), share_vars_from=train, scope=scope)
    with pytest.warns(DeprecationWarning, match="feed_dict"):
        first = train.run([loss.name], feed_dict=_batch())[0]
    after = test.run([loss.name], feed=_batch())[0]
    assert after.shape == (1,) and after[0] < first[0]  # the test program read the trained parameters
    with pytest.raises(ValueError, match="both feed and feed_dict"):
        train.run([loss.name], feed=_batch(), feed_dict=_batch())
    with pytest.raises(TypeError, match="share_vars_from should be ParallelExecutor"):
        fluid.ParallelExecutor(False, main_program=main, share_vars_from=object())


def _places_of(monkeypatch, **kwargs):
    """The value the get_places op gives, run on a CPUPlace with CPU_NUM=3."""
    monkeypatch.setenv("CPU_NUM", "3")
    main = fluid.Program()
    with fluid.program_guard(main), pytest.warns(DeprecationWarning, match="get_places is deprecated"):
        places = fluid.layers.device.get_places(**kwargs)
    assert places.type == fluid.core.VarDesc.VarType.PLACE_LIST
    assert [op.type for op in main.global_block().ops] == ["get_places"]
    places.persistable = True  # kept in the scope after the run
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(main, scope=scope)
    return scope.find_var(places.name).value()


def test_get_places_is_a_place_list_variable_filled_when_the_program_runs(monkeypatch):
    assert _places_of(monkeypatch, device_type="CPU") == [fluid.CPUPlace()] * 3
    assert _places_of(monkeypatch) == [fluid.CPUPlace()] * 3  # AUTO: the Executor's place
    got = _places_of(monkeypatch, device_count=2, device_type="CPU")
    assert len(got) == 2 and all(isinstance(p, fluid.CPUPlace) for p in got)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="'TPU'"):
        fluid.layers.get_places(device_type="TPU")


def test_memory_optimize_and_release_memory_warn_and_change_nothing(caplog):
    main, _, _ = _mlp()
    before = [op.type for op in main.global_block().ops]
    version = main._version
    with caplog.at_level(logging.WARNING):
        assert fluid.memory_optimize(main, level=0) is None
        fluid.release_memory(main)
    assert [op.type for op in main.global_block().ops] == before and main._version == version
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "memory_optimize() is deprecated" in messages[0] and "release_memory() is deprecated" in messages[1]


@pytest.fixture
def paddle():
    compat.install()
    try:
        yield importlib.import_module("paddle")
    finally:
        compat.uninstall()


@pytest.mark.parametrize("module", ["nn", "io", "tensor", "control_flow", "ops", "learning_rate_scheduler",
                                    "detection", "metric_op"])
def test_layer_module_paths_resolve_to_the_layer_functions(paddle, module):
    mod = importlib.import_module(f"paddle.fluid.layers.{module}")
    assert mod.fc is fluid.layers.fc and mod.fill_constant is fluid.layers.fill_constant
    with pytest.raises(compat.UnsupportedAPIError, match=f"paddle.fluid.layers.{module}.no_such_layer"):
        mod.no_such_layer  # noqa: B018


def test_compat_imports_of_the_helpers(paddle):
    from paddle.fluid.layers.device import get_places
    from paddle.fluid.parallel_executor import ParallelExecutor
    import paddle.fluid as pfluid
    assert get_places is fluid.layers.device.get_places and ParallelExecutor is fluid.ParallelExecutor
    assert pfluid.memory_optimize is fluid.memory_optimize and pfluid.release_memory is fluid.release_memory
