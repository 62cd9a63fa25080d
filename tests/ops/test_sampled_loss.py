"""fluid.layers.hsigmoid, nce and sampled_softmax_with_cross_entropy through the Executor: parameters, shapes,
training, the layers' argument errors (kernels and gradients: tests/ops/sampled_loss_cases.py)."""
import numpy as np
import pytest

import minifluid as fluid

from .sampled_loss_cases import hsigmoid_ref


def _programs():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    return main, startup


def _train(main, startup, loss, feed, steps=30):
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe, scope, [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]) for _ in range(steps)]


def test_hsigmoid_default_tree_matches_the_reference_and_trains():
    main, startup = _programs()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 5])
        label = fluid.data("label", [None, 1], dtype="int64")
        cost = fluid.layers.hsigmoid(x, label, num_classes=6)
        loss = fluid.layers.mean(cost)
        fluid.optimizer.SGD(0.5).minimize(loss)
    assert cost.shape == (-1, 1)
    params = {p.name: p.shape for p in main.global_block().all_parameters()}
    assert params == {"hierarchical_sigmoid_0.w_0": (5, 5), "hierarchical_sigmoid_0.b_0": (5, 1)}
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((8, 5)).astype("float32"), "label": rng.integers(0, 6, (8, 1))}
    exe, scope, losses = _train(main, startup, loss, feed, steps=1)
    w, b = (np.array(scope.find_var(f"hierarchical_sigmoid_0.{n}").get_tensor()) for n in ("w_0", "b_0"))
    test = main.clone(for_test=True)
    got, = exe.run(test, feed=feed, fetch_list=[cost], scope=scope)
    expected, _ = hsigmoid_ref(feed["x"].astype("float64"), w, feed["label"], 6, b)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    losses += [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]


def test_hsigmoid_custom_tree_without_bias():
    main, startup = _programs()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        table = fluid.data("table", [None, 2], dtype="int64")
        code = fluid.data("code", [None, 2], dtype="int64")
        cost = fluid.layers.hsigmoid(x, label, num_classes=4, path_table=table, path_code=code, is_custom=True,
                                     bias_attr=False)
        loss = fluid.layers.mean(cost)
        fluid.optimizer.SGD(0.5).minimize(loss)
    assert [p.name for p in main.global_block().all_parameters()] == ["hierarchical_sigmoid_0.w_0"]
    assert main.global_block().var("hierarchical_sigmoid_0.w_0").shape == (4, 3)
    feed = {"x": np.eye(3, dtype="float32")[[0, 1, 2, 0]], "label": np.zeros((4, 1), "int64"),
            "table": np.array([[0, 1], [2, -1], [3, 0], [1, -1]]), "code": np.array([[1, 0], [1, 0], [0, 1], [0, 0]])}
    _, _, losses = _train(main, startup, loss, feed)
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("kwargs, message", [
    ({"num_classes": 1}, "num_classes must not be less than 2 with default tree"),
    ({"num_classes": 4, "path_table": "t"}, "only num_classes should be passed without custom tree"),
    ({"num_classes": 4, "is_custom": True, "path_table": "t"}, "path_code should not be None with custom tree"),
    ({"num_classes": 4, "is_custom": True, "path_code": "c"}, "path_table should not be None with custom tree"),
])
def test_hsigmoid_argument_errors(kwargs, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        with pytest.raises(ValueError, match=message):
            fluid.layers.hsigmoid(x, label, **kwargs)
        with pytest.raises(TypeError, match=r"The data type of 'label' in hsigmoid must be \['int64'\]"):
            fluid.layers.hsigmoid(x, fluid.data("l32", [None, 1], dtype="int32"), 4)


def test_hsigmoid_label_out_of_range_is_named():
    main, startup = _programs()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        cost = fluid.layers.hsigmoid(x, label, num_classes=4)
    exe = fluid.Executor()
    exe.run(startup)
    with pytest.raises(ValueError, match=r"Input\(Label\) holds 4, out of range \[0, num_classes=4\)"):
        exe.run(main, feed={"x": np.ones((2, 3), "float32"), "label": np.array([[1], [4]])}, fetch_list=[cost])
