import numpy as np
import pytest

import minifluid as fluid
from minifluid.executor.feed_fetch import split_feed


def _mlp(seed=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 6])
        y = fluid.data("y", [None, 1], dtype="int64")
        h = fluid.layers.fc(x, 8, act="relu")
        loss = fluid.layers.reduce_mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 3), y))
        fluid.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss


def _params(scope, program):
    return {p.name: np.array(scope.find_var(p.name).get_tensor()).copy() for p in program.all_parameters()}


def test_split_rule_follows_the_cpp_code():
    assert [c.tolist() for c, _ in split_feed(np.arange(3), None, 2)] == [[0, 1], [2]]
    assert [len(c) for c, _ in split_feed(np.arange(5), None, 4)] == [2, 2, 1]
    assert [c.shape for c, _ in split_feed(np.zeros([0, 3]), None, 4)] == [(0, 3)]  # was a range() error
    lod_chunks = split_feed(np.arange(9).reshape(9, 1), [[3, 2, 4]], 2)
    assert [c.shape[0] for c, _ in lod_chunks] == [5, 4] and [l for _, l in lod_chunks] == [[[3, 2]], [[4]]]


def test_compiled_feed_splits_rows_per_place():
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [None, 2])
        y = main.global_block().create_var("y", dtype=None)
        main.global_block().append_op("scale", {"X": x}, {"Out": y}, {"scale": 1.0})
    exe = fluid.Executor()
    cp = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(2))
    per_device = exe.run(cp, feed={"x": np.arange(6, dtype="float32").reshape(3, 2)}, fetch_list=[y],
                         scope=fluid.Scope(), return_merged=False)[0]
    assert [a.shape[0] for a in per_device] == [2, 1]
    cp4 = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(4))
    merged = exe.run(cp4, feed={"x": np.arange(10, dtype="float32").reshape(5, 2)}, fetch_list=[y],
                     scope=fluid.Scope())[0]
    assert merged.shape == (5, 2)
    with pytest.raises(TypeError, match="Each element of feed list should be a dict"):
        exe.run(cp, feed=[1], fetch_list=[y], scope=fluid.Scope())
    with pytest.raises(ValueError):
        exe.run(cp, feed=[{"x": np.ones((1, 2), "float32")}] * 3, fetch_list=[y], scope=fluid.Scope())
    one = exe.run(cp, feed=[{"x": np.ones((1, 2), "float32")}], fetch_list=[y], scope=fluid.Scope())[0]
    assert one.shape == (1, 2)


def test_data_parallel_sgd_equals_single_place_on_concatenated_batch():
    rng = np.random.RandomState(0)
    xs = rng.rand(8, 6).astype("float32")
    ys = rng.randint(0, 3, (8, 1)).astype("int64")
    exe = fluid.Executor()

    main, startup, loss = _mlp()
    single = fluid.Scope()
    exe.run(startup, scope=single)
    for _ in range(3):
        exe.run(main, feed={"x": xs, "y": ys}, fetch_list=[loss], scope=single)

    main2, startup2, loss2 = _mlp()
    parallel = fluid.Scope()
    exe.run(startup2, scope=parallel)
    before = _params(parallel, main2)
    cp = fluid.CompiledProgram(main2).with_data_parallel(loss_name=loss2.name, places=fluid.cpu_places(2))
    for _ in range(3):
        merged = exe.run(cp, feed={"x": xs, "y": ys}, fetch_list=[loss2], scope=parallel)[0]
    assert merged.shape == (2,)
    a, b = _params(single, main), _params(parallel, main2)
    assert a.keys() == b.keys() and any(not np.allclose(before[k], b[k]) for k in b)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_list_feed_of_per_place_dicts_matches_dict_split():
    rng = np.random.RandomState(1)
    xs, ys = rng.rand(4, 6).astype("float32"), rng.randint(0, 3, (4, 1)).astype("int64")
    exe = fluid.Executor()
    results = []
    for feed in ({"x": xs, "y": ys}, [{"x": xs[:2], "y": ys[:2]}, {"x": xs[2:], "y": ys[2:]}]):
        main, startup, loss = _mlp()
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        cp = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
        exe.run(cp, feed=feed, fetch_list=[loss], scope=scope)
        results.append(_params(scope, main))
    for name in results[0]:
        np.testing.assert_allclose(results[0][name], results[1][name], rtol=1e-6)


def test_a_dict_feed_casts_lists_with_the_variables_dtype_like_a_plain_program():
    main = fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [None, 3])
        label = fluid.layers.data("label", [1], dtype="int64")
        y = fluid.layers.scale(x, scale=2.0)
        z = fluid.layers.cast(label, "float32")
    exe = fluid.Executor()
    cp = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(2))
    out_y, out_z = exe.run(cp, feed={"x": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "label": [[1], [2]]},
                           fetch_list=[y, z], scope=fluid.Scope())
    assert out_y.dtype == np.float32 and out_y.tolist() == [[2, 4, 6], [8, 10, 12]]
    assert out_z.tolist() == [[1], [2]]


def test_build_strategy_has_fluids_enums():
    strategy = fluid.BuildStrategy()
    assert strategy.reduce_strategy == fluid.BuildStrategy.ReduceStrategy.AllReduce
    strategy.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.Reduce
    strategy.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.One
    main, startup, loss = _mlp()
    cp = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=strategy,
                                                        places=fluid.cpu_places(2))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((4, 6), "float32"), "y": np.zeros((4, 1), "int64")}
    assert np.isfinite(exe.run(cp, feed=feed, fetch_list=[loss], scope=scope)[0]).all()


def _relu_program(lr_persistable):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 3])
        lr = fluid.data("lr", [1] if lr_persistable else [None])
        lr.persistable = lr_persistable
        outs = [fluid.layers.relu(x), fluid.layers.relu(lr)]
    return main, outs


def test_a_persistable_single_row_feed_goes_to_every_place_and_no_row_is_dropped():
    main, outs = _relu_program(lr_persistable=True)
    cp = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(4))
    exe = fluid.Executor()
    x = np.arange(-7, 8, dtype="float32").reshape(5, 3)
    rx, rlr = exe.run(cp, feed={"x": x, "lr": np.array([0.5], "float32")}, fetch_list=outs, scope=fluid.Scope())
    np.testing.assert_array_equal(rx, np.maximum(x, 0))  # all 5 rows: 2 + 2 + 1 on 3 of the 4 places
    assert rlr.tolist() == [0.5, 0.5, 0.5]  # the one learning rate reached every place that ran
    per_place = exe.run(cp, feed={"x": x, "lr": np.array([0.5], "float32")}, fetch_list=outs,
                        scope=fluid.Scope(), return_merged=False)[0]
    assert [p.shape[0] for p in per_place] == [2, 2, 1]


def test_a_feed_whose_rows_would_go_unused_is_an_error():
    main, outs = _relu_program(lr_persistable=False)
    cp = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(4))
    exe = fluid.Executor()
    x, lr = np.ones([5, 3], "float32"), np.ones([4], "float32")  # 3 parts (2, 2, 1) against 4
    with pytest.raises(ValueError, match="non-persistable variables should be the same.*'x': 3, 'lr': 4"):
        exe.run(cp, feed={"x": x, "lr": lr}, fetch_list=outs, scope=fluid.Scope())
    main, outs = _relu_program(lr_persistable=True)
    cp = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(4))
    with pytest.raises(ValueError, match="persistable variables should not be less than non-persistable"):
        exe.run(cp, feed={"x": np.ones([4, 3], "float32"), "lr": np.ones([2], "float32")}, fetch_list=outs,
                scope=fluid.Scope())


def test_plain_feeds_after_a_lod_feed_in_the_same_scope():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 1], dtype="int64")
        y = fluid.layers.scale(x, scale=2.0)
    scope, exe = fluid.Scope(), fluid.Executor()
    lod = fluid.create_lod_tensor(np.arange(4).reshape(4, 1).astype("int64"), [[1, 3]], fluid.CPUPlace())
    exe.run(main, feed={"x": lod}, fetch_list=[y], scope=scope, return_numpy=False)
    cp = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(2))
    got = exe.run(cp, feed={"x": np.arange(4).reshape(4, 1).astype("int64")}, fetch_list=[x], scope=scope)[0]
    assert got.ravel().tolist() == [0, 1, 2, 3]  # the scope's stale LoD of x is not the replicas'


def test_a_replica_starts_its_tensor_arrays_empty_like_a_program_run():
    """A StaticRNN's backward reads the arrays of gradients declared in block 0: each replica's run must
    start them empty, as Executor.run does, or the first grad op finds no array."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data("x", [3, 2, 4], append_batch_size=False)
        x.stop_gradient = False
        rnn = fluid.layers.StaticRNN()
        with rnn.step():
            h_pre = rnn.memory(shape=[-1, 4], batch_ref=x, init_value=0.0, ref_batch_dim_idx=1)
            h = fluid.layers.scale(fluid.layers.elementwise_add(h_pre, rnn.step_input(x)), 0.5)
            rnn.update_memory(h_pre, h)
            rnn.output(h)
        loss = fluid.layers.mean(rnn())
        fluid.backward.append_backward(loss)
    feed = {"x": np.random.RandomState(0).rand(3, 2, 4).astype("float32")}
    exe = fluid.Executor(fluid.CPUPlace())
    want, = exe.run(main, feed=feed, fetch_list=["x@GRAD"])
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(1))
    for _ in range(2):
        got, = exe.run(compiled, feed=feed, fetch_list=["x@GRAD"])
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(want[2], np.full((2, 4), 0.5 / 24), rtol=1e-6)  # the last step: d mean / d x_T
