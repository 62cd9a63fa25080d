"""The paddle 2.x names of the compat ``paddle`` namespace: they run eagerly in any global mode."""
import numpy as np
import pytest

import minifluid as fluid


def test_paddle2_training_without_any_mode_switch(paddle):
    import paddle.nn.functional as F
    assert not fluid.in_dygraph_mode()

    class Net(paddle.nn.Layer):
        def __init__(self):
            super(Net, self).__init__()
            self.fc = paddle.nn.Linear(in_features=4, out_features=1)

        def forward(self, x):
            return self.fc(x)

    rng = np.random.RandomState(0)
    x = rng.rand(32, 4).astype("float32")
    y = (x @ np.array([1.0, -2.0, 3.0, 0.5], "float32") + 1.0).reshape(-1, 1)
    model = Net()
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    losses = []
    for _ in range(100):
        loss = paddle.mean(F.square_error_cost(model(paddle.to_tensor(x)), paddle.to_tensor(y)))
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < 0.05 * losses[0]
    assert not fluid.in_dygraph_mode()  # nothing was switched globally
    assert model.fc.weight.grad is None


def test_to_tensor_reshape_mean_and_2x_layers(paddle):
    t = paddle.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.dtype == "float32" and t.shape == [2, 2] and t.stop_gradient
    a = np.ones((2, 3), "float64")
    u = paddle.to_tensor(a, stop_gradient=False)
    a[0, 0] = 5  # to_tensor copies
    assert u.numpy()[0, 0] == 1 and u.dtype == "float64" and not u.stop_gradient
    assert paddle.reshape(t, [4]).shape == [4]
    np.testing.assert_allclose(paddle.mean(t).numpy(), [2.5])
    np.testing.assert_allclose(paddle.mean(t, axis=1).numpy(), [1.5, 3.5])
    net = paddle.nn.Sequential(paddle.nn.Conv2D(1, 2, 3, padding=1), paddle.nn.ReLU(), paddle.nn.MaxPool2D(2),
                               paddle.nn.Flatten(), paddle.nn.Linear(8, 3))
    out = net(paddle.to_tensor(np.random.rand(5, 1, 4, 4).astype("float32")))
    assert out.shape == [5, 3]
    loss = paddle.nn.CrossEntropyLoss()(out, paddle.to_tensor(np.array([0, 1, 2, 0, 1], "int64")))
    assert loss.shape == [1]
    loss.backward()
    assert all(p.gradient() is not None for p in net.parameters())
    assert [n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "4.weight", "4.bias"]


def test_io_dataloader_save_load_and_static_switch(paddle, tmp_path):
    class Squares(paddle.io.Dataset):
        def __getitem__(self, i):
            return np.array([i], "float32"), np.array(i * i, "float32")

        def __len__(self):
            return 6

    images, labels = next(iter(paddle.io.DataLoader(Squares(), batch_size=4)))
    assert images.shape == [4, 1] and labels.shape == [4] and isinstance(images, paddle.Tensor)
    model = paddle.nn.Linear(1, 1)
    paddle.save(model.state_dict(), str(tmp_path / "m.pdparams"))
    state = paddle.load(str(tmp_path / "m.pdparams"))
    assert sorted(state) == ["bias", "weight"] and isinstance(state["weight"], np.ndarray)
    other = paddle.nn.Linear(1, 1)
    other.set_state_dict(state)
    np.testing.assert_array_equal(other.weight.numpy(), model.weight.numpy())
    paddle.enable_static()
    images, _ = next(iter(paddle.io.DataLoader(Squares(), batch_size=4)))
    assert isinstance(images, np.ndarray) and not fluid.in_dygraph_mode()
    paddle.disable_static()
    assert fluid.in_dygraph_mode()
    assert isinstance(fluid.layers.relu(paddle.to_tensor([1.0, -1.0])), paddle.Tensor)
    paddle.enable_static()
    assert not fluid.in_dygraph_mode()
    assert paddle.set_device("cpu") == fluid.CPUPlace()
