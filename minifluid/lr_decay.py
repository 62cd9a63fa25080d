"""fluid 1.8's dygraph learning-rate decays (``fluid.dygraph.PiecewiseDecay``, ``NoamDecay``, ``StepDecay`` ...).

Pass one as a fluid optimizer's ``learning_rate`` in dygraph mode. Two kinds, stepped as fluid 1.8 steps them:

* step decays (``LearningRateDecay``): every ``minimize`` calls the decay, which computes the rate of its
  current ``step_num`` and then advances ``step_num`` by ``step_size`` (``begin`` is the first update's step);
* epoch decays (``_LearningRateEpochDecay``: StepDecay, MultiStepDecay, LambdaDecay) and ReduceLROnPlateau keep
  one rate until ``decay.epoch()`` (resp. ``decay.step(loss)``) changes it; ``minimize`` does not move them.

``optimizer.current_step_lr()`` is the rate of the last update (before any, the rate the first will use), and
the optimizer's ``state_dict()`` carries the decay's state under ``"LR_Scheduler"`` plus, for step decays, the
step as an int32 ``"global_step"`` tensor; ``set_dict`` restores both (minifluid/optimizer.py). Rates are
computed in Python floats and handed to the update ops as ``[1]`` eager tensors of ``dtype``. In dygraph mode
``fluid.layers.exponential_decay`` and its siblings return these objects (layers/learning_rate_scheduler.py).
This module sits below layers/, optimizer.py and dygraph/ so that all three can use it.
"""
import math
import warnings

import numpy as np

from .framework import dygraph_mode, unique_name
from .framework.variable import Variable

__all__ = ["CosineDecay", "ExponentialDecay", "InverseTimeDecay", "LambdaDecay", "LearningRateDecay",
           "LinearLrWarmup", "MultiStepDecay", "NaturalExpDecay", "NoamDecay", "PiecewiseDecay", "PolynomialDecay",
           "ReduceLROnPlateau", "StepDecay"]


def _float(value):
    """A number, or the one value of a Tensor / array."""
    if isinstance(value, Variable) or isinstance(value, np.ndarray):
        array = np.asarray(value.numpy() if isinstance(value, Variable) else value)
        if array.size != 1:
            raise ValueError(f"a learning-rate value must hold one number, but it has shape {list(array.shape)}")
        return float(array.reshape(-1)[0])
    return float(value)


def _eager_tensor(array, name, decay):
    tracer = dygraph_mode.current_tracer()
    if tracer is None:
        raise RuntimeError(f"{type(decay).__name__} makes learning-rate tensors only in dygraph mode "
                           "(fluid.dygraph.guard()); in a static program use fluid.layers' decays")
    var = tracer.eager_tensor(array)
    var.name = name
    return var


class LearningRateDecay:
    """Base class of the step decays: subclasses define ``step()``, the rate (a float) at ``self.step_num``.

    Args:
        begin (int, default 0): the step of the first update. step (int, default 1): how far each update
        advances. dtype (str, default 'float32'): the dtype of the rate tensor the update ops read.
    """

    def __init__(self, begin=0, step=1, dtype="float32"):
        self.step_num = begin
        self.step_size = step
        self.dtype = dtype

    def __call__(self):
        """The rate for this update (a ``[1]`` tensor); then advance one step."""
        lr = self.step()
        if not isinstance(lr, Variable):
            lr = self.create_lr_var(lr)
        self.step_num += self.step_size
        return lr

    def create_lr_var(self, lr):
        """``lr`` as a ``[1]`` eager tensor of ``self.dtype`` (dygraph mode only)."""
        return _eager_tensor(np.array([_float(lr)], dtype=self.dtype), unique_name.generate("learning_rate"), self)

    def _peek(self):
        """The rate the next update will use, changing nothing."""
        return _float(self.step())

    def _state_keys(self):
        self.keys = ["step_num"]

    def state_dict(self):
        """The decay's state (``{'step_num': ...}`` for step decays); tensors saved as floats."""
        self._state_keys()
        return {key: _float(self.__dict__[key]) if isinstance(self.__dict__[key], Variable) else self.__dict__[key]
                for key in self.keys if key in self.__dict__}

    def set_dict(self, state_dict):
        """Restore what ``state_dict()`` returned.

        Raises:
            RuntimeError: a key of this decay's state is missing.
        """
        self._state_keys()
        for key in self.keys:
            if key not in state_dict:
                raise RuntimeError("Please check whether state_dict is correct for optimizer. Can't find "
                                   f"[ {key} ] in state_dict")
            self.__dict__[key] = state_dict[key]
        if len(state_dict) > len(self.keys):
            warnings.warn("There are some unused values in state_dict. Maybe the optimizer have different "
                          "'LearningRateDecay' when invoking state_dict and set_dict")

    set_state_dict = set_dict

    # --- what minifluid/optimizer.py asks -----------------------------------------------------------
    def _current_lr(self, last_rate):
        """``optimizer.current_step_lr()``: the last update's rate tensor's value, else the next one's."""
        return _float(last_rate) if last_rate is not None else self._peek()

    def _optimizer_state(self):
        step = _eager_tensor(np.array([self.step_num], dtype="int32"), "global_step", self)
        return {"LR_Scheduler": self.state_dict(), "global_step": step}

    def _load_optimizer_state(self, state_dict):
        _RateHolder._load_optimizer_state(self, state_dict)
        assert "global_step" in state_dict, \
            "Global step not in state dict, Dygraph use LearningRateDecay, global_step must in state_dict"
        step = state_dict["global_step"]
        step = np.asarray(step.numpy() if isinstance(step, Variable) else step)
        assert step.shape == (1,), f"global step shape is (1,), the shape is {step.shape}"
        self.step_num = int(step[0])

    def step(self):
        raise NotImplementedError(f"{type(self).__name__} must define step()")


class PiecewiseDecay(LearningRateDecay):
    """``values[i]`` while ``step_num < boundaries[i]``, ``values[-1]`` from the last boundary on."""

    def __init__(self, boundaries, values, begin, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseDecay needs len(values) == len(boundaries) + 1, but got {len(values)} "
                             f"values for {len(boundaries)} boundaries")
        self.boundaries, self.values = list(boundaries), list(values)

    def step(self):
        return next((v for b, v in zip(self.boundaries, self.values) if self.step_num < b), self.values[-1])


class _RateDecay(LearningRateDecay):
    """A rate that decays with ``step_num / decay_steps`` (floored when ``staircase``)."""

    def __init__(self, learning_rate, decay_steps, decay_rate, staircase=False, begin=0, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        self.learning_rate, self.decay_steps, self.decay_rate, self.staircase = (learning_rate, decay_steps,
                                                                                 decay_rate, staircase)

    def _progress(self):
        progress = self.step_num / self.decay_steps
        return math.floor(progress) if self.staircase else progress


class NaturalExpDecay(_RateDecay):
    """``learning_rate * exp(-decay_rate * progress)``."""

    def step(self):
        return _float(self.learning_rate) * math.exp(-self.decay_rate * self._progress())


class ExponentialDecay(_RateDecay):
    """``learning_rate * decay_rate ** progress``."""

    def step(self):
        return _float(self.learning_rate) * self.decay_rate ** self._progress()


class InverseTimeDecay(_RateDecay):
    """``learning_rate / (1 + decay_rate * progress)``."""

    def step(self):
        return _float(self.learning_rate) / (1 + self.decay_rate * self._progress())


class PolynomialDecay(LearningRateDecay):
    """``(learning_rate - end_learning_rate) * (1 - step / decay_steps) ** power + end_learning_rate``, the step
    held at ``decay_steps``; with ``cycle`` the horizon grows instead to ``decay_steps * ceil(step / decay_steps)``
    (at least ``decay_steps``)."""

    def __init__(self, learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False, begin=0, step=1,
                 dtype="float32"):
        super().__init__(begin, step, dtype)
        self.learning_rate, self.decay_steps, self.end_learning_rate = learning_rate, decay_steps, end_learning_rate
        self.power, self.cycle = power, cycle

    def step(self):
        step, horizon = self.step_num, self.decay_steps
        if self.cycle:
            horizon = self.decay_steps * (math.ceil(step / self.decay_steps) if step != 0 else 1)
        else:
            step = min(step, horizon)
        end = self.end_learning_rate
        return (_float(self.learning_rate) - end) * (1 - step / horizon) ** self.power + end


class CosineDecay(LearningRateDecay):
    """``learning_rate * 0.5 * (cos(epoch * pi / epochs) + 1)`` with ``epoch = floor(step / step_each_epoch)``."""

    def __init__(self, learning_rate, step_each_epoch, epochs, begin=0, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        self.learning_rate, self.step_each_epoch, self.epochs = learning_rate, step_each_epoch, epochs

    def step(self):
        epoch = math.floor(self.step_num / self.step_each_epoch)
        return _float(self.learning_rate) * 0.5 * (math.cos(epoch * math.pi / self.epochs) + 1)


class NoamDecay(LearningRateDecay):
    """``learning_rate * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)``, from step 1."""

    def __init__(self, d_model, warmup_steps, begin=1, step=1, dtype="float32", learning_rate=1.0):
        super().__init__(begin, step, dtype)
        self.d_model, self.warmup_steps, self.learning_rate = d_model, warmup_steps, learning_rate

    def step(self):
        n = self.step_num
        decay = n ** -0.5 if n > 0 else math.inf
        return (_float(self.learning_rate) * _float(self.d_model) ** -0.5 *
                min(decay, _float(self.warmup_steps) ** -1.5 * n))


class LinearLrWarmup(LearningRateDecay):
    """``start_lr + (end_lr - start_lr) * step / warmup_steps`` while ``step < warmup_steps``, then
    ``learning_rate``. A decay given as ``learning_rate`` is stepped on every update, the warm-up ones too
    (as fluid 1.8 does), so it has moved on by ``warmup_steps`` updates when the warm-up ends."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, begin=1, step=1, dtype="float32"):
        super().__init__(begin, step, dtype)
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (float, int, LearningRateDecay)):
            raise TypeError("the type of learning_rate should be [int, float or LearningRateDecay], the current "
                            f"type is {learning_rate}")
        assert end_lr > start_lr, f"end_lr {end_lr} must be greater than start_lr {start_lr}"
        self.learning_rate, self.warmup_steps = learning_rate, warmup_steps
        self.start_lr = float(start_lr)
        self.lr_ratio_before_warmup = (float(end_lr) - float(start_lr)) / float(warmup_steps)

    def _rate(self, after):
        if self.step_num < self.warmup_steps:
            return self.start_lr + self.lr_ratio_before_warmup * self.step_num
        return after

    def step(self):
        inner = self.learning_rate
        return self._rate(_float(inner() if isinstance(inner, LearningRateDecay) else inner))

    def _peek(self):
        inner = self.learning_rate
        return self._rate(inner._peek() if isinstance(inner, LearningRateDecay) else float(inner))


def _check_rate(learning_rate, kinds, api):
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, kinds):
        names = ", ".join(k.__name__ for k in kinds)
        raise TypeError(f"The type of 'learning_rate' in '{api}' must be '{names}', but received "
                        f"{type(learning_rate)}.")


class _RateHolder(LearningRateDecay):
    """A decay holding one rate (``self.learning_rate``: a float, or the tensor of it once asked for) until
    its owner changes it; ``minimize`` reads it without moving it."""

    def __call__(self):
        if not isinstance(self.learning_rate, Variable):
            self.learning_rate = self.create_lr_var(self.learning_rate)
        return self.learning_rate

    def _peek(self):
        return _float(self.learning_rate)

    def _current_lr(self, last_rate):
        return _float(last_rate) if last_rate is not None else _float(self())

    def _optimizer_state(self):
        return {"LR_Scheduler": self.state_dict()}

    def _load_optimizer_state(self, state_dict):
        if "LR_Scheduler" not in state_dict:
            raise KeyError(f"the optimizer's state_dict has no 'LR_Scheduler' entry, but its learning rate is a "
                           f"{type(self).__name__}")
        self.set_dict(state_dict["LR_Scheduler"])


class ReduceLROnPlateau(_RateHolder):
    """Multiply the rate by ``decay_rate`` (not below ``min_lr``) once ``step(loss)`` has seen no improvement for
    more than ``patience`` epochs, then wait ``cooldown`` epochs; ``mode='max'`` watches a rising metric. An
    improvement beats the best by ``best * threshold`` (``threshold_mode='rel'``) or by ``threshold`` ('abs');
    a reduction smaller than ``eps`` is skipped."""

    def __init__(self, learning_rate, mode="min", decay_rate=0.1, patience=10, verbose=False, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8, dtype="float32"):
        super().__init__(dtype=dtype)
        mode, threshold_mode = mode.lower(), threshold_mode.lower()
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if decay_rate >= 1.0:
            raise ValueError("new_lr = origin_lr * decay_rate and decay_rate should be < 1.0.")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        _check_rate(learning_rate, (float, int, Variable), "ReduceLROnPlateau")
        self.mode, self.decay_rate, self.threshold_mode = mode, float(decay_rate), threshold_mode
        self.learning_rate, self.verbose, self.patience, self.threshold = learning_rate, verbose, patience, threshold
        self.cooldown, self.min_lr, self.eps = cooldown, float(min_lr), eps
        self.cooldown_counter, self.best_loss, self.num_bad_epochs, self.epoch_num = 0, None, 0, 0

    def _state_keys(self):
        self.keys = ["cooldown_counter", "best_loss", "num_bad_epochs", "epoch_num", "learning_rate"]

    def step(self, loss):
        """One epoch's ``loss`` (a ``[1]`` Tensor): count it, and reduce the rate after ``patience`` bad epochs.

        Raises:
            TypeError: ``loss`` is not a Tensor. AssertionError: it is not of shape [1].
        """
        if not isinstance(loss, Variable):
            raise TypeError(f"The type of 'loss' in ReduceLROnPlateau.step must be Variable, but received "
                            f"{type(loss)}.")
        assert len(loss.shape) == 1 and loss.shape[0] == 1, (
            f"the loss.shape should be (1L,), but the current loss.shape is {tuple(loss.shape)}. Maybe that you "
            "should call fluid.layers.mean to process it first.")
        self.epoch_num += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best_loss is None or self._is_better(_float(loss), _float(self.best_loss)):
            self.best_loss, self.num_bad_epochs = loss, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            old = _float(self.learning_rate)
            new = max(old * self.decay_rate, self.min_lr)
            if old - new > self.eps:
                if self.verbose:
                    print(f"Epoch {self.epoch_num}: reducing learning rate from {old} to {new}.")
                self.learning_rate = self.create_lr_var(new)

    def _is_better(self, current, best):
        margin = best * self.threshold if self.threshold_mode == "rel" else self.threshold
        return current < best - margin if self.mode == "min" else current > best + margin


class _LearningRateEpochDecay(_RateHolder):
    """Base class of the epoch decays: subclasses define ``get_lr()`` from ``self.base_lr`` and
    ``self.epoch_num``; ``epoch()`` moves to the next epoch (``epoch(n)`` to epoch ``n``)."""

    def __init__(self, learning_rate, dtype=None):
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (float, int)):
            raise TypeError(f"The type of 'learning_rate' must be 'float, int', but received {type(learning_rate)}.")
        if learning_rate < 0:
            raise ValueError(f"Invalid learning rate: {learning_rate}")
        self.dtype = dtype or "float32"  # no step_num / step_size: an epoch decay does not step per update
        self.base_lr = float(learning_rate)
        self.epoch_num = -1
        self.learning_rate = self.base_lr
        self.epoch()

    def _state_keys(self):
        self.keys = ["epoch_num", "learning_rate"]

    def epoch(self, epoch=None):
        """Move to the next epoch (or to ``epoch``) and recompute the rate."""
        self.epoch_num = self.epoch_num + 1 if epoch is None else epoch
        self.learning_rate = self.get_lr()

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")


def _check_decay_rate(decay_rate):
    if decay_rate >= 1.0:
        raise ValueError("decay_rate should be < 1.0.")
    return decay_rate


class StepDecay(_LearningRateEpochDecay):
    """``learning_rate * decay_rate ** (epoch // step_size)``."""

    def __init__(self, learning_rate, step_size, decay_rate=0.1):
        if not isinstance(step_size, int):
            raise TypeError(f"The type of 'step_size' must be 'int', but received {type(step_size)}.")
        self.step_size, self.decay_rate = step_size, _check_decay_rate(decay_rate)
        super().__init__(learning_rate)

    def get_lr(self):
        return self.base_lr * self.decay_rate ** (self.epoch_num // self.step_size)


class MultiStepDecay(_LearningRateEpochDecay):
    """``learning_rate * decay_rate ** (number of milestones at or before the epoch)``."""

    def __init__(self, learning_rate, milestones, decay_rate=0.1):
        if not isinstance(milestones, (tuple, list)):
            raise TypeError("The type of 'milestones' in 'MultiStepDecay' must be 'tuple, list', but received "
                            f"{type(milestones)}.")
        if not all(a < b for a, b in zip(milestones, milestones[1:])):
            raise ValueError("The elements of milestones must be incremented")
        self.milestones, self.decay_rate = milestones, _check_decay_rate(decay_rate)
        super().__init__(learning_rate)

    def get_lr(self):
        passed = sum(1 for m in self.milestones if self.epoch_num >= m)
        return self.base_lr * self.decay_rate ** passed


class LambdaDecay(_LearningRateEpochDecay):
    """``learning_rate * lr_lambda(epoch)``."""

    def __init__(self, learning_rate, lr_lambda):
        if not callable(lr_lambda):
            raise TypeError(f"The type of 'lr_lambda' in 'LambdaDecay' must be 'function', but received "
                            f"{type(lr_lambda)}.")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.epoch_num)
