"""``fluid.transpiler``: program rewrites (and fluid's retired memory-optimisation calls)."""
from .memory_optimization import memory_optimize, release_memory

__all__ = ["memory_optimize", "release_memory"]
