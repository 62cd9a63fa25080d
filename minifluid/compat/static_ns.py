"""``paddle.static`` (2.x): fluid's static-graph names, except that ``data``'s dtype defaults to
``paddle.get_default_dtype()`` (fluid.data's to float32)."""
import minifluid as _fluid
from ..dtypes import get_default_dtype
from ..inference_model import static_load_inference_model as load_inference_model
from ..inference_model import static_save_inference_model as save_inference_model

STATIC_ONLY = ("load_inference_model", "save_inference_model")  # 2.x signatures (path prefix -> .pdmodel)

# fluid's names (tests/compat/test_paddle_names.py keeps this list equal to minifluid.__all__) and STATIC_ONLY
__all__ = ["BatchNorm", "BuildStrategy", "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "CompiledProgram", "Conv2D",
           "Conv2DTranspose", "DataFeeder", "DatasetFactory", "Dropout", "Embedding", "ExecutionStrategy", "Executor",
           "GroupNorm", "InMemoryDataset", "InstanceNorm", "Layer", "LayerNorm", "Linear", "LoDTensor", "LoDTensorArray",
           "PRelu",
           "ParallelExecutor", "ParamAttr", "Parameter", "Pool2D", "Program", "QueueDataset", "Scope", "Tensor",
           "Variable", "WeightNormParamAttr", "average", "backward", "batch", "clip", "contrib", "core", "cpu_places", "create_lod_tensor",
           "create_random_int_lodtensor", "cuda_places", "data", "default_main_program", "default_startup_program",
           "device_guard", "disable_dygraph", "disable_imperative", "dygraph", "embedding", "enable_dygraph",
           "enable_imperative", "framework", "get_flags", "global_scope",
           "gradients", "in_dygraph_mode", "initializer", "io", "is_compiled_with_cuda", "layers", "load",
           "load_inference_model", "load_program_state", "memory_optimize", "metrics", "name_scope", "nets", "one_hot", "optimizer",
           "profiler", "program_guard", "regularizer", "release_memory", "require_version", "save",
           "save_inference_model", "scope_guard", "set_flags", "set_program_state", "transpiler", "unique_name"]


def data(name, shape, dtype=None, lod_level=0):
    """paddle.static.data: fluid.data with ``dtype`` None meaning ``paddle.get_default_dtype()``."""
    return _fluid.data(name, shape, get_default_dtype() if dtype is None else dtype, lod_level)


def __getattr__(name):
    return getattr(_fluid, name)
