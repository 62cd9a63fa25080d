"""fluid.dygraph.grad (partial gradients), enable/disable_imperative, and the single-process DataParallel."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Linear, to_variable


def _leaf(value):
    t = to_variable(np.asarray(value, "float32"))
    t.stop_gradient = False
    return t


def test_grad_of_outputs_with_respect_to_inputs_leaves_leaf_gradients_alone():
    with fluid.dygraph.guard():
        x, w = _leaf([1.0, 2.0, 3.0]), _leaf([0.5, -1.0, 2.0])
        h = x * w          # a non-leaf input: its gradient is asked for too
        y = fluid.layers.reduce_sum(h * h)
        dx, dh = fluid.dygraph.grad([y], [x, h], retain_graph=True)
        np.testing.assert_allclose(dh.numpy(), 2 * np.array([0.5, -2.0, 6.0]), rtol=1e-6)
        np.testing.assert_allclose(dx.numpy(), 2 * np.array([0.5, -2.0, 6.0]) * w.numpy(), rtol=1e-6)
        assert x.gradient() is None and w.gradient() is None and dx.stop_gradient
        y.backward()  # the graph was retained
        np.testing.assert_allclose(x.gradient(), dx.numpy(), rtol=1e-6)


def test_grad_outputs_seed_and_sum_over_outputs():
    with fluid.dygraph.guard():
        x = _leaf([2.0, 3.0])
        y1, y2 = x * x, x * 3.0
        dx, = fluid.dygraph.grad([y1, y2], x, grad_outputs=[to_variable(np.array([1.0, 10.0], "float32")), None])
        np.testing.assert_allclose(dx.numpy(), [2 * 2.0 * 1 + 3, 2 * 3.0 * 10 + 3], rtol=1e-6)
        with pytest.raises(ValueError, match=r"output of shape \[2\] has shape \[3\]"):
            fluid.dygraph.grad(x * 2.0, x, grad_outputs=to_variable(np.ones(3, "float32")))
        with pytest.raises(AssertionError, match="length of grad_outputs must be equal to outputs"):
            fluid.dygraph.grad([y1], [x], grad_outputs=[None, None])


def test_no_grad_vars_unused_inputs_and_released_graphs():
    with fluid.dygraph.guard():
        x, z = _leaf([1.0, 2.0]), _leaf([4.0, 5.0])
        h = x * 2.0
        y = fluid.layers.reduce_sum(h * x)
        dx, = fluid.dygraph.grad(y, x, no_grad_vars=h, retain_graph=True)  # only the direct path: h
        np.testing.assert_allclose(dx.numpy(), h.numpy(), rtol=1e-6)
        with pytest.raises(ValueError, match="The 0-th input does not appear in the backward graph"):
            fluid.dygraph.grad(y, z, retain_graph=True)
        dz, dx = fluid.dygraph.grad(y, [z, x], allow_unused=True)
        assert dz is None
        np.testing.assert_allclose(dx.numpy(), 4 * x.numpy(), rtol=1e-6)
        with pytest.raises(RuntimeError, match="already released"):
            fluid.dygraph.grad(y, x)


def test_create_graph_is_a_clear_not_implemented():
    with fluid.dygraph.guard():
        x = _leaf([1.0])
        with pytest.raises(NotImplementedError, match=r"grad\(create_graph=True\) is not supported"):
            fluid.dygraph.grad(x * x, x, create_graph=True)


def test_enable_and_disable_imperative():
    assert not fluid.in_dygraph_mode()
    fluid.enable_imperative()
    try:
        assert fluid.in_dygraph_mode() and fluid.dygraph.enabled()
        assert to_variable(np.ones(2, "float32")).shape == [2]
    finally:
        fluid.dygraph.disable_imperative()
    assert not fluid.in_dygraph_mode()


def test_single_process_data_parallel(monkeypatch, tmp_path):
    monkeypatch.delenv("PADDLE_TRAINERS_NUM", raising=False)
    env = fluid.dygraph.ParallelEnv()
    assert (env.nranks, env.local_rank, env.dev_id) == (1, 0, 0)
    with fluid.dygraph.guard():
        strategy = fluid.dygraph.prepare_context()
        assert strategy is None  # nothing to set up for one trainer, as fluid 1.8
        inner = Linear(3, 2)
        model = fluid.dygraph.DataParallel(inner, strategy)
        x = to_variable(np.ones((4, 3), "float32"))
        np.testing.assert_array_equal(model(x).numpy(), inner(x).numpy())
        assert list(model.state_dict()) == ["weight", "bias"] and model.parameters() == inner.parameters()
        loss = fluid.layers.reduce_mean(model(x))
        assert model.scale_loss(loss) is loss
        loss.backward()
        before = inner.weight.gradient().copy()
        model.apply_collective_grads()
        np.testing.assert_array_equal(inner.weight.gradient(), before)
        fluid.dygraph.save_dygraph(model.state_dict(), str(tmp_path / "m"))
        other = fluid.dygraph.DataParallel(Linear(3, 2))
        other.set_dict(fluid.dygraph.load_dygraph(str(tmp_path / "m"))[0])
        np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "2")
    assert fluid.dygraph.ParallelEnv().nranks == 2
    with pytest.raises(NotImplementedError, match=r"multi-process data parallel training \(nranks=2\)"):
        fluid.dygraph.prepare_context()
