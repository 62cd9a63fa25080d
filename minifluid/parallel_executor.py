"""``fluid.ParallelExecutor``: fluid's older data-parallel front end, on CompiledProgram.with_data_parallel.

One replica per place (``CPU_NUM`` CPU places, or the visible GPUs with ``use_cuda``); feeds are split on
dim 0 and gradients averaged exactly as ``CompiledProgram`` does (NOTE [ Data parallel on CPU ] in
minifluid/executor/compiled.py).
"""
import warnings

from .executor import Executor, global_scope
from .executor.compiled import BuildStrategy, CompiledProgram
from .framework import default_main_program
from .places import CPUPlace, CUDAPlace, cpu_places, cuda_places

__all__ = ["ParallelExecutor"]


class ParallelExecutor:
    """Runs ``main_program`` on every place at once (``run(fetch_list, feed)``)."""

    def __init__(self, use_cuda, loss_name=None, main_program=None, share_vars_from=None, exec_strategy=None,
                 build_strategy=None, num_trainers=1, trainer_id=0, scope=None):
        if share_vars_from is not None and not isinstance(share_vars_from, ParallelExecutor):
            raise TypeError("The share_vars_from should be ParallelExecutor, got "
                            f"{type(share_vars_from).__name__}")
        if build_strategy is None:
            build_strategy = BuildStrategy()
        build_strategy.num_trainers, build_strategy.trainer_id = num_trainers, trainer_id
        self._places = cuda_places() if use_cuda else cpu_places()
        self._scope = scope if scope is not None else global_scope()
        program = main_program if main_program is not None else default_main_program()
        self._compiled_program = CompiledProgram(program).with_data_parallel(
            loss_name=loss_name, build_strategy=build_strategy, exec_strategy=exec_strategy,
            share_vars_from=share_vars_from._compiled_program if share_vars_from else None, places=self._places)
        self._place = CUDAPlace(0) if use_cuda else CPUPlace()
        self._exe = Executor(self._place)
        self._compiled_program._compile(self._scope, self._place)  # as fluid's: a PE is compiled when made

    def run(self, fetch_list, feed=None, feed_dict=None, return_numpy=True):
        """Fetch ``fetch_list`` after one step over ``feed`` (a dict split on dim 0 across the places, or a
        list of one dict per place). ``feed_dict`` is fluid's old name for ``feed``."""
        if feed_dict is not None:
            if feed is not None:
                raise ValueError("ParallelExecutor.run got both feed and feed_dict; pass feed only")
            warnings.warn("ParallelExecutor.run's feed_dict is deprecated, use feed", DeprecationWarning,
                          stacklevel=2)
            feed = feed_dict
        return self._exe.run(program=self._compiled_program, scope=self._scope, feed=feed, fetch_list=fetch_list,
                             return_numpy=return_numpy)

    @property
    def device_count(self):
        """The number of places a step runs on."""
        return len(self._places)

    def drop_local_exe_scopes(self):
        """Nothing to drop: each step's per-place variables live only during that step."""
