"""CompiledProgram.with_data_parallel with a learning rate fed each step, and unmerged-type fetches."""
import numpy as np

import minifluid as fluid


def test_a_fed_learning_rate_reaches_the_update_and_fetches_can_be_lodtensors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        lr = fluid.data("lr", [1])
        x = fluid.data("x", [None, 1])
        y = fluid.data("y", [None, 1])
        pred = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.0)),
                               bias_attr=False)
        cost = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(learning_rate=lr).minimize(cost)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(scope):
        exe.run(startup)
        compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=cost.name, places=[fluid.CPUPlace()])
        feed = {"x": np.ones((4, 1), "float32"), "y": np.full((4, 1), 2.0, "float32"), "lr": 0.25}
        got_lr, got_cost = exe.run(compiled, feed=feed, fetch_list=[lr, cost], return_numpy=False)
    assert isinstance(got_lr, fluid.LoDTensor) and got_lr._dtype() == np.float32
    np.testing.assert_allclose(np.array(got_cost), [4.0])
    # d cost / d w = mean(2 * (w*x - y) * x) = -4: one step of 0.25 moves w from 0 to 1
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), [[1.0]])
    assert scope.find_var("lr") is None or not scope.find_var("lr").is_initialized()  # lent for the update only
