"""BuildStrategy's options and pass list (executor/build_strategy.py) and CompiledProgram._compile's checks."""
import numpy as np
import pytest

import minifluid as fluid

from .test_data_parallel import _mlp


def test_options_have_fluids_defaults_and_read_back():
    strategy = fluid.BuildStrategy()
    assert strategy.fuse_elewise_add_act_ops is False and strategy.enable_inplace is True
    assert strategy.memory_optimize is None and strategy.remove_unnecessary_lock is True
    assert strategy.fuse_all_reduce_ops is True and strategy.fuse_broadcast_ops is True  # unset reads True
    strategy.fuse_elewise_add_act_ops, strategy.fuse_all_reduce_ops, strategy.memory_optimize = True, False, False
    assert (strategy.fuse_elewise_add_act_ops, strategy.fuse_all_reduce_ops, strategy.memory_optimize) == \
        (True, False, False)
    with pytest.raises(ValueError, match="memory_optimize must be set to None, False or True"):
        strategy.memory_optimize = "yes"
    assert fluid.BuildStrategy().fuse_elewise_add_act_ops is False  # options are per strategy


def test_passes_follow_the_options_and_fix_them():
    strategy = fluid.BuildStrategy()
    strategy.fuse_elewise_add_act_ops = True
    builder = strategy._finalize_strategy_and_create_passes()
    names = [p.type() for p in builder.all_passes()]
    assert names[:3] == ["fuse_elewise_add_act_pass", "coalesce_grad_tensor_pass", "add_reader_dependency_pass"]
    assert names[-1] == "multi_devices_check_pass" and "graph_viz_pass" not in names
    assert "fuse_elewise_add_act_pass" not in [p.type() for p in
                                               fluid.BuildStrategy()._finalize_strategy_and_create_passes().all_passes()]
    assert strategy._finalize_strategy_and_create_passes() is builder
    with pytest.raises(RuntimeError, match="has been finlaized, cannot be configured again"):
        strategy.fuse_bn_act_ops = True
    viz = builder.append_pass("graph_viz_pass")
    builder.insert_pass(0, "graph_viz_pass")
    assert len(builder.all_passes()) == len(names) + 2 and builder.all_passes()[-1] is viz
    builder.remove_pass(0)
    assert [p.type() for p in builder.all_passes()] == names + ["graph_viz_pass"]
    with pytest.raises(IndexError):
        builder.remove_pass(len(names) + 1)


def test_graph_viz_pass_writes_the_program_graph_when_it_first_runs(tmp_path):
    main, startup, loss = _mlp()
    strategy = fluid.BuildStrategy()
    strategy.debug_graphviz_path = str(tmp_path / "debug")
    viz = strategy._finalize_strategy_and_create_passes().append_pass("graph_viz_pass")
    viz.set("graph_viz_path", str(tmp_path / "graph.dot"))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    cp = fluid.CompiledProgram(main).with_data_parallel(loss.name, build_strategy=strategy,
                                                        places=fluid.cpu_places(2))
    exe.run(cp, feed={"x": np.ones((4, 6), "float32"), "y": np.zeros((4, 1), "int64")}, fetch_list=[loss],
            scope=scope)
    text = (tmp_path / "graph.dot").read_text()
    assert text.startswith('digraph "program"') and 'label="mul"' in text and 'label="sgd"' in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["debug_fused_graph", "debug_multi_devices_graph",
                                                          "debug_original_graph", "graph.dot"]


def test_compile_binds_one_scope_and_place_and_checks_the_shared_program():
    main, _, loss = _mlp()
    scope, place = fluid.Scope(), fluid.CPUPlace()
    plain = fluid.CompiledProgram(main)
    assert plain._compile(scope, place) is plain and plain._compile(scope, place) is plain
    with pytest.raises(ValueError, match="Cannot compile program with different scope"):
        plain._compile(fluid.Scope(), place)
    with pytest.raises(ValueError, match="not data parallel, cannot share variables"):
        fluid.CompiledProgram(main).with_data_parallel(share_vars_from=plain)._compile(scope, place)
    never_run = fluid.CompiledProgram(main).with_data_parallel(loss.name)
    with pytest.raises(ValueError, match="not compiled and executed"):
        fluid.CompiledProgram(main).with_data_parallel(share_vars_from=never_run)._compile(scope, place)
    never_run._compile(scope, place)
    shared = fluid.CompiledProgram(main).with_data_parallel(share_vars_from=never_run)
    assert shared._compile(scope, place) is shared
