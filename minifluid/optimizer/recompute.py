"""``fluid.optimizer.RecomputeOptimizer`` (1.8): another optimizer's updates over a backward pass that recomputes
the activations between checkpoints instead of keeping them (NOTE [ Recompute segments ] in
backward_recompute.py); the gradients, and so the trained parameters, are the plain backward's."""
from ..backward import append_backward
from ..framework import dygraph_mode
from ..framework.program import program_guard
from ..framework.variable import Variable
from .base import Optimizer

__all__ = ["RecomputeOptimizer"]


class RecomputeOptimizer(Optimizer):
    """Wraps ``optimizer``; ``_set_checkpoints([var, ...])`` names the variables kept from the forward pass
    (typically each block's output), then ``minimize(loss)`` as usual::

        opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.Adam(0.01))
        opt._set_checkpoints([hidden_1, hidden_2])
        opt.minimize(loss)
    """

    def __init__(self, optimizer):
        if dygraph_mode.in_dygraph_mode():
            raise Exception("In dygraph, don't support RecomputeOptimizer.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"RecomputeOptimizer wraps an Optimizer, got {type(optimizer).__name__}")
        self._optimizer = optimizer
        self._checkpoints = None
        self._learning_rate = optimizer._learning_rate
        self._learning_rate_map = optimizer._learning_rate_map

    def _set_checkpoints(self, checkpoints):
        if not isinstance(checkpoints, (list, tuple)) or not all(isinstance(c, Variable) for c in checkpoints):
            raise TypeError(f"_checkpoints should be a list of Variable, got {checkpoints!r}")
        self._checkpoints = list(checkpoints)

    def load(self, stat_dict):
        raise NotImplementedError("load function is not supported by Recompute Optimizer for now")

    def apply_gradients(self, params_grads):
        return self._optimizer.apply_gradients(params_grads=params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        return self._optimizer.apply_optimize(loss, startup_program=startup_program, params_grads=params_grads)

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        """append_backward with the checkpoints; returns the (param, grad) pairs."""
        if dygraph_mode.in_dygraph_mode():
            raise NotImplementedError("DyGraph current does not support recompute")
        if parameter_list is None:
            parameter_list = self._optimizer._parameter_list
        with program_guard(loss.block.program, startup_program):
            return append_backward(loss, parameter_list, no_grad_set, callbacks, checkpoints=self._checkpoints)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        if not isinstance(loss, Variable):
            raise AssertionError("The loss should be an Variable.")
        if self._checkpoints is None:
            raise AssertionError("You should call _set_checkpoints first")
        if dygraph_mode.in_dygraph_mode():
            raise NotImplementedError("DyGraph current does not support recompute")
        params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
        optimize_ops = self.apply_optimize(loss, startup_program=startup_program, params_grads=params_grads)
        return optimize_ops, params_grads
