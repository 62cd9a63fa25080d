"""fluid.dygraph.TracedLayer: a dygraph forward recorded as a static Program that runs and saves."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import BatchNorm, Layer, Linear, Sequential, TracedLayer, to_variable


class Net(Layer):
    def __init__(self):
        super().__init__()
        self.body = Sequential(Linear(3, 8, act="relu"), Linear(8, 2))
        self.scale = to_variable(np.array([2.0, -1.0], "float32"))  # a constant made before the trace

    def forward(self, x, y):
        out = self.body(x) * self.scale
        return out, fluid.layers.reduce_sum(out * y, dim=1)


def test_traced_program_runs_like_the_layer_and_shares_its_parameters():
    rng = np.random.RandomState(0)
    x, y = rng.rand(4, 3).astype("float32"), rng.rand(4, 2).astype("float32")
    with fluid.dygraph.guard():
        net = Net()
        (out, total), traced = TracedLayer.trace(net, [to_variable(x), to_variable(y)])
        block = traced.program.global_block()
        assert [op.type for op in block.ops][:2] == ["mul", "elementwise_add"]
        assert block.var("feed_0").shape[0] == -1 and {"fetch_0", "fetch_1"} <= set(block.vars)
        assert {net.body[0].weight.name, net.body[1].bias.name} <= {v.name for v in block.vars.values()
                                                                   if v.persistable}
        x2, y2 = rng.rand(7, 3).astype("float32"), rng.rand(7, 2).astype("float32")  # another batch size
        got = traced([to_variable(x2), y2])
        want = net(to_variable(x2), to_variable(y2))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5)
        net.body[1].bias.set_value(np.array([5.0, 5.0], "float32"))  # the traced scope shares the parameters
        np.testing.assert_allclose(traced([x2, y2])[0], net(to_variable(x2), to_variable(y2))[0].numpy(),
                                   rtol=1e-5)


def test_save_inference_model_loads_in_an_executor(tmp_path):
    rng = np.random.RandomState(1)
    x = rng.rand(5, 3).astype("float32")
    with fluid.dygraph.guard():
        model = Sequential(Linear(3, 4), BatchNorm(4), Linear(4, 2, act="sigmoid"))
        model.eval()
        out, traced = TracedLayer.trace(model, inputs=[to_variable(x)])
        traced.save_inference_model(str(tmp_path / "infer"), feed=[0], fetch=[0])
        expected = out.numpy()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = fluid.io.load_inference_model(str(tmp_path / "infer"), exe)
        assert feeds == ["feed_0"]
        got, = exe.run(program, feed={feeds[0]: x}, fetch_list=fetches)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_trace_errors():
    with fluid.dygraph.guard():
        with pytest.raises(TypeError, match="input 0 must be a Tensor, but got ndarray"):
            TracedLayer.trace(Linear(2, 2), [np.ones((1, 2), "float32")])
        with pytest.raises(TypeError, match="traces a fluid.dygraph.Layer"):
            TracedLayer.trace(lambda x: x, [to_variable(np.ones((1, 2), "float32"))])
        _, traced = TracedLayer.trace(Linear(2, 2), [to_variable(np.ones((1, 2), "float32"))])
        with pytest.raises(AssertionError, match="takes 1 inputs, but got 2"):
            traced([np.ones((1, 2), "float32")] * 2)
        with pytest.raises(AssertionError, match=r"output indices \[3\] out of range"):
            traced.save_inference_model("unused", fetch=[3])
    with pytest.raises(AssertionError, match="Only support TracedLayer.trace in imperative mode"):
        TracedLayer.trace(None, [])


def test_switch_sets_is_test_on_the_traced_ops():
    x = np.random.RandomState(1).rand(6, 3).astype("float32")
    with fluid.dygraph.guard():
        net = Sequential(Linear(3, 3), BatchNorm(3))
        _, traced = TracedLayer.trace(net, [to_variable(x)])
        bn = [op for op in traced.program.global_block().ops if op.type == "batch_norm"][0]
        assert bn.attr("is_test") is False
        traced._switch(is_test=True)
        assert bn.attr("is_test") is True
        net.eval()
        np.testing.assert_allclose(traced([x])[0], net(to_variable(x)).numpy(), rtol=1e-5, atol=1e-6)
        traced._switch(is_test=False)
        assert bn.attr("is_test") is False


def test_fluid18_imperative_internals():
    """What fluid 1.8's imperative tests read: extract_vars, BackwardStrategy, _grad_ivar, value(), grad_var_suffix."""
    from minifluid import core
    from minifluid.dygraph.jit import extract_vars
    with fluid.dygraph.guard():
        a, b = to_variable(np.ones(2, "float32")), to_variable(np.zeros(3, "float32"))
        assert extract_vars([a, (b, [a]), 3]) == [a, b, a] and extract_vars(a) == [a] and extract_vars("x") == []
        w = Linear(2, 1)
        assert w.weight._grad_ivar() is None
        strategy = fluid.dygraph.BackwardStrategy()
        assert strategy.sort_sum_gradient is False
        strategy.sort_sum_gradient = True
        fluid.layers.reduce_sum(w(fluid.layers.reshape(a, [1, 2]))).backward(strategy)
        grad = w.weight._grad_ivar()
        assert grad.name == w.weight.name + core.grad_var_suffix() == w.weight.name + "@GRAD"
        np.testing.assert_array_equal(np.array(grad.value().get_tensor()), np.ones((2, 1), "float32"))
        np.testing.assert_array_equal(np.array(a.value().get_tensor()), a.numpy())


def test_a_captured_tensor_keeps_its_own_name_unless_taken():
    with fluid.dygraph.guard():
        net = Net()
        clash = Linear(2, 2)
        clash_in = to_variable(np.ones((1, 2), "float32"), name="feed_0")  # a name the program gives its feed

        class Outer(Layer):
            def __init__(self):
                super().__init__()
                self.net, self.fc = net, clash

            def forward(self, x, y):
                return self.net(x, y)[0] + self.fc(clash_in)

        _, traced = TracedLayer.trace(Outer(), [to_variable(np.ones((1, 3), "float32")),
                                                to_variable(np.ones((1, 2), "float32"))])
        persistable = {v.name for v in traced.program.global_block().vars.values() if v.persistable}
        assert net.scale.name.startswith("generated_var_") and net.scale.name in persistable  # as fluid names it
        renamed = [n for n in persistable if n.startswith("t_")]  # the taken name got a generated one
        assert len(renamed) == 1 and "feed_0" not in persistable and clash_in.name == "feed_0"
