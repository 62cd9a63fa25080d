"""while_loop, case and switch_case (fluid 1.8's functional control flow) in static and dygraph mode."""
import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers


def test_while_loop_runs_body_until_cond_fails():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        i = L.fill_constant([1], "int64", 0)
        total = L.fill_constant([1], "float64", 1.0)
        limit = fluid.data("limit", [1], "int64")
        i_out, total_out = L.while_loop(lambda i, t: L.less_than(i, limit),
                                        lambda i, t: [L.increment(i, in_place=False), t * 3.0], [i, total])
    exe = fluid.Executor()
    for n in (0, 1, 4):
        got_i, got_t = exe.run(main, feed={"limit": np.array([n], "int64")}, fetch_list=[i_out, total_out],
                               scope=fluid.Scope())
        assert got_i.tolist() == [n] and got_t.tolist() == [3.0 ** n]
    with pytest.raises(ValueError, match="same arity"):
        with fluid.program_guard(fluid.Program()):
            i = L.fill_constant([1], "int64", 0)
            L.while_loop(lambda i: L.less_than(i, i), lambda i: [i, i], [i])


def _pick(build):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [1], "int64")
        out = build(x)
    exe = fluid.Executor()
    return [exe.run(main, feed={"x": np.array([v], "int64")}, fetch_list=[out], scope=fluid.Scope())[0].item()
            for v in range(4)]


def _const(v):
    return lambda: L.fill_constant([1], "float32", v)


def test_case_takes_the_first_pred_that_holds_else_the_default():
    def build(x):
        return L.case([(L.less_than(x, L.fill_constant([1], "int64", 1)), _const(10.0)),
                       (L.less_than(x, L.fill_constant([1], "int64", 3)), _const(20.0))], default=_const(30.0))
    assert _pick(build) == [10.0, 20.0, 20.0, 30.0]

    def no_default(x):  # the last pair's function is the default
        return L.case([(L.equal(x, L.fill_constant([1], "int64", 2)), _const(1.0)),
                       (L.equal(x, L.fill_constant([1], "int64", 0)), _const(2.0))])
    assert _pick(no_default) == [2.0, 2.0, 1.0, 2.0]


def test_switch_case_picks_the_branch_of_the_index_else_the_default():
    assert _pick(lambda x: L.switch_case(x, {1: _const(1.0), 3: _const(3.0)}, default=_const(-1.0))) == \
        [-1.0, 1.0, -1.0, 3.0]
    assert _pick(lambda x: L.switch_case(x, [_const(5.0), _const(6.0)])) == [5.0, 6.0, 6.0, 6.0]
    with pytest.raises(ValueError, match="'1' appears more than once"):
        with fluid.program_guard(fluid.Program()):
            L.switch_case(fluid.data("x", [1], "int64"), [(1, _const(1.0)), (1, _const(2.0))])


def test_dygraph_runs_the_python_functions():
    with fluid.dygraph.guard():
        i = fluid.dygraph.to_variable(np.array([0], "int64"))
        ten = fluid.dygraph.to_variable(np.array([10], "int64"))
        out, = L.while_loop(lambda i: L.less_than(i, ten), lambda i: [L.increment(i, 3.0, in_place=False)], [i])
        assert out.numpy().tolist() == [12]
        flag = fluid.dygraph.to_variable(np.array([False]))
        assert L.cond(flag, lambda: 1, lambda: 2) == 2


def test_dygraph_body_of_another_arity_is_a_value_error():
    with fluid.dygraph.guard():
        i = fluid.dygraph.to_variable(np.array([0], "int64"))
        with pytest.raises(ValueError, match="body in while_loop should return the same arity"):
            L.while_loop(lambda i: L.less_than(i, i + 1), lambda i: (i + 1, i + 2), [i])
