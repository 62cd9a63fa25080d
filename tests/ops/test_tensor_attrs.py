"""Attributes given as Variables (fluid's *Tensor / *TensorList inputs, read by the kernel at run time, -1 at
build time where the value decides a dimension) and fluid's v1 relayout ops and unbind."""
import numpy as np
import pytest

import minifluid as fluid

from .program_run import run

L = fluid.layers


def op_run(op_type, inputs, outputs, attrs, fetch):
    """One op of ``op_type`` over fed numpy ``inputs`` (slot -> array or list of (name, array))."""
    main = fluid.Program()
    feed, slots = {}, {}
    with fluid.program_guard(main, fluid.Program()):
        block = main.global_block()
        for slot, value in inputs.items():
            pairs = value if isinstance(value, list) else [(slot, value)]
            slots[slot] = [block.create_var(name=n, shape=a.shape, dtype=str(a.dtype)) for n, a in pairs]
            feed.update(dict(pairs))
        outs = {slot: [block.create_var(name=n) for n in names] for slot, names in outputs.items()}
        block.append_op(type=op_type, inputs=slots, outputs=outs, attrs=attrs)
    return fluid.Executor().run(main, feed=feed, fetch_list=fetch), outs


def test_unsqueeze_axes_from_variables():
    x = np.arange(6, dtype="float32").reshape(2, 3)

    def build():
        v = fluid.data("x", [2, 3])
        one = L.fill_constant([1], "int64", 1)
        whole = L.unsqueeze(v, axes=fluid.data("axes", [2], "int32"))
        mixed = L.unsqueeze(v, axes=[0, one])
        return whole, mixed
    outs, (whole, mixed) = run(build, {"x": x, "axes": np.array([0, 3], "int32")})
    assert whole.shape == (1, 2, 3, 1) and mixed.shape == (1, 1, 2, 3)
    np.testing.assert_array_equal(whole.reshape(2, 3), x)
    assert outs[0].shape == (-1, -1, -1, -1) and outs[1].shape == (-1, -1, -1, -1)


def test_unsqueeze_axes_tensor_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [2, 3])
        x.stop_gradient = False
        out = L.unsqueeze(x, axes=fluid.data("axes", [1], "int32"))
        (dx,) = fluid.gradients(L.reduce_sum(out * 2.0), [x])
    (g,) = fluid.Executor().run(main, feed={"x": np.ones((2, 3), "float32"), "axes": np.array([1], "int32")},
                                fetch_list=[dx])
    np.testing.assert_array_equal(g, np.full((2, 3), 2.0))


def test_unsqueeze_refuses_a_bad_axes_type():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="'axes' in unsqueeze must be int, list, tuple or Variable"):
            L.unsqueeze(fluid.data("x", [2]), axes=1.5)


@pytest.mark.parametrize("op_type, attrs, shape", [
    ("squeeze", {"axes": [0, 2]}, (3, 4)), ("unsqueeze", {"axes": [0, -1]}, (1, 1, 3, 1, 4, 1)),
    ("flatten", {"axis": 2}, (3, 4))])
def test_v1_relayout_ops(op_type, attrs, shape):
    x = np.random.RandomState(0).rand(1, 3, 1, 4).astype("float32")
    (out,), outs = op_run(op_type, {"X": x}, {"Out": ["out"]}, attrs, ["out"])
    assert out.shape == shape
    np.testing.assert_array_equal(out.reshape(-1), x.reshape(-1))
    assert outs["Out"][0].shape == shape


def test_unbind_op_and_its_gradient():
    x = np.arange(12, dtype="float64").reshape(3, 2, 2)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = fluid.data("x", [3, 2, 2], "float64")
        v.stop_gradient = False
        block = main.global_block()
        outs = [block.create_var(name=f"o{i}", dtype="float64") for i in range(2)]
        block.append_op(type="unbind", inputs={"X": [v]}, outputs={"Out": outs}, attrs={"axis": -2})
        (dx,) = fluid.gradients(L.reduce_sum(outs[0]) + 3.0 * L.reduce_sum(outs[1]), [v])
    o0, o1, g = fluid.Executor().run(main, feed={"x": x}, fetch_list=outs + [dx])
    assert outs[0].shape == (3, 2)
    np.testing.assert_array_equal(o0, x[:, 0]) and np.testing.assert_array_equal(o1, x[:, 1])
    np.testing.assert_array_equal(g[:, 0], np.ones((3, 2))) and np.testing.assert_array_equal(g[:, 1], np.full((3, 2), 3))


def test_op_attrs_none_keeps_default_and_dtype_codes_are_names():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        out = main.global_block().create_var(name="perm")
        op = main.global_block().append_op(type="randperm", outputs={"Out": [out]},
                                           attrs={"n": 5, "dtype": 2, "seed": None, "device": "cpu"})
    assert op.attr("dtype") == "int32" and op.attr("seed") == 0
    (perm,) = fluid.Executor().run(main, fetch_list=[out])
    assert perm.dtype == np.int32 and sorted(perm.tolist()) == list(range(5))


def test_randperm_layer_device_and_out_checks():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        perm = L.randperm(4, dtype="int32", device="cpu")
        with pytest.raises(TypeError):
            L.randperm(4, out=np.arange(4))
    assert main.global_block().ops[0].attr("op_device") == "cpu"
    (value,) = fluid.Executor().run(main, fetch_list=[perm])
    assert sorted(value.tolist()) == [0, 1, 2, 3]


def test_slice_bounds_from_variables():
    x = np.arange(60, dtype="float32").reshape(3, 4, 5)

    def build():
        v = fluid.data("x", [3, 4, 5])
        one = L.fill_constant([1], "int32", 1)
        whole = L.slice(v, axes=[1, 2], starts=fluid.data("s", [2], "int32"), ends=[3, 100])
        mixed = L.slice(v, axes=[0, 2], starts=[one, 0], ends=[3, -1])
        return whole, mixed, v[one, :, one:4], v[L.fill_constant([1], "int32", -1)]
    outs, (whole, mixed, item, last) = run(build, {"x": x, "s": np.array([2, 1], "int32")})
    np.testing.assert_array_equal(whole, x[:, 2:3, 1:])
    np.testing.assert_array_equal(mixed, x[1:3, :, 0:-1])
    np.testing.assert_array_equal(item, x[1, :, 1:4]) and np.testing.assert_array_equal(last, x[-1])
    assert outs[0].shape == (3, -1, -1) and outs[1].shape == (-1, 4, 4) and outs[2].shape == (4, -1)


def test_slice_gradient_with_tensor_bounds():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = fluid.data("x", [2, 4])
        v.stop_gradient = False
        out = L.slice(v, axes=[1], starts=[L.fill_constant([1], "int64", 1)], ends=[3])
        (dx,) = fluid.gradients(L.reduce_sum(out), [v])
    (g,) = fluid.Executor().run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[dx])
    np.testing.assert_array_equal(g, [[0, 1, 1, 0]] * 2)


def test_strided_slice_bounds_from_variables_and_decrease():
    x = np.arange(24, dtype="float32").reshape(4, 6)

    def build():
        v = fluid.data("x", [4, 6])
        two = L.fill_constant([1], "int32", 2)
        listed = L.strided_slice(v, axes=[0, 1], starts=[0, two], ends=[4, 6], strides=[2, two])
        whole = L.strided_slice(v, axes=[1], starts=[5], ends=[0], strides=fluid.data("k", [1], "int32"))
        return listed, whole, v[two, ::two], v[::L.fill_constant([1], "int32", 3)]
    outs, (listed, whole, item, stepped) = run(build, {"x": x, "k": np.array([-2], "int32")})
    np.testing.assert_array_equal(listed, x[0:4:2, 2:6:2])
    np.testing.assert_array_equal(whole, x[:, 5:0:-2])
    np.testing.assert_array_equal(item, x[2, ::2]) and np.testing.assert_array_equal(stepped, x[::3])
    assert outs[0].shape == (2, -1) and outs[1].shape == (4, -1) and outs[2].shape == (-1,)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="int32"):
            L.strided_slice(fluid.data("x", [4]), [0], [L.fill_constant([1], "int64", 1)], [3], [1])


def test_expand_times_from_variables_and_gradient():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = fluid.data("x", [2, 3])
        v.stop_gradient = False
        whole = L.expand(v, fluid.data("t", [2], "int32"))
        mixed = L.expand(v, [L.fill_constant([1], "int64", 3), 1])
        (dx,) = fluid.gradients(L.reduce_sum(whole) + L.reduce_sum(mixed), [v])
    assert whole.shape == (-1, -1) and mixed.shape == (-1, 3)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    w, m, g = fluid.Executor().run(main, feed={"x": x, "t": np.array([1, 2], "int32")}, fetch_list=[whole, mixed, dx])
    np.testing.assert_array_equal(w, np.tile(x, (1, 2))) and np.testing.assert_array_equal(m, np.tile(x, (3, 1)))
    np.testing.assert_array_equal(g, np.full((2, 3), 5.0))


def test_creation_shapes_and_value_from_variables():
    def build():
        two = L.fill_constant([1], "int64", 2)
        shape = fluid.data("shape", [2], "int32")
        return (L.fill_constant([two, 3], "int64", 7), L.fill_constant(shape, "float32", L.fill_constant([1], "float32",
                                                                                                         1.5)),
                L.uniform_random([two, 4]), L.gaussian_random(shape), L.fill_constant([2], "int64", 2 ** 40 + 1))
    outs, (filled, valued, uni, gauss, big) = run(build, {"shape": np.array([3, 1], "int32")})
    assert filled.tolist() == [[7] * 3] * 2 and valued.tolist() == [[1.5]] * 3
    assert uni.shape == (2, 4) and gauss.shape == (3, 1) and big.tolist() == [2 ** 40 + 1] * 2  # str_value: exact
    assert [o.shape for o in outs[:4]] == [(-1, 3), (-1, -1), (-1, 4), (-1, -1)]
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match="dtype must be any of"):
            L.fill_constant([1], "uint4", 1)
        with pytest.raises(AssertionError, match="can't be zero"):
            L.fill_constant([], "float32", 1)


def test_uniform_diagonal_init():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        w = L.create_parameter([4, 5], "float32", attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.Uniform(-0.5, 0.5, diag_num=3, diag_step=5, diag_val=9.0)))
    scope = fluid.Scope()
    fluid.Executor().run(startup, scope=scope)
    flat = np.array(scope.find_var(w.name).get_tensor()).reshape(-1)
    assert flat[[0, 6, 12]].tolist() == [9.0] * 3 and np.abs(np.delete(flat, [0, 6, 12])).max() <= 0.5
    with pytest.raises(ValueError, match="diag_num"):
        fluid.initializer.Uniform(diag_num=2)


def test_concat_axis_variable_gradient_and_tensor_array():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        a, b = fluid.data("a", [2, 1]), fluid.data("b", [2, 3])
        a.stop_gradient = False
        joined = L.concat([a, b], axis=L.fill_constant([1], "int64", 1))
        (da,) = fluid.gradients(L.reduce_sum(joined * 2.0), [a])
        array = L.create_array("float32")
        for i in range(3):
            L.array_write(b, L.fill_constant([1], "int64", i), array)
        with pytest.warns(UserWarning, match="input in concat should be list"):
            stacked = L.concat(array, axis=0)
        with pytest.raises(TypeError, match="concat"):
            L.concat([fluid.data("u", [2], "uint8")])
        with pytest.raises(TypeError, match="axis"):
            L.concat([a, b], 1.5)
    assert joined.shape == (-1, -1)
    av, bv = np.ones((2, 1), "float32"), np.arange(6, dtype="float32").reshape(2, 3)
    j, g, s = fluid.Executor().run(main, feed={"a": av, "b": bv}, fetch_list=[joined, da, stacked])
    np.testing.assert_array_equal(j, np.concatenate([av, bv], 1)) and np.testing.assert_array_equal(g, 2 * av)
    np.testing.assert_array_equal(s, np.concatenate([bv] * 3, 0))


def test_list_attributes_refuse_floats():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [4, 6])
        with pytest.raises(TypeError, match=r"'starts\[0\]' in slice must be int or Variable, but received float"):
            x[:, 1.5:]
        with pytest.raises(TypeError, match=r"'shape\[0\]' in fill_constant must be int or Variable"):
            L.fill_constant([2.0, 3], "float32", 1.0)


def test_reshape_shape_from_variables_and_fluid_checks():
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)

    def build():
        v = fluid.data("x", [2, 3, 4])
        listed = L.reshape(v, [0, L.fill_constant([1], "int64", 4), -1])
        whole = L.reshape(v, fluid.data("s", [1, 2], "int32"))
        return listed, whole
    outs, (listed, whole) = run(build, {"x": x, "s": np.array([[6, 4]], "int32")})
    np.testing.assert_array_equal(listed, x.reshape(2, 4, 3)) and np.testing.assert_array_equal(whole, x.reshape(6, 4))
    assert outs[0].shape == (2, -1, -1) and outs[1].shape == (-1, -1)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        v = fluid.data("x", [2, 3])
        for bad in ([-1, -1], [0, 0, 0], [2, -3]):
            with pytest.raises(AssertionError):
                L.reshape(v, bad)
        with pytest.raises(TypeError):
            L.reshape(fluid.data("b", [2, 3], "bool"), [6])


def test_split_axis_and_sections_from_variables():
    x = np.arange(24, dtype="float32").reshape(2, 6, 2)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        v = fluid.data("x", [2, 6, 2])
        v.stop_gradient = False
        one = L.fill_constant([1], "int64", 1)
        a, b, c = L.split(v, [L.fill_constant([1], "int64", 2), 1, -1], dim=one)
        d, e = L.split(v, 2, dim=one)
        (dx,) = fluid.gradients(L.reduce_sum(c) + L.reduce_sum(e) * 2.0, [v])
        with pytest.raises(TypeError, match="'dim' in split must be int or Variable"):
            L.split(v, 2, dim=1.5)
    assert a.shape == (-1, -1, -1) and d.shape == (-1, -1, -1)
    ra, rb, rc, re_, g = fluid.Executor().run(main, feed={"x": x}, fetch_list=[a, b, c, e, dx])
    np.testing.assert_array_equal(ra, x[:, :2]) and np.testing.assert_array_equal(rc, x[:, 3:])
    np.testing.assert_array_equal(re_, x[:, 3:])
    np.testing.assert_array_equal(g[:, :3], 0 * x[:, :3]) and np.testing.assert_array_equal(g[:, 3:], 3 + 0 * x[:, 3:])


def test_full_with_variable_shape_and_stack_of_a_tensor_array():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        filled = L.full([1, L.fill_constant([1], "int64", 3)], 2.5)
        array = L.create_array("float32")
        b = fluid.data("b", [2, 3])
        for i in range(2):
            L.array_write(b, L.fill_constant([1], "int64", i), array)
        stacked = L.stack(array, axis=1)
    assert filled.shape == (1, -1) and stacked.shape[1] == -1
    bv = np.arange(6, dtype="float32").reshape(2, 3)
    f, s = fluid.Executor().run(main, feed={"b": bv}, fetch_list=[filled, stacked])
    assert f.tolist() == [[2.5] * 3]
    np.testing.assert_array_equal(s, np.stack([bv, bv], axis=1))


def test_transpose_and_flatten_argument_checks():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [10, 5, 3])
        with pytest.raises(TypeError):
            L.transpose("not a variable", perm=[1, 0, 2])
        with pytest.raises(TypeError, match="perm"):
            L.transpose(x, perm="[1, 0, 2]")
        with pytest.raises(ValueError, match="length should be equal to dimensions of Input"):
            L.transpose(x, perm=[1, 0, 2, 3])
        with pytest.raises(ValueError, match="should be less than Input"):
            L.transpose(x, perm=[3, 5, 7])
        with pytest.raises(TypeError):
            L.flatten(np.zeros((3, 2)), axis=1)
        with pytest.raises(ValueError, match="The axis should be a int, and in range"):
            L.flatten(x, axis=4)
