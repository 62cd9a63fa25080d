"""append_backward / gradients as an API: argument checks, repeated passes, fluid's analysis helpers."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import backward


def _net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        used = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
        fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w"), bias_attr=False, act="sigmoid")  # unused head
        loss = fluid.layers.mean(used)
    return main, startup, x, loss


@pytest.mark.parametrize("kwargs, message", [
    (dict(parameter_list="w"), "'parameter_list' in fluid.backward.append_backward must be"),
    (dict(parameter_list=[np.zeros(2)]), r"'parameter_list\[0\]'"),
    (dict(callbacks=lambda block, context: None), "'callbacks'"),
    (dict(no_grad_set="x"), "The type of no_grad_set should be set or list or tuple"),
    (dict(no_grad_set=[3]), "The type of no_grad_set's member must be paddle.fluid.Variable or str"),
])
def test_append_backward_checks_its_arguments_types(kwargs, message):
    main, _, _, loss = _net()
    with fluid.program_guard(main), pytest.raises(TypeError, match=message):
        backward.append_backward(loss, **kwargs)


def test_gradients_checks_its_arguments_types():
    main, _, x, loss = _net()
    with fluid.program_guard(main):
        for args, kwargs in [((loss.name, x), {}), ((loss, x.name), {}), (([loss], [x]), dict(target_gradients="g")),
                             (([loss], [x]), dict(no_grad_set=x))]:
            with pytest.raises(TypeError):
                fluid.gradients(*args, **kwargs)


def test_a_second_gradients_pass_keeps_the_first_ones_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.create_parameter(name="x", shape=[1], dtype="float32",
                                          default_initializer=fluid.initializer.Constant(3.0))
        first, = fluid.gradients(x * x, x)  # 2x
        second, = fluid.gradients(x * x * x, x)  # 3x^2
    assert first.name == "x@GRAD" and second.name != first.name
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        got_first, got_second = exe.run(main, fetch_list=[first, second])
    assert got_first[0] == pytest.approx(6.0) and got_second[0] == pytest.approx(27.0)


def test_fluids_analysis_helpers():
    main, _, x, loss = _net()
    block = main.global_block()
    stop = backward._get_stop_gradients_(main)
    assert stop == {0: {"x@GRAD"}}  # only the data variable stops gradients
    path = backward._find_op_path_(block, [loss], [], set())
    assert [op.type for op in path] == ["mul", "mean"]  # the sigmoid head does not reach the loss
    assert backward._find_no_grad_vars(block, path, [loss], set()) == set()
    assert backward._strip_grad_suffix_("w@GRAD@RENAME@0") == "w" and backward._append_grad_suffix_("w") == "w@GRAD"
