"""fluid 1.8's gradient bookkeeping in dygraph: every tensor still held keeps its gradient after backward (the
root's is ones, an unused output of a run op gets zeros), a stop_gradient root computes nothing."""
import gc
import weakref

import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Linear, to_variable
from minifluid.initializer import Constant


def test_non_leaf_tensors_held_keep_their_gradient_and_the_root_gets_ones():
    with fluid.dygraph.guard():
        fc = Linear(4, 6, param_attr=fluid.ParamAttr(initializer=Constant(1.0)))
        feature = fc(to_variable(np.ones((2, 4), "float32")))
        used, unused = fluid.layers.split(feature, num_or_sections=[3, 3], dim=1)
        loss = fluid.layers.reduce_sum(used * 2.0)
        assert used.gradient() is None and loss.gradient() is None
        loss.backward()
        np.testing.assert_array_equal(loss.gradient(), [1.0])
        np.testing.assert_array_equal(used.gradient(), np.full((2, 3), 2.0))
        np.testing.assert_array_equal(unused.gradient(), np.zeros((2, 3)))  # split's gradient ran: zeros, as fluid
        np.testing.assert_array_equal(feature.gradient(), np.concatenate([np.full((2, 3), 2.0), np.zeros((2, 3))], 1))
        np.testing.assert_array_equal(fc.weight.gradient()[:, :3], np.full((4, 3), 4.0))


def test_backward_from_an_output_gives_it_ones_and_its_sibling_zeros():
    with fluid.dygraph.guard():
        x = to_variable(np.arange(6, dtype="float32").reshape(2, 3))
        x.stop_gradient = False
        a, b = fluid.layers.split(x * 1.0, num_or_sections=[1, 2], dim=1)
        b.backward()
        np.testing.assert_array_equal(b.gradient(), np.ones((2, 2)))
        np.testing.assert_array_equal(a.gradient(), np.zeros((2, 1)))
        np.testing.assert_array_equal(x.gradient(), [[0, 1, 1], [0, 1, 1]])


def test_gradients_of_tensors_nobody_holds_are_not_kept():
    with fluid.dygraph.guard():
        x = to_variable(np.ones((3,), "float32"))
        x.stop_gradient = False
        hidden = x * 3.0
        probe = weakref.ref(hidden)
        loss = fluid.layers.reduce_sum(hidden * hidden)
        del hidden
        gc.collect()
        assert probe() is not None  # the graph holds it until backward
        loss.backward()
        assert probe() is None  # released with its node: its gradient went with it
        np.testing.assert_array_equal(x.gradient(), np.full(3, 18.0))


def test_a_stop_gradient_root_computes_nothing_as_fluid():
    with fluid.dygraph.guard():
        fc = Linear(3, 2)
        out = fc(to_variable(np.ones((1, 3), "float32")))
        out.stop_gradient = True
        with pytest.warns(UserWarning, match="computes no gradient"):
            out.backward()
        assert fc.weight.gradient() is None and out.gradient() is None
        noise = fluid.layers.gaussian_random(shape=[4, 5])
        with pytest.warns(UserWarning):
            fluid.layers.mean(noise).backward()  # nothing required a gradient: no error either
        assert noise.gradient() is None


def test_fluid_dygraph_grad_still_leaves_kept_gradients_alone():
    with fluid.dygraph.guard():
        x = to_variable(np.ones((2,), "float32"))
        x.stop_gradient = False
        y = x * 2.0
        (dx,) = fluid.dygraph.grad([fluid.layers.reduce_sum(y)], [x])
        np.testing.assert_array_equal(dx.numpy(), [2.0, 2.0])
        assert x.gradient() is None and y.gradient() is None
