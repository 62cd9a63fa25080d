"""Graph IR: builds Programs, never runs them."""
from ..dtypes import convert_dtype
from . import unique_name
from .block import Block
from .operator import Operator
from .program import (Program, default_main_program, default_startup_program, program_guard,
                      switch_main_program, switch_startup_program)
from .variable import Parameter, Variable, VarType

__all__ = ["Block", "Operator", "Parameter", "Program", "VarType", "Variable", "convert_dtype",
           "default_main_program", "default_startup_program", "program_guard", "switch_main_program",
           "switch_startup_program", "unique_name"]
