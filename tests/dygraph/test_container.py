"""fluid.dygraph.Sequential, LayerList and ParameterList: structured names, indexing, state-dict round trips."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Layer, LayerList, Linear, ParameterList, Sequential, to_variable


def _x(rows=4, cols=3, seed=0):
    return to_variable(np.random.RandomState(seed).rand(rows, cols).astype("float32"))


def test_sequential_runs_in_order_under_positional_names():
    with fluid.dygraph.guard():
        model = Sequential(Linear(3, 5, act="relu"), Linear(5, 2))
        assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
        assert list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
        x = _x()
        a, b = model[0], model[1]
        hidden = np.maximum(x.numpy() @ a.weight.numpy() + a.bias.numpy(), 0)
        np.testing.assert_allclose(model(x).numpy(), hidden @ b.weight.numpy() + b.bias.numpy(), rtol=1e-5)
        assert len(model) == 2 and list(model) == [a, b]


def test_sequential_named_pairs_set_and_delete():
    with fluid.dygraph.guard():
        l1, l2 = Linear(3, 4), Linear(4, 2)
        model = Sequential(("enc", l1), ("dec", l2))
        assert model["enc"] is l1 and model.dec is l2
        assert list(model.state_dict()) == ["enc.weight", "enc.bias", "dec.weight", "dec.bias"]
        model["dec"] = Linear(4, 6)
        assert model(_x()).shape == [4, 6] and model.dec is not l2
        del model["dec"]
        assert len(model) == 1 and model(_x()).shape == [4, 4]
        model.add_sublayer("head", Linear(4, 1))
        assert model(_x()).shape == [4, 1]
        with pytest.raises(KeyError, match="no sublayer 'dec'"):
            model["dec"]
        with pytest.raises(TypeError, match="not both"):
            Sequential(("a", Linear(1, 1)), Linear(1, 1))
        with pytest.raises(TypeError, match="Sequential holds Layers, but got int"):
            model["x"] = 3


def test_sequential_in_a_layer_state_dict_round_trip(tmp_path):
    class Net(Layer):
        def __init__(self):
            super().__init__()
            self.body = Sequential(Linear(3, 4), Linear(4, 2))

        def forward(self, x):
            return self.body(x)

    with fluid.dygraph.guard():
        net, other = Net(), Net()
        assert list(net.state_dict()) == ["body.0.weight", "body.0.bias", "body.1.weight", "body.1.bias"]
        path = str(tmp_path / "net")
        fluid.dygraph.save_dygraph(net.state_dict(), path)
        params, _ = fluid.dygraph.load_dygraph(path)
        assert not np.allclose(other(_x()).numpy(), net(_x()).numpy())
        other.set_dict(params)
        np.testing.assert_array_equal(other(_x()).numpy(), net(_x()).numpy())


def test_layer_list_indexing_and_renumbering():
    with fluid.dygraph.guard():
        layers = [Linear(2, 2) for _ in range(4)]
        ll = LayerList(layers[:3])
        assert len(ll) == 3 and ll[-1] is layers[2] and list(ll) == layers[:3]
        assert list(ll[1:]) == layers[1:3] and isinstance(ll[1:], LayerList)
        ll.insert(1, layers[3])
        assert list(ll) == [layers[0], layers[3], layers[1], layers[2]]
        assert [n for n, _ in ll.named_parameters()][2:4] == ["1.weight", "1.bias"]
        assert ll.parameters()[2] is layers[3].weight
        del ll[0]
        assert list(ll) == [layers[3], layers[1], layers[2]] and list(ll._sub_layers) == ["0", "1", "2"]
        del ll[1:]
        assert list(ll) == [layers[3]]
        ll.extend(LayerList(layers[:2])).append(layers[2])
        assert list(ll) == [layers[3], layers[0], layers[1], layers[2]]
        ll[0] = layers[0]
        assert ll[0] is layers[0]
        with pytest.raises(IndexError, match="index 4 out of range"):
            ll[4]
        with pytest.raises(AssertionError, match=r"range \[0, len\(self\)\)"):
            ll.insert(9, layers[0])
        with pytest.raises(TypeError, match="LayerList holds Layers, but got str"):
            ll.append("fc")


def test_layer_list_parameters_train_through_an_optimizer():
    class Net(Layer):
        def __init__(self):
            super().__init__()
            self.fcs = LayerList([Linear(3, 3) for _ in range(2)])

        def forward(self, x):
            for fc in self.fcs:
                x = fc(x)
            return x

    with fluid.dygraph.guard():
        net = Net()
        assert [n for n, _ in net.named_parameters()] == ["fcs.0.weight", "fcs.0.bias", "fcs.1.weight",
                                                          "fcs.1.bias"]
        before = [p.numpy().copy() for p in net.parameters()]
        loss = fluid.layers.reduce_mean(net(_x()))
        loss.backward()
        fluid.optimizer.SGD(0.5, parameter_list=net.parameters()).minimize(loss)
        assert all(not np.allclose(b, p.numpy()) for b, p in zip(before, net.parameters()))


def test_parameter_list_registers_and_replaces():
    with fluid.dygraph.guard():
        ps = [fluid.layers.create_parameter([2, 2], "float32") for _ in range(3)]
        pl = ParameterList(ps[:2])
        assert len(pl) == 2 and list(pl) == ps[:2] and pl[-1] is ps[1]
        assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
        pl.append(ps[2])
        pl[0] = ps[2]  # the same parameter twice: listed once
        assert pl.parameters() == [ps[2], ps[1]] and list(pl.state_dict()) == ["0", "1"]
        with pytest.raises(TypeError, match="ParameterList holds Parameters, but got Tensor"):
            pl.append(_x())


def test_containers_are_paddle_nn_ones_too(paddle):
    model = paddle.nn.Sequential(paddle.nn.Linear(3, 2))  # paddle 2.x runs eagerly without a guard
    assert isinstance(model, Sequential) and model(paddle.to_tensor(np.ones((4, 3), "float32"))).shape == [4, 2]
    assert issubclass(paddle.nn.LayerList, LayerList) and issubclass(paddle.nn.ParameterList, ParameterList)
