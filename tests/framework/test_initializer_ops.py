"""Where initializers put their ops (initializer.py): prepended to the block, float16 through a cast."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import initializer


def test_initializers_prepend_so_the_last_made_runs_first():
    program = fluid.Program()
    block = program.global_block()
    program.random_seed = 123
    block.create_parameter(name="a", shape=[2, 3], dtype="float32", initializer=initializer.Uniform())
    block.create_parameter(name="b", shape=[2, 3], dtype="float32", initializer=initializer.Constant(2.0))
    assert [(op.type, op.output("Out")) for op in block.ops] == [("fill_constant", ["b"]), ("uniform_random", ["a"])]
    assert block.ops[1].attr("seed") == 123  # a seed of 0 takes the program's


def test_an_optimizers_learning_rate_is_initialised_before_its_accumulators():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1, bias_attr=False,
                                                 param_attr=fluid.ParamAttr(initializer=initializer.Constant(0.5))))
        fluid.optimizer.Adagrad(learning_rate=0.01).minimize(loss)
    ops = startup.global_block().ops
    assert [op.type for op in ops] == ["fill_constant"] * 3
    assert [op.attr("value") for op in ops] == pytest.approx([0.01, 0.0, 0.5])  # lr, moment, weight


@pytest.mark.parametrize("init, prefix", [(initializer.Constant(1.5), "constant_init"),
                                          (initializer.Normal(0.0, 1.0, seed=3), "gaussian_random"),
                                          (initializer.NumpyArrayInitializer(np.ones((2, 3), "float16")),
                                           "numpy_array_init")])
def test_a_float16_variable_is_filled_in_float32_then_cast(init, prefix):
    main, startup = fluid.Program(), fluid.Program()
    block = startup.global_block()
    block.create_parameter(name="h", shape=[2, 3], dtype="float16", initializer=init)
    fill, cast = block.ops
    tmp = fill.output("Out")[0]
    assert tmp.startswith(f"{prefix}.h.tmp") and block.var(tmp).dtype == "float32" and fill.attr("dtype") == "float32"
    assert cast.type == "cast" and cast.input("X") == [tmp] and cast.output("Out") == ["h"]
    assert (cast.attr("in_dtype"), cast.attr("out_dtype")) == ("float32", "float16")
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    value = np.array(scope.find_var("h").get_tensor())
    assert value.dtype == np.float16 and value.shape == (2, 3)
