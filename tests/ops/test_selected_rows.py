"""SelectedRows values (minifluid/selected_rows.py) and the kernels that take them (ops/selected_rows.py):
merging, sum / scale / clip_by_norm / lookup_table, and the sparse optimizer updates, run as fluid's op
tests run them: values in a Scope, one Operator."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import core
from minifluid.op import Operator
from minifluid.ops.registry import get_op_spec

ROWS, HEIGHT = [7, 0, 4, 0], 9
RNG = np.random.RandomState(5)
VALUE = RNG.rand(len(ROWS), 3).astype("float32")


def _dense(rows=ROWS, value=VALUE, height=HEIGHT):
    out = np.zeros((height,) + value.shape[1:], value.dtype)
    np.add.at(out, rows, value)
    return out


def _scope(**values):
    scope = core.Scope()
    for name, value in values.items():
        if isinstance(value, tuple):  # (rows, height, value): a SelectedRows
            sr = scope.var(name).get_selected_rows()
            sr.set_rows(value[0])
            sr.set_height(value[1])
            sr.get_tensor().set(value[2], fluid.CPUPlace())
        else:
            scope.var(name).get_tensor().set(value, fluid.CPUPlace())
    return scope


def _run(scope, op_type, **slots):
    Operator(op_type, **slots).run(scope, fluid.CPUPlace())
    return scope


def test_a_scope_variable_holds_one_selected_rows():
    scope = _scope(G=(ROWS, HEIGHT, VALUE), T=np.ones(2, "float32"))
    sr = scope.var("G").get_selected_rows()
    assert sr is scope.find_var("G").get_selected_rows()
    assert (sr.rows(), sr.height(), sr.get_tensor().shape()) == (ROWS, HEIGHT, [4, 3])
    with pytest.raises(TypeError, match="'T' holds"):
        scope.var("T").get_selected_rows()


def test_merge_sums_repeated_rows_into_ascending_ids():
    scope = _run(_scope(X=(ROWS, HEIGHT, VALUE)), "merge_selected_rows", X="X", Out="Out")
    out = scope.var("Out").get_selected_rows()
    assert out.rows() == [0, 4, 7] and out.height() == HEIGHT
    np.testing.assert_allclose(np.array(out.get_tensor()), _dense()[[0, 4, 7]], rtol=1e-6)
    dense = _run(_scope(X=(ROWS, HEIGHT, VALUE)), "get_tensor_from_selected_rows", X="X", Out="T")
    np.testing.assert_array_equal(np.array(dense.var("T").get_tensor()), VALUE)  # the value as held


def test_sum_merges_selected_rows_and_adds_them_into_dense_tensors():
    other = RNG.rand(2, 3).astype("float32")
    scope = _run(_scope(A=(ROWS, HEIGHT, VALUE), B=([4, 8], HEIGHT, other), C=([], HEIGHT, other[:0])), "sum",
                 X=["A", "B", "C"], Out="S")
    out = scope.var("S").get_selected_rows()
    assert out.rows() == [0, 4, 7, 8]
    np.testing.assert_allclose(np.array(out.get_tensor()), (_dense() + _dense([4, 8], other))[[0, 4, 7, 8]], rtol=1e-6)
    base = RNG.rand(HEIGHT, 3).astype("float32")
    scope = _run(_scope(D=base, A=(ROWS, HEIGHT, VALUE)), "sum", X=["D", "A"], Out="S")
    np.testing.assert_allclose(np.array(scope.var("S").get_tensor()), base + _dense(), rtol=1e-6)


def test_scale_and_clip_by_norm_keep_selected_rows():
    scope = _run(_scope(X=(ROWS, HEIGHT, VALUE)), "scale", X="X", Out="Out", scale=3.0, bias=1.0)
    out = scope.var("Out").get_selected_rows()
    assert out.rows() == ROWS and out.height() == HEIGHT
    np.testing.assert_allclose(np.array(out.get_tensor()), VALUE * 3 + 1, rtol=1e-6)
    scope = _run(_scope(X=(ROWS, HEIGHT, VALUE)), "clip_by_norm", X="X", Out="Out", max_norm=0.5)
    out = scope.var("Out").get_selected_rows()
    merged = _dense()[[0, 4, 7]]
    assert out.rows() == [0, 4, 7]
    np.testing.assert_allclose(np.array(out.get_tensor()), merged * 0.5 / np.linalg.norm(merged), rtol=1e-5)


def test_lookup_table_reads_a_selected_rows_table_by_row_id():
    table = RNG.rand(3, 4).astype("float32")
    scope = _scope(W=([10, 3, 6], 11, table), Ids=np.array([[6], [10], [6]], "int64"))
    out = _run(scope, "lookup_table", W="W", Ids="Ids", Out="Out").var("Out").get_tensor()
    np.testing.assert_array_equal(np.array(out), table[[2, 0, 2]])
    with pytest.raises(ValueError, match="holds no row 5"):
        _run(_scope(W=([10, 3, 6], 11, table), Ids=np.array([[5]], "int64")), "lookup_table", W="W", Ids="Ids",
             Out="Out")


def _update(op_type, extra=(), **attrs):
    """(param after a sparse-gradient update, param after the same update with the dense gradient)."""
    param = RNG.rand(HEIGHT, 3).astype("float32")
    state = {name: RNG.rand(*((1,) if "Pow" in name else (HEIGHT, 3))).astype("float32") * 0.5 + 0.1
             for name in extra}
    results = []
    for grad in ((ROWS, HEIGHT, VALUE), _dense()):
        values = dict(Param=param.copy(), Grad=grad, LearningRate=np.array([0.1], "float32"),
                      **{k: v.copy() for k, v in state.items()})
        slots = {k: k for k in values}
        slots.update({k + "Out": k for k in ("Param",) + tuple(extra) if k + "Out" in get_op_spec(op_type).outputs})
        scope = _run(_scope(**values), op_type, **slots, **attrs)
        results.append(np.array(scope.var("Param").get_tensor()))
    return param, results[0], results[1]


@pytest.mark.parametrize("op_type, extra, attrs", [
    ("sgd", (), {}), ("momentum", ("Velocity",), {}), ("rmsprop", ("MeanSquare", "Moment"), {}),
    ("adam", ("Moment1", "Moment2", "Beta1Pow", "Beta2Pow"), {}), ("lamb", ("Moment1", "Moment2", "Beta1Pow",
                                                                        "Beta2Pow"), {}),
])
def test_a_sparse_gradient_updates_as_its_dense_twin(op_type, extra, attrs):
    before, sparse, dense = _update(op_type, extra, **attrs)
    np.testing.assert_allclose(sparse, dense, rtol=1e-5, atol=1e-7)
    assert not np.allclose(sparse, before)


@pytest.mark.parametrize("op_type, extra, attrs", [
    ("adagrad", ("Moment",), {}), ("adam", ("Moment1", "Moment2", "Beta1Pow", "Beta2Pow"), {"lazy_mode": True}),
])
def test_adagrad_and_lazy_adam_move_only_the_gradients_rows(op_type, extra, attrs):
    before, sparse, dense = _update(op_type, extra, **attrs)
    untouched = [r for r in range(HEIGHT) if r not in ROWS]
    np.testing.assert_array_equal(sparse[untouched], before[untouched])
    np.testing.assert_allclose(sparse[[0, 4, 7]], dense[[0, 4, 7]], rtol=1e-5)
    if op_type == "adam":  # the dense update moves every row (its moments decay)
        assert not np.allclose(dense[untouched], before[untouched])


def test_sgd_updates_a_selected_rows_parameter_at_the_rows_holding_the_ids():
    table = np.arange(12, dtype="float32").reshape(4, 3)
    scope = _scope(Param=([8, 0, 4, 7], HEIGHT, table.copy()), Grad=(ROWS, HEIGHT, VALUE),
                   LearningRate=np.array([0.5], "float32"))
    _run(scope, "sgd", Param="Param", Grad="Grad", LearningRate="LearningRate", ParamOut="Param")
    expected = table - 0.5 * _dense()[[8, 0, 4, 7]]
    np.testing.assert_allclose(np.array(scope.var("Param").get_selected_rows().get_tensor()), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        _run(_scope(Param=np.zeros((3, 3), "float32"), Grad=(ROWS, HEIGHT, VALUE),
                    LearningRate=np.array([0.5], "float32")),
             "sgd", Param="Param", Grad="Grad", LearningRate="LearningRate", ParamOut="Param")


def test_an_op_writing_a_variable_that_holds_selected_rows_fills_it():
    scope = core.Scope()
    held = scope.var("Out").get_selected_rows()
    _run(scope, "fill_constant", Out="Out", shape=[2, 5], value=3.5, dtype="float32")
    assert scope.var("Out").get_selected_rows() is held
    np.testing.assert_array_equal(np.array(held.get_tensor()), np.full((2, 5), 3.5, "float32"))


def test_the_selected_rows_layers_check_their_input():
    with fluid.program_guard(fluid.Program()):
        block = fluid.default_main_program().global_block()
        rows = block.create_var(name="g", dtype="float32", shape=[4, 3], type=core.VarDesc.VarType.SELECTED_ROWS)
        assert fluid.layers.merge_selected_rows(rows).type == core.VarDesc.VarType.SELECTED_ROWS
        assert fluid.layers.get_tensor_from_selected_rows(rows).type != core.VarDesc.VarType.SELECTED_ROWS
        with pytest.raises(TypeError, match="SELECTED_ROWS"):
            fluid.layers.get_tensor_from_selected_rows(fluid.data("x", [2, 3]))
        with pytest.raises(TypeError, match="Variable"):
            fluid.layers.merge_selected_rows(np.ones((2, 3)))
