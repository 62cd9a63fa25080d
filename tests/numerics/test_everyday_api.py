"""fluid 1.8's smaller everyday names: name_scope / device_guard labels, WeightNormParamAttr, the Bilinear
initializer, ErrorClipByValue, nets.glu and nets.scaled_dot_product_attention — each against numpy."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.initializer import NumpyArrayInitializer

rng = np.random.RandomState(11)


def _run(main, startup, feed, fetch):
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope), exe, scope


# --- name_scope / device_guard -----------------------------------------------------------------------------
def test_name_scope_labels_ops_like_fluid_and_numbers_a_reused_prefix():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        with fluid.name_scope("s1"):
            a = fluid.data(name="data", shape=[None, 1], dtype="float32")
            b = a + a
            with fluid.name_scope("s2"):
                c = b * a
            with fluid.name_scope("s3"):
                d = c / a
        with fluid.name_scope("s1"):
            f = fluid.layers.pow(d, 2.0)
        with fluid.name_scope("s4"):
            f - a
        fluid.layers.relu(f)
    scopes = {op.type: op.desc.attr("op_namescope") for op in main.global_block().ops}  # fluid's OpDesc view
    assert scopes == {"elementwise_add": "/s1/", "elementwise_mul": "/s1/s2/", "elementwise_div": "/s1/s3/",
                      "pow": "/s1_1/", "elementwise_sub": "/s4/", "relu": "/"}
    with pytest.raises(ValueError, match="namescope prefix can not be empty"):
        with fluid.name_scope(""):
            pass


def test_device_guard_labels_ops_and_checks_the_device():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        with fluid.device_guard("cpu"):
            y = fluid.layers.scale(x, 2.0)
        with fluid.device_guard("gpu"):  # no GPU here: labelled, and run on the CPU as fluid does
            z = fluid.layers.relu(y)
        w = fluid.layers.scale(z, 3.0)
    devices = [op.attr("op_device") for op in main.global_block().ops]
    assert devices == ["cpu", "gpu", ""]
    (out,), _, _ = _run(main, startup, {"x": np.array([[-1.0, 0.5, 2.0]], "float32")}, [w])
    np.testing.assert_allclose(out, [[0.0, 3.0, 12.0]])
    with pytest.raises(ValueError, match="should be 'cpu' or 'gpu'.*But received tpu"):
        with fluid.device_guard("tpu"):
            pass


# --- WeightNormParamAttr --------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_weight_norm_starts_as_the_initializer_and_trains_g_and_v(dim):
    w0, x = rng.randn(4, 3), rng.randn(5, 4)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xv = fluid.data("x", [None, 4], "float64")
        attr = fluid.WeightNormParamAttr(dim=dim, name="wn", initializer=NumpyArrayInitializer(w0))
        y = fluid.layers.fc(xv, 3, param_attr=attr, bias_attr=False)
        loss = fluid.layers.mean(fluid.layers.square(y))
        fluid.optimizer.SGD(0.5).minimize(loss)
    params = sorted(p.name for p in main.global_block().all_parameters())
    assert params == ["wn_g", "wn_v"]
    (y0, g1, v1), _, _ = _run(main, startup, {"x": x}, [y, "wn_g", "wn_v"])
    np.testing.assert_allclose(y0, x @ w0, rtol=1e-12)  # w = g v / ||v|| = w0 at the start

    # one SGD step on g and v, by hand: w = g * v / n with n the norm over the axes other than dim
    axes = None if dim is None else tuple(a for a in range(2) if a != dim)
    v = w0
    n = np.sqrt((v * v).sum(axis=axes, keepdims=True))
    g = n.copy()
    dw = x.T @ (2 * (x @ w0) / (5 * 3))
    dg = (dw * v / n).sum(axis=axes, keepdims=True)
    dv = g / n * dw - g * v / n ** 3 * (dw * v).sum(axis=axes, keepdims=True)
    np.testing.assert_allclose(g1, g - 0.5 * dg, rtol=1e-10)
    np.testing.assert_allclose(v1, v - 0.5 * dv, rtol=1e-10)


def test_weight_norm_rejects_an_axis_out_of_range():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 4])
        with pytest.raises(ValueError, match=r"dim 2 is out of range for a parameter of shape \[4, 3\]"):
            fluid.layers.fc(x, 3, param_attr=fluid.WeightNormParamAttr(dim=2))


# --- Bilinear ----------------------------------------------------------------------------------------------
def test_bilinear_initializer_makes_conv_transpose_upsample_by_two():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1, 3, 3])
        y = fluid.layers.conv2d_transpose(x, num_filters=1, filter_size=4, stride=2, padding=1, bias_attr=False,
                                          param_attr=fluid.ParamAttr(name="up", initializer=fluid.initializer.Bilinear()))
    image = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]], "float32")
    (out, kernel), _, _ = _run(main, startup, {"x": image[None, None]}, [y, "up"])
    taps = np.array([0.25, 0.75, 0.75, 0.25])  # factor 2: 1 - |i / 2 - 0.75|
    np.testing.assert_allclose(kernel[0, 0], np.outer(taps, taps), rtol=1e-7)
    # the interior of the 6x6 output interpolates linearly between the input pixels (a linear ramp stays one)
    ramp = out[0, 0, 1:5, 1:5]
    np.testing.assert_allclose(np.diff(ramp, axis=1), 0.5, rtol=1e-6)
    np.testing.assert_allclose(np.diff(ramp, axis=0), 1.5, rtol=1e-6)
    with pytest.raises(ValueError, match="shape\\[2\\] must be equal to shape\\[3\\]"):
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            fluid.layers.create_parameter([1, 1, 3, 4], "float32", default_initializer=fluid.initializer.Bilinear())


# --- ErrorClipByValue -------------------------------------------------------------------------------------
def test_error_clip_clips_a_gradient_where_it_is_made_and_upstream_sees_the_clipped_value():
    x0 = np.array([[1.0, -2.0, 3.0]])
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.create_parameter([1, 3], "float64", name="x", default_initializer=NumpyArrayInitializer(x0))
        h = fluid.layers.scale(x, 4.0)
        h.error_clip = fluid.clip.ErrorClipByValue(max=0.5, min=-0.25)
        loss = fluid.layers.reduce_sum(fluid.layers.square(h))
        fluid.backward.append_backward(loss, callbacks=[fluid.clip.error_clip_callback])
    (dh, dx), _, _ = _run(main, startup, {}, [h.name + "@GRAD", x.name + "@GRAD"])
    np.testing.assert_allclose(dh, np.clip(2 * 4 * x0, -0.25, 0.5))
    np.testing.assert_allclose(dx, 4 * np.clip(2 * 4 * x0, -0.25, 0.5))
    assert str(fluid.clip.ErrorClipByValue(2.0)) == "ByValue, min=-2.000000, max=2.000000"


# --- nets.glu and nets.scaled_dot_product_attention ------------------------------------------------------------
def test_glu_gates_the_first_half_with_the_sigmoid_of_the_second():
    x0 = rng.randn(2, 6, 3)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        out = fluid.nets.glu(fluid.data("x", [None, 6, 3], "float64"), dim=1)
    (got,), _, _ = _run(main, startup, {"x": x0}, [out])
    np.testing.assert_allclose(got, x0[:, :3] / (1 + np.exp(-x0[:, 3:])), rtol=1e-12)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("heads", [1, 2])
def test_scaled_dot_product_attention_matches_numpy(heads):
    q0, k0, v0 = rng.randn(2, 3, 4), rng.randn(2, 5, 4), rng.randn(2, 5, 6)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        q, k, v = (fluid.data(n, [None, s[1], s[2]], "float64") for n, s in (("q", q0.shape), ("k", k0.shape),
                                                                             ("v", v0.shape)))
        out = fluid.nets.scaled_dot_product_attention(q, k, v, num_heads=heads)
    params = [p.name for p in main.global_block().all_parameters()]
    (got, *weights), _, _ = _run(main, startup, {"q": q0, "k": k0, "v": v0}, [out] + params)
    if heads > 1:  # each input went through its own fc (weight, bias) first
        w = dict(zip(params, weights))
        q0, k0, v0 = (a @ w[f"fc_{i}.w_0"] + w[f"fc_{i}.b_0"] for i, a in enumerate((q0, k0, v0)))

    def split(a):
        return a.reshape(a.shape[0], a.shape[1], heads, -1).transpose(0, 2, 1, 3)
    ctx = _softmax(split(q0) @ split(k0).transpose(0, 1, 3, 2) / np.sqrt(4 // heads)) @ split(v0)
    np.testing.assert_allclose(got, ctx.transpose(0, 2, 1, 3).reshape(2, 3, 6), rtol=1e-10)
    assert got.shape == (2, 3, 6)


def test_scaled_dot_product_attention_checks_its_inputs():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        q, k, v = fluid.data("q", [None, 3, 4]), fluid.data("k", [None, 5, 4]), fluid.data("v", [None, 4, 6])
        with pytest.raises(ValueError, match="in value batch = 4, in key batch = 5"):
            fluid.nets.scaled_dot_product_attention(q, k, v)
        with pytest.raises(ValueError, match=r"hidden size of keys \(4\) must be divisible .* heads \(3\)"):
            fluid.nets.scaled_dot_product_attention(q, k, fluid.data("v2", [None, 5, 6]), num_heads=3)


# --- fluid's lower-level spellings -----------------------------------------------------------------------
def test_op_desc_view_block_initializer_kwargs_and_the_tensor_alias():
    program = fluid.Program()
    block = program.global_block()
    for _ in range(2):  # a second create_parameter finds the init op and adds none
        block.create_parameter(name="p", shape=[2, 3], dtype="float32",
                               initializer=fluid.initializer.ConstantInitializer(0.5))
    v = block.create_var(name="v", shape=[2], dtype="float32", persistable=True,
                         initializer=fluid.initializer.Constant(2.0))
    assert [(op.type, op.desc.type(), op.desc.output("Out")) for op in block.ops] == \
        [("fill_constant", "fill_constant", ["v"]), ("fill_constant", "fill_constant", ["p"])]  # prepended
    op = block.ops[0]
    assert op.desc.attr("value") == 2.0 and op.desc.has_attr("op_role") and not op.desc.has_attr("nope")
    op.desc.set_attr("value", 3.0)
    assert op.attr("value") == 3.0 and op.desc.output_arg_names() == [v.name]
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(program, scope=scope)
    np.testing.assert_array_equal(np.array(scope.find_var("p").get_tensor()), np.full((2, 3), 0.5, "float32"))
    np.testing.assert_array_equal(np.array(scope.find_var("v").get_tensor()), [3.0, 3.0])
    assert fluid.Tensor is fluid.LoDTensor


# --- backward: a data variable made differentiable, in-place counters, dygraph arrays --------------------
def test_append_backward_gives_a_data_variable_with_stop_gradient_false_its_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x, y = fluid.data("x", [None, 3], "float64"), fluid.data("y", [None, 3], "float64")
        x.stop_gradient = False  # y keeps the data default: no gradient
        loss = fluid.layers.reduce_sum(fluid.layers.square(x) * y)
        fluid.backward.append_backward(loss)
    assert main.global_block().has_var("x@GRAD") and not main.global_block().has_var("y@GRAD")
    x0, y0 = rng.randn(2, 3), rng.randn(2, 3)
    (dx,), _, _ = _run(main, startup, {"x": x0, "y": y0}, ["x@GRAD"])
    np.testing.assert_allclose(dx, 2 * x0 * y0, rtol=1e-12)


def test_backward_undoes_in_place_increments_so_array_grads_use_the_forward_indices():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xs = [fluid.data(f"x{k}", [None, 2], "float64") for k in range(3)]
        i = fluid.layers.zeros([1], "int64")
        i.stop_gradient = False  # as fluid: the counter's in-place increments are undone in the backward pass
        arr = None
        for k, x in enumerate(xs):
            x.stop_gradient = False
            arr = fluid.layers.array_write(x, i, array=arr)
            if k < 2:
                fluid.layers.increment(i)
        j = fluid.layers.zeros([1], "int64")
        j.stop_gradient = False
        reads = []
        for k in range(3):
            reads.append(fluid.layers.reduce_sum(fluid.layers.array_read(arr, j)) * float(k + 1))
            if k < 2:
                fluid.layers.increment(j)
        fluid.backward.append_backward(fluid.layers.sums(reads))
    feed = {f"x{k}": rng.randn(2, 2) for k in range(3)}
    grads, _, _ = _run(main, startup, feed, [f"x{k}@GRAD" for k in range(3)])
    for k, g in enumerate(grads):  # read k was weighted by k + 1
        np.testing.assert_array_equal(g, np.full((2, 2), k + 1.0))


def test_tensor_arrays_are_lists_in_dygraph_mode_as_in_fluid():
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(np.ones((2, 2), "float32"))
        zero = fluid.layers.zeros([1], "int64")
        arr = fluid.layers.array_write(x, zero)
        arr = fluid.layers.array_write(x * 2, fluid.layers.increment(zero, in_place=False), array=arr)
        assert isinstance(arr, list) and fluid.layers.array_length(arr) == 2
        np.testing.assert_array_equal(fluid.layers.array_read(arr, zero).numpy(), np.ones((2, 2)))
        with pytest.raises(IndexError, match="index 3 is greater than the length of 'array' \\(2\\)"):
            fluid.layers.array_write(x, fluid.layers.fill_constant([1], "int64", 3), array=arr)


def test_fluid_internal_names_legacy_tests_import():
    import importlib
    from minifluid.framework import _dygraph_guard, convert_np_dtype_to_dtype_

    assert convert_np_dtype_to_dtype_(np.float32) == fluid.core.VarDesc.VarType.FP32
    assert int(convert_np_dtype_to_dtype_(np.dtype("int64"))) == 3  # fluid's enum number
    assert fluid.backward._append_grad_suffix_("x") == "x@GRAD" and fluid.backward.calc_gradient is fluid.gradients
    assert fluid.core._set_eager_deletion_mode(0.0, 1.0, True) is None
    from minifluid.compat import MODULE_MAP
    assert importlib.import_module(MODULE_MAP["paddle.fluid.layer_helper"]).LayerHelper is fluid.layers.LayerHelper
    from minifluid.dygraph.nn import Embedding
    assert Embedding is fluid.dygraph.Embedding and fluid.framework.in_dygraph_mode() is False
    with fluid.dygraph.guard():
        with _dygraph_guard(None):
            assert not fluid.in_dygraph_mode()
        assert fluid.in_dygraph_mode()
    t = fluid.LoDTensor()
    t.set(np.arange(4.0).reshape(2, 2), fluid.CPUPlace())
    out = fluid.executor.as_numpy([t])[0]
    np.testing.assert_array_equal(out, np.arange(4.0).reshape(2, 2))
    assert not np.shares_memory(out, np.asarray(t))
    t.set_recursive_sequence_lengths([[1, 1]])
    with pytest.raises(RuntimeError, match="hold LoD information"):
        fluid.executor.as_numpy(t)


def test_dygraph_place_guard_switches_the_tracer_place():
    from minifluid.framework import _dygraph_place_guard
    with _dygraph_place_guard(fluid.CPUPlace()):  # static mode: nothing to switch
        assert not fluid.in_dygraph_mode()
    with fluid.dygraph.guard():
        tracer = fluid.framework._dygraph_tracer()
        marker = fluid.CPUPlace()
        with _dygraph_place_guard(place=marker):
            assert tracer.expected_place is marker
            x = fluid.dygraph.to_variable(np.ones(2, "float32"))
            assert isinstance(x.numpy(), np.ndarray)
        assert tracer.expected_place is not marker


@pytest.mark.parametrize("layer", ["batch_norm", "inplace_abn"])
def test_batch_norm_momentum_variable_is_read_at_run_time(layer):
    """fluid.layers.batch_norm / inplace_abn(momentum=Variable) feed the op's MomentumTensor: the moving mean moves
    by it."""
    xv = np.random.RandomState(2).rand(4, 3, 2, 2).astype("float32")
    means = []
    for momentum in (0.25, "var"):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.data("x", [4, 3, 2, 2])
            m = fluid.data("m", [1]) if momentum == "var" else momentum
            getattr(fluid.layers, layer)(x, momentum=m)
        bn = [op for op in main.global_block().ops if op.type == layer][0]
        assert bn.input("MomentumTensor") == (["m"] if momentum == "var" else [])
        exe = fluid.Executor(fluid.CPUPlace())
        with fluid.scope_guard(fluid.Scope()):
            exe.run(startup)
            exe.run(main, feed={"x": xv, "m": np.array([0.25], "float32")})
            means.append(np.array(fluid.global_scope().find_var(f"{layer}_0.w_1").get_tensor()))
    np.testing.assert_allclose(means[1], means[0], rtol=1e-6)
    np.testing.assert_allclose(means[0], 0.75 * xv.mean(axis=(0, 2, 3)), rtol=1e-5)
