"""fluid 1.8's everyday tensor layers through a Program: signatures, output dtypes and shapes, values,
and the argument errors (ops and gradients: tests/ops/tensor_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

from .program_run import run

L = fluid.layers


@pytest.mark.parametrize("name, signature", [
    ("sum", "(x)"), ("mul", "(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None)"),
    ("ones_like", "(x, out=None)"), ("zeros_like", "(x, out=None)"),
    ("create_parameter", "(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None)"),
    ("range", "(start, end, step, dtype)"), ("arange", "(start, end, step=1, dtype=None, name=None)"),
    ("reduce_prod", "(input, dim=None, keep_dim=False, name=None)"),
    ("reduce_all", "(input, dim=None, keep_dim=False, name=None)"), ("where", "(condition)"),
    ("reverse", "(x, axis)"), ("sign", "(x)"), ("size", "(input)"), ("rank", "(input)"),
    ("eye", "(num_rows, num_columns=None, batch_shape=None, dtype='float32')"), ("diag", "(diagonal)"),
    ("expand_as", "(x, target_tensor, name=None)"), ("gather_nd", "(input, index, name=None)"),
    ("scatter_nd_add", "(ref, index, updates, name=None)"), ("log1p", "(x, out=None, name=None)"),
    ("elementwise_mod", "(x, y, axis=-1, act=None, name=None)"),
    ("elementwise_floordiv", "(x, y, axis=-1, act=None, name=None)"),
    ("cumsum", "(x, axis=None, exclusive=None, reverse=None)"),
    ("full", "(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None)"),
    ("full_like", "(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None)"),
    ("linspace", "(start, stop, num, dtype)"), ("scatter_nd", "(index, updates, shape, name=None)"),
    ("flip", "(input, dims, name=None)"), ("roll", "(input, shifts, dims=None)"),
    ("tril", "(input, diagonal=0, name=None)"), ("triu", "(input, diagonal=0, name=None)"),
    ("has_inf", "(x)"), ("has_nan", "(x)"), ("isfinite", "(x)"), ("erf", "(x)"), ("mse_loss", "(input, label)"),
    ("logsumexp", "(x, dim=None, keepdim=False, out=None, name=None)"),
    ("elementwise_equal", "(x, y, name=None)"), ("bmm", "(x, y, name=None)"), ("dot", "(x, y, name=None)"),
    ("t", "(input, name=None)"), ("nonzero", "(input, as_tuple=False)"), ("index_select", "(input, index, dim=0)"),
    ("index_sample", "(x, index)"), ("unique", "(x, dtype='int32')"), ("unique_with_counts", "(x, dtype='int32')"),
    ("uniform_random_batch_size_like",
     "(input, shape, dtype='float32', input_dim_idx=0, output_dim_idx=0, min=-1.0, max=1.0, seed=0)"),
    ("gaussian_random_batch_size_like",
     "(input, shape, input_dim_idx=0, output_dim_idx=0, mean=0.0, std=1.0, seed=0, dtype='float32')"),
    ("strided_slice", "(input, axes, starts, ends, strides)"), ("multiplex", "(inputs, index)"),
    ("shard_index", "(input, index_num, nshards, shard_id, ignore_value=-1)"),
    ("trace", "(input, offset=0, dim1=0, dim2=1, out=None, name=None)"), ("kron", "(x, y, out=None, name=None)"),
    ("allclose", "(input, other, rtol=1e-05, atol=1e-08, equal_nan=False, name=None)"),
    ("meshgrid", "(input, name=None)"),
    ("randint", "(low, high=None, shape=None, out=None, dtype=None, device=None, stop_gradient=False, seed=0, "
                "name=None)"),
    ("randn", "(shape, out=None, dtype=None, device=None, stop_gradient=True, name=None)"),
    ("randperm", "(n, out=None, dtype='int64', device=None, stop_gradient=True, seed=0)"),
    ("acos", "(x, name=None)"), ("asin", "(x, name=None)"),
    ("clamp", "(input, min=None, max=None, output=None, name=None)"),
    ("addmm", "(input, x, y, alpha=1.0, beta=1.0, name=None)"),
    ("addcmul", "(input, tensor1, tensor2, value=1.0, out=None, name=None)"), ("dist", "(x, y, p=2)"),
    ("cross", "(input, other, dim=None)"), ("diag_embed", "(input, offset=0, dim1=-2, dim2=-1)"),
    ("sampling_id", "(x, min=0.0, max=1.0, seed=0, dtype='float32')"),
    ("rank_loss", "(label, left, right, name=None)"),
    ("margin_rank_loss", "(label, left, right, margin=0.1, name=None)"),
    ("bpr_loss", "(input, label, name=None)"), ("kldiv_loss", "(x, target, reduction='mean', name=None)"),
    ("dice_loss", "(input, label, epsilon=1e-05, name=None)"),
])
def test_signature_is_fluids(name, signature):
    assert str(inspect.signature(getattr(L, name))) == signature


def test_sum_and_mul():
    a, b = np.arange(6, dtype="float32").reshape(2, 3), np.ones((2, 3), "float32")
    w = np.arange(12, dtype="float32").reshape(3, 4)

    def build():
        x, y = fluid.data("a", [2, 3]), fluid.data("b", [2, 3])
        x3 = L.reshape(x, [2, 3, 1])
        return L.sum([x, y, x]), L.sum(x), L.mul(x, fluid.data("w", [3, 4])), L.mul(x3, L.reshape(y, [1, 6]),
                                                                                      x_num_col_dims=2)
    outs, (s3, s1, m, m2) = run(build, {"a": a, "b": b, "w": w})
    np.testing.assert_array_equal(s3, 2 * a + b)
    np.testing.assert_array_equal(s1, a)
    np.testing.assert_array_equal(m, a @ w)
    assert outs[2].shape == (2, 4) and outs[3].shape == (2, 3, 6)
    np.testing.assert_array_equal(m2, a.reshape(2, 3, 1) * b.reshape(1, 1, 6))


def test_like_layers_and_size_rank():
    def build():
        x = fluid.data("x", [None, 3], dtype="int64")
        return L.ones_like(x), L.zeros_like(x), L.size(x), L.rank(x)
    outs, (ones, zeros, size, rank) = run(build, {"x": np.full((4, 3), 7, "int64")})
    assert ones.dtype == np.int64 and ones.tolist() == [[1] * 3] * 4 and zeros.tolist() == [[0] * 3] * 4
    assert all(o.stop_gradient for o in outs[:2])
    assert size.dtype == np.int64 and size.tolist() == [12] and outs[2].dtype == "int64"
    assert rank.dtype == np.int32 and rank.tolist() == [2]


def test_create_parameter_is_trained_by_the_optimizer():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        w = L.create_parameter([3], "float32", attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.Constant(2.0)))
        loss = L.reduce_sum(w * fluid.data("x", [3]))
        fluid.optimizer.SGD(0.5).minimize(loss)
    assert isinstance(w, fluid.Parameter) and w.shape == (3,) and w.dtype == "float32"
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": np.array([1.0, 2.0, 4.0], "float32")}, scope=scope)
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), [1.5, 1.0, 0.0])


def test_range_and_arange():
    def build():
        end = L.fill_constant([1], "int32", 7)
        return L.range(1, end, 2, "int64"), L.arange(0.5, 2), L.range(4.0, 1.0, -1.5, "float64")
    outs, (r, a, down) = run(build)
    assert r.dtype == np.int64 and r.tolist() == [1, 3, 5] and outs[0].stop_gradient
    assert a.dtype == np.float32 and a.tolist() == [0.5, 1.5]
    assert down.dtype == np.float64 and down.tolist() == [4.0, 2.5]


def test_range_step_errors_name_the_rule():
    for start, end, step, message in ((0, 5, 0, "The step of range op should not be 0."),
                                      (0, 5, -1, "The step should be greater than 0 while start < end."),
                                      (5, 0, 1, "step should be less than 0 while start > end.")):
        with pytest.raises(ValueError, match=message):
            run(lambda: [L.range(start, end, step, "int32")])


def test_reductions_and_where():
    x = np.array([[True, False, True], [True, True, True]])

    def build():
        c = fluid.data("c", [2, 3], dtype="bool")
        p = fluid.data("p", [2, 3])
        return L.reduce_all(c, dim=1), L.reduce_any(c), L.reduce_prod(p, dim=[0], keep_dim=True), L.where(c)
    outs, (all1, any_, prod, where) = run(build, {"c": x, "p": np.arange(1, 7, dtype="float32").reshape(2, 3)})
    assert all1.dtype == bool and all1.tolist() == [False, True] and any_.tolist() == [True]
    assert prod.tolist() == [[4.0, 10.0, 18.0]]
    assert where.dtype == np.int64 and where.tolist() == [[0, 0], [0, 2], [1, 0], [1, 1], [1, 2]]
    assert outs[3].shape == (-1, 2) and outs[3].dtype == "int64"


def test_reduce_all_wants_bool():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="The data type of 'input' in reduce_all must be \\['bool'\\], but "
                                            "received float32"):
            L.reduce_all(fluid.data("x", [2]))


def test_eye_diag_sign_reverse_log1p_cumsum():
    def build():
        x = fluid.data("x", [2, 3])
        return (L.eye(2, 3, batch_shape=[2], dtype="int32"), L.diag(np.array([1, 2], "int64")),
                L.sign(np.array([-2.0, 0.0, 3.0], "float32")), L.reverse(x, 1), L.log1p(x),
                L.cumsum(x, axis=0, exclusive=True))
    xv = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], "float32")
    outs, (eye, diag, sign, rev, log1p, cum) = run(build, {"x": xv})
    assert eye.dtype == np.int32 and eye.tolist() == [[[1, 0, 0], [0, 1, 0]]] * 2 and outs[0].shape == (2, 2, 3)
    assert diag.dtype == np.int64 and diag.tolist() == [[1, 0], [0, 2]]
    assert sign.tolist() == [-1.0, 0.0, 1.0]
    np.testing.assert_array_equal(rev, xv[:, ::-1])
    np.testing.assert_allclose(log1p, np.log1p(xv), rtol=1e-6)
    np.testing.assert_array_equal(cum, [[0, 0, 0], [0, 1, 2]])


def test_eye_checks_its_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="num_rows should be a non-negative int"):
            L.eye(-1)
        with pytest.raises(TypeError, match="batch_shape should be a list"):
            L.eye(2, batch_shape=2)


def test_nd_indexing_layers_train():
    def build():
        x = fluid.data("x", [2, 3])
        x.stop_gradient = False
        idx = fluid.data("i", [2, 2], dtype="int64")
        g = L.gather_nd(x, idx)
        s = L.scatter_nd_add(x, idx, g * 10.0)
        e = L.expand_as(L.reshape(x, [2, 3, 1]), fluid.data("t", [2, 3, 2]))
        loss = L.reduce_sum(g) + L.reduce_sum(e)
        (dx,) = fluid.gradients([loss], [x])
        return g, s, e, dx
    xv = np.arange(6, dtype="float32").reshape(2, 3)
    outs, (g, s, e, dx) = run(build, {"x": xv, "i": np.array([[1, 2], [1, 2]], "int64"), "t": np.zeros((2, 3, 2),
                                                                                                     "float32")})
    assert g.tolist() == [5.0, 5.0] and outs[0].shape == (2,)
    expected = xv.copy()
    expected[1, 2] += 100.0  # both updates land on [1, 2]
    np.testing.assert_array_equal(s, expected)
    np.testing.assert_array_equal(e, np.repeat(xv[:, :, None], 2, axis=2))
    want = np.full((2, 3), 2.0, "float32")  # expand_as: each element twice; gather_nd: [1, 2] twice
    want[1, 2] += 2.0
    np.testing.assert_array_equal(dx, want)


def test_integer_division_layers():
    def build():
        x, y = fluid.data("x", [4], dtype="int32"), fluid.data("y", [4], dtype="int32")
        return L.elementwise_floordiv(x, y), L.elementwise_mod(x, y)
    _, (q, r) = run(build, {"x": np.array([9, -9, 9, -9], "int32"), "y": np.array([4, 4, -4, -4], "int32")})
    assert q.dtype == np.int32 and q.tolist() == [2, -2, -2, 2] and r.tolist() == [1, -1, 1, -1]
    with pytest.raises(ZeroDivisionError, match="elementwise_floordiv: Y holds a zero divisor"):
        run(build, {"x": np.ones(4, "int32"), "y": np.array([1, 0, 1, 1], "int32")})


@pytest.mark.parametrize("build, error, message", [
    (lambda: L.sum(3), TypeError, "The type of 'x' in sum must be \\(Variable, tuple, list\\), but received int"),
    (lambda: L.mul(fluid.data("i", [2, 2], dtype="int64"), fluid.data("f", [2, 2])), TypeError,
     "The data type of 'x' in mul must be \\['float16', 'float32', 'float64'\\], but received int64"),
    (lambda: L.scatter_nd_add(fluid.data("f", [2, 2]), fluid.data("i", [1, 1], dtype="int64"),
                              fluid.data("d", [1, 2], dtype="float64")), ValueError,
     "ref and updates must have same data type"),
    (lambda: L.scatter_nd_add(fluid.data("f", [2, 2]), fluid.data("i", [3, 1], dtype="int64"),
                              fluid.data("u", [1, 2])), ValueError,
     "Updates must have shape Index.shape\\[:-1\\] \\+ X.shape\\[Index.shape\\[-1\\]:\\] = \\[3, 2\\], got \\[1, 2\\]"),
    (lambda: L.gather_nd(fluid.data("f", [2, 2]), fluid.data("i", [1, 3], dtype="int64")), ValueError,
     "the last dimension of Index \\(3\\) must be at most the rank of X \\(2\\)"),
    (lambda: L.gather_nd(fluid.data("f", [2, 2]), fluid.data("i", [1, 1])), TypeError,
     "The data type of 'index' in gather_nd must be \\['int32', 'int64'\\], but received float32"),
    (lambda: L.reverse(fluid.data("f", [2, 2]), [2]), ValueError,
     "reverse: every 'axis' must be in \\[-2, 2\\) for an input of rank 2, got \\[2\\]"),
    (lambda: L.expand_as(fluid.data("f", [2, 3]), fluid.data("t", [4, 4])), ValueError,
     "every dimension of target_tensor \\[4, 4\\] must be a multiple of X's \\[2, 3\\]"),
    (lambda: L.diag(fluid.data("f", [2, 2])), ValueError, "The input tensor's rank of DiagOp should be 1"),
    (lambda: L.range(0, 3, 1, "bool"), TypeError, "The data type of 'create data type' in range must be"),
    (lambda: L.create_parameter([2, 2.5], "float32"), TypeError,
     "The type of 'item of shape' in create_parameter must be \\('int', 'integer'\\), but received float"),
    (lambda: L.sign(fluid.data("i", [2], dtype="int32")), TypeError,
     "The data type of 'x' in sign must be \\['float16', 'float32', 'float64'\\], but received int32"),
])
def test_argument_errors_name_the_argument(build, error, message):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(error, match=message):
            build()


def test_gather_nd_out_of_range_index_is_an_error_not_a_wrap():
    with pytest.raises(IndexError, match="gather_nd: Index holds a position outside X's leading dimensions \\[2\\]"):
        run(lambda: [L.gather_nd(fluid.data("x", [2, 2]), fluid.data("i", [1, 1], dtype="int64"))],
            {"x": np.zeros((2, 2), "float32"), "i": np.array([[2]], "int64")})


def test_full_linspace_scatter_nd_roll_triangles():
    def build():
        x = fluid.data("x", [2, 3])
        idx = fluid.data("i", [3, 1], dtype="int64")
        return (L.full([2, 2], 1.5, dtype="float64"), L.full_like(x, 7, dtype="int32"), L.linspace(0, 1, 3, "float32"),
                L.scatter_nd(idx, L.reshape(L.reduce_sum(x, dim=0), [3]), [4]), L.roll(x, 1), L.roll(x, [-1], [1]),
                L.flip(x, [0]), L.tril(x), L.triu(x, 1))
    xv = np.arange(6, dtype="float32").reshape(2, 3)
    feed = {"x": xv, "i": np.array([[3], [0], [3]], "int64")}
    outs, (full, like, lin, snd, rolled, rolled1, flipped, low, up) = run(build, feed)
    assert full.dtype == np.float64 and full.tolist() == [[1.5, 1.5]] * 2 and outs[0].stop_gradient
    assert like.dtype == np.int32 and like.tolist() == [[7] * 3] * 2
    assert lin.dtype == np.float32 and lin.tolist() == [0.0, 0.5, 1.0]
    assert snd.tolist() == [5.0, 0.0, 0.0, 3.0 + 7.0]  # column sums 3, 5, 7 at 3, 0, 3
    assert rolled.tolist() == [[5, 0, 1], [2, 3, 4]] and rolled1.tolist() == [[1, 2, 0], [4, 5, 3]]
    assert flipped.tolist() == [[3, 4, 5], [0, 1, 2]]
    assert low.tolist() == [[0, 0, 0], [3, 4, 0]] and up.tolist() == [[0, 1, 2], [0, 0, 5]]


def test_overflow_checks_erf_logsumexp_mse_loss():
    def build():
        x, y = fluid.data("x", [2, 3]), fluid.data("y", [2, 3])
        return (L.has_inf(x), L.has_nan(x), L.isfinite(x), L.erf(y), L.logsumexp(y, dim=1), L.mse_loss(y, y * 0.0))
    xv = np.array([[1.0, np.inf, 0.0], [np.nan, 2.0, 3.0]], "float32")
    yv = np.array([[0.5, 1.0, -2.0], [0.0, 0.25, 3.0]], "float32")
    outs, (inf, nan, finite, erf, lse, mse) = run(build, {"x": xv, "y": yv})
    assert inf.dtype == np.float32 and inf.tolist() == [1.0] and nan.tolist() == [1.0]
    assert finite.dtype == bool and finite.tolist() == [False] and outs[2].shape == (1,)
    np.testing.assert_allclose(erf, [[0.5204998778, 0.8427007929, -0.9953222650], [0.0, 0.2763263902, 0.9999779095]],
                               atol=2e-7)
    np.testing.assert_allclose(lse, np.log(np.exp(yv).sum(axis=1)), rtol=1e-6)
    np.testing.assert_allclose(mse, [np.mean(yv * yv)], rtol=1e-6)


def test_linspace_and_triangle_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="The data type of 'dtype' in linspace must be \\['float32', 'float64'\\]"):
            L.linspace(0, 1, 3, "int32")
        with pytest.raises(ValueError, match="input shape in tril must be at least 2-D"):
            L.tril(fluid.data("v", [3]))
        with pytest.raises(TypeError, match="diagonal in triu must be a python Int"):
            L.triu(fluid.data("m", [3, 3]), 1.5)
        with pytest.raises(ValueError, match="flip: len\\(dims\\) must be greater than 0"):
            L.flip(fluid.data("f", [3, 3]), [])
    with pytest.raises(ValueError, match="The num of linspace op should be larger than 0, but received num is 0"):
        run(lambda: [L.linspace(0.0, 1.0, 0, "float32")])


def test_selection_and_matrix_layers():
    def build():
        x = fluid.data("x", [2, 3])
        b = fluid.data("b", [2, 3, 4])
        idx = fluid.data("i", [2], dtype="int64")
        return (L.elementwise_equal(x, x * 0.0), L.bmm(b, L.transpose(b, [0, 2, 1])), L.dot(x, x), L.t(x),
                L.nonzero(x, as_tuple=True)[1], L.index_select(x, idx, dim=1),
                L.index_sample(x, L.reshape(idx, [2, 1])),
                *L.unique_with_counts(L.reshape(L.cast(x, "int64"), [6]), "int64"))
    xv = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 2.0]], "float32")
    bv = np.arange(24, dtype="float32").reshape(2, 3, 4)
    outs, (eq, bmm, dot, tr, cols, sel, sample, uniq, index, count) = run(
        build, {"x": xv, "b": bv, "i": np.array([2, 0], "int64")})
    assert eq.dtype == bool and eq.tolist() == [[True, False, False], [False, True, False]]
    np.testing.assert_array_equal(bmm, bv @ bv.transpose(0, 2, 1))
    assert dot.tolist() == [[5.0], [13.0]] and outs[2].shape == (2, 1)
    np.testing.assert_array_equal(tr, xv.T)
    assert cols.tolist() == [[1], [2], [0], [2]]  # column of each non-zero, row by row
    assert sel.tolist() == [[2.0, 0.0], [2.0, 3.0]] and sample.tolist() == [[2.0], [3.0]]
    assert uniq.tolist() == [0, 1, 2, 3] and index.tolist() == [0, 1, 2, 3, 0, 2] and count.tolist() == [2, 1, 2, 1]
    assert index.dtype == np.int64


def test_random_batch_size_like_follows_the_batch_and_the_seed():
    def build():
        x = fluid.data("x", [None, 3])
        return (L.uniform_random_batch_size_like(x, [-1, 2], min=2.0, max=3.0),
                L.gaussian_random_batch_size_like(x, [4, -1], output_dim_idx=1, mean=5.0, std=0.0, seed=7,
                                                  dtype="float64"),
                L.uniform_random_batch_size_like(x, [-1, 2], seed=3),
                L.uniform_random_batch_size_like(x, [-1, 2], seed=3))
    outs, (u, g, s1, s2) = run(build, {"x": np.zeros((5, 3), "float32")})
    assert u.shape == (5, 2) and u.dtype == np.float32 and ((u >= 2.0) & (u < 3.0)).all() and len(set(u.ravel())) > 1
    assert g.shape == (4, 5) and g.dtype == np.float64 and (g == 5.0).all()
    np.testing.assert_array_equal(s1, s2)  # one seed, one draw
    assert outs[0].shape == (-1, 2) and outs[1].shape == (4, -1)


def test_selection_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match="Input\\(X\\) of BmmOp must be 3-dimensional"):
            L.bmm(fluid.data("a", [2, 3]), fluid.data("b", [2, 3, 4]))
        with pytest.raises(ValueError, match="Input\\(input\\) only support N-D \\(N<=2\\) tensor"):
            L.t(fluid.data("c", [2, 3, 4]))
        with pytest.raises(ValueError, match="dot: X and Y must be 1-D or 2-D tensors of one shape"):
            L.dot(fluid.data("d", [2, 3]), fluid.data("e", [2, 4]))
        with pytest.raises(ValueError, match="index_sample: X and Index must have the same number of rows, got 2, 3"):
            L.index_sample(fluid.data("f", [2, 3]), fluid.data("g", [3, 1], dtype="int64"))
        with pytest.raises(TypeError, match="Op unique, index dtype must be int32 or int64"):
            L.unique(fluid.data("h", [3]), "float32")
        with pytest.raises(ValueError, match="size of dim must be 1"):
            L.unique_with_counts(fluid.data("k", [3, 2]))
        with pytest.raises(ValueError, match="input_dim_idx \\(2\\) must be in \\[0, 2\\)"):
            L.uniform_random_batch_size_like(fluid.data("m", [3, 2]), [-1], input_dim_idx=2)


def test_strided_slice_meshgrid_linalg_layers():
    def build():
        x = fluid.data("x", [3, 4])
        x.stop_gradient = False
        stops = L.assign(np.array([0], "int32"))
        sliced = L.strided_slice(x, [0, 1], [0, -1], [3, 0], [2, -1])
        by_tensor = L.strided_slice(x, [1], [3], stops, L.assign(np.array([-2], "int32")))
        gx, gy = L.meshgrid([L.assign(np.array([1.0, 2.0], "float32")), L.assign(np.array([3.0, 4.0, 5.0],
                                                                                          "float32"))])
        (dx,) = fluid.gradients([L.reduce_sum(sliced)], [x])
        return (sliced, by_tensor, gx, gy, dx, L.trace(x, offset=1), L.kron(x, L.ones([1, 2], "float32")),
                L.allclose(x, x + 1e-9), L.shard_index(L.assign(np.array([[3], [9]], "int64")), 10, 2, 1),
                L.multiplex([x, x * 10.0], L.assign(np.array([[1], [0], [1]], "int32"))))
    xv = np.arange(12, dtype="float32").reshape(3, 4)
    outs, (sliced, by_tensor, gx, gy, dx, tr, kr, close, shard, mux) = run(build, {"x": xv})
    np.testing.assert_array_equal(sliced, xv[0:3:2, -1:0:-1])
    assert outs[0].shape == (2, 3) and outs[1].shape == (3, -1)
    np.testing.assert_array_equal(by_tensor, xv[:, 3:0:-2])
    assert gx.tolist() == [[1.0] * 3, [2.0] * 3] and gy.tolist() == [[3.0, 4.0, 5.0]] * 2
    want = np.zeros_like(xv)
    want[0:3:2, -1:0:-1] = 1.0
    np.testing.assert_array_equal(dx, want)
    assert tr.tolist() == [1.0 + 6.0 + 11.0]
    np.testing.assert_array_equal(kr, np.repeat(xv, 2, axis=1))
    assert close.tolist() == [True] and shard.tolist() == [[-1], [4]]
    np.testing.assert_array_equal(mux, [xv[0] * 10, xv[1], xv[2] * 10])


def test_random_layers():
    def build():
        return (L.randint(3, shape=[50]), L.randint(-2, 2, shape=[2, 3], dtype="int32", seed=5), L.randn([4, 2]),
                L.randperm(6), L.randperm(6, seed=9), L.randperm(6, seed=9))
    outs, (a, b, n, p, p1, p2) = run(build)
    assert a.dtype == np.int64 and a.shape == (50,) and set(a.tolist()) == {0, 1, 2}
    assert b.dtype == np.int32 and b.shape == (2, 3) and b.min() >= -2 and b.max() < 2
    assert n.dtype == np.float32 and n.shape == (4, 2) and len(set(n.ravel())) == 8
    assert sorted(p.tolist()) == list(range(6)) and p1.tolist() == p2.tolist() and outs[3].stop_gradient
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match="randint's low must less then high, but received low = 3, high = 3"):
            L.randint(3, 3)
        with pytest.raises(AssertionError, match=r"The size of argument\(shape\) can't be zero"):
            L.randn([])
        with pytest.raises(ValueError, match=r"randn: 'shape' must be a list of positive ints, got \[2, 0\]"):
            L.randn([2, 0])
        with pytest.raises(ValueError, match="The input n should be greater than 0 in randperm op"):
            L.randperm(0)
        with pytest.raises(ValueError, match="The shard_id\\(2\\) should be in \\[0, 2\\)"):
            L.shard_index(fluid.data("i", [2, 1], dtype="int64"), 10, 2, 2)
        with pytest.raises(TypeError, match="The data type of 'starts\\[0\\]' in strided_slice must be"):
            L.strided_slice(fluid.data("s", [3]), [0], [fluid.data("v", [1], dtype="int64")], [2], [1])
        with pytest.raises(ValueError, match="inputs should be a list object with at least 2 elements"):
            L.multiplex([fluid.data("m", [2, 2])], fluid.data("k", [2, 1], dtype="int32"))


def test_clamp_addmm_addcmul_dist_cross_diag_embed_sampling_id():
    def build():
        x = fluid.data("x", [2, 3])
        lo = L.fill_constant([1], "float32", 1.5)
        v = fluid.data("v", [2, 3])
        return (L.clamp(x, max=2.0), L.clamp(x, min=lo, max=4.0),
                L.addmm(L.fill_constant([2, 2], "float32", 1.0), x, L.t(x), alpha=2.0, beta=0.5),
                L.addcmul(x, x, x, value=0.5), L.dist(x, v, p=1), L.cross(x, v, dim=1), L.diag_embed(x),
                L.sampling_id(L.softmax(x * 100.0)), L.acos(x * 0.1), L.asin(x * 0.1))
    xv = np.arange(6, dtype="float32").reshape(2, 3)
    vv = np.ones((2, 3), "float32")
    outs, (cmax, cboth, mm, cmul, dist, cross, emb, ids, acos, asin) = run(build, {"x": xv, "v": vv})
    np.testing.assert_array_equal(cmax, np.minimum(xv, 2.0))  # no lower bound: negatives would stay
    np.testing.assert_array_equal(cboth, np.clip(xv, 1.5, 4.0))
    np.testing.assert_allclose(mm, 0.5 + 2.0 * xv @ xv.T)
    np.testing.assert_allclose(cmul, xv + 0.5 * xv * xv)
    assert dist.tolist() == [np.abs(xv - vv).sum()]
    np.testing.assert_allclose(cross, np.cross(xv, vv, axis=1))
    assert emb.shape == (2, 3, 3) and emb[1].tolist() == np.diag(xv[1]).tolist() and outs[6].stop_gradient
    assert ids.dtype == np.int64 and ids.tolist() == [2, 2]  # rows peaked on their last id
    np.testing.assert_allclose(acos, np.arccos(xv * 0.1), rtol=1e-6)
    np.testing.assert_allclose(asin, np.arcsin(xv * 0.1), rtol=1e-6, atol=1e-7)


def test_clamp_keeps_negatives_without_a_lower_bound():
    _, (out,) = run(lambda: [L.clamp(fluid.data("x", [3]), max=1.0)], {"x": np.array([-5.0, 0.5, 3.0], "float32")})
    assert out.tolist() == [-5.0, 0.5, 1.0]


def test_small_math_argument_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [2, 3])
        with pytest.raises(ValueError, match="either min or max should be defined"):
            L.clamp(x)
        with pytest.raises(TypeError, match="The type of 'value' in addcmul must be float, but received int"):
            L.addcmul(x, x, x, value=1)
        with pytest.raises(ValueError, match="cross: dimension 0 of X \\(shape \\[2, 3\\]\\) must exist and have size"):
            L.cross(x, x, dim=0)
        with pytest.raises(ValueError, match="addmm: the input tensor x.s dimension must be 2"):
            L.addmm(x, fluid.data("a", [2, 3, 1]), x)


def test_ranking_losses_train_and_dice_loss():
    def build():
        left, right = fluid.data("l", [3, 1]), fluid.data("r", [3, 1])
        left.stop_gradient = False
        label = fluid.data("y", [3, 1])
        probs = fluid.data("p", [2, 3])
        ids = fluid.data("i", [2, 1], dtype="int64")
        rank = L.rank_loss(label, left, right)
        (dleft,) = fluid.gradients([L.reduce_sum(rank)], [left])
        return (rank, dleft, L.margin_rank_loss(label, left, right, margin=0.5), L.bpr_loss(probs, ids),
                L.kldiv_loss(L.log(probs), probs, "batchmean"), L.dice_loss(probs, ids))
    lv, rv, yv = (np.array([[1.0], [0.0], [2.0]], "float32"), np.array([[0.0], [0.0], [3.0]], "float32"),
                  np.array([[1.0], [0.0], [1.0]], "float32"))
    pv, iv = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], "float32"), np.array([[2], [0]], "int64")
    _, (rank, dleft, margin, bpr, kl, dice) = run(build, {"l": lv, "r": rv, "y": yv, "p": pv, "i": iv})
    d = lv - rv
    np.testing.assert_allclose(rank, np.log1p(np.exp(d)) - yv * d, rtol=1e-6)
    np.testing.assert_allclose(dleft, 1 / (1 + np.exp(-d)) - yv, rtol=1e-6)
    np.testing.assert_allclose(margin, np.maximum(0, -yv * d + 0.5), rtol=1e-6)
    want_bpr = [[np.mean(np.log1p(np.exp(pv[0, :2] - pv[0, 2])))], [np.mean(np.log1p(np.exp(pv[1, 1:] - pv[1, 0])))]]
    np.testing.assert_allclose(bpr, want_bpr, rtol=1e-6)
    assert abs(float(kl[0])) < 1e-7  # KL of a distribution with itself
    onehot = np.eye(3)[iv[:, 0]]
    want_dice = np.mean(1 - 2 * (pv * onehot).sum(1) / (pv.sum(1) + onehot.sum(1) + 1e-5))
    np.testing.assert_allclose(dice, [want_dice], rtol=1e-6)


def test_kldiv_loss_checks_the_reduction():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match="'reduction' must be one of \\['none', 'batchmean', 'mean', 'sum'\\]"):
            L.kldiv_loss(fluid.data("x", [2, 3]), fluid.data("t", [2, 3]), "avg")


def test_cross_entropy_with_a_label_without_its_class_axis_has_the_labels_shape():
    probs = np.array([[[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]], "float32")
    label = np.array([[1, 0, 1]], "int64")
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        p = fluid.data("p", [None, 3, 2], "float32")
        p.stop_gradient = False
        loss = fluid.layers.cross_entropy(p, fluid.data("label", [None, 3], "int64"))
        kept = fluid.layers.cross_entropy(p, fluid.data("label3", [None, 3, 1], "int64"))
        assert loss.shape == (-1, 3) and kept.shape == (-1, 3, 1)  # fluid: Y takes the label's shape
        grad, = fluid.gradients(fluid.layers.reduce_sum(loss * fluid.layers.fill_constant([1, 3], "float32", 2.0)), p)
    got, got3, g = fluid.Executor().run(main, feed={"p": probs, "label": label, "label3": label[..., None]},
                                        fetch_list=[loss, kept, grad], scope=fluid.Scope())
    want = -np.log([[0.8, 0.6, 0.5]])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(got3, want[..., None], rtol=1e-6)
    np.testing.assert_allclose(g, [[[0, -2 / 0.8], [-2 / 0.6, 0], [0, -2 / 0.5]]], rtol=1e-5)


def test_bpr_loss_takes_rows_from_all_but_the_last_dimension():
    """fluid flattens X [..., D] to rows (Label [..., 1]); Y is [..., 1], and so is the gradient's layout."""
    rng = np.random.RandomState(5)
    pv, iv = rng.rand(2, 3, 4).astype("float32"), rng.randint(0, 4, (2, 3, 1)).astype("int64")

    def build(shape):
        def net():
            probs = fluid.data("p", shape)
            probs.stop_gradient = False
            loss = L.bpr_loss(probs, fluid.data("i", shape[:-1] + [1], dtype="int64"))
            return loss, fluid.gradients([L.reduce_sum(loss)], [probs])[0]
        return net
    _, (loss3, grad3) = run(build([2, 3, 4]), {"p": pv, "i": iv})
    _, (loss2, grad2) = run(build([6, 4]), {"p": pv.reshape(6, 4), "i": iv.reshape(6, 1)})
    assert loss3.shape == (2, 3, 1) and grad3.shape == (2, 3, 4)
    np.testing.assert_allclose(loss3.reshape(6, 1), loss2, rtol=1e-6)
    np.testing.assert_allclose(grad3.reshape(6, 4), grad2, rtol=1e-6)


def test_scale_by_a_variable_is_read_at_run_time():
    xv = np.arange(6, dtype="float32").reshape(2, 3)

    def build():
        x, s = fluid.data("x", [2, 3]), fluid.data("s", [1])
        x.stop_gradient = False
        out = L.scale(x, scale=s, bias=1.0)
        return out, fluid.gradients([L.reduce_sum(out)], [x])[0]
    (out_var, _), (out, dx) = run(build, {"x": xv, "s": np.array([2.5], "float32")})
    op = [op for op in out_var.block.ops if op.type == "scale"][0]
    assert op.input("ScaleTensor") == ["s"] and op.attr("scale") == 1.0
    np.testing.assert_allclose(out, xv * 2.5 + 1.0)
    np.testing.assert_allclose(dx, np.full((2, 3), 2.5))
