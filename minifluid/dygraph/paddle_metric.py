"""``paddle.metric`` (2.0): the Metric interface, Accuracy and the ``accuracy`` function.

``Accuracy.compute(pred, label)`` turns scores into a [N, maxk] 0/1 matrix (1 where the i-th best score
is the label) with tensor ops; ``update`` counts it on the host and returns the batch accuracy;
``accumulate`` gives the accuracy over everything updated since ``reset``. With several ``topk``
values each of these is a list, one entry per k, as in paddle.
"""
import numpy as np

from .. import layers
from .base import eager_api
from .tensor import Tensor

__all__ = ["Accuracy", "Metric", "accuracy"]


class Metric:
    """Base class of paddle 2.x metrics: ``reset``, ``update``, ``accumulate``, ``name`` (and optionally
    ``compute``, which runs on the network's outputs before ``update``)."""

    def reset(self):
        raise NotImplementedError(f"function 'reset' not implemented in {type(self).__name__}.")

    def update(self, *args):
        raise NotImplementedError(f"function 'update' not implemented in {type(self).__name__}.")

    def accumulate(self):
        raise NotImplementedError(f"function 'accumulate' not implemented in {type(self).__name__}.")

    def name(self):
        raise NotImplementedError(f"function 'name' not implemented in {type(self).__name__}.")

    def compute(self, *args):
        return args


class Accuracy(Metric):
    """Top-k accuracy for each k of ``topk``."""

    def __init__(self, topk=(1,), name=None, *args, **kwargs):
        self.topk = tuple(topk)
        self.maxk = max(self.topk)
        name = name or "acc"
        self._name = [f"{name}_top{k}" for k in self.topk] if self.maxk != 1 else [name]
        self.reset()

    @eager_api
    def compute(self, pred, label, *args):
        """[..., maxk] float32: 1 where the k-th highest score of ``pred`` is ``label`` (ids of shape [N] or
        [N, 1], or one-hot rows)."""
        _, order = layers.argsort(pred, axis=-1, descending=True)
        order = layers.slice(order, axes=[len(pred.shape) - 1], starts=[0], ends=[self.maxk])
        if len(label.shape) == 1 or (len(label.shape) == 2 and label.shape[-1] == 1):
            label = layers.reshape(label, [-1, 1])
        elif label.shape[-1] != 1:  # one-hot rows
            label = layers.unsqueeze(layers.argmax(label, axis=-1), [-1])
        return layers.cast(layers.equal(order, layers.cast(label, "int64")), "float32")

    def update(self, correct, *args):
        """Count a ``compute`` result; returns this batch's accuracy (a list for several ``topk``)."""
        correct = correct.numpy() if isinstance(correct, Tensor) else np.asarray(correct)
        samples = int(np.prod(correct.shape[:-1]))
        accs = []
        for i, k in enumerate(self.topk):
            hits = float(correct[..., :k].sum())
            accs.append(hits / samples if samples else 0.0)
            self.total[i] += hits
            self.count[i] += samples
        return accs[0] if len(self.topk) == 1 else accs

    def reset(self):
        self.total = [0.0] * len(self.topk)
        self.count = [0] * len(self.topk)

    def accumulate(self):
        res = [t / c if c > 0 else 0.0 for t, c in zip(self.total, self.count)]
        return res[0] if len(self.topk) == 1 else res

    def name(self):
        return self._name


@eager_api
def accuracy(input, label, k=1, correct=None, total=None, name=None):
    """Top-k accuracy of scores ``input`` [N, C] against int64 ``label`` [N, 1], a float32 tensor of shape [1]."""
    return layers.accuracy(input, label, k=k, correct=correct, total=total)
