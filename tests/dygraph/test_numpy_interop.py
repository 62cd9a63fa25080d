"""Dygraph meets numpy the way new users try it (issue 14.5): one-element results convert with float()
and %f on numpy 2.4+, and a numpy array given to a layer is a clear TypeError saying how to convert."""
import pickle

import numpy as np
import pytest

import minifluid as fluid
from minifluid.compat import paddle_ns as paddle
from minifluid.dygraph import paddle_nn


def _loss():
    x = fluid.dygraph.to_variable(np.arange(6, dtype="float32").reshape(2, 3))
    fc = fluid.dygraph.Linear(3, 1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.5)))
    return fluid.layers.reduce_mean(fc(x))  # shape [1], as fluid gives a loss


def test_one_element_results_convert_like_fetched_losses():
    with fluid.dygraph.guard():
        loss = _loss()
        value = loss.numpy()
        assert value.shape == (1,)
        assert float(value) == pytest.approx(3.75) and int(value) == 3
        assert "%f" % value == "3.750000" and "%.2f" % loss.numpy() == "3.75"
        assert float(loss) == pytest.approx(3.75) and int(loss) == 3
        assert "{:.1f}".format(float(loss.numpy())) == "3.8"
        assert type(pickle.loads(pickle.dumps(value))) is np.ndarray  # files never need minifluid to load
    # the very type the static fetch path returns, not a second copy of the idea
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        out = fluid.layers.reduce_mean(fluid.layers.fill_constant([2], "float32", 2.0))
    (fetched,) = fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=[out], scope=fluid.Scope())
    assert type(fetched) is type(value) and float(fetched) == 2.0


def test_many_element_results_stay_plain_arrays():
    with fluid.dygraph.guard():
        value = fluid.dygraph.to_variable(np.ones([2, 2], "float32")).numpy()
    assert type(value) is np.ndarray
    with pytest.raises(TypeError):
        float(value)


@pytest.mark.parametrize("make, args", [
    (lambda: fluid.dygraph.Linear(3, 2), [np.ones([2, 3], "float32")]),
    (lambda: fluid.dygraph.Conv2D(1, 2, 3), [np.ones([1, 1, 4, 4], "float32")]),
    (lambda: paddle_nn.Linear(3, 2), [np.ones([2, 3], "float32")]),
    (lambda: paddle_nn.ReLU(), [np.ones([2, 3], "float32")]),
])
def test_a_numpy_input_to_a_layer_says_what_was_expected_and_how_to_convert(make, args):
    with fluid.dygraph.guard():
        layer = make()
        with pytest.raises(TypeError) as info:
            layer(*args)
    message = str(info.value)
    assert message == (f"{type(layer).__name__} expects a Tensor as input 0, but got numpy.ndarray; convert it "
                       "first with fluid.dygraph.to_variable(x) (paddle 2.x: paddle.to_tensor(x))")


def test_the_check_names_the_position_and_leaves_user_layers_free():
    class Model(paddle_nn.Layer):  # a user's layer may take numpy and convert it itself, as in fluid
        def __init__(self):
            super().__init__()
            self.fc = paddle_nn.Linear(3, 1)

        def forward(self, x, scale):
            return self.fc(paddle.to_tensor(x)) * float(scale)

    out = Model()(np.ones([2, 3], "float32"), np.float32(2.0))
    assert out.shape == [2, 1]
    with pytest.raises(TypeError, match=r"^MSELoss expects a Tensor as input 1, but got list; convert it first"):
        paddle_nn.MSELoss()(out, [[1.0], [2.0]])


def test_every_built_in_layer_checks_its_inputs():
    from minifluid import dygraph
    from minifluid.dygraph.layer import Layer
    containers = {"Layer", "Sequential", "LayerList", "ParameterList", "DataParallel"}  # they wrap users' layers
    layers = {f"{module.__name__}.{name}": getattr(module, name) for module in (dygraph, paddle_nn)
              for name in module.__all__ if name not in containers}
    layers = {name: cls for name, cls in layers.items() if isinstance(cls, type) and issubclass(cls, Layer)}
    assert len(layers) > 20
    unchecked = sorted(name for name, cls in layers.items() if not cls._tensor_inputs)
    assert not unchecked, f"built-in layers that accept a numpy array silently: {unchecked}"
