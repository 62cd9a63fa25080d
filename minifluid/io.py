"""``fluid.io``: DataLoader, PyReader, DataFeeder, the reader decorators and save/load."""
from .data.collate import default_collate_fn
from .data.dataset import (BatchSampler, ChainDataset, ComposeDataset, Dataset, IterableDataset, RandomSampler,
                           Sampler, SequenceSampler, Subset, TensorDataset, get_worker_info)
from .data.feeder import DataFeeder
from .data.loader import DataLoader, DataLoaderBase
from .errors import ComposeNotAligned
from .reader import (batch, buffered, cache, chain, compose, firstn, map_readers, multiprocess_reader, shuffle,
                     xmap_readers)
from .inference_model import load_inference_model, save_inference_model
from .program_state import load, load_program_state, save, set_program_state
from .serialization import (get_parameter_value, get_parameter_value_by_name,  # noqa: F401 (fluid.io has them)
                            get_program_parameter, get_program_persistable_vars, is_belong_to_optimizer,
                            is_parameter, is_persistable, load_params, load_persistables, load_vars, save_params,
                            save_persistables, save_vars)

__all__ = ["BatchSampler", "ChainDataset", "ComposeDataset", "ComposeNotAligned", "DataFeeder", "DataLoader",
           "Dataset", "IterableDataset", "PyReader", "RandomSampler", "Sampler", "SequenceSampler", "Subset",
           "TensorDataset", "batch", "buffered", "cache", "chain", "compose", "default_collate_fn", "firstn",
           "get_program_parameter", "get_program_persistable_vars", "get_worker_info", "is_belong_to_optimizer",
           "is_parameter", "is_persistable", "load", "load_inference_model", "load_params", "load_persistables",
           "load_program_state", "load_vars", "map_readers", "multiprocess_reader", "save", "save_inference_model",
           "save_params", "save_persistables", "save_vars", "set_program_state", "shuffle", "xmap_readers"]


class PyReader(DataLoaderBase):
    """fluid.io.PyReader: the legacy name of ``DataLoader.from_generator`` (same arguments, minus the new ones).

    ``decorate_sample_generator`` / ``decorate_sample_list_generator`` / ``decorate_batch_generator`` are
    the loader's ``set_*_generator``; everything else is forwarded.
    """

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False):
        self._loader = DataLoader.from_generator(feed_list, capacity, use_double_buffer, iterable, return_list)

    @property
    def queue(self):
        return self._loader.queue

    @property
    def iterable(self):
        return self._loader.iterable

    def __call__(self):
        return self._loader()

    def __iter__(self):
        return iter(self._loader)

    def __next__(self):
        return next(self._loader)

    def start(self):
        """Start reading an epoch (non-iterable mode): ``exe.run`` takes its batches until it raises
        ``fluid.core.EOFException``; then call ``reset()``. The loader's ``start`` says more."""
        self._loader.start()

    def reset(self):
        """End the epoch (non-iterable mode) so that ``start()`` can begin the next; safe at any time
        (after EOFException, midway, twice). The loader's ``reset`` says more."""
        self._loader.reset()

    def decorate_sample_generator(self, sample_generator, batch_size, drop_last=True, places=None):
        """Feed single samples, batched here (the loader's ``set_sample_generator``).

        Args:
            sample_generator (callable): yields one sample (a tuple of fields) at a time.
            batch_size (int): samples per batch. drop_last (bool, default True): drop a short last batch.
            places (place or list): required in iterable mode.
        """
        self._loader.set_sample_generator(sample_generator, batch_size, drop_last, places)

    def decorate_sample_list_generator(self, reader, places=None):
        """Feed lists of samples (the loader's ``set_sample_list_generator``).

        Args:
            reader (callable): yields lists of samples, e.g. ``fluid.io.batch(sample_reader, 32)``.
            places (place or list): required in iterable mode.
        """
        self._loader.set_sample_list_generator(reader, places)

    def decorate_batch_generator(self, reader, places=None):
        """Feed ready-made batches (the loader's ``set_batch_generator``).

        Args:
            reader (callable): yields batches, one ndarray or LoDTensor per feed variable.
            places (place or list): required in iterable mode.
        """
        self._loader.set_batch_generator(reader, places)

    def stats(self):
        return self._loader.stats()

    def bottleneck(self):
        return self._loader.bottleneck()
