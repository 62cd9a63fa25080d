import gc
import warnings
import weakref

import numpy as np
import pytest

import minifluid as fluid
from minifluid.framework import unique_name


def _program(dtype="float32", label=True):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 784], dtype=dtype)
        lab = fluid.data("label", [None, 1], dtype="int64") if label else None
        b = main.global_block()
        s = b.create_var("s", dtype=None)
        b.append_op("scale", {"X": x}, {"Out": s}, {"scale": 2.0, "bias": 1.0})
        m = b.create_var("m", dtype=None)
        b.append_op("mean", {"X": s}, {"Out": m})
    return main, startup, x, lab, s, m


def test_run_feed_fetch_by_variable_and_name():
    main, _, x, _, s, m = _program(label=False)
    exe = fluid.Executor(fluid.CPUPlace())
    data = np.arange(2 * 784, dtype="float32").reshape(2, 784)
    out_m, out_s = exe.run(main, feed={"x": data}, fetch_list=[m, "s"], scope=fluid.Scope())
    np.testing.assert_allclose(out_s, data * 2 + 1)
    assert out_m.shape == (1,) and np.isclose(out_m[0], (data * 2 + 1).mean())


def test_numpy_feed_used_as_is_without_cast():
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.layers.data("x", [3])  # not feed-checked
        b = main.global_block()
        y = b.create_var("y", dtype=None)
        b.append_op("assign", {"X": x}, {"Out": y})
    (out,) = fluid.Executor().run(main, feed={"x": np.ones((2, 3), "float64")}, fetch_list=[y],
                                  scope=fluid.Scope())
    assert out.dtype == np.float64


def test_list_and_scalar_feeds_are_converted_to_var_dtype():
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [None, 2], dtype="int64")
        s = fluid.data("s", [1], dtype="float32")
        b = main.global_block()
        y, z = b.create_var("y", dtype=None), b.create_var("z", dtype=None)
        b.append_op("assign", {"X": x}, {"Out": y})
        b.append_op("assign", {"X": s}, {"Out": z})
    exe = fluid.Executor()
    out_y, out_z = exe.run(main, feed={"x": [[1, 2], [3, 4]], "s": 3}, fetch_list=[y, z], scope=fluid.Scope())
    assert out_y.dtype == np.int64 and out_y.tolist() == [[1, 2], [3, 4]]
    assert out_z.dtype == np.float32 and out_z.shape == (1,)
    with pytest.raises(TypeError, match="^Faild to convert input data to a regular ndarray"):
        exe.run(main, feed={"x": [[1, 2], [3]], "s": 1}, fetch_list=[y], scope=fluid.Scope())


def test_feed_shape_check_message():
    main, _, x, lab, s, m = _program()
    exe = fluid.Executor()
    with pytest.raises(ValueError) as e:
        exe.run(main, feed={"x": np.ones((32, 783), "float32"), "label": np.ones((32, 1), "int64")},
                fetch_list=[m], scope=fluid.Scope())
    assert str(e.value) == ("The fed Variable 'x' should have dimensions = 2, shape = (-1, 784), "
                            "but received fed shape [32, 783] on each device")
    with pytest.raises(ValueError, match="should have dimensions"):  # shape is checked before dtype
        exe.run(main, feed={"x": np.ones((32, 783), "float64")}, fetch_list=[m], scope=fluid.Scope())
    with pytest.raises(ValueError, match="dimensions = 2"):
        exe.run(main, feed={"x": np.ones((784,), "float32")}, fetch_list=[m], scope=fluid.Scope())


def test_feed_dtype_check_message():
    main, _, x, lab, s, m = _program()
    with pytest.raises(ValueError) as e:
        fluid.Executor().run(main, feed={"x": np.ones((2, 784), "float32"), "label": np.ones((2, 1))},
                             fetch_list=[m], scope=fluid.Scope())
    assert str(e.value) == "The data type of fed Variable 'label' must be 'int64', but received 'float64'"


def test_layers_data_is_not_feed_checked():
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.layers.data("x", [100])
        y = main.global_block().create_var("y", dtype=None)
        main.global_block().append_op("assign", {"X": x}, {"Out": y})
    (out,) = fluid.Executor().run(main, feed={"x": np.ones((1, 5), "float32")}, fetch_list=[y],
                                  scope=fluid.Scope())
    assert out.shape == (1, 5)


def test_unknown_feed_warns_and_is_ignored():
    main, _, x, _, s, m = _program(label=False)
    with pytest.warns(UserWarning, match="The variable nope is not found in program"):
        (out,) = fluid.Executor().run(main, feed={"x": np.zeros((1, 784), "float32"), "nope": 1},
                                      fetch_list=[m], scope=fluid.Scope())
    assert out[0] == 1.0


def test_fetch_unknown_name_raises_naming_it():
    main, *_ = _program(label=False)
    with pytest.raises(ValueError, match="'nope'"):
        fluid.Executor().run(main, feed={"x": np.zeros((1, 784), "float32")}, fetch_list=["nope"],
                             scope=fluid.Scope())


def test_feed_container_rules():
    main, _, x, _, s, m = _program(label=False)
    exe = fluid.Executor()
    data = {"x": np.zeros((1, 784), "float32")}
    assert exe.run(main, feed=[data], fetch_list=[m], scope=fluid.Scope())[0][0] == 1.0
    with pytest.raises(AssertionError, match="Not compiled with data parallel"):
        exe.run(main, feed=[data, data], fetch_list=[m])
    with pytest.raises(TypeError, match="feed requires dict as its Parameter. But you passed in"):
        exe.run(main, feed="x", fetch_list=[m])


def test_uninitialized_fetch_is_none_and_missing_input_is_clear():
    p = fluid.Program()
    b = p.global_block()
    w = b.create_parameter("w", [2, 2])
    out = b.create_var("out", dtype=None)
    other = b.create_var("other", [1])
    b.append_op("assign", {"X": w}, {"Out": out})
    with pytest.raises(RuntimeError, match=r"\['w'\].*startup program"):
        fluid.Executor().run(p, fetch_list=[out], scope=fluid.Scope())
    q = fluid.Program()
    q.global_block().create_var("lonely", [1])
    assert fluid.Executor().run(q, fetch_list=["lonely"], scope=fluid.Scope()) == [None]


def test_lod_feed_and_fetch():
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [None, 1], dtype="int64", lod_level=1)
        y = main.global_block().create_var("y", dtype=None)
        main.global_block().append_op("assign", {"X": x}, {"Out": y})
    t = fluid.create_lod_tensor(np.arange(9).reshape(9, 1).astype("int64"), [[3, 2, 4]], fluid.CPUPlace())
    exe, scope = fluid.Executor(), fluid.Scope()
    (xv,) = exe.run(main, feed={"x": t}, fetch_list=["x"], scope=scope, return_numpy=False)
    assert xv.recursive_sequence_lengths() == [[3, 2, 4]] and xv.lod() == [[0, 3, 5, 9]]
    with pytest.raises(RuntimeError, match="Some of your fetched tensors hold LoD information"):
        exe.run(main, feed={"x": t}, fetch_list=["x"], scope=scope)


def _shared_param_program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        name = unique_name.generate("fc") + ".w_0"
        w = main.global_block().create_parameter(name, [4, 2])
        sw = startup.global_block().create_parameter(name, [4, 2])
        startup.global_block().append_op("uniform_random", outputs={"Out": sw},
                                         attrs={"shape": [4, 2], "seed": 1})
        out = main.global_block().create_var("out", dtype=None)
        main.global_block().append_op("mul", {"X": x, "Y": w}, {"Out": out})
    return main, startup, out


def test_startup_initializes_params_and_guards_share_them_through_scope():
    with unique_name.guard():
        train, train_start, out1 = _shared_param_program()
    with unique_name.guard():
        test, _, out2 = _shared_param_program()
    scope = fluid.Scope()
    exe = fluid.Executor()
    exe.run(train_start, scope=scope)
    w = np.array(scope.find_var("fc_0.w_0").get_tensor())
    assert w.shape == (4, 2) and np.all(np.abs(w) <= 1)
    feed = {"x": np.ones((3, 4), "float32")}
    a = exe.run(train, feed=feed, fetch_list=[out1], scope=scope)[0]
    b = exe.run(test, feed=feed, fetch_list=[out2], scope=scope)[0]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, feed["x"] @ w, rtol=1e-6)


def test_plan_is_cached_and_invalidated_by_edits():
    main, _, x, _, s, m = _program(label=False)
    exe, scope = fluid.Executor(), fluid.Scope()
    feed = {"x": np.zeros((1, 784), "float32")}
    exe.run(main, feed=feed, fetch_list=[m], scope=scope)
    plans = exe._plans[main]
    plan = next(iter(plans.values()))
    exe.run(main, feed=feed, fetch_list=[m], scope=scope)
    assert len(plans) == 1 and next(iter(plans.values())) is plan
    m2 = main.global_block().create_var("m2", dtype=None)
    main.global_block().append_op("scale", {"X": m}, {"Out": m2}, {"scale": 3.0})
    (v,) = exe.run(main, feed=feed, fetch_list=[m2], scope=scope)
    assert v[0] == 3.0


def test_the_plan_cache_does_not_keep_programs_alive():
    exe = fluid.Executor()

    def run_a_program():
        main, startup, x, *_ = _program()
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        exe.run(main, feed={"x": np.ones((2, 784), "float32"), "label": np.zeros((2, 1), "int64")}, scope=scope)
        return weakref.ref(main), weakref.ref(startup)

    refs = [run_a_program() for _ in range(3)]
    gc.collect()
    assert all(r() is None for pair in refs for r in pair) and len(exe._plans) == 0


def test_fetched_persistable_value_is_a_snapshot():
    p = fluid.Program()
    b = p.global_block()
    w = b.create_parameter("w", [2])
    b.append_op("scale", {"X": w}, {"Out": w}, {"scale": 2.0})
    scope = fluid.Scope()
    scope.var("w").get_tensor().set(np.ones(2, "float32"), fluid.CPUPlace())
    exe = fluid.Executor()
    (first,) = exe.run(p, fetch_list=[w], scope=scope)
    exe.run(p, fetch_list=[w], scope=scope)
    assert first.tolist() == [2.0, 2.0]


def test_kernel_errors_name_the_operator():
    p = fluid.Program()
    b = p.global_block()
    x, y = b.create_var("x", [2, 3]), b.create_var("y", [4, 5])
    out = b.create_var("out")
    b.append_op("mul", {"X": x, "Y": y}, {"Out": out})
    with pytest.raises(ValueError) as e:
        fluid.Executor().run(p, feed={"x": np.ones((2, 3)), "y": np.ones((4, 5))}, scope=fluid.Scope())
    assert "minifluid operator 'mul'" in "".join(getattr(e.value, "__notes__", []))


def test_global_scope_and_scope_guard():
    s = fluid.Scope()
    main, _, x, _, _, m = _program(label=False)
    with fluid.scope_guard(s):
        assert fluid.global_scope() is s
        fluid.Executor().run(main, feed={"x": np.zeros((1, 784), "float32")}, fetch_list=[m])
    assert fluid.global_scope() is not s
    assert s.find_var("m") is not None and np.array(s.find_var("m").get_tensor())[0] == 1.0
    kid = s.new_scope()
    assert kid.find_var("m") is not None and kid.find_var("zzz") is None


def test_scope_tensor_set_copies_so_training_never_writes_into_user_arrays():
    p = fluid.Program()
    b = p.global_block()
    w = b.create_parameter("w", [2])
    lr, g = b.create_var("lr", [1]), b.create_var("g", [2])
    b.append_op("sgd", {"Param": w, "LearningRate": lr, "Grad": g}, {"ParamOut": w})  # updates in place
    scope = fluid.Scope()
    mine = np.ones(2, "float32")
    scope.var("w").get_tensor().set(mine, fluid.CPUPlace())
    fluid.Executor().run(p, feed={"lr": np.ones(1, "float32"), "g": np.ones(2, "float32")}, scope=scope)
    assert mine.tolist() == [1.0, 1.0]
    assert np.array(scope.find_var("w").get_tensor()).tolist() == [0.0, 0.0]


def test_a_fetched_one_element_array_converts_to_a_python_number_as_legacy_scripts_expect():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 3])
        loss = fluid.layers.mean(x)
        doubled = fluid.layers.scale(x, 2.0)
    fetched_loss, fetched_doubled = fluid.Executor().run(main, feed={"x": np.full((2, 3), 1.5, "float32")},
                                                         fetch_list=[loss, doubled], scope=fluid.Scope())
    assert isinstance(fetched_loss, np.ndarray) and fetched_loss.shape == (1,)  # fluid's shape for a loss
    assert float(fetched_loss) == 1.5 and "loss %.2f" % fetched_loss == "loss 1.50" and int(fetched_loss) == 1
    assert type(fetched_doubled) is np.ndarray  # bigger results stay plain arrays


def test_feed_check_skips_dim_0_when_the_fed_tensor_carries_lod():
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [4, 3], dtype="float32")  # lod_level 0, fixed dim 0
        seq = fluid.data("seq", [2, 1], dtype="int64", lod_level=1)
        y = fluid.layers.scale(x, scale=1.0)
    exe, scope = fluid.Executor(), fluid.Scope()
    lod = fluid.create_lod_tensor(np.ones([10, 3], "float32"), [[1, 2, 3, 4]], fluid.CPUPlace())
    assert exe.run(main, feed={"x": lod}, fetch_list=[y], scope=scope, return_numpy=False)[0].shape() == [10, 3]
    with pytest.raises(ValueError, match=r"'x' should have dimensions = 2, shape = \(4, 3\), but received fed "
                                         r"shape \[10, 3\]"):
        exe.run(main, feed={"x": np.ones([10, 3], "float32")}, fetch_list=[y], scope=scope)
    with pytest.raises(ValueError, match=r"'seq' should have dimensions = 2, shape = \(2, 1\), but received fed "
                                         r"shape \[5, 1\]"):  # no LoD fed: dim 0 is checked, lod_level or not
        exe.run(main, feed={"x": lod, "seq": np.ones([5, 1], "int64")}, fetch_list=[y], scope=scope,
                return_numpy=False)
