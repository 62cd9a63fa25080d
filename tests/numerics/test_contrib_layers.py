"""fluid.contrib.layers' op layers (contrib/layers/nn.py) in programs: each against the unfused layers it stands
for (outputs and gradients), shuffle_batch's new order every run, and the errors for bad arguments."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.contrib import layers as contrib

L = fluid.layers
rng = np.random.default_rng(5)


def _run(build, feed, fetch_grads=()):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        outs, loss = build()
        if loss is not None:
            fluid.backward.append_backward(loss)
    scope, exe = fluid.Scope(), fluid.Executor()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=list(outs) + [g + "@GRAD" for g in fetch_grads], scope=scope), main, \
        scope, exe


def _data(name, shape):
    v = fluid.data(name, shape, "float64")
    v.stop_gradient = False
    return v


@pytest.mark.parametrize("functors", [["elementwise_add", "relu"], ["tanh", "elementwise_mul"],
                                      ["elementwise_mul", "scale"], ["sigmoid", "elementwise_add"]])
def test_fused_elemwise_activation_equals_the_two_layers_it_fuses(functors):
    feed = {"x": rng.normal(size=(4, 3, 5)), "y": rng.normal(size=(3, 5))}
    unary = {"relu": L.relu, "tanh": L.tanh, "sigmoid": L.sigmoid, "scale": lambda v: L.scale(v, 0.5)}
    binary = {"elementwise_add": L.elementwise_add, "elementwise_mul": L.elementwise_mul}

    def build(fused):
        x, y = _data("x", [None, 3, 5]), _data("y", [3, 5])
        if fused:
            out = contrib.fused_elemwise_activation(x, y, functors, scale=0.5)
        elif functors[0] in binary:
            out = binary[functors[0]](x, unary[functors[1]](y))
        else:
            out = unary[functors[0]](binary[functors[1]](x, y))
        return [out], L.reduce_sum(L.square(out))
    fused, plain = (_run(lambda f=f: build(f), feed, ("x", "y"))[0] for f in (True, False))
    for a, b in zip(fused, plain):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_fused_embedding_seq_pool_equals_embedding_then_sum_pooling():
    ids = fluid.create_lod_tensor(rng.integers(0, 7, (6, 1)).astype("int64"), [[2, 3, 1]], fluid.CPUPlace())

    def build(fused):
        word = fluid.data("word", [None, 1], "int64", lod_level=1)
        attr = fluid.ParamAttr("emb", initializer=fluid.initializer.Normal(0, 1, seed=3))
        if fused:
            out = contrib.fused_embedding_seq_pool(word, [7, 4], padding_idx=-2, param_attr=attr)
        else:
            out = L.sequence_pool(L.embedding(word, [7, 4], padding_idx=5, param_attr=attr), "sum")
        return [out], L.reduce_sum(L.square(out))
    fused, plain = (_run(lambda f=f: build(f), {"word": ids}, ("emb",))[0] for f in (True, False))
    for a, b in zip(fused, plain):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert fused[0].shape == (3, 4)


def test_partial_concat_and_partial_sum_take_the_same_columns_of_every_input():
    xs = [rng.normal(size=(3, 6)) for _ in range(2)]

    shapes = []

    def build():
        a, b = _data("a", [None, 6]), _data("b", [None, 6])
        cat, total = contrib.partial_concat([a, b], start_index=-4, length=3), contrib.partial_sum([a, b], 1)
        shapes.extend([cat.shape, total.shape])
        return [cat, total], L.reduce_sum(cat) + L.reduce_sum(L.square(total))
    (cat, total, ga, gb), _, _, _ = _run(build, {"a": xs[0], "b": xs[1]}, ("a", "b"))
    np.testing.assert_array_equal(cat, np.concatenate([xs[0][:, 2:5], xs[1][:, 2:5]], 1))
    np.testing.assert_allclose(total, xs[0][:, 1:] + xs[1][:, 1:])
    expected_a = np.zeros((3, 6))
    expected_a[:, 2:5] = 1
    expected_a[:, 1:] += 2 * total
    np.testing.assert_allclose(ga, expected_a)
    assert shapes == [(-1, 6), (-1, 5)]


def test_shuffle_batch_permutes_rows_anew_every_run_and_routes_gradients_back():
    x = np.arange(24, dtype="float64").reshape(6, 2, 2)

    def build():
        xv = _data("x", [6, 2, 2])
        out = contrib.shuffle_batch(xv, seed=7)
        weights = L.assign(np.arange(24, dtype="float64").reshape(6, 2, 2))
        return [out], L.reduce_sum(L.elementwise_mul(out, weights))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        (out,), loss = build()
        fluid.backward.append_backward(loss)
    scope, exe = fluid.Scope(), fluid.Executor()
    exe.run(startup, scope=scope)
    orders = []
    for _ in range(3):
        shuffled, grad = exe.run(main, feed={"x": x}, fetch_list=[out, "x@GRAD"], scope=scope)
        rows = shuffled.reshape(12, 2)
        order = (rows[:, 0] // 2).astype(int)  # each row of x starts with an even number 2k
        assert sorted(order) == list(range(12))
        np.testing.assert_array_equal(rows, x.reshape(12, 2)[order])
        expected = np.empty((12, 2))
        expected[order] = np.arange(24).reshape(12, 2)  # d loss / d x[row] = the weight where that row landed
        np.testing.assert_array_equal(grad.reshape(12, 2), expected)
        orders.append(tuple(order))
    assert len(set(orders)) == 3


def test_bad_arguments_are_refused_with_what_was_expected():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x, y = fluid.data("x", [None, 3], "float32"), fluid.data("y", [None, 3], "float32")
        with pytest.raises(ValueError, match="functor_list should be a list of str"):
            contrib.fused_elemwise_activation(x, y, ["relu"])
        with pytest.raises(ValueError, match="one binary functor .* and one unary functor"):
            contrib.fused_elemwise_activation(x, y, ["relu", "tanh"])
        with pytest.raises(TypeError, match="start_index"):
            contrib.partial_sum([x, y], start_index=1.5)
        with pytest.raises(TypeError, match="seed must be None, an int or a Variable"):
            contrib.shuffle_batch(x, seed="7")
        with pytest.raises(ValueError, match="combiner must be 'sum'"):
            contrib.fused_embedding_seq_pool(fluid.data("w", [None, 1], "int64", lod_level=1), [5, 2],
                                             combiner="mean")
        with pytest.raises(ValueError, match="start_index 2 and length 3 do not fit the inputs' 3 columns"):
            contrib.partial_concat([x, y], start_index=2, length=3)


def test_text_matching_stack_runs_end_to_end_and_its_gradient_matches_finite_differences():
    """match_matrix_tensor -> var_conv_2d -> sequence_topk_avg_pooling, as fluid's text-matching models chain them
    (the query and title LoD give the rows and columns of every sample's matrix)."""
    place = fluid.CPUPlace()
    xl, yl = [2, 3, 1], [4, 1, 2]
    x = fluid.create_lod_tensor(rng.normal(size=(6, 5)), [xl], place)
    y = fluid.create_lod_tensor(rng.normal(size=(7, 5)), [yl], place)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xv = fluid.data("x", [None, 5], "float64", lod_level=1)
        yv = fluid.data("y", [None, 5], "float64", lod_level=1)
        mm, _ = contrib.match_matrix_tensor(xv, yv, channel_num=2, act="tanh", param_attr=fluid.ParamAttr("mm_w"),
                                            dtype="float64")
        conv = contrib.var_conv_2d(mm, xv, yv, input_channel=2, output_channel=3, filter_size=[3, 2],
                                   param_attr=fluid.ParamAttr("conv_w"), act="relu", dtype="float64")
        pooled = contrib.sequence_topk_avg_pooling(conv, xv, yv, topks=[1, 2, 5], channel_num=3)
        loss = L.reduce_sum(L.square(pooled))
        fluid.backward.append_backward(loss)
    scope, exe = fluid.Scope(), fluid.Executor()
    exe.run(startup, scope=scope)
    feed = {"x": x, "y": y}
    pooled_v, loss_v, grad = exe.run(main, feed=feed, fetch_list=[pooled, loss, "conv_w@GRAD"], scope=scope,
                                     return_numpy=False)
    assert np.array(pooled_v).shape == (6, 9) and pooled_v.recursive_sequence_lengths() == [xl]
    w = np.array(scope.find_var("conv_w").get_tensor())
    eps = 1e-6
    for idx in [(0, 0), (2, 5), (1, 11)]:
        values = []
        for delta in (eps, -eps):
            bumped = w.copy()
            bumped[idx] += delta
            scope.find_var("conv_w").get_tensor().set(bumped, place)
            values.append(float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0][0]))
        assert np.array(grad)[idx] == pytest.approx((values[0] - values[1]) / (2 * eps), rel=1e-5, abs=1e-9)


def test_batch_fc_and_rank_attention_layers_compute_their_formulas_and_train():
    x = rng.normal(size=(2, 3, 4))
    feats = rng.normal(size=(4, 2))
    offset = np.array([[1, 1, 0, 2, 3, 0, 0], [2, 2, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0], [3, 1, 2, 3, 3, 2, 1]],
                      "int32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        xv = fluid.data("x", [2, 3, 4], "float64")
        fv = fluid.data("f", [None, 2], "float64")
        ov = fluid.data("o", [None, 7], "int32")
        fc = contrib.batch_fc(xv, [2, 4, 5], fluid.ParamAttr("bw"), [2, 5], fluid.ParamAttr("bb"), act="relu")
        att = contrib.rank_attention(fv, ov, [2 * 3 * 3, 3], fluid.ParamAttr("rank_w"), max_rank=3)
        loss = L.reduce_sum(L.square(fc)) + L.reduce_sum(L.square(att))
        fluid.optimizer.SGD(0.01).minimize(loss)
        with pytest.raises(ValueError, match="rank_param_shape\\[0\\] must be input width"):
            contrib.rank_attention(fv, ov, [10, 3], None)
        with pytest.raises(ValueError, match="batch_fc: input .* do not match"):
            contrib.batch_fc(xv, [2, 3, 5], None, [2, 5], None)
    scope, exe = fluid.Scope(), fluid.Executor()
    exe.run(startup, scope=scope)
    bw, bb, rank_w = (np.array(scope.find_var(n).get_tensor()) for n in ("bw", "bb", "rank_w"))
    fc_v, att_v = exe.run(main, feed={"x": x, "f": feats, "o": offset}, fetch_list=[fc, att], scope=scope)
    np.testing.assert_allclose(fc_v, np.maximum(np.einsum("sri,sio->sro", x, bw) + bb[:, None], 0), rtol=1e-12)
    blocks = rank_w.reshape(3, 3, 2, 3)
    expected = np.zeros((4, 3))
    for i, row in enumerate(offset):
        for k in range(3):
            if row[0] > 0 and row[2 * k + 1] > 0:
                expected[i] += feats[row[2 * k + 2]] @ blocks[row[0] - 1, row[2 * k + 1] - 1]
    np.testing.assert_allclose(att_v, expected, rtol=1e-12)
    new_w = np.array(scope.find_var("rank_w").get_tensor())
    # the SGD step moved exactly the blocks some instance used: (1, 1), (2, 2), (2, 1), (3, 1), (3, 3), (3, 2), (1, 2)
    moved = {tuple(i) for i in np.argwhere(np.any(new_w.reshape(3, 3, -1) != blocks.reshape(3, 3, -1), axis=-1))}
    assert moved == {(0, 0), (1, 1), (1, 0), (2, 0), (2, 2), (2, 1), (0, 1)}
