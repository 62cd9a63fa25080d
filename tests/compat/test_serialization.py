import numpy as np
import pytest

import minifluid as fluid
from minifluid import serialization


def _net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4])
        y = fluid.data("y", [None, 1], dtype="int64")
        h = fluid.layers.fc(x, 5, act="relu")
        h = fluid.layers.dropout(h, 0.3)
        logits = fluid.layers.fc(h, 3)
        loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(logits, y))
        fluid.optimizer.Adam(0.01).minimize(loss)
    return main, startup, logits, loss


def test_save_and_load_params_and_persistables(tmp_path):
    main, startup, logits, loss = _net()
    exe, scope = fluid.Executor(), fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        serialization.save_params(exe, str(tmp_path / "p"), main)
        serialization.save_persistables(exe, str(tmp_path / "all"), main, filename="all")
        w = np.array(scope.find_var("fc_0.w_0").get_tensor()).copy()
    assert sorted(p.name for p in main.all_parameters()) == sorted((tmp_path / "p").iterdir() and
                                                                   [f.name for f in (tmp_path / "p").iterdir()])
    other = fluid.Scope()
    with fluid.scope_guard(other):
        serialization.load_params(exe, str(tmp_path / "p"), main)
        serialization.load_persistables(exe, str(tmp_path / "all"), main, filename="all")
        np.testing.assert_array_equal(np.array(other.find_var("fc_0.w_0").get_tensor()), w)
        assert other.find_var("learning_rate_0") is not None


def test_inference_model_round_trip(tmp_path):
    main, startup, logits, loss = _net()
    exe, scope = fluid.Executor(), fluid.Scope()
    xs = np.random.RandomState(0).rand(6, 4).astype("float32")
    with fluid.scope_guard(scope):
        exe.run(startup)
        exe.run(main, feed={"x": xs, "y": np.zeros((6, 1), "int64")}, fetch_list=[loss])
        test_prog = main.clone(for_test=True)
        (expected,) = exe.run(test_prog, feed={"x": xs, "y": np.zeros((6, 1), "int64")}, fetch_list=[logits])
        with fluid.unique_name.guard():
            targets = fluid.io.save_inference_model(str(tmp_path), ["x"], [logits], exe, main)
    assert targets == ["save_infer_model/scale_0.tmp_0"]  # fluid 1.8's scale op on each target
    assert all(op.type != "scale" for op in main.global_block().ops)  # added to a copy, not to main
    with fluid.scope_guard(fluid.Scope()):
        prog, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
        assert feeds == ["x"] and [f.name for f in fetches] == targets
        ops = [op.type for op in prog.global_block().ops]
        assert ops[0] == "feed" and ops[-2:] == ["scale", "fetch"]
        assert all(op not in ("adam", "softmax_with_cross_entropy", "dropout_grad") for op in ops)
        (got,) = exe.run(prog, feed={"x": xs}, fetch_list=fetches)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_load_errors_are_clear(tmp_path):
    main, startup, logits, loss = _net()
    with pytest.raises(RuntimeError, match="Load operator fail to open file .*fc_0.w_0"):
        serialization.load_params(fluid.Executor(), str(tmp_path), main)
    with pytest.raises(ValueError, match="no inference model"):
        fluid.io.load_inference_model(str(tmp_path), fluid.Executor())


def test_fluid_save_and_load_restore_parameters_and_optimizer_state(tmp_path):
    main, startup, logits, loss = _net()
    exe, scope = fluid.Executor(), fluid.Scope()
    feed = {"x": np.ones((4, 4), "float32"), "y": np.zeros((4, 1), "int64")}
    with fluid.scope_guard(scope):
        exe.run(startup)
        exe.run(main, feed=feed, fetch_list=[loss])  # Adam's moments are no longer zero
        fluid.save(main, str(tmp_path / "ckpt" / "model"))
        saved = {v.name: np.array(scope.find_var(v.name).get_tensor()).copy()
                 for v in main.list_vars() if serialization.is_persistable(v)}
    assert sorted(f.name for f in (tmp_path / "ckpt").iterdir()) == ["model.pdmodel", "model.pdopt",
                                                                      "model.pdparams"]
    assert any("moment" in name for name in saved)
    fresh = fluid.Scope()
    with fluid.scope_guard(fresh):
        exe.run(startup)  # different random parameters, zero moments
        fluid.io.load(main, str(tmp_path / "ckpt" / "model.pdparams"))  # a file name works too
        for name, value in saved.items():
            np.testing.assert_array_equal(np.array(fresh.find_var(name).get_tensor()), value, err_msg=name)


def test_fluid_load_errors_name_the_missing_file_or_variable(tmp_path):
    main, startup, logits, loss = _net()
    exe = fluid.Executor()
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        with pytest.raises(ValueError, match=r"Parameter file \[.*nothing.pdparams\] not exits"):
            fluid.load(main, str(tmp_path / "nothing"))
        with pytest.raises(ValueError, match="received filename is empty string"):
            fluid.save(main, str(tmp_path) + "/")
        other_main, other_startup, _, _ = _net()
        with fluid.program_guard(other_main, other_startup), fluid.unique_name.guard("extra_"):
            fluid.layers.fc(fluid.data("z", [None, 2]), 2)  # a parameter the checkpoint lacks
        fluid.save(main, str(tmp_path / "m"))
        exe.run(other_startup)
        with pytest.raises(RuntimeError, match=r"Can not find \[extra_extra_fc_0.w_0\] in model file"):
            fluid.load(other_main, str(tmp_path / "m"))
