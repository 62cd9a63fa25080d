"""fluid.dygraph Layers built outside ``guard()`` append static ops (dygraph/emit.py, dygraph/layer.py).

Each model here is built twice under fresh names: in dygraph mode, and in static mode from the same
weights (``set_dict`` of the dygraph ``state_dict``); outputs, gradients and SGD updates must agree.
"""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import to_variable

D = fluid.dygraph


class ConvBnFc(D.Layer):
    """conv + batch_norm + pool + linear, with a fluid.layers call and a to_variable inside forward."""

    def __init__(self):
        super().__init__()
        self.conv = D.Conv2D(2, 4, 3, padding=1)
        self.bn = D.BatchNorm(4, act="relu")
        self.pool = D.Pool2D(2, "max", 2)
        self.fc = D.Linear(16, 3, act="tanh")

    def forward(self, x):
        y = self.pool(self.bn(self.conv(to_variable(x))))
        return self.fc(fluid.layers.reshape(y, [-1, 16]))


class EmbedNorm(D.Layer):
    """embedding + layer_norm + a parameter of the user layer's own."""

    def __init__(self):
        super().__init__()
        self.emb = D.Embedding([10, 6])
        self.norm = D.LayerNorm(6)
        self.scale = self.create_parameter([6], default_initializer=fluid.initializer.Constant(1.5))

    def forward(self, ids):
        return fluid.layers.elementwise_mul(self.norm(self.emb(ids)), self.scale)


def _dygraph_run(make, feeds, steps):
    """(losses, first gradients by name, final state, parameter names) of ``steps`` SGD steps."""
    with D.guard():
        model = make()
        init = {k: v.numpy() for k, v in model.state_dict().items()}
        opt = fluid.optimizer.SGD(0.1, parameter_list=model.parameters())
        losses, grads = [], None
        for _ in range(steps):
            loss = fluid.layers.reduce_mean(model(*[to_variable(f) for f in feeds]))
            loss.backward()
            if grads is None:
                grads = {p.name: p.gradient() for p in model.parameters() if p.trainable}
            opt.minimize(loss)
            model.clear_gradients()
            losses.append(loss.numpy().item())
        final = {k: v.numpy() for k, v in model.state_dict().items()}
        return init, losses, grads, final, [p.name for p in model.parameters()]


def _static_run(make, feeds, steps, init):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xs = [fluid.data(f"x{i}", list(f.shape), str(f.dtype)) for i, f in enumerate(feeds)]
        model = make()
        loss = fluid.layers.reduce_mean(model(*xs))
        fluid.optimizer.SGD(0.1).minimize(loss)
    trainable = [p for p in model.parameters() if p.trainable]
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        model.set_dict(init)
        feed = {x.name: f for x, f in zip(xs, feeds)}
        losses, grads = [], None
        for _ in range(steps):
            out = exe.run(main, feed=feed, fetch_list=[loss] + [p.name + "@GRAD" for p in trainable])
            if grads is None:
                grads = {p.name: np.asarray(g) for p, g in zip(trainable, out[1:])}
            losses.append(np.asarray(out[0]).item())
        scope = fluid.global_scope()
        final = {k: np.array(scope.find_var(p.name).get_tensor()) for k, p in model.state_dict().items()}
    return main, startup, model, losses, grads, final


@pytest.mark.parametrize("make, feeds", [
    (ConvBnFc, [np.random.RandomState(0).rand(3, 2, 4, 4).astype("float32")]),
    (EmbedNorm, [np.random.RandomState(1).randint(0, 10, (4, 5)).astype("int64")]),
])
def test_static_and_dygraph_train_alike_from_the_same_weights(make, feeds):
    init, dy_losses, dy_grads, dy_final, dy_names = _dygraph_run(make, feeds, 3)
    main, _, model, st_losses, st_grads, st_final = _static_run(make, feeds, 3, init)
    assert [p.name for p in model.parameters()] == dy_names
    assert all(isinstance(p, fluid.framework.Parameter) and not isinstance(p, D.ParamBase)
               for p in model.parameters())
    np.testing.assert_allclose(st_losses, dy_losses, rtol=1e-5, atol=1e-6)
    assert st_grads.keys() == dy_grads.keys()
    for name, g in dy_grads.items():
        np.testing.assert_allclose(st_grads[name], g, rtol=1e-4, atol=1e-6, err_msg=name)
    assert st_final.keys() == dy_final.keys()
    for key, v in dy_final.items():
        np.testing.assert_allclose(st_final[key], v, rtol=1e-5, atol=1e-6, err_msg=key)
    assert sum(not np.array_equal(v, init[k]) for k, v in dy_final.items()) >= len(dy_grads)  # SGD moved them
    assert dy_losses[-1] != dy_losses[0]


def test_static_parameters_live_in_the_default_programs_with_fluid_names():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        first, second = D.Linear(4, 3), D.Linear(3, 2, bias_attr=False)
        bn = D.BatchNorm(3)
        x = fluid.data("x", [None, 4], "float32")
        second(bn(first(x)))
    names = ["linear_0.w_0", "linear_0.b_0", "linear_1.w_0",
             "batch_norm_0.w_0", "batch_norm_0.b_0", "batch_norm_0.w_1", "batch_norm_0.w_2"]
    got = [p.name for p in first.parameters() + second.parameters() + bn.parameters()]
    assert got == names
    block = main.global_block()
    assert [block.var(n).shape for n in names[:3]] == [(4, 3), (3,), (3, 2)]
    assert not block.var("batch_norm_0.w_1").trainable and block.var("linear_0.w_0").trainable
    init_ops = {op.output_arg_names[0]: op.type for op in startup.global_block().ops}
    assert init_ops["linear_0.w_0"] == "uniform_random" and init_ops["linear_0.b_0"] == "fill_constant"
    assert {op.type for op in main.global_block().ops} >= {"mul", "elementwise_add", "batch_norm"}
    assert list(first.state_dict()) == ["weight", "bias"]


def test_layer_called_in_the_other_mode_is_a_clear_error():
    with D.guard():
        eager = D.Linear(2, 2)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 2], "float32")
        with pytest.raises(RuntimeError, match=r"Linear \(linear_0\) was built in dygraph mode"):
            eager(x)
        static = D.Linear(2, 2)
    with D.guard():
        with pytest.raises(RuntimeError, match="built in static mode"):
            static(to_variable(np.ones((1, 2), "float32")))


def test_to_variable_follows_the_mode():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 2], "float32")
        assert to_variable(x) is x
        with pytest.raises(AssertionError, match="to_variable could only be called in dygraph mode"):
            to_variable(np.ones(2, "float32"))


_RNG = np.random.RandomState(7)


def _f(*shape):
    return _RNG.rand(*shape).astype("float32")


_U = fluid.ParamAttr(initializer=fluid.initializer.Uniform(-0.5, 0.5))
_LAYERS = {
    "Conv2D": (lambda: D.Conv2D(3, 4, 3, stride=2, padding=1, groups=1, act="relu"), [_f(2, 3, 5, 5)]),
    "Conv3D": (lambda: D.Conv3D(2, 3, 2, bias_attr=_U), [_f(1, 2, 3, 3, 3)]),
    "Conv2DTranspose": (lambda: D.Conv2DTranspose(3, 2, 3, stride=2, act="sigmoid"), [_f(2, 3, 3, 3)]),
    "Conv3DTranspose": (lambda: D.Conv3DTranspose(2, 3, 2, bias_attr=_U), [_f(1, 2, 2, 2, 2)]),
    "Pool2D": (lambda: D.Pool2D(2, "avg", 1), [_f(2, 3, 4, 4)]),
    "Linear": (lambda: D.Linear(5, 3, bias_attr=_U, act="softmax"), [_f(2, 4, 5)]),
    "BatchNorm": (lambda: D.BatchNorm(3, bias_attr=_U), [_f(4, 3, 2, 2)]),
    "Embedding": (lambda: D.Embedding([7, 3], padding_idx=2), [np.array([[1, 2], [6, 0]], "int64")]),
    "LayerNorm": (lambda: D.LayerNorm([2, 3], bias_attr=_U), [_f(4, 2, 3)]),
    "GroupNorm": (lambda: D.GroupNorm(4, 2, param_attr=_U, bias_attr=_U), [_f(2, 4, 3, 3)]),
    "InstanceNorm": (lambda: D.InstanceNorm(3, bias_attr=_U), [_f(2, 3, 4, 4)]),
    "PRelu": (lambda: D.PRelu("channel", channel=3, param_attr=_U), [_f(2, 3, 2, 2) - 0.5]),
    "GRUUnit": (lambda: D.GRUUnit(9, bias_attr=_U), [_f(4, 9), _f(4, 3)]),
    "BilinearTensorProduct": (lambda: D.BilinearTensorProduct(3, 4, 2, bias_attr=_U), [_f(5, 3), _f(5, 4)]),
    "TreeConv": (lambda: D.TreeConv(4, 3, 2, bias_attr=_U),
                 [_f(2, 5, 4), np.array([[[1, 2], [1, 3], [2, 4]]] * 2, "int32")]),
    "SpectralNorm": (lambda: D.SpectralNorm([4, 6], power_iters=3), [_f(4, 6)]),
    "Dropout": (lambda: D.Dropout(0.4, is_test=True), [_f(3, 4)]),
    "NCE": (lambda: D.NCE(6, 4, num_neg_samples=3, seed=5, bias_attr=_U), [_f(5, 4), _RNG.randint(0, 6, (5, 1))]),
}


@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_each_layer_builds_static_ops_giving_its_dygraph_results(name):
    make, feeds = _LAYERS[name]
    with D.guard():
        layer = make()
        want = layer(*[to_variable(f) for f in feeds])
        want = [t.numpy() for t in (want if isinstance(want, tuple) else [want])]
        state = {k: v.numpy() for k, v in layer.state_dict().items()}
        names = [p.name for p in layer.parameters()]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xs = [fluid.data(f"x{i}", list(f.shape), str(f.dtype)) for i, f in enumerate(feeds)]
        layer = make()
        outs = layer(*xs)
        outs = list(outs) if isinstance(outs, tuple) else [outs]
    assert [p.name for p in layer.parameters()] == names
    assert len(main.global_block().ops) > 0
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    layer.set_dict(state)
    got = exe.run(main, feed={x.name: f for x, f in zip(xs, feeds)}, fetch_list=outs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-6)


def test_static_calls_check_their_inputs_like_fluid():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        conv = D.Conv2D(3, 2, 2)
        with pytest.raises(TypeError, match=r"The data type of 'input' in Conv2D must be \['float16', 'float32', "
                                            r"'float64'\], but received int32"):
            conv(fluid.data("ints", [None, 3, 4, 4], "int32"))
        with pytest.raises(TypeError, match="Conv2D .built in static mode. expects a Variable as input 0, but got "
                                            "numpy.ndarray; feed data through fluid.data"):
            conv(np.ones([1, 3, 4, 4], "float32"))
        with pytest.raises(TypeError, match="'input' in Embedding must be .'int64'., but received int32"):
            D.Embedding([4, 2])(fluid.data("ids", [None, 1], "int32"))


class Stacked(D.Layer):
    """Sequential, LayerList and ParameterList hold static layers and parameters too."""

    def __init__(self):
        super().__init__()
        self.body = D.Sequential(D.Linear(3, 4, act="relu"), D.Linear(4, 4))
        self.heads = D.LayerList([D.Linear(4, 2) for _ in range(2)])
        self.gains = D.ParameterList([self.create_parameter([2], default_initializer=fluid.initializer.Constant(g))
                                      for g in (0.5, 2.0)])

    def forward(self, x):
        h = self.body(x)
        return fluid.layers.sums([fluid.layers.elementwise_mul(head(h), g) for head, g in zip(self.heads, self.gains)])


def test_containers_of_static_layers_train_like_dygraph():
    feeds = [np.random.RandomState(3).rand(5, 3).astype("float32")]
    init, dy_losses, _, dy_final, dy_names = _dygraph_run(Stacked, feeds, 2)
    _, _, model, st_losses, _, st_final = _static_run(Stacked, feeds, 2, init)
    assert [p.name for p in model.parameters()] == dy_names and len(dy_names) == 10
    assert list(model.state_dict()) == list(dy_final) and "gains.1" in dy_final
    np.testing.assert_allclose(st_losses, dy_losses, rtol=1e-5, atol=1e-6)
    for key, v in dy_final.items():
        np.testing.assert_allclose(st_final[key], v, rtol=1e-5, atol=1e-6, err_msg=key)


def test_save_dygraph_of_a_static_layer_saves_its_scope_values(tmp_path):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        layer = D.Linear(3, 2)
    with fluid.scope_guard(fluid.Scope()):
        with pytest.raises(ValueError, match="'linear_0.w_0' has no value in the global scope; run the startup"):
            D.save_dygraph(layer.state_dict(), str(tmp_path / "m"))
        fluid.Executor(fluid.CPUPlace()).run(startup)
        D.save_dygraph(layer.state_dict(), str(tmp_path / "m"))
        w = np.array(fluid.global_scope().find_var("linear_0.w_0").get_tensor())
    params, opt = D.load_dygraph(str(tmp_path / "m"))
    assert opt is None and sorted(params) == ["bias", "weight"]
    np.testing.assert_array_equal(params["weight"], w)
    with D.guard():
        eager = D.Linear(3, 2)
        eager.set_dict(params)
        np.testing.assert_array_equal(eager.weight.numpy(), w)
