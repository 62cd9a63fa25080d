"""minifluid: PaddlePaddle Fluid 1.x's static-graph runtime and data pipeline, on numpy.

``import minifluid as fluid`` gives the fluid names legacy scripts use.
"""
from . import ops  # noqa: F401  (registers every op first)
from . import core, framework, layers
from . import data as _data_package  # noqa: F401  (import first: `fluid.data` below must stay the function)
from . import backward, clip, initializer, optimizer, regularizer
from . import io, nets
from . import dygraph
from .dygraph import disable_dygraph, enable_dygraph
from .framework.dygraph_mode import in_dygraph_mode
from .data.feeder import DataFeeder
from .backward import gradients
from .param_attr import ParamAttr
from .executor import Executor, Scope, global_scope, scope_guard
from .executor.compiled import BuildStrategy, CompiledProgram, ExecutionStrategy
from .framework import (Program, Variable, default_main_program, default_startup_program, program_guard,
                        unique_name)
from .framework.variable import Parameter
from .layers.io import data
from .lod_tensor import LoDTensor, LoDTensorArray, create_lod_tensor
from .reader import batch
from .program_state import load, load_program_state, save, set_program_state
from .places import CPUPlace, CUDAPinnedPlace, CUDAPlace, cpu_places, cuda_places, is_compiled_with_cuda

__version__ = "0.1.0"

__all__ = sorted([
    "batch",
    "BuildStrategy", "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "CompiledProgram", "ExecutionStrategy", "Executor",
    "LoDTensor", "LoDTensorArray", "Parameter", "Program", "Scope", "load", "load_program_state", "save",
    "set_program_state",
    "Variable", "core", "cpu_places", "create_lod_tensor", "cuda_places", "data", "default_main_program",
    "default_startup_program", "framework", "global_scope", "is_compiled_with_cuda", "layers",
    "program_guard", "scope_guard", "unique_name",
    "ParamAttr", "backward", "clip", "gradients", "initializer", "optimizer", "regularizer",
    "DataFeeder", "io", "nets",
    "disable_dygraph", "dygraph", "enable_dygraph", "in_dygraph_mode",
])
