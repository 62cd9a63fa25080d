"""reshape / transpose / flatten / squeeze / unsqueeze inside a trained program: append_backward's grad
ops list the forward's XShape output as an input, so it must hold a value (it used to be None, and the
first backward run failed with "needs variable(s) ['reshape2_0.tmp_1']")."""
import numpy as np
import pytest

import minifluid as fluid

RELAYOUTS = {
    "reshape": lambda h: fluid.layers.reshape(h, [-1, 2, 3]),
    "transpose": lambda h: fluid.layers.transpose(h, perm=[1, 0]),
    "flatten": lambda h: fluid.layers.flatten(fluid.layers.reshape(h, [-1, 2, 3]), axis=1),
    "squeeze": lambda h: fluid.layers.squeeze(fluid.layers.reshape(h, [-1, 1, 6]), axes=[1]),
    "unsqueeze": lambda h: fluid.layers.unsqueeze(h, axes=[1]),
}


def _weight_grad(relayout):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        h = fluid.layers.fc(x, size=6)
        loss = fluid.layers.mean(fluid.layers.square(relayout(h)))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.arange(12, dtype="float32").reshape(3, 4) / 10}
    (grad,) = exe.run(main, feed=feed, fetch_list=["fc_0.w_0@GRAD"], scope=scope)
    return grad


@pytest.mark.parametrize("name", sorted(RELAYOUTS))
def test_training_through_a_relayout_op_gives_the_gradient_without_it(name):
    # mean(square(.)) does not care about layout, so the weight gradient must not change
    np.testing.assert_allclose(_weight_grad(RELAYOUTS[name]), _weight_grad(lambda h: h), rtol=1e-6)
