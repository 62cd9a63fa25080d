"""Layer forward hooks and the named_sublayers / named_parameters walks (fluid 1.8 signatures and orders)."""
import gc
import weakref

import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Conv2D, Layer, Linear, Sequential, to_variable


class Scaled(Layer):
    def __init__(self):
        super(Scaled, self).__init__()
        self.fc = Linear(3, 2)

    def forward(self, x, k):
        return self.fc(x) * k


def test_pre_hook_replaces_inputs_and_post_hook_replaces_outputs():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    seen = []
    with fluid.dygraph.guard():
        net = Scaled()
        plain = net(to_variable(x), 1.0).numpy()
        pre = net.register_forward_pre_hook(lambda layer, inputs: (inputs[0] * 2, inputs[1]))
        post = net.register_forward_post_hook(lambda layer, inputs, out: seen.append((layer, inputs)) or out + 1)
        hooked = net(to_variable(x), 1.0).numpy()
        doubled = net.fc(to_variable(2 * x)).numpy()
        np.testing.assert_allclose(hooked, doubled + 1, rtol=1e-6)
        assert seen[0][0] is net and len(seen[0][1]) == 2
        np.testing.assert_allclose(seen[0][1][0].numpy(), 2 * x)  # the post hook sees the replaced inputs
        pre.remove()
        np.testing.assert_allclose(net(to_variable(x), 1.0).numpy(), plain + 1, rtol=1e-6)
        post.remove()
        post.remove()  # removing twice does nothing
        np.testing.assert_allclose(net(to_variable(x), 1.0).numpy(), plain)
        assert len(seen) == 2


def test_pre_hook_single_value_becomes_a_tuple_and_none_keeps_inputs():
    calls = []
    with fluid.dygraph.guard():
        fc = Linear(3, 2)
        x = to_variable(np.ones((1, 3), "float32"))
        fc.register_forward_pre_hook(lambda layer, inputs: calls.append(inputs))  # returns None
        fc.register_forward_pre_hook(lambda layer, inputs: inputs[0] * 0)          # one value, not a tuple
        out = fc(x)
        np.testing.assert_allclose(out.numpy(), fc.bias.numpy().reshape(1, 2))
        assert calls[0][0] is x
        with pytest.raises(TypeError, match="callable"):
            fc.register_forward_post_hook("not a function")


def test_hook_handle_does_not_keep_the_layer_alive():
    with fluid.dygraph.guard():
        fc = Linear(2, 2)
        handle = fc.register_forward_post_hook(lambda *a: None)
        alive = weakref.ref(fc)
        del fc
        gc.collect()
        assert alive() is None  # the handle held no strong reference
        handle.remove()  # the hooks are gone with the layer: nothing to remove, no error


class Custom(Layer):
    def __init__(self):
        super(Custom, self).__init__()
        self.fc = Linear(4, 4)
        self.conv = Conv2D(3, 3, 2)


def test_named_sublayers_signature_and_order():
    with fluid.dygraph.guard():
        fc1, fc2, custom = Linear(4, 3), Linear(3, 4, bias_attr=False), Custom()
        model = Sequential(fc1, fc2, custom)
        named = list(model.named_sublayers())
        assert [n for n, _ in named] == ["0", "1", "2", "2.fc", "2.conv"]
        assert [l for _, l in named] == [fc1, fc2, custom, custom.fc, custom.conv] == model.sublayers()
        assert list(model.named_sublayers(prefix="m", include_sublayers=False)) == [
            ("m.0", fc1), ("m.1", fc2), ("m.2", custom)]
        assert model.sublayers(include_sublayers=False) == [fc1, fc2, custom]
        assert [l for _, l in model.named_sublayers(include_self=True)] == [model, fc1, fc2, custom, custom.fc,
                                                                           custom.conv]
        seen = {id(custom)}
        assert [n for n, _ in model.named_sublayers(include_sublayers=True, layers_set=seen)] == ["0", "1"]


def test_named_parameters_follow_the_sublayer_walk():
    with fluid.dygraph.guard():
        model = Sequential(Linear(4, 3), Linear(3, 4, bias_attr=False), Custom())
        expected = [(prefix + "." + name, p) for prefix, layer in model.named_sublayers(include_sublayers=True)
                    for name, p in layer.named_parameters(include_sublayers=False)]
        got = list(model.named_parameters())
        assert [n for n, _ in got] == ["0.weight", "0.bias", "1.weight", "2.fc.weight", "2.fc.bias",
                                       "2.conv.weight", "2.conv.bias"]
        assert [n for n, _ in got] == [n for n, _ in expected]
        assert all(a is b for (_, a), (_, b) in zip(got, expected))
        assert [n for n, _ in model.named_parameters(prefix="net")][0] == "net.0.weight"
        assert list(model.named_parameters(include_sublayers=False)) == []
