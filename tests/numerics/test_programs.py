"""Train/test programs: clone(for_test=True), sharing parameters under unique_name.guard(), layer names."""
import numpy as np

import minifluid as fluid

rng = np.random.RandomState(11)


def _net():
    x = fluid.data("x", [None, 6])
    label = fluid.data("label", [None, 1], "int64")
    h = fluid.layers.fc(x, 8)
    h = fluid.layers.batch_norm(h, act="relu")
    h = fluid.layers.dropout(h, dropout_prob=0.5)
    logits = fluid.layers.fc(h, 3)
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
    return logits, loss


def test_clone_for_test_runs_dropout_and_batch_norm_in_test_mode_with_the_trained_parameters():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        logits, loss = _net()
        test_prog = main.clone(for_test=True)
        fluid.optimizer.Momentum(learning_rate=0.1, momentum=0.9).minimize(loss)
    assert all(op.attr("is_test") for op in test_prog.global_block().ops if op.type in ("batch_norm", "dropout"))
    assert not any(op.attr("is_test") for op in main.global_block().ops if op.type in ("batch_norm", "dropout"))
    feed = {"x": rng.randn(16, 6).astype("float32"), "label": rng.randint(0, 3, (16, 1)).astype("int64")}
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    scope = fluid.global_scope()
    for _ in range(3):
        train_out, = exe.run(main, feed=feed, fetch_list=[logits])
    state = {n: scope.find_value(n).copy() for n in ("fc_0.w_0", "batch_norm_0.w_1", "batch_norm_0.w_2")}
    first, = exe.run(test_prog, feed=feed, fetch_list=[logits])
    second, = exe.run(test_prog, feed=feed, fetch_list=[logits])
    np.testing.assert_array_equal(first, second)
    for name, value in state.items():  # test mode neither trains nor moves the running statistics
        np.testing.assert_array_equal(scope.find_value(name), value, err_msg=name)
    assert not np.allclose(first, train_out)
    exe.run(main, feed=feed)  # one more training step changes what the test program computes
    third, = exe.run(test_prog, feed=feed, fetch_list=[logits])
    assert not np.allclose(first, third)


def _guarded_network():
    x = fluid.data("x", [None, 6])
    label = fluid.data("label", [None, 1], "int64")
    logits = fluid.layers.fc(fluid.layers.fc(x, 8, act="tanh"), 3)
    return logits, fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))


def test_two_programs_under_unique_name_guard_share_parameters():
    train, train_startup = fluid.Program(), fluid.Program()
    test, test_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(train, train_startup), fluid.unique_name.guard():
        _, loss = _guarded_network()
        fluid.optimizer.Adam(learning_rate=0.05).minimize(loss)
    with fluid.program_guard(test, test_startup), fluid.unique_name.guard():
        test_logits, _ = _guarded_network()
    names = [p.name for p in test.all_parameters()]
    assert names == [p.name for p in train.all_parameters()] == ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"]
    assert test_logits.name == "fc_1.tmp_1"
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(train_startup)
    feed = {"x": rng.randn(8, 6).astype("float32"), "label": rng.randint(0, 3, (8, 1)).astype("int64")}
    before, = exe.run(test, feed=feed, fetch_list=[test_logits])
    exe.run(train, feed=feed)
    after, = exe.run(test, feed=feed, fetch_list=[test_logits])
    assert not np.allclose(before, after)


def test_layer_and_temporary_names_follow_fluid():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        h = fluid.layers.fc(x, 5, act="relu")
        y = fluid.layers.fc([x, h], 2)
        s = fluid.layers.scale(y, 2.0)
    assert [v.name for v in (h, y, s)] == ["fc_0.tmp_2", "fc_1.tmp_3", "scale_0.tmp_0"]
    assert [p.name for p in main.all_parameters()] == ["fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.w_1", "fc_1.b_0"]
    assert main.global_block().var("fc_1.w_1").shape == (5, 2)
    assert y.shape == (-1, 2)
