"""minifluid: PaddlePaddle Fluid 1.x's static-graph runtime and data pipeline, on numpy.

``import minifluid as fluid`` gives the fluid names legacy scripts use.
"""
from . import ops  # noqa: F401  (registers every op first)
from . import core, framework, layers
from . import data as _data_package  # noqa: F401  (import first: `fluid.data` below must stay the function)
from . import backward, backward_blocks, clip, initializer, optimizer, regularizer
from . import average, io, metrics, nets, profiler, transpiler
from . import dygraph
from . import contrib
from . import dataset  # paddle.dataset's readers, with fluid.dataset's DatasetFactory (see its NOTE)
from .dygraph import disable_dygraph, disable_imperative, enable_dygraph, enable_imperative
from .dygraph import (BatchNorm, Conv2D, Conv2DTranspose, Dropout, Embedding, GroupNorm, InstanceNorm,  # noqa: F401
                      Layer, LayerNorm, Linear, PRelu, Pool2D)  # fluid 1.8 binds its dygraph layers at the top level too
from .framework.dygraph_mode import in_dygraph_mode
from .data.feeder import DataFeeder
from .data.file_dataset import DatasetFactory, InMemoryDataset, QueueDataset
from .backward import gradients
from .param_attr import ParamAttr, WeightNormParamAttr
from .executor import Executor, Scope, global_scope, scope_guard
from .executor.compiled import BuildStrategy, CompiledProgram, ExecutionStrategy
from .framework import (Program, Variable, default_main_program, default_startup_program, device_guard, name_scope,
                        program_guard, unique_name)
from .framework.variable import Parameter
from .layers.io import data
from .data import py_reader as _py_reader
for _module in (layers, layers.io):  # fluid.layers(.io).py_reader: built in data/py_reader.py, above both sides
    _module.py_reader, _module.create_py_reader_by_data = _py_reader.py_reader, _py_reader.create_py_reader_by_data
del _module
from .lod_tensor import LoDTensor, LoDTensorArray, create_lod_tensor, create_random_int_lodtensor

Tensor = LoDTensor  # fluid 1.8's alias
from .input import embedding, one_hot
from .flags import get_flags, set_flags
from .reader import batch
from .program_state import load, load_program_state, save, set_program_state
from .parallel_executor import ParallelExecutor
from .transpiler import memory_optimize, release_memory
from .places import CPUPlace, CUDAPinnedPlace, CUDAPlace, cpu_places, cuda_places, is_compiled_with_cuda
from .version import __version__, require_version  # minifluid's own version; paddle.fluid's is the fluid level

__all__ = ["BatchNorm", "BuildStrategy", "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "CompiledProgram", "Conv2D",
           "Conv2DTranspose", "DataFeeder", "DatasetFactory", "Dropout", "Embedding", "ExecutionStrategy", "Executor",
           "GroupNorm", "InMemoryDataset", "InstanceNorm", "Layer", "LayerNorm", "Linear", "LoDTensor", "LoDTensorArray",
           "PRelu",
           "ParallelExecutor", "ParamAttr", "Parameter", "Pool2D", "Program", "QueueDataset", "Scope", "Tensor",
           "Variable", "WeightNormParamAttr",
           "average", "backward", "batch", "clip", "contrib", "core", "cpu_places", "create_lod_tensor",
           "create_random_int_lodtensor", "cuda_places", "data", "default_main_program", "default_startup_program",
           "device_guard", "disable_dygraph", "disable_imperative", "dygraph", "embedding", "enable_dygraph",
           "enable_imperative", "framework", "get_flags", "global_scope",
           "gradients", "in_dygraph_mode", "initializer", "io", "is_compiled_with_cuda", "layers", "load",
           "load_program_state", "memory_optimize", "metrics", "name_scope", "nets", "one_hot", "optimizer", "profiler",
           "program_guard", "regularizer", "release_memory", "require_version", "save", "scope_guard", "set_flags",
           "set_program_state", "transpiler", "unique_name"]
