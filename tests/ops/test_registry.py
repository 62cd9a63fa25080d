"""The op registry refuses what would silently replace an op or its gradient."""
import pytest


def _double(attrs, x):
    return x * 2


def test_an_op_registered_twice_is_refused(scratch_registry):
    scratch_registry.register_op("_twice", inputs=("X",), outputs=("Out",))(_double)
    with pytest.raises(ValueError, match=r"op '_twice' registered twice: at .*test_registry.py:\d+ and at "):
        scratch_registry.register_op("_twice", inputs=("X",), outputs=("Out",))(_double)


def test_a_second_gradient_is_refused(scratch_registry):
    scratch_registry.register_op("_twice", inputs=("X",), outputs=("Out",))(_double)
    first = scratch_registry.register_grad("_twice")(lambda attrs, ins, outs, douts, need: (douts[0] * 2,))
    with pytest.raises(ValueError, match=r"op '_twice' has its gradient registered twice: at .*test_registry.py"):
        scratch_registry.register_grad("_twice")(lambda attrs, ins, outs, douts, need: (None,))
    assert scratch_registry.get_op_spec("_twice").grad is first


def test_a_gradient_for_an_op_without_one_is_refused(scratch_registry):
    scratch_registry.register_op("_flag", inputs=("X",), outputs=("Out",), no_gradient=True)(_double)
    with pytest.raises(ValueError, match="'_flag' .* no_gradient=True"):
        scratch_registry.register_grad("_flag")(lambda attrs, ins, outs, douts, need: (None,))
    assert scratch_registry.get_op_spec("_flag").grad is None


def test_a_gradient_for_an_unknown_op_names_it(scratch_registry):
    with pytest.raises(KeyError, match="'_nowhere' is not registered"):
        scratch_registry.register_grad("_nowhere")(lambda attrs, ins, outs, douts, need: (None,))
