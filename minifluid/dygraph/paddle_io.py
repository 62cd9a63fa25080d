"""``paddle.io`` (2.x): datasets, samplers and a DataLoader that yields eager tensors.

Everything ``fluid.io`` has, plus the map-style pieces. ``DataLoader(dataset, ...)`` is the
map-style loader with paddle 2.x defaults (``return_list=True``) whose batches are eager tensors
(2.x defaults to dynamic mode) unless ``paddle.enable_static()`` was called or a ``feed_list`` (of
static variables) is given: then LoDTensors, as fluid's; ``from_generator`` and ``from_dataset`` are fluid's.
"""
from .. import io as _fluid_io
from ..data.dataloader import DatasetLoader
from ..data.dataset import (BatchSampler, ChainDataset, ComposeDataset, Dataset, DistributedBatchSampler,
                            IterableDataset, RandomSampler, Sampler, SequenceSampler, Subset, TensorDataset,
                            WeightedRandomSampler, get_worker_info)
from ..io import (ComposeNotAligned, DataFeeder, PyReader, batch, buffered, cache, chain, compose, firstn,
                  map_readers, multiprocess_reader, shuffle, xmap_readers)
from . import base

__all__ = ["BatchSampler", "ChainDataset", "ComposeDataset", "ComposeNotAligned", "DataFeeder", "DataLoader",
           "Dataset", "DistributedBatchSampler", "IterableDataset", "PyReader", "RandomSampler", "Sampler",
           "SequenceSampler", "Subset", "TensorDataset", "WeightedRandomSampler", "batch", "buffered", "cache",
           "chain", "compose", "firstn", "get_worker_info", "map_readers", "multiprocess_reader", "shuffle",
           "xmap_readers"]

_eager_output = base.eager_api(DatasetLoader._to_output)


class DataLoader(DatasetLoader):
    """paddle.io.DataLoader(dataset, batch_size=1, shuffle=False, ...): lists of eager tensors per step."""

    from_generator = staticmethod(_fluid_io.DataLoader.from_generator)
    from_dataset = staticmethod(_fluid_io.DataLoader.from_dataset)

    def __init__(self, dataset, feed_list=None, places=None, return_list=True, batch_sampler=None, batch_size=1,
                 shuffle=False, drop_last=False, collate_fn=None, num_workers=0, use_buffer_reader=True,
                 use_shared_memory=True, timeout=0, worker_init_fn=None, prefetch_factor=2):
        super().__init__(dataset, feed_list, places, return_list, batch_sampler, batch_size, shuffle, drop_last,
                         collate_fn, num_workers, use_buffer_reader, use_shared_memory, timeout, worker_init_fn,
                         prefetch_factor)

    def _to_output(self, batches):
        if base._static_requested or self.feed_list is not None:  # a feed list of static variables: static
            return DatasetLoader._to_output(self, batches)
        return _eager_output(self, batches)


def __getattr__(name):
    """Anything else ``fluid.io`` has (it keeps growing) is ``paddle.io``'s too."""
    return getattr(_fluid_io, name)
