"""Graph IR: builds Programs, never runs them."""
import contextlib
import warnings

from ..dtypes import convert_dtype
from ..ops.registry import grad_var_name
from ..wrapped_decorator import wrap_decorator
from . import dygraph_mode, unique_name
from .dygraph_mode import current_tracer as _dygraph_tracer  # noqa: F401  (fluid.framework._dygraph_tracer)
from .dygraph_mode import in_dygraph_mode  # noqa: F401  (fluid.framework.in_dygraph_mode)
from .block import Block
from .op_proto import OpProtoHolder
from .operator import Operator
from .program import (Program, default_main_program, default_startup_program, program_guard,
                      switch_main_program, switch_startup_program)
from .scopes import device_guard, name_scope
from .variable import Parameter, Variable, VarType

__all__ = ["Block", "OpProtoHolder", "Operator", "Parameter", "Program", "VarType", "Variable", "convert_dtype",
           "default_main_program", "default_startup_program", "device_guard", "dygraph_not_support", "dygraph_only",
           "grad_var_name", "name_scope", "program_guard", "switch_main_program", "switch_startup_program",
           "unique_name"]


def _dygraph_not_support_(func):
    def check(*args, **kwargs):
        assert not in_dygraph_mode(), f"We don't support {func.__name__} in imperative mode"
        return func(*args, **kwargs)
    return check


def _dygraph_only_(func):
    def check(*args, **kwargs):
        assert in_dygraph_mode(), (f"We Only support {func.__name__} in imperative mode, please use "
                                   "fluid.dygraph.guard() as context to run it in imperative Mode")
        return func(*args, **kwargs)
    return check


dygraph_not_support = wrap_decorator(_dygraph_not_support_)  # fluid's decorators: AssertionError in the other mode
dygraph_only = wrap_decorator(_dygraph_only_)


def convert_np_dtype_to_dtype_(np_dtype):
    """fluid's VarDesc.VarType member for a numpy dtype (``np.float32`` -> ``VarType.FP32``)."""
    name = convert_dtype(np_dtype)
    for value in vars(VarType).values():
        if getattr(value, "name", None) is not None and value == name:
            return value
    raise ValueError(f"Not supported numpy dtype {np_dtype}")


def _var_base_to_np(var_base):
    """fluid's deprecated ``framework._var_base_to_np(t)``: ``t.numpy()``."""
    warnings.warn("paddle.fluid.framework._var_base_to_np is deprecated, please use var_base.numpy() instead of "
                  "_var_base_to_np(var_base).")
    return var_base.numpy()


@contextlib.contextmanager
def _dygraph_guard(tracer):
    """fluid's internal switch of the tracer for a block of code (None: static mode, as in its test utils)."""
    previous = dygraph_mode.switch_tracer(tracer)
    try:
        yield
    finally:
        dygraph_mode.switch_tracer(previous)


@contextlib.contextmanager
def _dygraph_place_guard(place):
    """fluid's internal switch of the place dygraph ops run on, for a block of code (nothing in static mode)."""
    tracer = dygraph_mode.current_tracer()
    previous = tracer.expected_place if tracer is not None else None
    if tracer is not None:
        tracer.expected_place = place
    try:
        yield
    finally:
        if tracer is not None:
            tracer.expected_place = previous
