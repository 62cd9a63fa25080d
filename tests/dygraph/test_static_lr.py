"""paddle 2.x static mode: paddle.* functions build graph ops after enable_static, and a
paddle.optimizer.lr scheduler drives a static program's learning rate, run by run."""
import numpy as np
import pytest

import minifluid as fluid


def test_paddle_functions_build_graph_ops_in_static_mode(paddle):
    paddle.enable_static()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = paddle.static.data("x", [None, 3], "float32")
        y = paddle.mean(paddle.multiply(x, paddle.full([3], 2.0)))
    assert isinstance(y, fluid.Variable) and "reduce_mean" in [op.type for op in main.global_block().ops]
    out, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": np.ones((2, 3), "float32")}, fetch_list=[y])
    assert float(out) == pytest.approx(2.0)
    paddle.disable_static()
    assert isinstance(paddle.mean(paddle.to_tensor([1.0, 3.0])), paddle.Tensor)
    fluid.disable_dygraph()


@pytest.mark.parametrize("data_parallel", [False, True])
def test_a_scheduler_sets_each_runs_learning_rate(paddle, data_parallel):
    paddle.enable_static()
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = paddle.static.data("x", [None, 1], "float32")
        attr = fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.0))
        loss = paddle.mean(fluid.layers.fc(x, 1, param_attr=attr, bias_attr=False))  # d loss / d w = mean(x) = 1
        scheduler = paddle.optimizer.lr.StepDecay(learning_rate=0.5, step_size=2, gamma=0.1)
        optimizer = paddle.optimizer.SGD(learning_rate=scheduler)
        optimizer.minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    program = main
    if data_parallel:
        program = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    weights, rates = [], []
    for _ in range(5):
        rates.append(optimizer.get_lr())
        exe.run(program, feed={"x": np.ones((4, 1), "float32")}, fetch_list=[loss])
        weights.append(float(np.array(fluid.global_scope().find_var("w").get_tensor())[0, 0]))
        scheduler.step()
    assert rates == pytest.approx([0.5, 0.5, 0.05, 0.05, 0.005])
    assert weights == pytest.approx(list(-np.cumsum(rates)), rel=1e-5)
