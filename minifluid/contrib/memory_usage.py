"""``fluid.contrib.memory_usage(program, batch_size)``: an estimate of the memory a step of ``program`` takes.

It adds up the bytes of every tensor the global block's ops write (once per name), a tensor's one unknown
dimension (-1, the batch) counted as ``batch_size``, and gives the total as a (lower, upper) range 5-10% above
it, as fluid's estimate does, in B, KB or MB (the largest unit the total reaches).
"""
import numpy as np

from ..dtypes import to_numpy_dtype
from ..framework.program import Program
from ..framework.variable import VarType

__all__ = ["memory_usage"]


def memory_usage(program, batch_size):
    """(lower estimate, upper estimate, unit) of ``program``'s memory at ``batch_size``."""
    if not isinstance(program, Program):
        raise TypeError(f"Calculating Memory Usage requires Program as its Parameter. But you passed in "
                        f"{type(program)}")
    if batch_size <= 0:
        raise ValueError("The batch size need to be positive.")
    block, total, seen = program.global_block(), 0.0, set()
    for op in block.ops:
        for name in op.output_arg_names:
            var = block.vars.get(name)
            if name in seen or var is None or var.type != VarType.LOD_TENSOR or var.shape is None:
                continue
            seen.add(name)
            unknown = [d for d in var.shape if d < 0]
            if len(unknown) > 1:
                raise ValueError(f"Var {name} has more than one negative dim.")
            count = int(np.prod([batch_size * -d if d < 0 else d for d in var.shape]))
            total += count * to_numpy_dtype(var.dtype).itemsize
    unit = "B"
    for bigger in ("KB", "MB"):
        if total > 1024:
            total, unit = total / 1024, bigger
    return total * 1.05, total * 1.1, unit
