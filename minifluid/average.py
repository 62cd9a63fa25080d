"""``fluid.average.WeightedAverage``: a running weighted mean of fetched values (deprecated in fluid 1.x
in favour of ``fluid.metrics``; the book's scripts still use it)."""
import numbers
import warnings

import numpy as np

__all__ = ["WeightedAverage"]


def _is_number(value):
    """A Python or numpy number, or a one-element array (what fetching a ``[1]`` variable gives)."""
    return (isinstance(value, numbers.Number) and not isinstance(value, bool)) or \
        (isinstance(value, np.ndarray) and value.shape == (1,))


class WeightedAverage:
    """``add(value, weight)`` many times, then ``eval()``: sum(value * weight) / sum(weight)."""

    def __init__(self):
        warnings.warn(f"The {type(self).__name__} is deprecated, please use fluid.metrics.Accuracy instead.",
                      Warning)
        self.reset()

    def reset(self):
        self.numerator = None
        self.denominator = None

    def add(self, value, weight):
        if not (_is_number(value) or isinstance(value, np.ndarray)):
            raise ValueError(f"The 'value' must be a number(int, float) or a numpy ndarray, got {value!r}.")
        if not _is_number(weight):
            raise ValueError(f"The 'weight' must be a number(int, float), got {weight!r}.")
        if self.numerator is None:
            self.numerator, self.denominator = value * weight, weight
        else:
            self.numerator = self.numerator + value * weight
            self.denominator = self.denominator + weight

    def eval(self):
        if self.numerator is None:
            raise ValueError("There is no data to be averaged in WeightedAverage.")
        return self.numerator / self.denominator
