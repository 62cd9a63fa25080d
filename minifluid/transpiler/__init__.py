"""``fluid.transpiler``: program rewrites (and fluid's retired memory-optimisation calls)."""
from .inference_transpiler import InferenceTranspiler
from .memory_optimization import memory_optimize, release_memory

__all__ = ["InferenceTranspiler", "memory_optimize", "release_memory"]
