"""``paddle.optimizer`` (2.x): SGD, Momentum, Adam, Adagrad, RMSProp with ``step()`` / ``clear_grad()``.

They are fluid's optimizers (same update kernels, NOTE [ Optimizers in dygraph mode ] in
minifluid/optimizer/base.py) under 2.x argument names: ``parameters`` for ``parameter_list`` and
``weight_decay`` (a float means L2Decay(float)) for ``regularization``. ``step``, ``minimize`` and
``clear_grad`` run eagerly unless ``paddle.enable_static()`` asked for static mode. ``learning_rate`` may be
a ``paddle.optimizer.lr`` scheduler: each update reads its current value (``get_lr()``); in static mode
the Executor writes that value into the program's learning-rate variable before each run.
"""
import numpy as np

from .. import optimizer as _fluid
from ..framework.program import default_main_program
from ..regularizer import L2Decay
from . import paddle_lr as lr
from .base import eager_api
from .tensor import Tensor

__all__ = ["Adagrad", "Adam", "Momentum", "Optimizer", "RMSProp", "SGD", "lr"]

Optimizer = _fluid.Optimizer


def _decay(weight_decay):
    return L2Decay(float(weight_decay)) if isinstance(weight_decay, (int, float)) else weight_decay


def _rate(optimizer, learning_rate):
    """The float to start from; a scheduler is kept and read before each update."""
    optimizer._lr_scheduler = learning_rate if isinstance(learning_rate, lr.LRScheduler) else None
    return learning_rate() if optimizer._lr_scheduler is not None else learning_rate


class _Eager:
    step = eager_api(_fluid.Optimizer.step)
    minimize = eager_api(_fluid.Optimizer.minimize)

    def _create_global_learning_rate(self):
        super()._create_global_learning_rate()
        if self._lr_scheduler is None:
            return
        rate = self._global_learning_rate()
        if isinstance(rate, Tensor):  # dygraph: an eager tensor, set before each update
            rate.set_value(np.array([self._lr_scheduler()], dtype="float32"))
        else:  # static mode: the Executor writes the scheduler's value into it before each run
            program = default_main_program()
            program.lr_sheduler, program._lr_var_name = self._lr_scheduler, rate.name

    def get_lr(self):
        """The learning rate the next update uses (the scheduler's current value when there is one)."""
        return self._lr_scheduler() if self._lr_scheduler is not None else self.current_step_lr()


class SGD(_Eager, _fluid.SGDOptimizer):
    def __init__(self, learning_rate=0.001, parameters=None, weight_decay=None, grad_clip=None, name=None):
        super().__init__(_rate(self, learning_rate), parameters, _decay(weight_decay), grad_clip, name)


class Momentum(_Eager, _fluid.MomentumOptimizer):
    def __init__(self, learning_rate=0.001, momentum=0.9, parameters=None, use_nesterov=False, weight_decay=None,
                 grad_clip=None, name=None):
        super().__init__(_rate(self, learning_rate), momentum, parameters, use_nesterov, _decay(weight_decay),
                         grad_clip, name)


class Adam(_Eager, _fluid.AdamOptimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08, parameters=None,
                 weight_decay=None, grad_clip=None, name=None, lazy_mode=False):
        super().__init__(_rate(self, learning_rate), beta1, beta2, epsilon, parameters, _decay(weight_decay),
                         grad_clip, name, lazy_mode)


class Adagrad(_Eager, _fluid.AdagradOptimizer):
    def __init__(self, learning_rate, epsilon=1e-06, parameters=None, weight_decay=None, grad_clip=None, name=None,
                 initial_accumulator_value=0.0):
        super().__init__(_rate(self, learning_rate), epsilon, parameters, _decay(weight_decay), grad_clip,
                         name, initial_accumulator_value)


class RMSProp(_Eager, _fluid.RMSPropOptimizer):
    def __init__(self, learning_rate, rho=0.95, epsilon=1e-06, momentum=0.0, centered=False, parameters=None,
                 weight_decay=None, grad_clip=None, name=None):
        super().__init__(_rate(self, learning_rate), rho, epsilon, momentum, centered, parameters,
                         _decay(weight_decay), grad_clip, name)
