"""Static Variable's fluid 1.8 surface: grad_name, the dygraph-only methods, kinds, detailed text."""
import pytest

import minifluid as fluid
from minifluid.framework import VarType


def test_grad_name_and_the_variable_kinds():
    block = fluid.Program().global_block()
    w = block.create_var(name="fc.w", shape=[3, 2], dtype="float64")
    assert w.grad_name == "fc.w@GRAD"
    scopes = block.create_var(name="step_scopes", type=VarType.STEP_SCOPES)
    assert scopes.type == VarType.STEP_SCOPES and int(VarType.STEP_SCOPES) == 11
    assert int(VarType.SELECTED_ROWS) == 8 and int(VarType.LOD_RANK_TABLE) == 12


@pytest.mark.parametrize("call", [lambda v: v.detach(), lambda v: v.numpy(), lambda v: v.set_value(None),
                                  lambda v: v.backward(), lambda v: v.gradient(), lambda v: v.clear_gradient()])
def test_the_dygraph_only_methods_say_so(call):
    var = fluid.Program().global_block().create_var(name="v", shape=[1], dtype="float32")
    with pytest.raises(AssertionError, match=r"should be called by imperative Varible in imperative mode"):
        call(var)


def test_to_string_with_details_says_more():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        fluid.layers.fc(fluid.data("x", [2, 3]), size=3)
    plain, detailed = main.to_string(True), main.to_string(False, with_details=True)
    assert "stop_gradient=" not in plain and "stop_gradient=" in detailed and "trainable=True" in detailed
    assert len(detailed) > len(plain)


def test_a_variable_prints_as_fluids_vardesc_text():
    block = fluid.Program().global_block()
    w = block.create_parameter(name="w", shape=[3, 2], dtype="float64")
    text = str(w)
    assert text.startswith('name: "w"\ntype {\n  type: LOD_TENSOR\n') and "data_type: FP64" in text
    assert "dims: 3\n" in text and "persistable: true" in text and "stop_gradient" not in text
    detailed = w.to_string(False, with_details=True)
    assert detailed.startswith(text) and "stop_gradient: False\n" in detailed and "trainable: True\n" in detailed
    assert "param w : LOD_TENSOR.shape[3, 2].dtype(float64)" in str(block.program)  # a Program stays compact
