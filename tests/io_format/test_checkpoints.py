"""Pickled checkpoints as Paddle writes them (.pdparams / .pdopt of fluid.save and paddle.save), read through
a restricted unpickler: Paddle 2.6.2's files load with their values, and a crafted file cannot run code."""
import os
import pickle
import pickletools

import numpy as np
import pytest

import minifluid as fluid
from minifluid.compat import paddle_ns as paddle
from minifluid.io_format import safe_pickle
from minifluid.io_format.safe_pickle import UnsafePickleError


class _RunsCode:
    """What an attacker pickles: unpickling calls os.system (here: writes a marker file)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Evaluates:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (eval, (f"open({str(self.marker)!r}, 'w')",))


@pytest.mark.parametrize("make", [_RunsCode, _Evaluates])
@pytest.mark.parametrize("protocol", [2, 4])
def test_crafted_checkpoint_cannot_run_code(tmp_path, make, protocol):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.pdparams"
    path.write_bytes(pickle.dumps({"fc_0.w_0": np.zeros(2), "x": make(marker)}, protocol=protocol))
    with pytest.raises(UnsafePickleError, match="could run code|only paddle.save's"):
        safe_pickle.load(open(path, "rb"))
    main = fluid.Program()
    main.global_block().create_parameter("fc_0.w_0", [2], "float64")
    with pytest.raises(UnsafePickleError):
        fluid.load(main, str(tmp_path / "model"))
    with pytest.raises(UnsafePickleError):
        paddle.load(str(path))
    assert not marker.exists()


def test_object_arrays_and_unknown_classes_are_refused():
    with pytest.raises(UnsafePickleError, match="dtype object"):
        safe_pickle.loads(pickle.dumps(np.array([{"a": 1}], dtype=object)))
    with pytest.raises(UnsafePickleError, match="collections.Counter"):
        import collections
        safe_pickle.loads(pickle.dumps(collections.Counter("ab")))
    ok = {"a": [1, 2.5, "s", None, (True, b"x")], "b": np.arange(3, dtype="int16"), "c": np.float32(2)}
    got = safe_pickle.loads(pickle.dumps(ok, protocol=2))
    assert got["a"] == ok["a"] and got["c"] == 2 and got["b"].dtype == np.int16


@pytest.mark.parametrize("protocol", [2, 4])
def test_paddle_static_save_files_load_into_a_program(paddle_files, expected, protocol):
    state = fluid.load_program_state(os.path.join(paddle_files, f"ckpt_p{protocol}"))
    want = {k[5:]: v for k, v in expected.items() if k.startswith("ckpt/")}
    assert sorted(state) == sorted(want)
    for name, value in want.items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 6])
        fluid.layers.fc(fluid.layers.fc(x, 8, act="relu"), 3, act="softmax")
    names = {p.name: p for p in main.all_parameters()}  # fc_0 / fc_1 here, fc_3 / fc_4 in Paddle's run
    renamed = {"fc_3.w_0": "fc_0.w_0", "fc_3.b_0": "fc_0.b_0", "fc_4.w_0": "fc_1.w_0", "fc_4.b_0": "fc_1.b_0"}
    with fluid.scope_guard(fluid.Scope()):
        fluid.Executor().run(startup)
        fluid.set_program_state(main, {renamed[k]: v for k, v in state.items() if k in renamed})
        for paddle_name, ours in renamed.items():
            np.testing.assert_array_equal(np.array(fluid.global_scope().find_var(ours).get_tensor()),
                                          want[paddle_name])
    assert set(renamed.values()) == set(names)


def test_fluid_save_writes_paddles_pickle_and_program(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3])
        loss = fluid.layers.reduce_mean(fluid.layers.fc(x, 2))
        fluid.optimizer.Adam(0.1).minimize(loss)
    with fluid.scope_guard(fluid.Scope()):
        fluid.Executor().run(startup)
        fluid.save(main, str(tmp_path / "m"))
        w = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor())
    data = (tmp_path / "m.pdparams").read_bytes()
    assert data[:2] == b"\x80\x02"  # pickle protocol 2, as fluid 1.x wrote
    globals_used = {arg for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}
    assert {g.split(" ")[0] for g in globals_used} <= {"numpy.core.multiarray", "numpy._core.multiarray", "numpy",
                                                       "_codecs"}
    params = pickle.loads(data)  # what Paddle does with it
    assert sorted(params) == ["fc_0.b_0", "fc_0.w_0"] and np.array_equal(params["fc_0.w_0"], w)
    assert "learning_rate_0" in pickle.loads((tmp_path / "m.pdopt").read_bytes())
    program = fluid.Program.parse_from_string((tmp_path / "m.pdmodel").read_bytes())
    assert [op.type for op in program.global_block().ops] == [op.type for op in main.global_block().ops]


def test_big_arrays_are_split_below_protocol_4_and_joined_on_load(monkeypatch, tmp_path):
    from minifluid import program_state
    monkeypatch.setattr(program_state, "SLICE_BYTES", 16 * 4 - 1)  # Paddle's 1 GiB, scaled down
    w, b = np.arange(40, dtype="float32").reshape(4, 10), np.arange(3, dtype="float32")
    split = program_state.unpack_saved_dict({"w": w, "b": b}, 2)
    assert split["UnpackBigParamInfor@@"] == {"w": {"OriginShape": (4, 10), "slices": ["w@@.0", "w@@.1", "w@@.2"]}}
    assert [split[f"w@@.{i}"].size for i in range(3)] == [15, 15, 10] and "w" not in split
    assert "UnpackBigParamInfor@@" not in program_state.unpack_saved_dict({"w": w}, 4)
    main = fluid.Program()
    main.global_block().create_parameter("w", [4, 10], "float32")
    (tmp_path / "m.pdparams").write_bytes(pickle.dumps(split, protocol=2))
    state = fluid.load_program_state(str(tmp_path / "m"))
    np.testing.assert_array_equal(state["w"], w)
    assert sorted(state) == ["b", "w"]


def test_paddle_save_files_from_paddle_load(paddle_files, expected):
    linear = paddle.load(os.path.join(paddle_files, "linear.pdparams"))
    assert sorted(linear) == ["bias", "weight"]
    np.testing.assert_array_equal(linear["weight"], expected["linear/weight"])
    table = paddle.load(os.path.join(paddle_files, "linear.pdparams"), keep_name_table=True)
    assert table["StructuredToParameterName@@"] == {"weight": "linear_0.w_0", "bias": "linear_0.b_0"}
    adam = paddle.load(os.path.join(paddle_files, "adam.pdopt"))
    for key, value in expected.items():
        if key.startswith("adam/"):
            np.testing.assert_array_equal(adam[key[5:]], value)
    nested = paddle.load(os.path.join(paddle_files, "nested.pdtensor"))
    np.testing.assert_array_equal(nested[0], expected["nested/weight"])
    np.testing.assert_array_equal(nested[1]["bias"], expected["nested/bias"])
    assert nested[1]["n"] == 3
    np.testing.assert_array_equal(paddle.load(os.path.join(paddle_files, "lodtensor.pdtensor")),
                                  expected["nested/weight"])
    np.testing.assert_array_equal(paddle.load(os.path.join(paddle_files, "params", "w_f32")),
                                  expected["param/w_f32"])


def test_paddle_save_writes_paddles_state_dict_format(tmp_path):
    with fluid.dygraph.guard():
        layer = paddle.nn.Linear(3, 2)
        paddle.save(layer.state_dict(), str(tmp_path / "l.pdparams"))
        paddle.save([layer.weight, {"b": layer.bias}], str(tmp_path / "nested"))
        names = (layer.weight.name, layer.bias.name)
        weight = layer.weight.numpy()
    saved = pickle.loads((tmp_path / "l.pdparams").read_bytes())
    assert saved["StructuredToParameterName@@"] == {"weight": names[0], "bias": names[1]}
    np.testing.assert_array_equal(saved["weight"], weight)
    nested = pickle.loads((tmp_path / "nested").read_bytes())
    assert nested[0][0] == names[0] and np.array_equal(nested[0][1], weight)  # Paddle's (name, array) tuples
    np.testing.assert_array_equal(paddle.load(str(tmp_path / "nested"))[0], weight)
    assert sorted(paddle.load(str(tmp_path / "l.pdparams"))) == ["bias", "weight"]
    with pytest.raises(ValueError, match="Expected 1<'protocol'<5"):
        paddle.save({}, str(tmp_path / "x"), protocol=5)


def test_load_program_state_var_list_holds_variables(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fluid.layers.fc(fluid.data("x", [None, 3]), 2)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.io.save_persistables(exe, str(tmp_path), main)
    persistables = fluid.io.get_program_persistable_vars(main)
    assert sorted(fluid.load_program_state(str(tmp_path), var_list=persistables)) == ["fc_0.b_0", "fc_0.w_0"]
    with pytest.raises(TypeError, match="value in var_list must be variable"):
        fluid.load_program_state(str(tmp_path), var_list=["fc_0.w_0"])
    with pytest.raises(ValueError, match="executor is required when loading model file saved with"):
        fluid.load(main, str(tmp_path))


def test_load_checks_shapes_against_the_var_desc(tmp_path):
    """fluid's tests reshape a parameter through ``var.desc.set_shape``; fluid.load then refuses the saved value."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fluid.layers.fc(fluid.data("x", [None, 3]), 2)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.save(main, str(tmp_path / "m"))
        w = main.global_block().var("fc_0.w_0")
        assert w.desc.name() == "fc_0.w_0" and w.desc.shape() == [3, 2] and w.desc.persistable()
        w.desc.set_shape([4, 2])
        assert w.shape == (4, 2) and w.desc.dtype() == "float32"
        with pytest.raises(RuntimeError, match="shape"):
            fluid.load(main, str(tmp_path / "m"), exe)


def test_a_variable_made_directly_joins_its_block_and_load_wants_its_file(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fluid.layers.fc(fluid.data("x", [None, 3]), 2)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        fluid.io.save_params(exe, str(tmp_path), main, filename="single")
        extra = fluid.framework.Variable(main.global_block(), shape=[1], name="not_saved")
        assert main.global_block().var("not_saved") is extra and extra in main.list_vars()
        with pytest.raises(RuntimeError, match="not_saved"):
            fluid.load(main, str(tmp_path / "single"), exe, fluid.io.get_program_persistable_vars(main) + [extra])
