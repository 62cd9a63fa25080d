"""The eager Tensor, the mode switches and autograd semantics (accumulation, stop_gradient, no_grad,
release of the tape)."""
import gc
import weakref

import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Tensor, to_variable


def test_modes_guard_enable_disable():
    assert not fluid.in_dygraph_mode()
    with fluid.dygraph.guard(fluid.CPUPlace()):
        assert fluid.in_dygraph_mode() and fluid.dygraph.enabled()
        with fluid.dygraph.guard():
            assert fluid.in_dygraph_mode()
        assert fluid.in_dygraph_mode()
    assert not fluid.in_dygraph_mode()
    fluid.enable_dygraph()
    fluid.enable_dygraph()  # idempotent
    assert fluid.in_dygraph_mode()
    fluid.disable_dygraph()
    assert not fluid.in_dygraph_mode()


def test_guard_uses_fresh_names_and_programs():
    main = fluid.default_main_program()
    with fluid.dygraph.guard():
        assert fluid.default_main_program() is not main
        first = fluid.dygraph.Linear(2, 2).weight.name
    with fluid.dygraph.guard():
        assert fluid.dygraph.Linear(2, 2).weight.name == first == "linear_0.w_0"
    assert fluid.default_main_program() is main


def test_to_variable_needs_dygraph_mode_and_an_array():
    with pytest.raises(AssertionError, match="to_variable could only be called in dygraph mode"):
        to_variable(np.zeros(2))
    with fluid.dygraph.guard():
        with pytest.raises(TypeError, match="to_variable must be"):
            to_variable([1, 2])
        t = to_variable(np.ones((2, 3), "float64"), name="x")
        assert t.name == "x" and t.dtype == "float64" and t.stop_gradient
        assert to_variable(fluid.LoDTensor(np.ones(3, "int64"))).dtype == "int64"
        assert to_variable(t) is t


def test_tensor_metadata_data_and_repr():
    with fluid.dygraph.guard():
        t = to_variable(np.arange(6, dtype="float32").reshape(2, 3))
        assert t.shape == [2, 3] and isinstance(t.shape, list)
        assert t.dtype == "float32" and t.ndim == 2 and t.size == 6 and len(t) == 2
        n = t.numpy()
        n[0, 0] = 100  # a copy
        assert t.numpy()[0, 0] == 0
        np.testing.assert_array_equal(np.asarray(t), np.arange(6).reshape(2, 3))
        assert t.astype("int64").dtype == "int64"
        assert "shape=[2, 3]" in repr(t) and "stop_gradient=True" in repr(t)
        assert isinstance(t, fluid.Variable)
        assert float(fluid.layers.reduce_sum(t)) == 15.0
        d = t.detach()
        assert d.stop_gradient and np.shares_memory(d._value, t._value)


def test_operators_run_registered_ops():
    with fluid.dygraph.guard():
        a = to_variable(np.array([[1.0, 2.0], [3.0, 4.0]], "float32"))
        b = to_variable(np.array([[2.0, 2.0], [2.0, 2.0]], "float32"))
        for got, want in ((a + b, [[3, 4], [5, 6]]), (a - 1, [[0, 1], [2, 3]]), (1 - a, [[0, -1], [-2, -3]]),
                          (a * 2, [[2, 4], [6, 8]]), (a / b, [[0.5, 1], [1.5, 2]]), (2 / a, [[2, 1], [2 / 3, 0.5]]),
                          (-a, [[-1, -2], [-3, -4]]), (a @ b, [[6, 6], [14, 14]]), (a ** 2, [[1, 4], [9, 16]]),
                          (3 + a, [[4, 5], [6, 7]])):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
            assert got.dtype == "float32"


def test_gradients_accumulate_until_cleared_and_stop_gradient_cuts():
    with fluid.dygraph.guard():
        w = to_variable(np.array([1.0, 2.0], "float32"))
        w.stop_gradient = False
        x = to_variable(np.array([3.0, 4.0], "float32"))
        assert x.gradient() is None
        for _ in range(2):
            fluid.layers.reduce_sum(w * x).backward()
        np.testing.assert_array_equal(w.gradient(), [6.0, 8.0])  # twice [3, 4]
        assert x.gradient() is None  # stop_gradient (the to_variable default)
        w.clear_gradient()
        assert w.gradient() is None
        h = w * 2.0
        h.stop_gradient = True  # cut the graph here
        with pytest.warns(UserWarning, match="stop_gradient=True, computes no gradient"):
            fluid.layers.reduce_sum(h).backward()  # as fluid: nothing to compute, no error
        assert w.gradient() is None


def test_no_grad_records_nothing():
    with fluid.dygraph.guard():
        w = to_variable(np.ones(2, "float32"))
        w.stop_gradient = False
        with fluid.dygraph.no_grad():
            y = w * 3.0
        assert y.stop_gradient and y._node is None

        @fluid.dygraph.no_grad
        def f(v):
            return v * 2.0
        assert f(w).stop_gradient
        assert not (w * 2.0).stop_gradient


def test_backward_releases_the_tape_and_an_unused_graph_is_freed():
    with fluid.dygraph.guard():
        w = to_variable(np.ones((3, 3), "float32"))
        w.stop_gradient = False
        h = fluid.layers.relu(w * 2.0)
        loss = fluid.layers.mean(h)
        node = loss._node
        loss.backward()
        assert node.ins is None and node.in_values is None and node.out_values is None
        with pytest.raises(RuntimeError, match="already released"):
            loss.backward()
        loss2 = fluid.layers.mean(fluid.layers.relu(w * 2.0))
        loss2.backward(retain_graph=True)
        loss2.backward()
        np.testing.assert_allclose(w.gradient(), np.full((3, 3), 3 * 2.0 / 9), rtol=1e-6)
        # a forward pass that is never differentiated leaves nothing behind once dropped
        loss3 = fluid.layers.mean(w * 2.0)
        ref = weakref.ref(loss3._node.in_values[0])  # the array of w * 2.0, held only by the tape
        del loss3
        gc.collect()
        assert ref() is None


def test_fluid_layers_run_eagerly_on_eager_tensors():
    rng = np.random.RandomState(0)
    logits = rng.rand(4, 3).astype("float32")
    label = np.array([[0], [2], [1], [2]], "int64")
    with fluid.dygraph.guard():
        x, y = to_variable(logits), to_variable(label)
        prob = fluid.layers.softmax(x)
        expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        np.testing.assert_allclose(prob.numpy(), expected, rtol=1e-5)
        np.testing.assert_allclose(fluid.layers.cross_entropy(prob, y).numpy()[:, 0],
                                   -np.log(expected[np.arange(4), label[:, 0]]), rtol=1e-5)
        acc = fluid.layers.accuracy(x, y)
        assert acc.shape == [1] and acc.dtype == "float32"
        np.testing.assert_allclose(fluid.layers.reduce_mean(x, dim=1).numpy(), logits.mean(1), rtol=1e-6)
        np.testing.assert_allclose(fluid.layers.square_error_cost(x, x * 0.0).numpy(), logits ** 2, rtol=1e-6)
        assert fluid.layers.reshape(x, [2, -1]).shape == [2, 6]
        np.testing.assert_allclose(fluid.layers.elementwise_max(x, x * 2.0).numpy(), logits * 2, rtol=1e-6)
        assert fluid.layers.fill_constant([2, 2], "int64", 3).numpy().tolist() == [[3, 3], [3, 3]]
        assert fluid.layers.mean(x).shape == [1]


def test_tensor_arithmetic_outside_dygraph_mode_still_runs_eagerly():
    t = Tensor(np.ones(3, "float32"))
    assert (t * 2.0 + 1.0).numpy().tolist() == [3.0, 3.0, 3.0]


def test_assign_of_a_numpy_array_in_dygraph_is_a_tensor_of_its_values():
    value = np.array([[0.0, -1e9, 2.5]], "float32")
    with fluid.dygraph.guard():
        t = fluid.layers.assign(value)
        value[0, 0] = 7  # the tensor holds a copy
        assert t.shape == [1, 3] and t.numpy().tolist() == [[0.0, -1e9, 2.5]]
        assert (fluid.layers.elementwise_add(t, t).numpy() == [[0.0, -2e9, 5.0]]).all()
