"""fluid.dygraph.Layer and the dygraph nn layers; state dicts, checkpoints, optimizers, the map-style loader."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.data.dataloader import DatasetLoader
from minifluid.data.dataset import TensorDataset
from minifluid.dygraph import BatchNorm, Conv2D, Dropout, Layer, Linear, Pool2D, to_variable


class Net(Layer):
    def __init__(self):
        super(Net, self).__init__()
        self.conv = Conv2D(1, 2, 3, padding=1, act="relu")
        self.bn = BatchNorm(2)
        self.pool = Pool2D(2, "avg", 2)
        self.drop = Dropout(0.5)
        self.fc = Linear(8, 3)
        self.scale = self.create_parameter([3], default_initializer=fluid.initializer.Constant(2.0))

    def forward(self, x):
        h = self.drop(self.pool(self.bn(self.conv(x))))
        return self.fc(fluid.layers.reshape(h, [-1, 8])) * self.scale


def test_parameters_sublayers_and_names():
    with fluid.dygraph.guard():
        net = Net()
        names = [n for n, _ in net.named_parameters()]
        assert names == ["scale", "conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn._mean", "bn._variance",
                         "fc.weight", "fc.bias"]
        assert [p.name for p in net.parameters()][:3] == ["net_0.w_0", "conv2d_0.w_0", "conv2d_0.b_0"]
        assert [type(s).__name__ for s in net.sublayers()] == ["Conv2D", "BatchNorm", "Pool2D", "Dropout", "Linear"]
        assert net.fc.weight.shape == [8, 3] and not net.fc.weight.stop_gradient and net.fc.weight.trainable
        assert not net.bn._mean.trainable
        np.testing.assert_array_equal(net.fc.bias.numpy(), np.zeros(3))  # biases start at zero
        limit = np.sqrt(6.0 / (8 + 3))  # Xavier uniform, as the static fc
        assert np.abs(net.fc.weight.numpy()).max() <= limit
        with pytest.raises(AttributeError):
            net.missing


def test_layer_needs_super_init():
    class Bad(Layer):
        def __init__(self):
            self.fc = Linear(2, 2)
    with fluid.dygraph.guard(), pytest.raises(RuntimeError, match="should be called first"):
        Bad()


def test_train_eval_switch_dropout_and_batch_norm():
    x = np.random.RandomState(0).rand(4, 1, 4, 4).astype("float32")
    with fluid.dygraph.guard():
        net = Net()
        mean0 = net.bn._mean.numpy()
        net(to_variable(x))
        assert not np.allclose(net.bn._mean.numpy(), mean0)  # training updates the running mean
        net.eval()
        assert not net.training and not net.drop.training
        mean1 = net.bn._mean.numpy()
        a, b = net(to_variable(x)).numpy(), net(to_variable(x)).numpy()
        np.testing.assert_array_equal(a, b)  # no dropout noise, running statistics
        np.testing.assert_array_equal(net.bn._mean.numpy(), mean1)
        net.train()
        assert net.drop.training


def test_state_dict_set_dict_and_checkpoints(tmp_path):
    with fluid.dygraph.guard():
        net = Net()
        state = net.state_dict()
        assert list(state)[:3] == ["scale", "conv.weight", "conv.bias"]
        fluid.dygraph.save_dygraph(state, str(tmp_path / "net"))
        params, opt_state = fluid.dygraph.load_dygraph(str(tmp_path / "net"))
        assert opt_state is None and isinstance(params["fc.weight"], np.ndarray)
        other = Net()
        assert not np.allclose(other.fc.weight.numpy(), net.fc.weight.numpy())
        other.set_dict(params)
        np.testing.assert_array_equal(other.fc.weight.numpy(), net.fc.weight.numpy())
        other.load_dict(net.state_dict())
        with pytest.raises(AssertionError, match="Parameter not found"):
            other.set_dict({})
        bad = dict(params, **{"fc.bias": np.zeros(4, "float32")})
        with pytest.raises(AssertionError, match="shape not match"):
            other.set_dict(bad)


def test_optimizer_needs_parameter_list_and_keeps_its_state():
    with fluid.dygraph.guard():
        with pytest.raises(AttributeError, match="should not be None in dygraph mode"):
            fluid.optimizer.SGD(0.1)
        fc = Linear(2, 2)
        opt = fluid.optimizer.Adam(0.1, parameter_list=fc.parameters())
        loss = fluid.layers.mean(fc(to_variable(np.ones((1, 2), "float32"))))
        loss.backward()
        opt.minimize(loss)
        state = opt.state_dict()
        assert sorted(state) == sorted(["linear_0.w_0_moment1_0", "linear_0.w_0_moment2_0",
                                        "linear_0.w_0_beta1_pow_acc_0", "linear_0.w_0_beta2_pow_acc_0",
                                        "linear_0.b_0_moment1_0", "linear_0.b_0_moment2_0",
                                        "linear_0.b_0_beta1_pow_acc_0", "linear_0.b_0_beta2_pow_acc_0"])
        np.testing.assert_allclose(state["linear_0.w_0_beta1_pow_acc_0"].numpy(), [0.81])  # 0.9 ** 2 after a step
        opt.clear_gradients()
        assert fc.weight.gradient() is None


def test_regularization_and_clipping_run_eagerly():
    with fluid.dygraph.guard():
        fc = Linear(2, 1, bias_attr=False)
        w0 = fc.weight.numpy()
        opt = fluid.optimizer.SGD(1.0, parameter_list=fc.parameters(), regularization=fluid.regularizer.L2Decay(0.5),
                                  grad_clip=fluid.clip.GradientClipByValue(0.1))
        loss = fluid.layers.reduce_sum(fc(to_variable(np.array([[10.0, -10.0]], "float32"))))
        loss.backward()
        opt.minimize(loss)
        # the clip (to +-0.1) comes first, then the decay 0.5 * w is added: w -= clip(g) + 0.5 w
        # float32 arithmetic: the error scales with the operands (|w0|, 0.1), not with a result that may be ~0
        np.testing.assert_allclose(fc.weight.numpy(), w0 - (np.array([[0.1], [-0.1]]) + 0.5 * w0), rtol=1e-6,
                                   atol=1e-6 * max(1.0, float(np.abs(w0).max())))


def test_map_style_loader_yields_eager_tensors_on_one_place():
    ds = TensorDataset([np.arange(20, dtype="float32").reshape(10, 2), np.arange(10, dtype="int64")])
    with fluid.dygraph.guard():
        batches = list(DatasetLoader(ds, batch_size=4))
        assert len(batches) == 3
        x, y = batches[0]
        assert isinstance(x, fluid.dygraph.Tensor) and x.shape == [4, 2] and y.dtype == "int64"
        two_places = DatasetLoader(ds, batch_size=4, places=[fluid.CPUPlace(), fluid.CPUPlace()])
        with pytest.raises(AssertionError, match="Number of places must be 1 in imperative mode"):
            next(iter(two_places))
    x, y = next(iter(DatasetLoader(ds, batch_size=4, return_list=True)))
    assert isinstance(x, np.ndarray)  # static mode: arrays, as before


def test_default_parameter_names_are_the_static_layers():
    """A digit does not split a class name (Conv2D -> conv2d, as fluid): state saved by static layers loads by
    parameter name into the dygraph ones."""
    with fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard():
        img = fluid.data("img", [None, 2, 5, 5], "float32")
        fluid.layers.conv2d(img, 3, 3)
        fluid.layers.conv3d(fluid.data("vol", [None, 2, 4, 4, 4], "float32"), 2, 3)
        fluid.layers.conv2d_transpose(img, 2, filter_size=3)
        fluid.layers.prelu(img, "channel")
        static = sorted(p.name for p in fluid.default_main_program().all_parameters())
    with fluid.dygraph.guard():
        layers = [Conv2D(2, 3, 3), fluid.dygraph.Conv3D(2, 2, 3), fluid.dygraph.Conv2DTranspose(2, 2, 3),
                  fluid.dygraph.PRelu("channel", channel=2)]
        dygraph = sorted(p.name for layer in layers for p in layer.parameters())
        assert dygraph == static
        assert "conv2d_0.w_0" in dygraph and "prelu_0.w_0" in dygraph and "conv3d_0.w_0" in dygraph
        assert type(layers[2]).__name__ == "Conv2DTranspose" and layers[2].full_name() == "conv2d_transpose_0"


def test_sublayer_slots_take_a_layer_or_none_and_create_variable_is_filled_by_ops():
    class Cell(Layer):
        def __init__(self):
            super(Cell, self).__init__()
            self.fc = Linear(2, 2)

        def forward(self, x):
            out = self.create_variable(dtype="float32")
            assert out.name.startswith("cell_0._generated_var")
            self._helper.append_op(type="scale", inputs={"X": x}, outputs={"Out": out}, attrs={"scale": -1.0})
            return self._helper.append_activation(out, act="relu")

    with fluid.dygraph.guard():
        cell = Cell()
        with pytest.raises(TypeError, match="sublayer 'fc' should be of type Layer or None"):
            cell.fc = "str"
        cell.fc = None
        assert cell.sublayers() == [] and cell.fc is None
        out = cell(to_variable(np.array([[1.0, -2.0]], "float32")))
        np.testing.assert_array_equal(out.numpy(), [[0.0, 2.0]])
        assert cell.create_variable("h").name == "cell_0.h"
