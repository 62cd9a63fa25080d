"""Context kernels (executor/context.py): LoD in and out, parent-scope lookup, sub-blocks with cached
plans, place and the program's generator; grad-op builders used by append_backward."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph.tensor import apply
from minifluid.executor import executor as executor_module
from minifluid.layers import LayerHelper
from minifluid.ops.registry import OpRole


@pytest.fixture
def ops(scratch_registry):
    """Test ops, registered for one test only."""
    reg = scratch_registry.register_op

    @reg("_seq_sum", inputs=("X",), outputs=("Out", "Same"), context=True)
    def _seq_sum(ctx, attrs, x):
        lod = ctx.input_lod("X")
        ctx.set_output_lod("Same", lod)
        starts = np.concatenate([[0], np.cumsum(lod[0])[:-1]])
        return np.add.reduceat(x, starts, axis=0), x.copy()

    @reg("_twice", inputs=("X",), outputs=("Out",), share_lod={"Out": "X"})
    def _twice(attrs, x):
        return x * 2

    @reg("_scaled_by", inputs=("X",), outputs=("Out",), attrs={"factor": ""}, context=True)
    def _scaled_by(ctx, attrs, x):
        return x * ctx.find_value(attrs["factor"])

    @reg("_repeat", inputs=(), outputs=("Steps",), attrs={"sub_block": None, "times": 1}, context=True)
    def _repeat(ctx, attrs):
        for _ in range(attrs["times"]):
            ctx.run_block(attrs["sub_block"])
        return np.array([attrs["times"]], "int64")

    seen = []

    @reg("_draw", inputs=(), outputs=("Out",), context=True)
    def _draw(ctx, attrs):
        seen.append(ctx.place)
        return ctx.random.uniform(size=3)

    return seen


def _program():
    main = fluid.Program()
    return main, main.global_block()


def test_a_context_op_reads_input_lod_and_sets_output_lod(ops):
    main, block = _program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2], "float64", lod_level=1)
    out, same = block.create_var("out", dtype=None), block.create_var("same", dtype=None)
    block.append_op("_seq_sum", {"X": x}, {"Out": out, "Same": same})
    exe = fluid.Executor()
    for lengths in ([2, 3], [1, 1, 3]):
        data = np.arange(10, dtype="float64").reshape(5, 2)
        sums, kept = exe.run(main, feed={"x": fluid.create_lod_tensor(data, [lengths], fluid.CPUPlace())},
                             fetch_list=[out, same], return_numpy=False, scope=fluid.Scope())
        starts = np.cumsum([0] + lengths[:-1])
        np.testing.assert_array_equal(np.array(sums), np.add.reduceat(data, starts))
        assert sums.recursive_sequence_lengths() == []  # set for Same only: Out has none
        assert kept.recursive_sequence_lengths() == [lengths]


def test_share_lod_rule_carries_lod_and_lod_level(ops):
    main, block = _program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 1], "float32", lod_level=1)
    y = block.create_var("y", dtype=None)
    block.append_op("_twice", {"X": x}, {"Out": y})
    assert y.lod_level == 1  # tracked while building, as fluid does
    feed = fluid.create_lod_tensor(np.ones((3, 1), "float32"), [[1, 2]], fluid.CPUPlace())
    out, = fluid.Executor().run(main, feed={"x": feed}, fetch_list=[y], return_numpy=False, scope=fluid.Scope())
    assert out.recursive_sequence_lengths() == [[1, 2]] and np.array(out).tolist() == [[2.0]] * 3
    with pytest.raises(RuntimeError, match="hold LoD information"):
        fluid.Executor().run(main, feed={"x": feed}, fetch_list=[y], scope=fluid.Scope())


def _scaled_by_f(f):
    """A program ``out = x * f`` whose f the op finds by name, and a scope holding ``f``."""
    main, block = _program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2], "float32")
    out = block.create_var("out", dtype=None)
    block.create_var("f", [1], "float32", persistable=True)
    block.append_op("_scaled_by", {"X": x}, {"Out": out}, {"factor": "f"})
    scope = fluid.Scope()
    scope.var("f").get_tensor().set(np.array([f], "float32"), fluid.CPUPlace())
    return main, out, scope


def test_a_context_op_finds_values_in_parent_scopes(ops):
    main, out, parent = _scaled_by_f(3.0)
    got, = fluid.Executor().run(main, feed={"x": np.ones((2, 2), "float32")}, fetch_list=[out],
                                scope=parent.new_scope())
    assert got.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def _counting_builds(monkeypatch):
    built = []
    real = executor_module.build_plan

    def build_plan(program, feed_names, fetch_names, block_idx=0, *rest):
        built.append(block_idx)
        return real(program, feed_names, fetch_names, block_idx, *rest)
    monkeypatch.setattr(executor_module, "build_plan", build_plan)
    return built


def test_sub_block_runs_reuse_one_cached_plan_and_update_parent_variables(ops, monkeypatch):
    main, block = _program()
    acc = block.create_var("acc", [2], "float32", persistable=True)
    counter = block.create_var("i", [1], "int64", persistable=True)
    body = main._create_block()
    local = body.create_var("local", [2], "float32")
    body.append_op("scale", {"X": acc}, {"Out": acc}, {"scale": 2.0})
    body.append_op("increment", {"X": counter}, {"Out": counter}, {"step": 1.0})
    body.append_op("scale", {"X": acc}, {"Out": local}, {"scale": 1.0, "bias": 1.0})
    main._rollback()
    steps = block.create_var("steps", dtype=None)
    block.append_op("_repeat", {}, {"Steps": steps}, {"sub_block": body, "times": 5})
    assert "sub_block=Block(idx=1, parent_idx=0)" in str(main)
    built = _counting_builds(monkeypatch)
    scope = fluid.Scope()
    scope.var("acc").get_tensor().set(np.array([1.0, 3.0], "float32"), fluid.CPUPlace())
    scope.var("i").get_tensor().set(np.array([0], "int64"), fluid.CPUPlace())
    exe = fluid.Executor()
    for _ in range(2):
        n, = exe.run(main, fetch_list=[steps], scope=scope)
    assert n.tolist() == [5]
    assert scope.find_value("acc").tolist() == [1024.0, 3072.0] and scope.find_value("i").tolist() == [10]
    assert scope.find_value("local") is None  # the body's own variable stayed in its child scope
    assert built == [0, 1]  # two runs, ten sub-block runs: one plan per block
    block.append_op("scale", {"X": steps}, {"Out": steps}, {"scale": 1.0})  # an edit: plans are rebuilt
    exe.run(main, fetch_list=[steps], scope=scope)
    assert built == [0, 1, 0, 1]


def test_a_block_that_runs_itself_is_refused_when_the_plan_is_built(ops):
    main, block = _program()
    body = main._create_block()
    body.append_op("_repeat", {}, {"Steps": body.create_var("s", dtype=None)}, {"sub_block": body})
    main._rollback()
    block.append_op("_repeat", {}, {"Steps": block.create_var("steps", dtype=None)}, {"sub_block": body})
    with pytest.raises(ValueError, match=r"blocks \[1\] run each other in a cycle"):
        fluid.Executor().run(main, scope=fluid.Scope())


def test_place_and_the_programs_random_generator(ops):
    def build(seed):
        main, block = _program()
        main.random_seed = seed
        out = block.create_var("out", dtype=None)
        block.append_op("_draw", {}, {"Out": out})
        return main, out

    exe = fluid.Executor(fluid.CPUPlace())
    main, out = build(7)
    first, second = (exe.run(main, fetch_list=[out], scope=fluid.Scope())[0] for _ in range(2))
    assert not np.array_equal(first, second)  # the generator advances from run to run
    again, out2 = build(7)
    np.testing.assert_array_equal(exe.run(again, fetch_list=[out2], scope=fluid.Scope())[0], first)
    unseeded, out3 = build(0)  # seed 0: numpy's global random state
    np.random.seed(5)
    a = exe.run(unseeded, fetch_list=[out3], scope=fluid.Scope())[0]
    np.random.seed(5)
    np.testing.assert_array_equal(exe.run(unseeded, fetch_list=[out3], scope=fluid.Scope())[0], a)
    assert ops == [exe.place] * 5


def test_context_ops_run_in_data_parallel_replicas(ops, monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    main, out, scope = _scaled_by_f(2.0)
    compiled = fluid.CompiledProgram(main).with_data_parallel()
    got, = fluid.Executor().run(compiled, feed={"x": np.ones((4, 2), "float32")}, fetch_list=[out], scope=scope)
    assert got.tolist() == [[2.0, 2.0]] * 4


def test_a_context_op_is_refused_in_dygraph_mode_with_a_clear_error(ops):
    """Dygraph gives context ops their tensors' LoD and the program's random generator (tracer.py's
    _EagerContext); asking for anything else (here a scope lookup) names the op and what it asked for."""
    with fluid.dygraph.guard():
        x = fluid.dygraph.to_variable(np.ones((2, 2), "float32"))
        with pytest.raises(NotImplementedError, match="op '_scaled_by' asks the static Executor's context for "
                                                      "'find_value'"):
            apply("_scaled_by", {"X": x}, {"factor": "f"})


def test_append_backward_uses_a_custom_grad_op_builder(scratch_registry):
    scratch_registry.register_op("_double", inputs=("X",), outputs=("Out",),
                                 infer_shape=scratch_registry.same_as(0))(lambda attrs, x: x * 2)
    calls = []

    @scratch_registry.register_grad("_double", builder=True)
    def _double_grad_ops(op, grads):
        calls.append((op.type, grads.output("Out"), grads.input("X")))
        return [("scale", {"X": grads.output("Out")}, {"Out": grads.input("X")}, {"scale": 2.0})]

    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = LayerHelper("t").create_parameter(fluid.ParamAttr("w", fluid.initializer.Constant(1.5)), [3],
                                              "float32")
        y = main.global_block().create_var(name="y", dtype=None)
        main.global_block().append_op("_double", {"X": w}, {"Out": y})
        loss = fluid.layers.mean(y)
        (param, grad), = fluid.backward.append_backward(loss)
    assert calls == [("_double", ["y@GRAD"], ["w@GRAD"])] and (param.name, grad.name) == ("w", "w@GRAD")
    scale = [op for op in main.global_block().ops if op.type == "scale"]
    assert len(scale) == 1 and scale[0].attr("op_role") == OpRole.Backward
    assert scale[0].attr("op_role_var") == ["w", "w@GRAD"]
    assert "_double_grad" not in scratch_registry.registered_ops()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    g, = exe.run(main, fetch_list=[grad], scope=scope)
    np.testing.assert_allclose(g, [2 / 3] * 3)
