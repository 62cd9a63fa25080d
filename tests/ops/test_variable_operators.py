"""Arithmetic operators on static Variables (fluid's monkey_patch_variable)."""
import numpy as np
import pytest

import minifluid as fluid

X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], "float32")
Y = np.array([[4.0, 5.0, 6.0], [2.0, 3.0, 0.5]], "float32")
CASES = {
    "x + y": (lambda x, y: x + y), "x - y": (lambda x, y: x - y), "x * y": (lambda x, y: x * y),
    "x / y": (lambda x, y: x / y), "x + 1": (lambda x, y: x + 1), "1 + x": (lambda x, y: 1 + x),
    "x - 1.5": (lambda x, y: x - 1.5), "1 - x": (lambda x, y: 1 - x), "x * 2": (lambda x, y: x * 2),
    "0.5 * x": (lambda x, y: 0.5 * x), "x / 4": (lambda x, y: x / 4), "2 / y": (lambda x, y: 2 / y),
    "x ** 2": (lambda x, y: x ** 2), "2 ** x": (lambda x, y: 2 ** x), "-x": (lambda x, y: -x),
    "y ** x": (lambda x, y: y ** x),
}


@pytest.mark.parametrize("expr", sorted(CASES))
def test_operator_matches_numpy(expr):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 3])
        y = fluid.data("y", [None, 3])
        out = CASES[expr](x, y)
    assert isinstance(out, fluid.Variable)
    (got,) = fluid.Executor().run(main, feed={"x": X, "y": Y}, fetch_list=[out], scope=fluid.Scope())
    np.testing.assert_allclose(got, CASES[expr](X, Y), rtol=1e-6)


def test_operators_train_like_the_layers_they_stand_for():
    def weight_grad(with_operators):
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 1
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data("x", [None, 3])
            y = fluid.data("y", [None, 3])
            h = fluid.layers.fc(x, size=3)
            if with_operators:
                loss = fluid.layers.mean((h - y) * (h - y)) * 0.5
            else:
                diff = fluid.layers.elementwise_sub(h, y)
                loss = fluid.layers.scale(fluid.layers.mean(fluid.layers.elementwise_mul(diff, diff)), 0.5)
            fluid.optimizer.SGD(0.1).minimize(loss)
        exe, scope = fluid.Executor(), fluid.Scope()
        exe.run(startup, scope=scope)
        return exe.run(main, feed={"x": X, "y": Y}, fetch_list=["fc_0.w_0@GRAD"], scope=scope)[0]

    np.testing.assert_allclose(weight_grad(True), weight_grad(False), rtol=1e-6)


def test_unsupported_operands_and_comparisons_are_left_alone():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 3])
        with pytest.raises(TypeError):
            x + "a"
        assert (x == x) is True and x in [x]  # == between Variables stays identity (graph code relies on it)
        assert (x == 1.0).dtype == "bool"  # with a number: fluid's equal op


@pytest.mark.parametrize("index", ["[0]", "[:, 1:3]", "[-1]", "[1:, -2]", "[::2, 1]", "[:, :, 1:]", "[0, 1, 1]"])
def test_indexing_a_variable_matches_numpy(index):
    value = np.arange(24, dtype="float32").reshape(3, 4, 2)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 4, 2])
        out = eval("x" + index)
    got, = fluid.Executor().run(main, feed={"x": value}, fetch_list=[out], scope=fluid.Scope())
    want = np.asarray(eval("value" + index))
    np.testing.assert_array_equal(got.reshape(-1), want.reshape(-1))
    assert got.shape == (want.shape or (1,))  # fluid keeps [1] when every dimension is indexed


def test_indexing_a_variable_refuses_what_it_cannot_slice():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 4])
        with pytest.raises(IndexError, match="too many indices"):
            x[0, 1, 2]
        with pytest.raises(TypeError, match="ints and slices"):
            x[[0, 1]]
