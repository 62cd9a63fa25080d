"""Map-style and iterable datasets, and the samplers that turn a dataset into batches of indices.

Randomness: ``RandomSampler`` draws from numpy's global RNG (``np.random.seed`` makes an epoch
reproducible) unless given a ``generator``. The draw happens when ``iter(sampler)`` is called, not
lazily at the first index, so a loader that starts an epoch in the consumer thread draws there.
"""
import itertools
import math
import os
from collections.abc import Iterable

import numpy as np

from minifluid.data.worker import get_worker_info

__all__ = ["BatchSampler", "ChainDataset", "ComposeDataset", "Dataset", "DistributedBatchSampler", "IterableDataset",
           "RandomSampler", "Sampler", "SequenceSampler", "Subset", "TensorDataset", "WeightedRandomSampler",
           "get_worker_info"]


class Dataset:
    """Map-style dataset: subclasses implement ``__getitem__(idx)`` and ``__len__()``.

    A sample is an ndarray or number (one field), a tuple/list of them, or a dict.
    """

    def __getitem__(self, idx):
        raise NotImplementedError(f"'__getitem__' not implemented in class {type(self).__name__}")

    def __len__(self):
        raise NotImplementedError(f"'__len__' not implemented in class {type(self).__name__}")


class IterableDataset(Dataset):
    """Stream-style dataset: subclasses implement ``__iter__()`` yielding samples.

    With worker processes each worker iterates its own copy; split the stream with ``get_worker_info()``.
    """

    def __iter__(self):
        raise NotImplementedError(f"'__iter__' not implemented in class {type(self).__name__}")

    def __getitem__(self, idx):
        raise RuntimeError(f"'__getitem__' should not be called for IterableDataset {type(self).__name__}")

    def __len__(self):
        raise RuntimeError(f"'__len__' should not be called for IterableDataset {type(self).__name__}")


class TensorDataset(Dataset):
    """Sample i is ``tuple(t[i] for t in tensors)``; every tensor needs the same dim 0.

    Args:
        tensors (list of ndarray): arrays (or anything ``np.asarray`` accepts, e.g. LoDTensor).
    """

    def __init__(self, tensors):
        self.tensors = [np.asarray(t) for t in tensors]
        if not self.tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        lengths = {t.shape[0] if t.ndim else None for t in self.tensors}
        if len(lengths) != 1 or None in lengths:
            raise ValueError("tensors not have same shape of the 1st dimension: "
                             f"{[t.shape for t in self.tensors]}")

    def __getitem__(self, idx):
        return tuple(t[idx] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class ComposeDataset(Dataset):
    """Map-style datasets of equal length side by side: sample i is the fields of each dataset's sample i."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("input datasets should not be empty")
        for ds in self.datasets:
            if isinstance(ds, IterableDataset):
                raise TypeError("ComposeDataset only supports map-style datasets, got IterableDataset")
        if len({len(ds) for ds in self.datasets}) != 1:
            raise ValueError(f"lengths of datasets should be the same, got {[len(ds) for ds in self.datasets]}")

    def __len__(self):
        return len(self.datasets[0])

    def __getitem__(self, idx):
        fields = []
        for ds in self.datasets:
            sample = ds[idx]
            fields.extend(sample if isinstance(sample, (list, tuple)) else [sample])
        return tuple(fields)


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        for ds in self.datasets:
            if not isinstance(ds, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got {type(ds).__name__}")

    def __iter__(self):
        return itertools.chain.from_iterable(self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, idx):
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class Sampler:
    """Yields dataset indices; subclasses implement ``__iter__`` (and ``__len__`` where known)."""

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self):
        raise NotImplementedError(f"'__iter__' not implemented in class {type(self).__name__}")


class SequenceSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order: a permutation, or ``num_samples`` draws with replacement.

    Args:
        data_source (Dataset): anything with ``__len__``.
        replacement (bool, default False): draw with replacement.
        num_samples (int, default len(data_source)): only with ``replacement=True``.
        generator: paddle-style iterator of indices (used as is), or a ``np.random.Generator`` /
            ``RandomState`` to draw from; default numpy's global RNG.
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(data_source)
        if not isinstance(replacement, bool):
            raise TypeError(f"expect boolean value for replacement, but got replacement={replacement}")
        if num_samples is not None and not replacement:
            raise ValueError("num_samples should not be specified while replacement is False")
        self.replacement, self._num_samples, self.generator = replacement, num_samples, generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        gen = self.generator
        if gen is not None and not hasattr(gen, "permutation"):  # paddle: an iterator of indices
            return itertools.islice(gen, self.num_samples)
        rng = np.random if gen is None else gen
        n = len(self.data_source)
        if self.replacement:
            drawn = rng.randint(0, n, self.num_samples) if hasattr(rng, "randint") else \
                rng.integers(0, n, self.num_samples)
        else:
            drawn = rng.permutation(n)
        return iter(drawn.tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups indices into lists of ``batch_size``; the final short list is kept unless ``drop_last``.

    Args:
        dataset (Dataset): builds a ``RandomSampler`` (shuffle) or ``SequenceSampler``; or give
        sampler (Sampler or iterable of indices): instead of ``dataset`` (then ``shuffle`` must be False).
        shuffle (bool, default False), batch_size (int, default 1), drop_last (bool, default False).
    """

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        if dataset is None:
            if sampler is None:
                raise AssertionError("either dataset or sampler should be set")
            if not isinstance(sampler, (Sampler, Iterable)):
                raise AssertionError(f"sampler should be either paddle.io.Sampler or Iterable, "
                                     f"but got {type(sampler)}")
            if shuffle:
                raise AssertionError("shuffle should be False when sampler is set")
            self.sampler = sampler
        else:
            if isinstance(dataset, IterableDataset):
                raise AssertionError("dataset should not be a paddle.io.IterableDataset")
            if sampler is not None:
                raise AssertionError("should not set both dataset and sampler")
            if not isinstance(shuffle, bool):
                raise AssertionError(f"shuffle should be a boolean value, but got {type(shuffle)}")
            self.sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise AssertionError(f"batch_size should be a positive integer, but got {batch_size}")
        if not isinstance(drop_last, bool):
            raise AssertionError(f"drop_last should be a boolean value, but got {type(drop_last)}")
        self.batch_size, self.drop_last = batch_size, drop_last

    def __iter__(self):
        return self._batches(iter(self.sampler))  # iter() now: a random draw happens in the caller's thread

    def _batches(self, indices):
        batch = []
        for idx in indices:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class WeightedRandomSampler(Sampler):
    """Indices drawn with probability proportional to ``weights``.

    Args:
        weights (sequence or ndarray, 1-D or 2-D): non-negative weights; a 2-D array draws
            ``num_samples`` per row (indices into the row), rows one after another.
        num_samples (int): draws per row.
        replacement (bool, default True): without replacement, each row needs at least
            ``num_samples`` positive weights.

    Weights are checked when iterating (AssertionError: negative, inf/nan, none positive, too few).
    """

    def __init__(self, weights, num_samples, replacement=True):
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        super().__init__(None)
        self.weights, self.num_samples, self.replacement = weights, num_samples, replacement

    def _rows(self):
        weights = np.asarray(self.weights, dtype=np.float64)
        assert weights.ndim in (1, 2), f"weights should be a 1-D or 2-D array, but got shape {weights.shape}"
        weights = weights.reshape(-1, weights.shape[-1])
        assert np.all(np.isfinite(weights)), "weights should not be INF or NaN"
        assert np.all(weights >= 0.0), "weights should be positive value"
        positive = np.count_nonzero(weights > 0.0, axis=1)
        assert np.all(positive > 0), "weights should have positive values"
        if not self.replacement:
            assert np.all(positive >= self.num_samples), (
                "weights positive value number should not less than num_samples when replacement=False")
        return weights / weights.sum(axis=1, keepdims=True)

    def __iter__(self):
        rows = self._rows()
        drawn = [np.random.choice(row.size, self.num_samples, self.replacement, p=row) for row in rows]
        return iter(np.concatenate(drawn).tolist())

    def __len__(self):
        shape = np.shape(self.weights)
        return self.num_samples * int(np.prod(shape[:-1], dtype=np.int64))


def _env_int(name, default):
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


class DistributedBatchSampler(BatchSampler):
    """The batches of one process (``rank``) among ``num_replicas`` that split a dataset between them.

    The dataset's indices are padded (from its start) to a multiple of ``num_replicas``, shuffled with
    ``np.random.RandomState(epoch)`` when ``shuffle`` (the same order in every process; ``set_epoch``
    changes it), and dealt out a batch at a time: rank r takes batches r, r + num_replicas, ... and
    its share of the final partial round, so every process gets ``ceil(len(dataset) / num_replicas)``.

    Args:
        dataset (Dataset): anything with ``__len__``.
        batch_size (int): indices per batch.
        num_replicas (int, default: the ``PADDLE_TRAINERS_NUM`` environment variable, else 1).
        rank (int, default: the ``PADDLE_TRAINER_ID`` environment variable, else 0).
        shuffle (bool, default False), drop_last (bool, default False).
    """

    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False, drop_last=False):
        assert isinstance(batch_size, int) and not isinstance(batch_size, bool) and batch_size > 0, \
            "batch_size should be a positive integer"
        assert isinstance(shuffle, bool), "shuffle should be a boolean value"
        assert isinstance(drop_last, bool), "drop_last should be a boolean number"
        if num_replicas is None:
            num_replicas = _env_int("PADDLE_TRAINERS_NUM", 1)
        assert isinstance(num_replicas, int) and num_replicas > 0, "num_replicas should be a positive integer"
        if rank is None:
            rank = _env_int("PADDLE_TRAINER_ID", 0)
        assert isinstance(rank, int) and 0 <= rank < num_replicas, \
            f"rank should be a non-negative integer below num_replicas ({num_replicas}), got {rank}"
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.nranks, self.local_rank, self.epoch = num_replicas, rank, 0
        self.num_samples = int(math.ceil(len(dataset) / num_replicas))
        self.total_size = self.num_samples * num_replicas
        self.sampler = None

    def _local_indices(self):
        n = len(self.dataset)
        indices = np.resize(np.arange(n), self.total_size)  # pads with the first indices again
        if self.shuffle:
            np.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1
        if self.nranks == 1:
            return indices
        round_size = self.batch_size * self.nranks
        full = (self.total_size // round_size) * round_size
        rounds = indices[:full].reshape(-1, self.nranks, self.batch_size)[:, self.local_rank].reshape(-1)
        tail = indices[full:].reshape(self.nranks, -1)[self.local_rank]
        return np.concatenate([rounds, tail])

    def __iter__(self):
        return self._batches(iter(self._local_indices().tolist()))

    def __len__(self):
        extra = 0 if self.drop_last else self.batch_size - 1
        return (self.num_samples + extra) // self.batch_size

    def set_epoch(self, epoch):
        """Shuffle with ``epoch`` as the seed next time (the same order in every process)."""
        self.epoch = epoch
