"""Layer builders: values against numpy, equivalent compositions, shapes and training smoke tests."""
import numpy as np
import pytest

import minifluid as fluid

rng = np.random.RandomState(5)


def _exe_run(main, startup, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    return exe.run(main, feed=feed, fetch_list=fetch)


def test_accuracy_top1_and_top2_match_numpy():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        scores = fluid.data("scores", [None, 5])
        label = fluid.data("label", [None, 1], "int64")
        acc1 = fluid.layers.accuracy(scores, label)
        acc2 = fluid.layers.accuracy(scores, label, k=2)
    s = rng.rand(40, 5).astype("float32")
    y = rng.randint(0, 5, (40, 1)).astype("int64")
    a1, a2 = _exe_run(main, startup, {"scores": s, "label": y}, [acc1, acc2])
    top2 = np.argsort(-s, axis=1)[:, :2]
    assert a1.shape == (1,) and a1.dtype == np.float32
    np.testing.assert_allclose(a1[0], np.mean(s.argmax(1) == y[:, 0]), rtol=1e-6)
    np.testing.assert_allclose(a2[0], np.mean((top2 == y).any(1)), rtol=1e-6)


def test_cross_entropy_of_softmax_equals_softmax_with_cross_entropy_with_the_same_gradients():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 6], "float64")
        label = fluid.data("label", [None, 1], "int64")
        logits = fluid.layers.fc(x, 4)
        fused, prob = fluid.layers.softmax_with_cross_entropy(logits, label, return_softmax=True)
        composed = fluid.layers.cross_entropy(fluid.layers.softmax(logits), label)
        loss_a, loss_b = fluid.layers.mean(fused), fluid.layers.mean(composed)
        w = main.global_block().var("fc_0.w_0")
        (grad_a,), (grad_b,) = fluid.gradients(loss_a, w), fluid.gradients(loss_b, w)
    feed = {"x": rng.randn(7, 6), "label": rng.randint(0, 4, (7, 1)).astype("int64")}
    a, b, p, ga, gb = _exe_run(main, startup, feed, [fused, composed, prob, grad_a, grad_b])
    np.testing.assert_allclose(a, b, rtol=1e-10)
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(ga, gb, rtol=1e-8)


def test_regression_with_square_error_cost_trains():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        y = fluid.data("y", [None, 1])
        pred = fluid.layers.fc(fluid.layers.fc(x, 16, act="tanh"), 1)
        loss = fluid.layers.reduce_mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
    xs = rng.rand(64, 3).astype("float32")
    ys = (xs @ np.array([[1.0], [-2.0], [0.5]], "float32") + 0.3).astype("float32")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    losses = [float(exe.run(main, feed={"x": xs, "y": ys}, fetch_list=[loss])[0][0]) for _ in range(200)]
    assert losses[-1] < 0.02 * losses[0]


def test_conv_pool_shapes_and_parameter_names():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        img = fluid.data("img", [None, 3, 12, 12])
        c = fluid.layers.conv2d(img, num_filters=6, filter_size=3, stride=1, padding=1, act="relu")
        p = fluid.layers.pool2d(c, pool_size=2, pool_type="avg", pool_stride=2)
        g = fluid.layers.pool2d(p, global_pooling=True)
        bn = fluid.layers.batch_norm(p)
    assert c.shape == (-1, 6, 12, 12) and p.shape == (-1, 6, 6, 6) and g.shape == (-1, 6, 1, 1)
    assert bn.shape == p.shape
    params = {v.name: v for v in main.all_parameters()}
    assert params["conv2d_0.w_0"].shape == (6, 3, 3, 3) and params["conv2d_0.b_0"].shape == (6,)
    assert [n for n in params if n.startswith("batch_norm_0")] == \
        ["batch_norm_0.w_0", "batch_norm_0.b_0", "batch_norm_0.w_1", "batch_norm_0.w_2"]
    assert params["batch_norm_0.w_0"].trainable and not params["batch_norm_0.w_1"].trainable
    assert params["batch_norm_0.w_2"].persistable and params["batch_norm_0.w_2"].stop_gradient
    out, = _exe_run(main, startup, {"img": rng.rand(2, 3, 12, 12).astype("float32")}, [g])
    assert out.shape == (2, 6, 1, 1)


def test_tensor_layers():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 6])
        r = fluid.layers.reshape(x, [0, 2, 3])
        t = fluid.layers.transpose(r, [0, 2, 1])
        left, right = fluid.layers.split(t, [1, 1], dim=2)
        joined = fluid.layers.concat([right, left], axis=2)
        flat = fluid.layers.flatten(joined)
        as_int = fluid.layers.cast(flat, "int64")
        const = fluid.layers.fill_constant([2, 3], "float32", 1.5)
        arr = fluid.layers.assign(np.arange(4, dtype="int32").reshape(2, 2))
        scaled = fluid.layers.scale(x, scale=2.0, bias=1.0)
        total = fluid.layers.reduce_sum(x, dim=1, keep_dim=True)
        prod = fluid.layers.matmul(x, x, transpose_y=True)
    assert r.shape == (-1, 2, 3) and t.shape == (-1, 3, 2) and flat.shape == (-1, 6)
    xv = np.arange(12, dtype="float32").reshape(2, 6)
    values = _exe_run(main, startup, {"x": xv}, [flat, as_int, const, arr, scaled, total, prod])
    expected_t = xv.reshape(2, 2, 3).transpose(0, 2, 1)
    swapped = np.concatenate([expected_t[:, :, 1:], expected_t[:, :, :1]], axis=2)
    np.testing.assert_array_equal(values[0], swapped.reshape(2, 6))
    assert values[1].dtype == np.int64
    np.testing.assert_array_equal(values[2], np.full((2, 3), 1.5, "float32"))
    np.testing.assert_array_equal(values[3], np.arange(4).reshape(2, 2))
    np.testing.assert_allclose(values[4], xv * 2 + 1)
    np.testing.assert_allclose(values[5], xv.sum(1, keepdims=True))
    np.testing.assert_allclose(values[6], xv @ xv.T)


def test_adaptive_pool2d_layer_pools_uneven_windows_and_trains():
    """fluid.layers.adaptive_pool2d: output i pools [floor(i*n/m), ceil((i+1)*n/m)), here 6 -> 4 rows and 5 -> 3
    columns (overlapping windows), and its gradient reaches the weights below it."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 1, 6, 5])
        h = fluid.layers.conv2d(x, 2, 1, bias_attr=False)
        avg = fluid.layers.adaptive_pool2d(h, [4, 3], "avg")
        top = fluid.layers.adaptive_pool2d(h, 1, pool_type="max")
        loss = fluid.layers.mean(avg) + fluid.layers.mean(top)
        fluid.optimizer.SGD(0.1).minimize(loss)
    assert avg.shape == (-1, 2, 4, 3) and top.shape == (-1, 2, 1, 1)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    w = scope.find_value("conv2d_0.w_0").copy()
    xv = np.arange(30, dtype="float32").reshape(1, 1, 6, 5)
    a, t, g = exe.run(main, feed={"x": xv}, fetch_list=[avg, top, "conv2d_0.w_0@GRAD"], scope=scope)
    hv = xv[0, 0] * w[:, 0, 0, 0][:, None, None]
    assert np.allclose(a[0, :, 1, 2], hv[:, 1:3, 3:5].mean(axis=(1, 2)), rtol=1e-5)  # row window [1, 3), cols [3, 5)
    assert np.allclose(t[0, :, 0, 0], hv.max(axis=(1, 2)), rtol=1e-5)
    means = [xv[0, 0, i * 6 // 4:-(-(i + 1) * 6 // 4), j * 5 // 3:-(-(j + 1) * 5 // 3)].mean()
             for i in range(4) for j in range(3)]
    # d loss / d w_f: the window means over the 2 * 12 avg cells, plus half of x at channel f's max (29, or 0)
    expected = sum(means) / 24 + 0.5 * np.where(w[:, 0, 0, 0] > 0, 29.0, 0.0)
    assert np.allclose(g[:, 0, 0, 0], expected, rtol=1e-5)
    with pytest.raises(ValueError, match="Unknown pool_type: 'sum'"):
        fluid.layers.adaptive_pool2d(x, 2, "sum")


def test_conv2d_and_pool2d_take_nhwc_input_and_fluid_1_8_padding_forms():
    rng = np.random.RandomState(0)
    x_nchw = rng.rand(2, 3, 7, 7).astype("float32")
    results = {}
    for fmt, padding in (("NCHW", 1), ("NHWC", 1), ("NCHW", [[0, 0], [0, 0], [1, 1], [1, 1]]), ("NCHW", "SAME"),
                         ("NHWC", [1, 1, 1, 1])):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            shape = [None, 3, 7, 7] if fmt == "NCHW" else [None, 7, 7, 3]
            x = fluid.data("x", shape)
            y = fluid.layers.conv2d(x, 4, 3, padding=padding, data_format=fmt,
                                    param_attr=fluid.initializer.Constant(0.1), bias_attr=fluid.initializer.Constant(0.5))
            z = fluid.layers.pool2d(y, 2, "max", 2, data_format=fmt)
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        feed = x_nchw if fmt == "NCHW" else x_nchw.transpose(0, 2, 3, 1)
        out = exe.run(main, feed={"x": feed}, fetch_list=[z])[0]
        results[(fmt, str(padding))] = out if fmt == "NCHW" else out.transpose(0, 3, 1, 2)
    first = results[("NCHW", "1")]
    padded = np.pad(x_nchw, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = 0.1 * sum(padded[:, :, i:i + 7, j:j + 7].sum(axis=1) for i in range(3) for j in range(3)) + 0.5
    expect = conv[:, :6, :6].reshape(2, 3, 2, 3, 2).max(axis=(2, 4))
    np.testing.assert_allclose(first[:, 0], expect, rtol=1e-5)
    for got in results.values():
        np.testing.assert_allclose(got, first, rtol=1e-5)


def test_conv2d_pool2d_softmax_refuse_integer_or_non_variable_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        ints = fluid.data("ints", [None, 3, 5, 5], "int32")
        with pytest.raises(TypeError, match="The data type of 'input' in conv2d must be"):
            fluid.layers.conv2d(ints, 1, 1)
        with pytest.raises(TypeError, match="The type of 'input' in pool2d must be Variable"):
            fluid.layers.pool2d(np.zeros((1, 3, 5, 5), "float32"), 2)
        with pytest.raises(TypeError, match="softmax"):
            fluid.layers.softmax(fluid.LoDTensor())
        x = fluid.data("x", [None, 3, 5, 5])
        with pytest.raises(ValueError, match="Attr\\(use_cudnn\\) should be True or False"):
            fluid.layers.conv2d(x, 1, 1, use_cudnn=[0])
        with pytest.raises(ValueError, match="It can only be 'SAME' or 'VALID'"):
            fluid.layers.conv2d(x, 1, 1, padding="FULL")
        with pytest.raises(ValueError, match="data_format"):
            fluid.layers.pool2d(x, 2, data_format="NCWH")


def test_embedding_checks_its_ids_and_table_dtype_as_fluid():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="must be Variable"):
            fluid.layers.embedding(np.zeros((4, 1), "int64"), size=(10, 4))
        with pytest.raises(TypeError, match=r"'input'.*\['int64'\]"):
            fluid.layers.embedding(fluid.data("f", [4, 1], "float32"), size=(10, 4))
        with pytest.raises(TypeError, match="'dtype'"):
            fluid.layers.embedding(fluid.data("i", [4, 1], "int64"), size=(10, 4), dtype="int64")
        assert fluid.layers.embedding(fluid.data("j", [4, 1], "int64"), size=(10, 4)).shape == (4, 4)
