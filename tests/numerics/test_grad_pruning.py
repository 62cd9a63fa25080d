"""Backward pruning: nothing computes a gradient for a variable that needs none (data variables,
stop_gradient variables and whatever lies upstream only of them), in the static graph and in dygraph.
A gradient op whose outputs would all be pruned is not appended; the conv kernels are told (``need``)
not to compute the input gradient of a conv reading a data variable."""
import numpy as np

import minifluid as fluid
from minifluid.backward import append_backward
from minifluid.ops.registry import get_op_spec


def _conv_net():
    x = fluid.data("x", [None, 1, 12, 12])
    label = fluid.data("label", [None, 1], "int64")
    scaled = fluid.layers.scale(x, 2.0)  # upstream only of data: no gradient either
    h = fluid.layers.conv2d(scaled, 4, 3, act="relu")
    h = fluid.layers.pool2d(h, 2, "max", 2)
    h = fluid.layers.batch_norm(fluid.layers.conv2d(h, 6, 3, bias_attr=False), act="relu")
    return fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 10), label))


def test_static_conv_net_gives_data_variables_no_gradient_op():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = _conv_net()
        append_backward(loss)
    block = main.global_block()
    produced = {n for op in block.ops for n in op.output_arg_names}
    for name in ("x", "label", "scale_0.tmp_0"):
        assert name + "@GRAD" not in produced and not block.has_var(name + "@GRAD"), name
    assert not any(op.type == "scale_grad" for op in block.ops)  # all its outputs would be pruned: dropped
    first_conv_grad = next(op for op in block.ops if op.type == "conv2d_grad" and op.input("Input") == ["scale_0.tmp_0"])
    assert "Input@GRAD" not in first_conv_grad.outputs and first_conv_grad.output("Filter@GRAD")
    second_conv_grad = next(op for op in block.ops if op.type == "conv2d_grad" and op is not first_conv_grad)
    assert second_conv_grad.output("Input@GRAD")  # an activation: it does need one
    for op in block.ops:  # batch_norm's running statistics never get one either
        if op.type == "batch_norm_grad":
            assert set(op.outputs) == {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}


def test_a_data_variable_with_stop_gradient_false_gets_its_gradient():
    """The pruning is by stop_gradient, not by name: fluid.gradients w.r.t. data works when asked for."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 1, 5, 5])
        x.stop_gradient = False
        loss = fluid.layers.mean(fluid.layers.conv2d(x, 2, 3))
        dx, = fluid.gradients([loss], [x])
    conv_grad = next(op for op in main.global_block().ops if op.type == "conv2d_grad")
    assert conv_grad.output("Input@GRAD") == [dx.name]


def test_dygraph_conv_kernel_is_not_asked_for_the_input_gradient_of_a_data_tensor(monkeypatch):
    spec = get_op_spec("conv2d")
    calls, real = [], spec.grad

    def spy(attrs, ins, outs, douts, need):
        calls.append(tuple(need[:2]))
        return real(attrs, ins, outs, douts, need)
    monkeypatch.setattr(spec, "grad", spy)
    with fluid.dygraph.guard():
        conv1 = fluid.dygraph.Conv2D(1, 3, 3, act="relu")
        conv2 = fluid.dygraph.Conv2D(3, 2, 3)
        x = fluid.dygraph.to_variable(np.random.RandomState(0).rand(2, 1, 8, 8).astype("float32"))
        loss = fluid.layers.mean(conv2(conv1(x * 2.0)))
        loss.backward()
        assert x.gradient() is None and conv1.weight.gradient() is not None
    assert calls == [(True, True), (False, True)]  # conv2 needs its input's gradient, conv1 does not
