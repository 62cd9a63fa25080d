"""fluid.layers.py_func: Python callables as ops, their gradients, their errors (ops/py_func.py)."""
import subprocess
import sys
import traceback

import numpy as np
import pytest

import minifluid as fluid


def _var(name, shape, dtype="float32"):
    return fluid.default_main_program().current_block().create_var(name=name, shape=shape, dtype=dtype)


def _run(main, startup, feed, fetch):
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe, scope, exe.run(main, feed=feed, fetch_list=fetch, scope=scope)


def _guard():
    main, startup = fluid.Program(), fluid.Program()
    return main, startup, fluid.program_guard(main, startup)


def test_one_output_gets_what_the_function_returns_and_the_function_gets_lod_tensors():
    seen = []

    def func(x):
        seen.append((type(x), x.recursive_sequence_lengths(), x.shape()))
        return np.tanh(x)  # numpy takes the LoDTensor as it is (its __array__)
    main, startup, guard = _guard()
    with guard:
        x = fluid.data("x", [None, 3], lod_level=1)
        out = fluid.layers.py_func(func, x, _var("y", [-1, 3]))
    assert out.name == "y"
    values = np.arange(12, dtype="float32").reshape(4, 3) / 10
    _, _, (got,) = _run(main, startup, {"x": fluid.create_lod_tensor(values, [[1, 3]], fluid.CPUPlace())}, [out])
    np.testing.assert_allclose(got, np.tanh(values), rtol=1e-6)
    assert seen == [(fluid.LoDTensor, [[1, 3]], [4, 3])]


def test_several_outputs_no_input_and_no_output():
    calls = []
    main, startup, guard = _guard()
    with guard:
        x = fluid.data("x", [2, 3], dtype="int32")
        y = fluid.data("y", [2, 3], dtype="int32")
        s, d = _var("s", [2, 3], "int32"), _var("d", [2, 3], "int32")
        got = fluid.layers.py_func(lambda a, b: (np.array(a) + np.array(b), np.array(a) - np.array(b)), [x, y], (s, d))
        const = fluid.layers.py_func(lambda: np.array([7.0], "float32"), None, _var("c", [1]))
        fluid.layers.py_func(lambda a: calls.append(np.array(a).sum()), x, None)
    assert got == (s, d) and const.name == "c"
    a, b = np.arange(6, dtype="int32").reshape(2, 3), np.full((2, 3), 2, "int32")
    _, _, (sv, dv, cv) = _run(main, startup, {"x": a, "y": b}, [s, d, const])
    np.testing.assert_array_equal(sv, a + b)
    np.testing.assert_array_equal(dv, a - b)
    np.testing.assert_array_equal(cv, [7.0])
    assert calls == [a.sum()]


def _tanh_net(use_py_func, backward_calls=None):
    main, startup, guard = _guard()
    main.random_seed = startup.random_seed = 5

    def tanh_grad(y, dy):
        backward_calls.append(1)
        return np.array(dy) * (1 - np.square(np.array(y)))
    with guard:
        x = fluid.data("x", [None, 4])
        h = fluid.layers.fc(x, 3)
        if use_py_func:
            h = fluid.layers.py_func(np.tanh, h, _var("t", [-1, 3]), backward_func=tanh_grad,
                                     skip_vars_in_backward_input=h)
        else:
            h = fluid.layers.tanh(h)
        loss = fluid.layers.reduce_mean(fluid.layers.square(fluid.layers.fc(h, 1) - 1.0))
        fluid.optimizer.SGD(0.5).minimize(loss)
    return main, startup, loss


def test_backward_func_trains_as_the_builtin_op_does():
    calls = []
    feed = {"x": np.random.default_rng(0).standard_normal((8, 4)).astype("float32")}
    histories = []
    for use in (True, False):
        main, startup, loss = _tanh_net(use, calls)
        exe, scope = fluid.Executor(), fluid.Scope()
        exe.run(startup, scope=scope)
        histories.append([float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]) for _ in range(20)])
    assert len(calls) == 20
    assert histories[0][-1] < histories[0][0] * 0.5
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-5)  # the same gradients as tanh's own


def test_backward_gets_inputs_outputs_and_output_grads_minus_the_skipped():
    got = {}

    def make_backward(key):
        def backward(*args):
            got[key] = [None if a is None else np.array(a) for a in args]
            return np.array(args[-2]) * 2.0, None  # d(2x)/dx; the int input needs no gradient
        return backward
    for key, skip in (("none", None), ("x", "x"), ("both", ("x", "outs"))):
        main, startup, guard = _guard()
        with guard:
            x = fluid.data("x", [2, 2])
            x.stop_gradient = False
            k = fluid.data("k", [2, 1], dtype="int64")
            outs = [_var("twice", [2, 2]), _var("unused", [2, 2])]
            skipped = {"x": x, "outs": outs[1]}
            skip_vars = None if skip is None else [skipped[s] for s in ([skip] if isinstance(skip, str) else skip)]
            fluid.layers.py_func(lambda a, b: (np.array(a) * 2, np.array(a)), [x, k], outs,
                                 backward_func=make_backward(key), skip_vars_in_backward_input=skip_vars)
            dx, = fluid.gradients(fluid.layers.reduce_sum(outs[0]), [x])
        xv = np.array([[1, 2], [3, 4]], "float32")
        _, _, (dxv,) = _run(main, startup, {"x": xv, "k": np.zeros((2, 1), "int64")}, [dx])
        np.testing.assert_array_equal(dxv, np.full((2, 2), 2.0))
        args = got[key]
        ones = np.ones((2, 2), "float32")
        expected = {"none": [xv, np.zeros((2, 1)), xv * 2, xv, ones, None],  # x, k, twice, unused, dtwice, dunused
                    "x": [np.zeros((2, 1)), xv * 2, xv, ones, None],
                    "both": [np.zeros((2, 1)), xv * 2, ones, None]}[key]
        assert len(args) == len(expected), (key, len(args))
        for a, e in zip(args, expected):
            assert (a is None) == (e is None)
            if e is not None:
                np.testing.assert_array_equal(a, e)


def test_skip_vars_must_be_inputs_or_outputs():
    main, startup, guard = _guard()
    with guard:
        x, other = fluid.data("x", [2]), fluid.data("o", [2])
        with pytest.raises(ValueError, match="Variable o is not found in forward inputs and outputs"):
            fluid.layers.py_func(np.tanh, x, _var("t", [2]), backward_func=np.tanh, skip_vars_in_backward_input=other)


def test_without_backward_func_the_inputs_get_no_gradient():
    main, startup, guard = _guard()
    with guard, fluid.unique_name.guard():
        x = fluid.data("x", [None, 4])
        h = fluid.layers.fc(x, 3)
        t = fluid.layers.py_func(np.tanh, h, _var("t", [-1, 3]))
        loss = fluid.layers.mean(fluid.layers.fc(t, 1))
        params_grads = fluid.backward.append_backward(loss)
    names = sorted(p.name for p, _ in params_grads)
    assert names == ["fc_1.b_0", "fc_1.w_0"]  # the fc before py_func gets none
    assert [op.type for op in main.global_block().ops].count("py_func") == 1


def test_an_exception_in_the_function_reaches_the_caller_with_its_traceback():
    def broken(x):
        return np.array(x) / undefined_scale  # noqa: F821 - the error under test

    main, startup, guard = _guard()
    with guard:
        x = fluid.data("x", [2])
        fluid.layers.py_func(broken, x, _var("y", [2]))
    with pytest.raises(NameError, match="undefined_scale") as info:
        _run(main, startup, {"x": np.ones(2, "float32")}, ["y"])
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == "broken"


@pytest.mark.parametrize("result, error, message", [
    (lambda x: (np.array(x), np.array(x)), ValueError, r"returned 2 value\(s\), but the op has 1 output\(s\) \['y'\]"),
    (lambda x: np.ones((2, 3), "float32"), ValueError,
     r"output 0 \('y'\) is declared with shape \[-1, 2\], but the function returned shape \[2, 3\]"),
    (lambda x: np.ones(2, "float32"), ValueError, r"declared with shape \[-1, 2\].* returned shape \[2\]"),
    (lambda x: np.ones((3, 2)), TypeError, r"output 0 \('y'\) is declared with dtype float32, but the function "
                                           r"returned float64"),
    (lambda x: None, ValueError, r"returned None for output 0 \('y'\)"),
])
def test_wrong_results_name_the_output(result, error, message):
    main, startup, guard = _guard()
    with guard:
        x = fluid.data("x", [None, 2])
        fluid.layers.py_func(result, x, _var("y", [-1, 2]))
    with pytest.raises(error, match=message):
        _run(main, startup, {"x": np.ones((3, 2), "float32")}, ["y"])


def test_layer_argument_errors():
    main, startup, guard = _guard()
    with guard:
        x = fluid.data("x", [2])
        with pytest.raises(TypeError, match="func must be a Python function"):
            fluid.layers.py_func(None, x, _var("a", [2]))
        with pytest.raises(TypeError, match="The type of 'X' in py_func must be Variable"):
            fluid.layers.py_func(np.tanh, "x", _var("b", [2]))
        with pytest.raises(ValueError, match="Output shapes of py_func op should be provided by users manually"):
            fluid.layers.py_func(np.tanh, x, _var("c", []))


def test_clones_share_the_registration_and_an_unknown_id_is_named():
    main, startup, guard = _guard()
    with guard:
        x = fluid.data("x", [2])
        fluid.layers.py_func(np.negative, x, _var("y", [2]))
    count = fluid.layers.py_func.registered_func_num()
    op = main.global_block().ops[-1]
    assert fluid.layers.py_func.registered_func(op.attrs["forward_callable_id"]) is np.negative
    test_program = main.clone(for_test=True)
    assert fluid.layers.py_func.registered_func_num() == count
    _, _, (y,) = _run(test_program, startup, {"x": np.ones(2, "float32")}, ["y"])
    np.testing.assert_array_equal(y, [-1, -1])
    op._set_attr("forward_callable_id", count + 5)
    with pytest.raises(ValueError, match=f"invalid Python callable id {count + 5}, which should be less than {count}"):
        _run(main, startup, {"x": np.ones(2, "float32")}, ["y"])


def test_paddle_fluid_layers_py_func_under_compat(tmp_path):
    script = tmp_path / "legacy.py"
    script.write_text(
        "import numpy as np\nimport paddle.fluid as fluid\n"
        "x = fluid.layers.data(name='x', shape=[3], dtype='float32')\n"
        "y = fluid.default_main_program().current_block().create_var(name='y', dtype='float32', shape=[-1, 3])\n"
        "fluid.layers.py_func(func=lambda a: np.array(a) * 3, x=x, out=y)\n"
        "exe = fluid.Executor(fluid.CPUPlace())\n"
        "print(exe.run(feed={'x': np.ones((1, 3), 'float32')}, fetch_list=[y])[0].tolist())\n")
    done = subprocess.run([sys.executable, "-m", "minifluid.compat", str(script)], capture_output=True, text=True,
                          timeout=100)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("[[3.0, 3.0, 3.0]]")


def test_paddle_static_py_func_points_to_the_fluid_layer():
    from minifluid.compat.hints import hint
    assert "fluid.layers.py_func(func, x, out" in hint("paddle.static.py_func")
