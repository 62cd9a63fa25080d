"""Graph IR: builds Programs, never runs them."""
from ..dtypes import convert_dtype
from ..ops.registry import grad_var_name
from . import unique_name
from .dygraph_mode import current_tracer as _dygraph_tracer  # noqa: F401  (fluid.framework._dygraph_tracer)
from .block import Block
from .operator import Operator
from .program import (Program, default_main_program, default_startup_program, program_guard,
                      switch_main_program, switch_startup_program)
from .scopes import device_guard, name_scope
from .variable import Parameter, Variable, VarType

__all__ = ["Block", "Operator", "Parameter", "Program", "VarType", "Variable", "convert_dtype",
           "default_main_program", "default_startup_program", "device_guard", "grad_var_name", "name_scope",
           "program_guard", "switch_main_program", "switch_startup_program", "unique_name"]
