"""Block 0's plan drops intermediate values once no later op reads them (NOTE [ Freeing intermediates ] in
executor/executor.py); persistables, feeds, fetch targets and values carried between runs stay."""
import tracemalloc

import numpy as np

import minifluid as fluid


def _train_program():
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8])
        y = fluid.data("y", [None, 1])
        hidden = fluid.layers.fc(x, 16, act="relu")
        pred = fluid.layers.fc(hidden, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, hidden, loss


def _feed(rows=4):
    rng = np.random.RandomState(0)
    return {"x": rng.rand(rows, 8).astype("float32"), "y": rng.rand(rows, 1).astype("float32")}


def test_a_training_step_leaves_only_persistables_feeds_and_fetches_in_the_scope():
    main, startup, hidden, loss = _train_program()
    scope, exe = fluid.Scope(), fluid.Executor()
    exe.run(startup, scope=scope)
    persistables = {v.name for v in main.list_vars() if v.persistable}
    for _ in range(2):
        exe.run(main, feed=_feed(), fetch_list=[loss], scope=scope)
        assert set(scope.local_var_names()) == persistables | {"x", "y", loss.name}
    assert scope.find_var(hidden.name) is None  # dropped, as fluid's local scope is after a run
    assert scope.find_var(hidden.name + "@GRAD") is None


def test_fetched_intermediates_and_lod_tensor_fetches_keep_their_values():
    main, startup, hidden, loss = _train_program()
    scope, exe = fluid.Scope(), fluid.Executor()
    exe.run(startup, scope=scope)
    h, h_tensor, grad = exe.run(main, feed=_feed(), fetch_list=[hidden, hidden, hidden.name + "@GRAD"], scope=scope,
                                return_numpy=False)
    assert np.array(h).shape == (4, 16) and (np.array(h) >= 0).all()
    assert np.array_equal(np.array(h), np.array(h_tensor)) and np.array(grad).shape == (4, 16)
    assert np.array_equal(np.array(scope.find_var(hidden.name).get_tensor()), np.array(h))


def test_training_with_freeing_matches_the_same_steps_run_with_every_value_fetched():
    """Dropping values never changes what is computed: the losses of 3 steps equal those of 3 steps that
    fetch every non-persistable variable (which keeps them all alive)."""
    losses = []
    for fetch_all in (False, True):
        main, startup, _, loss = _train_program()
        scope, exe = fluid.Scope(), fluid.Executor()
        exe.run(startup, scope=scope)
        names = [loss.name] + ([v.name for v in main.list_vars() if not v.persistable and v.name not in ("x", "y")
                                and v.name != loss.name] if fetch_all else [])
        losses.append([float(exe.run(main, feed=_feed(), fetch_list=names, scope=scope)[0].reshape(-1)[0])
                       for _ in range(3)])
    assert losses[0] == losses[1] and losses[0][2] < losses[0][0]


def test_peak_memory_of_a_chain_holds_a_few_values_not_all_of_them():
    """20 scale ops on a 1 MB value: with intermediates dropped at their last use, tracemalloc's peak stays
    near two values (input and output of the running op); keeping all of them would need 20 MB."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        h = x = fluid.data("x", [None, 1024], "float64")
        for _ in range(20):
            h = fluid.layers.scale(h, 1.5)
    feed = {"x": np.ones((128, 1024))}  # 1 MiB
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(main, feed=feed, fetch_list=[h], scope=scope)  # the plan is built outside the measurement
    tracemalloc.start()
    try:
        out, = exe.run(main, feed=feed, fetch_list=[h], scope=scope)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out[0, 0] == 1.5 ** 20 and x.name in scope.local_var_names()
    assert peak < 5 * 2 ** 20, peak


def test_values_carried_between_runs_and_values_sub_blocks_read_stay(scratch_registry):
    reg = scratch_registry.register_op

    @reg("_run_body", inputs=(), outputs=("Out",), attrs={"sub_block": None}, context=True)
    def _run_body(ctx, attrs):
        ctx.run_block(attrs["sub_block"])
        return np.zeros(1)

    @reg("_read_named", inputs=(), outputs=("Out",), attrs={"name": ""}, context=True)
    def _read_named(ctx, attrs):
        return ctx.find_value(attrs["name"]) * 10

    main = fluid.Program()
    block = main.global_block()
    state = block.create_var("state", [1], "float64")  # read, then written: carried to the next run
    doubled = block.create_var("doubled", [1], "float64")
    seen_by_body = block.create_var("seen_by_body", [1], "float64")
    named = block.create_var("named", [1], "float64")
    outs = [block.create_var(n, [1], "float64") for n in ("body_out", "read_out", "flag")]
    block.append_op("scale", {"X": state}, {"Out": doubled}, {"scale": 2.0})
    block.append_op("scale", {"X": doubled}, {"Out": state}, {"scale": 1.0})
    block.append_op("scale", {"X": doubled}, {"Out": seen_by_body}, {"scale": 1.0})
    block.append_op("scale", {"X": doubled}, {"Out": named}, {"scale": 1.0})
    body = main._create_block()
    body.append_op("scale", {"X": seen_by_body}, {"Out": outs[0]}, {"scale": 3.0})
    main._rollback()
    block.append_op("_run_body", {}, {"Out": outs[2]}, {"sub_block": body})
    block.append_op("_read_named", {}, {"Out": outs[1]}, {"name": "named"})
    scope, exe = fluid.Scope(), fluid.Executor()
    scope.var("state").get_tensor().set(np.array([1.0]), fluid.CPUPlace())
    for expected in (2.0, 4.0, 8.0):
        read_out, = exe.run(main, fetch_list=[outs[1]], scope=scope)
        assert read_out.tolist() == [expected * 10] and scope.find_value("state").tolist() == [expected]
        assert scope.find_value("seen_by_body").tolist() == [expected]  # the body read it (else it would raise)
    assert scope.find_value("doubled") is None
