"""fluid 1.8's math / compare / loss layers through a Program: shapes, values and the argument errors
(op kernels and gradients: tests/ops/test_op_gradients.py)."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.layers.helper import LayerHelper

from .program_run import run

L = fluid.layers


def test_matmul_of_two_vectors_is_a_one_element_tensor():
    x, y = np.arange(4.0, dtype="float32"), np.ones(4, "float32")
    (out,), (got,) = run(lambda: [L.matmul(fluid.data("x", [4], "float32"), fluid.data("y", [4], "float32"))],
                         {"x": x, "y": y})
    assert tuple(out.shape) == (1,) and np.asarray(got).tolist() == [6.0]


def test_matmul_shapes_with_unknown_dims_and_a_transposed_vector():
    def build():
        a = L.matmul(fluid.data("a", [-1, 3, 4], "float32"), fluid.data("b", [4, 5], "float32"))
        v = L.matmul(fluid.data("v", [3], "float32"), fluid.data("w", [1, 2], "float32"), transpose_x=True)
        return [a, v]
    (a, v), (ga, gv) = run(build, {"a": np.ones((2, 3, 4), "float32"), "b": np.ones((4, 5), "float32"),
                                   "v": np.arange(3, dtype="float32"), "w": np.ones((1, 2), "float32")})
    assert tuple(a.shape) == (-1, 3, 5) and ga.shape == (2, 3, 5)
    # a transposed vector X is a column [3, 1]
    assert tuple(v.shape) == (3, 2) and np.array_equal(gv, np.repeat(np.arange(3.0)[:, None], 2, 1))


def test_matmul_argument_errors():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="'x' in matmul must be Variable"):
            L.matmul(12, 12)
        i = fluid.data("i", [10, 10], "int32")
        with pytest.raises(TypeError, match="data type of 'x' in matmul"):
            L.matmul(i, i)
        with pytest.raises(ValueError, match="width should be equal"):
            L.matmul(fluid.data("p", [2, 3], "float32"), fluid.data("q", [4, 5], "float32"))
        with pytest.raises(ValueError, match="higher dimensions must be equal"):
            L.matmul(fluid.data("r", [2, 3, 4], "float32"), fluid.data("s", [3, 4, 5], "float32"))
        h = fluid.data("h", [2, 2], "float16")
        assert L.matmul(h, h).dtype == fluid.data("h2", [1], "float16").dtype


def test_dtype_attributes_may_be_fluid_type_codes():
    from minifluid.dtypes import convert_dtype
    assert convert_dtype(int(fluid.core.VarDesc.VarType.FP64)) == "float64"
    assert convert_dtype(np.int64(2)) == "int32"
    with pytest.raises(TypeError):
        convert_dtype(True)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    (out,), (got,) = run(lambda: [_cast(fluid.data("x", [2, 3]))],
                         {"x": x})
    assert got.dtype == np.float64 and np.array_equal(got, x)


def _cast(x):
    helper = LayerHelper("cast")
    out = helper.create_variable_for_type_inference("float64")
    helper.append_op(type="cast", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"in_dtype": int(fluid.core.VarDesc.VarType.FP32),
                            "out_dtype": int(fluid.core.VarDesc.VarType.FP64)})
    return out


def test_unknown_dtype_is_fluids_value_error_and_a_type_error():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [2, 3], "float32")
        for kind in (ValueError, TypeError):
            with pytest.raises(kind, match="dtype must be any of"):
                L.full_like(x, 2, dtype="uint4")
        with pytest.raises(TypeError, match="'x' in unique_with_counts must be Variable"):
            L.unique_with_counts([10])


def test_fill_any_like_refuses_a_value_its_dtype_cannot_hold():
    def build():
        helper = LayerHelper("fill_any_like")
        out = helper.create_variable_for_type_inference("int32")
        helper.append_op(type="fill_any_like", inputs={"X": [fluid.data("x", [2], "int32")]},
                         outputs={"Out": [out]}, attrs={"value": 1e100})
        return [out]
    for kind in (ValueError, fluid.core.EnforceNotMet):
        with pytest.raises(kind, match="out of the range of the output's dtype int32"):
            run(build, {"x": np.zeros(2, "int32")})


@pytest.mark.parametrize("layer, slot", [("less_than", "cond"), ("equal", "cond"), ("not_equal", "cond"),
                                         ("logical_and", "out"), ("logical_not", "out")])
def test_compare_and_logical_outputs_must_be_variables(layer, slot):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        dtype = "bool" if layer.startswith("logical") else "int32"
        x = fluid.data("x", [2], dtype)
        args = {"x": x} if layer == "logical_not" else {"x": x, "y": x}
        with pytest.raises(TypeError, match=f"'{slot}' in {layer} must be"):
            getattr(L, layer)(**args, **{slot: 1})
        given = fluid.data("given", [2], "bool")
        assert getattr(L, layer)(**args, **{slot: given}) is given


@pytest.mark.parametrize("layer", ["reduce_sum", "reduce_mean"])
def test_reduce_sum_and_mean_check_their_input(layer):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        tensor = fluid.create_lod_tensor(np.array([[-1.0]]), [[1]], fluid.CPUPlace())
        with pytest.raises(TypeError, match=f"'input' in {layer} must be Variable, but received LoDTensor"):
            getattr(L, layer)(tensor)
        with pytest.raises(TypeError, match=f"data type of 'input' in {layer}"):
            getattr(L, layer)(fluid.data("u", [4], "uint8"))


def test_fc_checks_its_inputs():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        array = np.ones((2, 4), "float32")
        with pytest.raises(TypeError, match="'input' in fc must be"):
            L.fc(input=array, size=1)
        with pytest.raises(TypeError, match=r"'input\[0\]' in fc must be"):
            L.fc(input=[array], size=1)
        with pytest.raises(TypeError, match="data type of 'input' in fc"):
            L.fc(input=fluid.data("i", [2, 4], "int32"), size=1)
        assert tuple(L.fc(input=fluid.data("h", [2, 4], "float16"), size=3).shape) == (2, 3)


def test_pow_takes_a_variable_factor_read_at_run_time():
    x = np.array([[1.0, 2.0, 3.0]], "float32")

    def build():
        factor = fluid.data("factor", [1], "float32")
        return [L.pow(fluid.data("x", [1, 3], "float32"), factor=factor)]
    for p in (2.0, 0.5):
        _, (got,) = run(build, {"x": x, "factor": np.array([p], "float32")})
        np.testing.assert_allclose(got, x ** p, rtol=1e-6)


@pytest.mark.parametrize("layer", ["tanh", "sigmoid", "square"])
def test_unary_layers_refuse_integer_input(layer):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match=f"data type of 'x' in {layer}"):
            getattr(L, layer)(fluid.data("i", [2, 3], "int32"))


def test_the_gradient_of_cast_is_a_cast_back():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [2, 3], "float32")
        x.stop_gradient = False
        loss = L.reduce_sum(L.cast(x, "float64"))
        fluid.backward.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    assert types.count("cast") == 2 and "cast_grad" not in types
    assert "cast_grad" not in fluid.core._get_all_register_op_kernels()
    back = [op for op in main.global_block().ops if op.type == "cast"][1]
    assert fluid.dtypes.convert_dtype(back.attr("out_dtype")) == "float32"
    (g,) = fluid.Executor().run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=["x@GRAD"])
    assert g.dtype == np.float32 and np.array_equal(g, np.ones((2, 3)))
    with fluid.dygraph.guard():
        v = fluid.dygraph.to_variable(np.ones((2, 3), "float32"))
        v.stop_gradient = False
        L.reduce_sum(L.cast(v, "float64")).backward()
        assert v.gradient().dtype == np.float32 and np.array_equal(v.gradient(), np.ones((2, 3)))


def test_cast_checks_its_input_and_dtype():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match="'x' in cast must be"):
            L.cast(fluid.create_lod_tensor(np.array([[-1]]), [[1]], fluid.CPUPlace()), "int32")
        with pytest.raises(TypeError, match="data type of 'x' in cast"):
            L.cast(fluid.data("s", [4], "int16"), "int32")
        with pytest.raises(TypeError, match="data type of 'dtype' in cast"):
            L.cast(fluid.data("i", [4], "int32"), "int16")


def test_erf_and_gelu_are_float64_exact_for_float64_input():
    import math
    x = np.concatenate([np.linspace(-6.0, 6.0, 241), [2.999999, 3.0, 3.000001, 1e-8]])
    with fluid.dygraph.guard():
        got = L.erf(fluid.dygraph.to_variable(x)).numpy()
        gelu = L.gelu(fluid.dygraph.to_variable(x)).numpy()
    exact = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(got, exact, rtol=5e-15, atol=1e-300)
    # 1 + erf cancels for negative x: compare gelu absolutely
    np.testing.assert_allclose(gelu, 0.5 * x * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x])),
                               rtol=0, atol=1e-14)


@pytest.mark.parametrize("layer, args, slot, dtypes", [
    ("elementwise_add", 2, "x", ("uint8",)), ("elementwise_mul", 2, "x", ("uint8",)),
    ("mean", 1, "x", ("int32",)), ("cross_entropy", 2, "input", ("int32",))])
def test_layers_refuse_tensors_and_dtypes_as_fluid(layer, args, slot, dtypes):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        tensor = fluid.create_lod_tensor(np.array([[-1.0]]), [[1]], fluid.CPUPlace())
        with pytest.raises(TypeError, match=f"'{slot}' in {layer}2? must be Variable"):
            getattr(L, layer)(*[tensor] * args)
        bad = fluid.data("bad", [3, 4], dtypes[0])
        with pytest.raises(TypeError, match=f"data type of '{slot}' in {layer}"):
            getattr(L, layer)(*[bad] * args)


def test_the_gradient_of_sign_is_zeros_from_a_scale_op():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [3], "float32")
        x.stop_gradient = False
        fluid.backward.append_backward(L.reduce_sum(L.elementwise_mul(L.sign(x), x)))
    grad_ops = [op for op in main.global_block().ops if op.type == "scale" and op.attr("scale") == 0.0]
    assert len(grad_ops) == 1
    (g,) = fluid.Executor().run(main, feed={"x": np.array([-2.0, 0.5, 3.0], "float32")}, fetch_list=["x@GRAD"])
    np.testing.assert_array_equal(g, [-1.0, 1.0, 1.0])  # only the product's own term: d sign(x) / dx = 0


def test_accuracy_checks_its_input():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        tensor = fluid.create_lod_tensor(np.array([[-1.0]]), [[1]], fluid.CPUPlace())
        label = fluid.data("label", [-1, 1], "int64")
        with pytest.raises(TypeError, match="'input' in accuracy must be Variable"):
            L.accuracy(tensor, label)
        with pytest.raises(TypeError, match="data type of 'input' in accuracy"):
            L.accuracy(fluid.data("i", [-1, 4], "int32"), label)
