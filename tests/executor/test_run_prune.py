"""Executor.run(use_prune=...) and optimizer ops in fetch_list (executor/prune.py)."""
import warnings

import numpy as np
import pytest

import minifluid as fluid


def _two_losses(two_inputs=False):
    """Two fc heads over one or two inputs, each with its mean cross-entropy loss, both persistable."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x1 = fluid.data("x1", [None, 2])
        x2 = fluid.data("x2", [None, 2]) if two_inputs else x1
        label = fluid.data("label", [None, 1], dtype="int64")
        losses, weights = [], []
        for k, x in enumerate((x1, x2)):
            w = fluid.ParamAttr(name=f"w{k}", initializer=fluid.initializer.Constant(1.0))
            y = fluid.layers.fc(x, size=2, act="softmax", param_attr=w)
            loss = fluid.layers.mean(fluid.layers.cross_entropy(y, label))
            loss.persistable = True
            losses.append(loss)
            weights.append(w.name)
    feed = {"x1": np.random.RandomState(0).rand(6, 2).astype("float32"), "label": np.zeros((6, 1), "int64")}
    if two_inputs:
        feed["x2"] = feed["x1"]
    return main, startup, losses, weights, feed


def _run(program, startup, feed, fetch_list, **kwargs):
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        exe.run(program, feed=feed, fetch_list=fetch_list, **kwargs)
    return scope


def test_use_prune_runs_only_what_the_fetches_need():
    main, startup, (loss1, loss2), _, feed = _two_losses()
    whole = _run(main, startup, feed, [loss1], use_prune=False)
    assert whole.find_var(loss2.name).get_tensor()._is_initialized()
    pruned = _run(main, startup, feed, [loss1], use_prune=True)
    assert pruned.find_var(loss1.name).get_tensor()._is_initialized()
    assert pruned.find_var(loss2.name) is None  # its ops went, and it left the program


def test_fetching_one_optimizers_ops_trains_through_that_optimizer_only():
    main, startup, (loss1, loss2), (w1, w2), feed = _two_losses(two_inputs=True)
    with fluid.program_guard(main, startup):
        train1 = fluid.optimizer.SGD(0.5).minimize(loss1)
        fluid.optimizer.SGD(0.5).minimize(loss2)
    for fetch in ([loss1, train1], [loss1, train1[0]], [loss1] + list(train1[0])):
        scope = _run(main, startup, feed, fetch)  # optimizer ops in the fetch list: pruned without use_prune
        w1_after, w2_after = (np.array(scope.find_var(n).get_tensor()) for n in (w1, w2))
        assert not np.array_equal(w1_after, np.ones_like(w1_after))  # initialised to ones, then trained
        np.testing.assert_array_equal(w2_after, np.ones_like(w2_after))  # loss2's optimizer did not run


def test_a_fed_intermediate_cuts_its_producers_and_unused_feeds_are_dropped_with_a_warning():
    main, startup, (loss1, _), (w1, _), feed = _two_losses()
    y = [op for op in main.global_block().ops if op.type == "softmax"][0].output("Out")[0]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe.run(startup)
        out, = exe.run(main, feed={y: np.full((6, 2), 0.5, "float32"), **feed}, fetch_list=[loss1],
                       use_prune=True)
    np.testing.assert_allclose(out, [-np.log(0.5)], rtol=1e-6)
    assert any("x1 is not found in program" in str(w.message) for w in caught)


def test_pruned_programs_are_cached_per_fetch_list():
    main, startup, (loss1, loss2), _, feed = _two_losses(two_inputs=True)
    with fluid.program_guard(main, startup):
        train1 = fluid.optimizer.Adam(0.1).minimize(loss1)
        train2 = fluid.optimizer.Adam(0.1).minimize(loss2)
    exe = fluid.Executor(fluid.CPUPlace())
    calls = []
    original = exe._prune_program
    exe._prune_program = lambda *args: calls.append(1) or original(*args)
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        for i in range(4):
            exe.run(main, feed=feed, fetch_list=[loss1, loss2, train1 if i % 2 else train2])
    assert len(calls) == 2


def test_a_non_optimizer_op_in_the_fetch_list_is_a_type_error():
    main, startup, (loss1, _), _, feed = _two_losses()
    with pytest.raises(TypeError, match="not an optimize_op"):
        _run(main, startup, feed, [loss1, main.global_block().ops[0]])


def test_a_list_of_variables_in_the_fetch_list_is_flattened():
    main, startup, (loss1, loss2), _, feed = _two_losses()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        out = exe.run(main, feed=feed, fetch_list=[[loss1], [loss2]])
    assert len(out) == 2 and out[0].shape == (1,)


def test_a_run_declares_the_persistable_variables_even_when_it_fails():
    main, startup, (loss1, _), _, feed = _two_losses()
    scope = fluid.Scope()
    with fluid.scope_guard(scope), pytest.raises(RuntimeError):
        fluid.Executor(fluid.CPUPlace()).run(main, feed={}, fetch_list=[loss1])  # nothing fed
    assert scope.find_var(loss1.name) is not None


def test_hard_label_cross_entropy_is_fluids_cross_entropy2_op():
    main, _, _, _, _ = _two_losses()
    types = [op.type for op in main.global_block().ops]
    assert types.count("cross_entropy2") == 2 and "cross_entropy" not in types
