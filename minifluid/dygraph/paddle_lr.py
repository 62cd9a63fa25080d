"""``paddle.optimizer.lr`` (2.0): learning-rate schedulers for the paddle 2.x optimizers.

A scheduler is a Python object: ``scheduler()`` is the current rate, ``scheduler.step()`` moves to the
next epoch (or step) and recomputes it, ``state_dict`` / ``set_state_dict`` save and restore it. Pass one
as ``learning_rate`` to ``paddle.optimizer.SGD/Adam/...``: each update reads the scheduler's current value
(``optimizer.get_lr()``). The formulas and argument errors are paddle 2.0's.
"""
import math

import numpy as np

__all__ = ["CosineAnnealingDecay", "ExponentialDecay", "InverseTimeDecay", "LRScheduler", "LambdaDecay",
           "LinearWarmup", "MultiStepDecay", "NaturalExpDecay", "NoamDecay", "PiecewiseDecay", "PolynomialDecay",
           "ReduceOnPlateau", "StepDecay"]


class LRScheduler:
    """Base class: subclasses define ``get_lr()`` from ``self.base_lr`` and ``self.last_epoch``."""

    def __init__(self, learning_rate=0.1, last_epoch=-1, verbose=False):
        if not isinstance(learning_rate, (float, int)):
            raise TypeError(f"The type of learning rate must be float, but received {type(learning_rate)}")
        self.base_lr = float(learning_rate)
        self.last_lr = float(learning_rate)
        self.last_epoch = last_epoch
        self.verbose = verbose
        self.step()

    def __call__(self):
        return self.last_lr

    def step(self, epoch=None):
        """Advance one epoch (or jump to ``epoch``) and recompute the rate."""
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            self.last_lr = closed() if closed is not None else self.get_lr()
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")

    def state_dict(self):
        return {k: v for k, v in vars(self).items() if isinstance(v, (int, float, bool, list, tuple, str))}

    def set_state_dict(self, state_dict):
        for key, value in state_dict.items():
            setattr(self, key, value)

    set_dict = set_state_dict

    def get_lr(self):
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")


class StepDecay(LRScheduler):
    """``base_lr * gamma ** (epoch // step_size)``."""

    def __init__(self, learning_rate, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(step_size, int):
            raise TypeError(f"The type of 'step_size' must be 'int', but received {type(step_size)}.")
        if gamma >= 1.0:
            raise ValueError("gamma should be < 1.0.")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** (self.last_epoch // self.step_size)


class MultiStepDecay(LRScheduler):
    """``base_lr * gamma ** (number of milestones passed)``."""

    def __init__(self, learning_rate, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        if not isinstance(milestones, (tuple, list)):
            raise TypeError(f"The type of 'milestones' in 'MultiStepDecay' must be 'tuple, list', but received "
                            f"{type(milestones)}.")
        if not all(milestones[i] < milestones[i + 1] for i in range(len(milestones) - 1)):
            raise ValueError("The elements of milestones must be incremented")
        if gamma >= 1.0:
            raise ValueError("gamma should be < 1.0.")
        self.milestones, self.gamma = list(milestones), gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        passed = next((i for i, m in enumerate(self.milestones) if self.last_epoch < m), len(self.milestones))
        return self.base_lr * self.gamma ** passed


class PiecewiseDecay(LRScheduler):
    """``values[i]`` while ``epoch < boundaries[i]``; ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries, values, last_epoch=-1, verbose=False):
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseDecay: len(values) ({len(values)}) must be len(boundaries) + 1 "
                             f"({len(boundaries) + 1})")
        self.boundaries, self.values = list(boundaries), list(values)
        super().__init__(last_epoch=last_epoch, verbose=verbose)

    def get_lr(self):
        return next((v for b, v in zip(self.boundaries, self.values) if self.last_epoch < b), self.values[-1])


class ExponentialDecay(LRScheduler):
    """``base_lr * gamma ** epoch``."""

    def __init__(self, learning_rate, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.gamma ** self.last_epoch


class NaturalExpDecay(ExponentialDecay):
    """``base_lr * exp(-gamma * epoch)``."""

    def get_lr(self):
        return self.base_lr * math.exp(-self.gamma * self.last_epoch)


class InverseTimeDecay(ExponentialDecay):
    """``base_lr / (1 + gamma * epoch)``."""

    def get_lr(self):
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """``(base_lr - end_lr) * (1 - epoch / decay_steps) ** power + end_lr``; ``cycle`` restarts it."""

    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False, last_epoch=-1,
                 verbose=False):
        if not decay_steps > 0 or not isinstance(decay_steps, int):
            raise AssertionError(" 'decay_steps' must be a positive integer.")
        self.decay_steps, self.end_lr, self.power, self.cycle = decay_steps, float(end_lr), power, cycle
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        epoch, steps = self.last_epoch, self.decay_steps
        if self.cycle:
            steps = self.decay_steps * (max(math.ceil(epoch / self.decay_steps), 1))
        else:
            epoch = min(epoch, steps)
        return (self.base_lr - self.end_lr) * (1 - epoch / steps) ** self.power + self.end_lr


class LinearWarmup(LRScheduler):
    """From ``start_lr`` to ``end_lr`` linearly over ``warmup_steps``, then ``learning_rate`` (a float or a
    scheduler, stepped from 0 after the warm-up)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr, last_epoch=-1, verbose=False):
        if not isinstance(learning_rate, (float, int, LRScheduler)):
            raise TypeError(f"the type of learning_rate should be [int, float or LRScheduler], the current type is "
                            f"{learning_rate}")
        if not (isinstance(warmup_steps, int) and warmup_steps > 0):
            raise AssertionError(" 'warmup_steps' must be a positive integer.")
        if end_lr <= start_lr:
            raise AssertionError(f"end_lr {end_lr} must be greater than start_lr {start_lr}")
        self.learning_rate, self.warmup_steps = learning_rate, warmup_steps
        self.start_lr, self.end_lr = float(start_lr), float(end_lr)
        super().__init__(start_lr, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * self.last_epoch / self.warmup_steps + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)


class CosineAnnealingDecay(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` over ``T_max`` epochs (paddle 2.0's recursive form;
    ``step(epoch)`` uses the closed form)."""

    def __init__(self, learning_rate, T_max, eta_min=0, last_epoch=-1, verbose=False):
        if not isinstance(T_max, int):
            raise TypeError(f"The type of 'T_max' in 'CosineAnnealingDecay' must be 'int', but received "
                            f"{type(T_max)}.")
        if not isinstance(eta_min, (float, int)):
            raise TypeError(f"The type of 'eta_min' in 'CosineAnnealingDecay' must be 'float, int', but received "
                            f"{type(eta_min)}.")
        self.T_max, self.eta_min = T_max, float(eta_min)
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        if self.last_epoch == 0:
            return self.base_lr
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return self.last_lr + (self.base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
        return ((1 + math.cos(math.pi * self.last_epoch / self.T_max)) /
                (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)) * (self.last_lr - self.eta_min) +
                self.eta_min)

    def _get_closed_form_lr(self):
        cosine = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return self.eta_min + (self.base_lr - self.eta_min) * cosine / 2


class NoamDecay(LRScheduler):
    """``base_lr * d_model ** -0.5 * min(epoch ** -0.5, epoch * warmup_steps ** -1.5)``."""

    def __init__(self, d_model, warmup_steps, learning_rate=1.0, last_epoch=-1, verbose=False):
        self.d_model, self.warmup_steps = d_model, warmup_steps
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        a = 1 if self.last_epoch == 0 else self.last_epoch ** -0.5
        return self.base_lr * self.d_model ** -0.5 * min(a, self.warmup_steps ** -1.5 * self.last_epoch)


class LambdaDecay(LRScheduler):
    """``base_lr * lr_lambda(epoch)``."""

    def __init__(self, learning_rate, lr_lambda, last_epoch=-1, verbose=False):
        if not callable(lr_lambda):
            raise TypeError(f"The type of 'lr_lambda' in 'LambdaDecay' must be 'function', but received "
                            f"{type(lr_lambda)}.")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self):
        return self.base_lr * self.lr_lambda(self.last_epoch)


class ReduceOnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when ``step(metrics)`` has not improved for ``patience`` epochs."""

    def __init__(self, learning_rate, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, epsilon=1e-8, verbose=False):
        mode, threshold_mode = mode.lower(), threshold_mode.lower()
        if mode not in ("min", "max"):
            raise ValueError("mode: " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode: " + threshold_mode + " is unknown!")
        if factor >= 1.0:
            raise ValueError("new_lr = origin_lr * gamma and gamma should be < 1.0.")
        if not isinstance(learning_rate, (float, int)):
            raise TypeError(f"The type of 'learning_rate' in 'ReduceOnPlateau' must be 'float', but received "
                            f"{type(learning_rate)}.")
        self.mode, self.factor, self.patience, self.threshold = mode, factor, patience, threshold
        self.threshold_mode, self.cooldown, self.min_lr, self.epsilon = threshold_mode, cooldown, min_lr, epsilon
        self.cooldown_counter, self.best, self.num_bad_epochs = 0, None, 0
        self.base_lr = self.last_lr = float(learning_rate)
        self.last_epoch, self.verbose = 0, verbose

    def step(self, metrics, epoch=None):
        """One epoch's ``metrics`` (a float, or a one-element Tensor / ndarray)."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        value = metrics.numpy() if hasattr(metrics, "numpy") else metrics
        value = np.asarray(value)
        if value.size != 1:
            raise AssertionError(f"the metrics.shape should be (1L,), but the current metrics.shape is "
                                 f"{value.shape}. Maybe that you should call paddle.mean to process it first.")
        current = float(value.reshape(-1)[0])
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                if self.verbose:
                    print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")

    def _is_better(self, current, best):
        margin = best * self.threshold if self.threshold_mode == "rel" else self.threshold
        return current < best - margin if self.mode == "min" else current > best + margin
