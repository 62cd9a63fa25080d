"""fluid.layers.embedding (lookup_table) through the Executor."""
import numpy as np
import pytest

import minifluid as fluid


def _program(padding_idx=None):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 2
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.data("ids", [None, 3, 1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[10, 4], padding_idx=padding_idx)
        loss = fluid.layers.reduce_sum(emb)
        fluid.optimizer.SGD(1.0).minimize(loss)
    return main, startup, emb, loss


def test_embedding_rows_shape_and_a_padding_id_that_reads_as_zero_and_learns_nothing():
    main, startup, emb, loss = _program(padding_idx=-1)  # -1: the last row, 9
    assert tuple(emb.shape) == (-1, 3, 4)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    table = np.array(scope.find_var("embedding_0.w_0").get_tensor()).copy()
    ids = np.array([[[2], [9], [2]]], dtype="int64")
    (out,) = exe.run(main, feed={"ids": ids}, fetch_list=[emb], scope=scope)
    np.testing.assert_allclose(out[0], [table[2], np.zeros(4), table[2]])
    after = np.array(scope.find_var("embedding_0.w_0").get_tensor())
    expected_step = np.zeros((10, 4))
    expected_step[2] = 2.0  # id 2 read twice, d loss / d row = 1 each time; row 9 (padding) unchanged
    np.testing.assert_allclose(table - after, expected_step, rtol=1e-6)


def test_an_id_outside_the_table_is_a_clear_error():
    main, startup, emb, loss = _program()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(ValueError, match=r"id 10 is out of range for a table of 10 rows"):
        exe.run(main, feed={"ids": np.array([[[1], [10], [2]]], dtype="int64")}, fetch_list=[loss], scope=scope)
