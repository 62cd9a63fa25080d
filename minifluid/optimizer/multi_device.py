"""``fluid.optimizer``'s wrappers for multi-device training: DGCMomentumOptimizer and PipelineOptimizer.

DGCMomentumOptimizer (deep gradient compression of the gradients trainers exchange) needs CUDA in fluid 1.8: a
CPU build refuses it with fluid's AssertionError, and so does minifluid; with a GPU minifluid still has no DGC
kernels and says so (NotImplementedError). PipelineOptimizer cuts a Program into sections (``cut_list``) that
fluid runs on their own places and threads, handing scopes from queue to queue; minifluid runs a Program on one
device, where the sections simply follow each other in every step (a pipeline with no overlap and no stale
parameters), so ``minimize`` is the wrapped optimizer's; the pipeline's settings are kept on the program as
``_pipeline_opt``. Neither works in dygraph mode (fluid's Exception).
"""
from ..framework import dygraph_mode
from ..framework.variable import Variable
from ..places import is_compiled_with_cuda
from .base import MomentumOptimizer, Optimizer

__all__ = ["DGCMomentumOptimizer", "PipelineOptimizer"]


class DGCMomentumOptimizer(MomentumOptimizer):
    """Momentum with deep gradient compression (fluid 1.8: CUDA only)."""

    def __init__(self, learning_rate, momentum, rampup_begin_step, rampup_step=1, sparsity=(0.999,),
                 parameter_list=None, use_nesterov=False, num_trainers=None, regularization=None, grad_clip=None,
                 name=None):
        if dygraph_mode.in_dygraph_mode():
            raise Exception("In dygraph, don't support DGCMomentumOptimizer.")
        assert is_compiled_with_cuda(), "Paddle is not compiled with CUDA. DGC is only support GPU for now."
        raise NotImplementedError("DGCMomentumOptimizer: minifluid has no deep gradient compression kernels; "
                                  "fluid.optimizer.Momentum trains the same model without compressing gradients")


class PipelineOptimizer:
    """``PipelineOptimizer(optimizer, cut_list, place_list, concurrency_list, queue_size=30, sync_steps=1,
    start_cpu_core_id=0)``: ``len(cut_list)`` cuts make ``2 * len(cut_list) - 1`` sections, and
    ``place_list`` / ``concurrency_list``, when given, name one place / thread count per section."""

    def __init__(self, optimizer, cut_list=None, place_list=None, concurrency_list=None, queue_size=30, sync_steps=1,
                 start_cpu_core_id=0):
        if dygraph_mode.in_dygraph_mode():
            raise Exception("In dygraph, don't support PipelineOptimizer.")
        if not isinstance(optimizer, Optimizer):
            raise ValueError(f"The 'optimizer' parameter for PipelineOptimizer must be an instance of Optimizer, "
                             f"but the given type is {type(optimizer)}.")
        cut_list = [list(cut) if isinstance(cut, (list, tuple)) else [cut] for cut in (cut_list or [])]
        if any(not isinstance(v, Variable) for cut in cut_list for v in cut):
            raise TypeError("PipelineOptimizer: cut_list holds lists of Variables (the tensors each cut passes on)")
        sections = 2 * len(cut_list) - 1
        for name, given in (("place_list", place_list), ("concurrency_list", concurrency_list)):
            if given is not None and cut_list and len(given) != sections:
                raise ValueError(f"PipelineOptimizer: {name} needs one entry per section ({sections} for "
                                 f"{len(cut_list)} cuts), got {len(given)}")
        self._optimizer, self._cut_list = optimizer, cut_list
        self._place_list, self._concurrency_list = place_list, concurrency_list
        self._queue_size, self._sync_steps, self._start_cpu_core_id = queue_size, sync_steps, start_cpu_core_id

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """The wrapped optimizer's ``minimize`` (its (optimize ops, params_grads)); the sections' settings are
        kept on the loss's program as ``_pipeline_opt``."""
        result = self._optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        loss.block.program._pipeline_opt = {
            "cut_list": self._cut_list, "place_list": self._place_list, "concurrency_list": self._concurrency_list,
            "queue_size": self._queue_size, "sync_steps": self._sync_steps,
            "start_cpu_core_id": self._start_cpu_core_id}
        return result
