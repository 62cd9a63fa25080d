"""``fluid.contrib.Inferencer``: rebuilds ``infer_func``'s network and runs it on saved parameters."""
import contextlib

from .. import io
from ..executor import Executor, Scope, scope_guard
from ..framework import Program, program_guard, unique_name
from ..parallel_executor import ParallelExecutor
from ..places import CUDAPlace
from .trainer import check_and_get_place

__all__ = ["Inferencer"]


class Inferencer:
    """``infer(inputs)`` runs ``infer_func()``'s output on the parameters saved in ``param_path``."""

    def __init__(self, infer_func, param_path, place=None, parallel=False):
        self.param_path = param_path
        self.scope = Scope()
        self.parallel = parallel
        self.place = check_and_get_place(place)
        self.inference_program = Program()
        with program_guard(self.inference_program), unique_name.guard():
            self.predict_var = infer_func()
        with self._prog_and_scope_guard():
            io.load_params(Executor(self.place), param_path)
            if parallel:
                self.exe = ParallelExecutor(use_cuda=isinstance(self.place, CUDAPlace),
                                            loss_name=self.predict_var.name,
                                            main_program=self.inference_program, scope=self.scope)
            else:
                self.exe = Executor(self.place)
        self.inference_program = self.inference_program.clone(for_test=True)

    def infer(self, inputs, return_numpy=True):
        """``[prediction]`` for ``inputs`` ({feed name: array or LoDTensor})."""
        if not isinstance(inputs, dict):
            raise ValueError("inputs should be a map of {'input_name': input_var}")
        with self._prog_and_scope_guard():
            if isinstance(self.exe, ParallelExecutor):
                return self.exe.run(fetch_list=[self.predict_var.name], feed=inputs, return_numpy=return_numpy)
            return self.exe.run(self.inference_program, feed=inputs, fetch_list=[self.predict_var.name],
                                return_numpy=return_numpy)

    @contextlib.contextmanager
    def _prog_and_scope_guard(self):
        with program_guard(self.inference_program), scope_guard(self.scope):
            yield
