"""RecomputeOptimizer and append_backward(checkpoints=...) (backward_recompute.py): the same gradients and trained
parameters as the plain backward pass, the forward ops of each segment appended again in the backward pass under
``.subprog_<i>`` names, activations inside segments not kept (peak memory), dropout masks recomputed equal,
batch_norm statistics updated once, and errors."""
import tracemalloc

import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers


def _mlp(depth=6, width=16, dropout_seed=None, batch_norm=False, x_width=8):
    """An MLP; returns (loss, [hidden outputs])."""
    x = fluid.data("x", [None, x_width], "float32")
    y = fluid.data("y", [None, 1], "float32")
    h, hidden = x, []
    for i in range(depth):
        h = L.fc(h, width, act="tanh", param_attr=fluid.ParamAttr(f"w{i}"), bias_attr=fluid.ParamAttr(f"b{i}"))
        if batch_norm and i == 2:
            h = L.batch_norm(h, param_attr=fluid.ParamAttr("bn_s"), bias_attr=fluid.ParamAttr("bn_b"),
                             moving_mean_name="bn_mean", moving_variance_name="bn_var")
        if dropout_seed is not None and i == 1:
            h = L.dropout(h, 0.3, seed=dropout_seed)
        hidden.append(h)
    pred = L.fc(h, 1, param_attr=fluid.ParamAttr("w_out"), bias_attr=fluid.ParamAttr("b_out"))
    return L.mean(L.square_error_cost(pred, y)), hidden


def _train(checkpoint_ids, steps=5, make_opt=lambda: fluid.optimizer.Adam(0.01), **net):
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, hidden = _mlp(**net)
        opt = make_opt()
        if checkpoint_ids is not None:
            opt = fluid.optimizer.RecomputeOptimizer(opt)
            opt._set_checkpoints([hidden[i] for i in checkpoint_ids])
        opt.minimize(loss)
    rng = np.random.RandomState(0)
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(steps):
        feed = {"x": rng.uniform(-1, 1, (32, net.get("x_width", 8))).astype("float32"),
                "y": rng.uniform(-1, 1, (32, 1)).astype("float32")}
        losses.append(float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]))
    persist = {v.name: np.array(scope.find_var(v.name).get_tensor()) for v in main.list_vars()
               if v.persistable and scope.find_var(v.name) is not None}
    return losses, persist, main


@pytest.mark.parametrize("checkpoints", [[2], [1, 3], [4, 0, 2], [0, 1, 2, 3, 4, 5]])
def test_training_with_recomputation_gives_the_wrapped_optimizers_parameters(checkpoints):
    plain_losses, plain, _ = _train(None)
    losses, params, main = _train(checkpoints)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
    assert params.keys() == plain.keys() and any(k.startswith("w0") for k in params)
    for name in plain:
        np.testing.assert_allclose(params[name], plain[name], rtol=1e-6, atol=1e-7, err_msg=name)
    assert any(".subprog_" in n for op in main.global_block().ops for n in op.output_arg_names)


def test_seeded_dropout_and_batch_norm_inside_segments_train_as_without_recomputation():
    net = {"dropout_seed": 11, "batch_norm": True}
    plain_losses, plain, _ = _train(None, make_opt=lambda: fluid.optimizer.Momentum(0.05, 0.9), **net)
    losses, params, main = _train([0, 4], make_opt=lambda: fluid.optimizer.Momentum(0.05, 0.9), **net)
    np.testing.assert_allclose(losses, plain_losses, rtol=1e-6)
    for name in plain:  # bn_mean / bn_var among them: the recomputed batch_norm does not update them again
        np.testing.assert_allclose(params[name], plain[name], rtol=1e-6, atol=1e-7, err_msg=name)
    types = [op.type for op in main.global_block().ops]
    assert types.count("batch_norm") == 2 and types.count("dropout") == 2 and types.count("seed") == 1


def _backward_program(checkpoint_ids):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, hidden = _mlp(depth=4)
        grads = fluid.backward.append_backward(loss, checkpoints=[hidden[i] for i in checkpoint_ids])
    return main, loss, hidden, grads


def test_each_segments_forward_ops_run_again_and_its_grad_ops_read_the_copies():
    main, loss, hidden, _ = _backward_program([1, 3])
    block = main.global_block()
    ops = block.ops
    first_backward = next(i for i, op in enumerate(ops) if op.type == "fill_constant")
    forward, backward = ops[:first_backward], ops[first_backward:]
    # segments: [fc0 .. layer 1] (before the first checkpoint) and [layer 2 .. layer 3]; the ops after the last
    # checkpoint (output fc, loss) are differentiated as usual
    copies = [op for op in backward if not op.type.endswith("_grad") and op.type not in ("sum", "fill_constant")]
    assert [op.type for op in copies] == ["mul", "elementwise_add", "tanh", "mul", "elementwise_add"] * 2
    inside = {n for op in forward for n in op.output_arg_names} - {hidden[1].name, hidden[3].name, loss.name}
    inside -= {n for op in forward[-6:] for n in op.output_arg_names}  # after the last checkpoint: kept
    assert inside
    for n in inside:  # one copy each, in the segment's numbering (the last segment is 0)
        copies = [block.vars[c] for c in (n + ".subprog_0", n + ".subprog_1") if c in block.vars]
        assert len(copies) == 1 and copies[0].shape == block.var(n).shape, n
    read_in_backward = {n for op in backward for n in op.input_arg_names}
    assert not inside & read_in_backward  # nothing from inside a segment is kept for the backward pass
    assert {n + ".subprog_1" for n in inside if n.startswith("fc_0")} <= read_in_backward
    # each copy runs right before the grad ops of its segment, last segment first
    grad_types = [op.type for op in backward]
    assert grad_types.index("tanh") < grad_types.index("tanh_grad")


def test_gradients_equal_the_plain_backward_pass_exactly():
    rng = np.random.RandomState(1)
    feed = {"x": rng.uniform(-1, 1, (16, 8)).astype("float32"), "y": rng.uniform(-1, 1, (16, 1)).astype("float32")}
    results = []
    for ids in ([], [1, 3], [0], [2, 1]):
        main, loss, _, grads = _backward_program(ids)
        scope, exe = fluid.Scope(), fluid.Executor()
        for p, _ in grads:
            scope.var(p.name).get_tensor().set(np.random.RandomState(len(p.name)).uniform(-1, 1, p.shape)
                                               .astype("float32"), fluid.CPUPlace())
        results.append(exe.run(main, feed=feed, fetch_list=[g for _, g in grads], scope=scope))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)


def test_activations_inside_segments_are_not_kept_until_the_backward_pass():
    """A 12-layer MLP on 2,048 rows of 256: plain backward keeps every layer's activations (three 2 MiB values
    per layer) until its grad ops; with a checkpoint every 4 layers only one segment's values live at a time."""
    def peak(checkpoint_ids):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            loss, hidden = _mlp(depth=12, width=256, x_width=256)
            opt = fluid.optimizer.SGD(0.01)
            if checkpoint_ids is not None:
                opt = fluid.optimizer.RecomputeOptimizer(opt)
                opt._set_checkpoints([hidden[i] for i in checkpoint_ids])
            opt.minimize(loss)
        scope, exe = fluid.Scope(), fluid.Executor()
        exe.run(startup, scope=scope)
        feed = {"x": np.ones((2048, 256), "float32"), "y": np.ones((2048, 1), "float32")}
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)  # plans built outside the measurement
        tracemalloc.start()
        try:
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    plain, recomputed = peak(None), peak([3, 7, 11])
    assert recomputed < 0.6 * plain, (recomputed, plain)


def test_an_unseeded_dropout_recomputes_the_mask_it_drew_and_draws_anew_each_run():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 50], "float32")
        drop = L.dropout(x, 0.5, name="drop")
        pred = L.fc(drop, 1)
        loss = L.mean(pred)
        opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
        opt._set_checkpoints([pred])
        opt.minimize(loss)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    masks = []
    for _ in range(3):
        first, again = exe.run(main, feed={"x": np.ones((20, 50), "float32")},
                               fetch_list=["drop.tmp_1", "drop.tmp_1.subprog_0"], scope=scope)
        np.testing.assert_array_equal(first, again)
        masks.append(first)
    assert not np.array_equal(masks[0], masks[1])


def test_bad_use_is_refused_with_fluids_messages():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, hidden = _mlp(depth=2)
        opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
        with pytest.raises(AssertionError, match="You should call _set_checkpoints first"):
            opt.minimize(loss)
        with pytest.raises(NotImplementedError, match="load function is not supported by Recompute Optimizer"):
            opt.load({})
        with pytest.raises(TypeError, match="list of Variable"):
            opt._set_checkpoints(hidden[0])
        with pytest.raises(TypeError, match="checkpoints must be a list"):
            fluid.backward.append_backward(loss, checkpoints=hidden[0])
        with pytest.raises(TypeError, match="wraps an Optimizer"):
            fluid.optimizer.RecomputeOptimizer("sgd")
    sgd = fluid.optimizer.SGD(0.1)
    with fluid.dygraph.guard(), pytest.raises(Exception, match="In dygraph, don't support RecomputeOptimizer"):
        fluid.optimizer.RecomputeOptimizer(sgd)


def test_a_loop_between_checkpoints_is_refused_and_unused_checkpoints_warn():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4], "float32")
        h = L.fc(x, 4)
        out = L.while_loop(lambda i, v: i < 2, lambda i, v: [i + 1, L.tanh(v)],
                           [L.fill_constant([1], "int64", 0), h])[1]
        top = L.fc(out, 1)
        loss = L.mean(top)
        with pytest.raises(ValueError, match="'while' op .* lies between checkpoints"):
            fluid.backward.append_backward(loss, checkpoints=[h, top])
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, hidden = _mlp(depth=2)
        stray = L.fc(fluid.data("z", [None, 3], "float32"), 2)
        with pytest.warns(UserWarning, match="not on the loss's path"):
            fluid.backward.append_backward(loss, checkpoints=[hidden[0], stray])
