"""Files minifluid writes load in real Paddle and give minifluid's outputs. Runs only where Paddle itself is
importable (a side environment: pip install paddlepaddle==2.6.2 "numpy<2", then minifluid); skips elsewhere."""
import importlib.util
import os
import pickle

import numpy as np
import pytest

import minifluid as fluid
from minifluid.compat import paddle_ns


def _real_paddle():
    spec = importlib.util.find_spec("paddle")
    if spec is None or spec.origin is None or "minifluid" in spec.origin:  # absent, or compat's proxy
        pytest.skip("real Paddle is not installed here")
    import paddle
    if not hasattr(paddle, "base"):
        pytest.skip("the paddle found is not Paddle 2.x")
    paddle.enable_static()
    return paddle


pd = None


@pytest.fixture(scope="module", autouse=True)
def paddle_module():
    global pd
    pd = _real_paddle()
    yield pd


def _mlp():
    x = fluid.data("x", [None, 6])
    return x, fluid.layers.fc(fluid.layers.fc(x, 8, act="relu"), 3, act="softmax")


def _conv():
    x = fluid.data("img", [None, 1, 6, 6])
    conv = fluid.layers.conv2d(x, 4, 3, padding=1)
    norm = fluid.layers.batch_norm(conv, act="relu")
    return x, fluid.layers.fc(fluid.layers.pool2d(norm, 2, pool_stride=2), 3, act="softmax")


def _trained(build, tmp_path, params_filename, model_filename=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x, out = build()
    rng = np.random.RandomState(5)
    exe, scope = fluid.Executor(), fluid.Scope()
    feed = rng.rand(4, *x.shape[1:]).astype("float32")
    with fluid.scope_guard(scope):
        exe.run(startup)
        for v in main.list_vars():
            if v.persistable:
                value = rng.uniform(0.5, 1.5 if v.name.endswith("w_2") else -1, np.array(scope.find_var(v.name)
                                                                                          .get_tensor()).shape)
                scope.var(v.name).get_tensor().set(value.astype("float32"))
        (want,) = exe.run(main.clone(for_test=True), feed={x.name: feed}, fetch_list=[out])
        fluid.io.save_inference_model(str(tmp_path), [x.name], [out], exe, main, model_filename=model_filename,
                                      params_filename=params_filename)
    return feed, want, x.name


@pytest.mark.parametrize("build", [_mlp, _conv])
@pytest.mark.parametrize("params_filename", [None, "params"])
def test_minifluid_inference_model_runs_in_paddle(tmp_path, build, params_filename):
    feed, want, name = _trained(build, tmp_path, params_filename)
    exe = pd.static.Executor(pd.CPUPlace())
    with pd.static.scope_guard(pd.static.Scope()):
        prog, feeds, fetches = pd.static.load_inference_model(str(tmp_path), exe, model_filename="__model__",
                                                              params_filename=params_filename)
        (got,) = exe.run(prog, feed={feeds[0]: feed}, fetch_list=fetches)
    print(f"{build.__name__} params_filename={params_filename}: max |paddle - minifluid| = "
          f"{np.abs(got - want).max():.2e}")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_minifluid_pdmodel_pdiparams_run_in_paddle(tmp_path):
    feed, want, name = _trained(_conv, tmp_path, "net.pdiparams", "net.pdmodel")
    exe = pd.static.Executor(pd.CPUPlace())
    with pd.static.scope_guard(pd.static.Scope()):
        prog, feeds, fetches = pd.static.load_inference_model(str(tmp_path / "net"), exe)
        (got,) = exe.run(prog, feed={feeds[0]: feed}, fetch_list=fetches)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_parameter_files_byte_identical_after_a_trip_through_paddle(tmp_path):
    """minifluid writes, Paddle loads and writes again: the bytes do not change."""
    _trained(_conv, tmp_path / "mf", None)
    _trained(_conv, tmp_path / "mfc", "params")
    exe = pd.static.Executor(pd.CPUPlace())
    with pd.static.scope_guard(pd.static.Scope()):
        prog, _, _ = pd.static.load_inference_model(str(tmp_path / "mf"), exe, model_filename="__model__")
        pd.static.save_vars(exe, str(tmp_path / "pd"), prog, predicate=pd.static.io.is_persistable)
        pd.static.save_vars(exe, str(tmp_path / "pd"), prog, predicate=pd.static.io.is_persistable,
                            filename="params")
    names = sorted(f for f in os.listdir(tmp_path / "mf") if f != "__model__")
    assert names and names == sorted(f for f in os.listdir(tmp_path / "pd") if f != "params")
    for name in names:
        assert (tmp_path / "mf" / name).read_bytes() == (tmp_path / "pd" / name).read_bytes(), name
    assert (tmp_path / "mfc" / "params").read_bytes() == (tmp_path / "pd" / "params").read_bytes()


def test_fluid_save_checkpoint_loads_in_paddle(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x, out = _mlp()
        loss = fluid.layers.reduce_mean(out)
        fluid.optimizer.Adam(0.01).minimize(loss)
    with fluid.scope_guard(fluid.Scope()):
        fluid.Executor().run(startup)
        fluid.Executor().run(main, feed={"x": np.ones((2, 6), "float32")}, fetch_list=[loss])
        fluid.save(main, str(tmp_path / "ckpt"))
        want = {v.name: np.array(fluid.global_scope().find_var(v.name).get_tensor())
                for v in main.list_vars() if fluid.io.is_persistable(v)}
    state = pd.static.load_program_state(str(tmp_path / "ckpt"))
    assert sorted(state) == sorted(want)
    for name, value in want.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)
    program = pd.static.Program.parse_from_string((tmp_path / "ckpt.pdmodel").read_bytes())
    assert [op.type for op in program.global_block().ops] == [op.type for op in main.global_block().ops]


def test_paddle_save_state_dict_loads_in_paddle(tmp_path):
    with fluid.dygraph.guard():
        layer = paddle_ns.nn.Linear(3, 2)
        paddle_ns.save(layer.state_dict(), str(tmp_path / "l.pdparams"))
        want = {k: v.numpy() for k, v in layer.state_dict().items()}
    pd.disable_static()
    try:
        got = pd.load(str(tmp_path / "l.pdparams"))
        for key, value in want.items():
            np.testing.assert_array_equal(got[key].numpy(), value)
    finally:
        pd.enable_static()
    assert isinstance(pickle.loads((tmp_path / "l.pdparams").read_bytes()), dict)
