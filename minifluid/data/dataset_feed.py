"""Reading fluid.dataset's file-fed datasets: ``DataLoader.from_dataset`` and the batch source of
``Executor.train_from_dataset`` / ``infer_from_dataset``.

NOTE [ Dataset readers and rounds ]
A dataset read by N readers is N batch streams (file_dataset.py says how the files or the samples in
memory are split between them). Each stream runs in a GeneratorLoader of its own: its producer
thread reads, parses and batches ahead of the consumer (``READER_CAPACITY`` batches), and a
reader's error reaches the consumer as the loaders' ReaderKilledError (with the MalformedLineError
or PipeCommandError as its cause), after the batches made before it.
The consumer takes one batch from each live reader in turn:
* ``DataLoader.from_dataset`` (one reader per place) yields rounds of one batch per place as fluid's
  IterableDatasetWrapper does: readers are asked in order (from reader 0 again at each round), an
  exhausted reader is skipped, with ``drop_last`` a short batch ends its reader and is dropped,
  and a round that cannot give every place a batch ends the epoch.
* ``train_from_dataset`` runs every batch of every reader: reader 0's, reader 1's, ..., then again
  reader 0's next; fluid's N training threads would each run their own reader's batches.
"""
import logging
import threading

import numpy as np

from ..framework import dygraph_mode
from ..lod_tensor import LoDTensor
from ..places import CPUPlace

__all__ = ["DatasetBatches", "FileDatasetLoader", "READER_CAPACITY"]

_log = logging.getLogger("minifluid.data")

READER_CAPACITY = 8
"""Batches each reader's loader holds ready."""


def batch_samples(fields):
    """Samples in a batch (from its first field: rows of a dense slot, sequences of a LoD slot)."""
    field = fields[0]
    lod = field.recursive_sequence_lengths() if isinstance(field, LoDTensor) else None
    return len(lod[0]) if lod else len(field)


class DatasetBatches:
    """The N batch streams of a dataset, each in a GeneratorLoader; ``next(k)`` is reader k's next
    batch (a list of fields in ``set_use_var`` order) or None once it is exhausted."""

    def __init__(self, dataset, readers, queue_num=None):
        from .loader import GeneratorLoader  # loader.py builds DataLoader.from_dataset from this module
        self.names = [f.name for f in dataset.formats]
        self._loaders, self._stop = [], threading.Event()
        for stream in dataset._streams(readers, queue_num, self._stop):
            loader = GeneratorLoader(dataset.use_vars, READER_CAPACITY, use_double_buffer=False, return_list=True)
            loader.set_batch_generator(stream, places=[CPUPlace()])
            self._loaders.append(loader)
        self._epochs = [iter(loader) for loader in self._loaders]
        self.live = [True] * len(self._loaders)

    def __len__(self):
        return len(self._loaders)

    def next(self, k):
        if not self.live[k]:
            return None
        try:
            return next(self._epochs[k])[0]
        except StopIteration:
            self.live[k] = False
            return None

    def close(self):
        """Stop every reader (its producer thread, its pipe command)."""
        self._stop.set()  # a reader waiting on a silent pipe command stops too
        for loader in self._loaders:
            loader._end_epoch()
        self.live = [False] * len(self._loaders)


def _on_place(field, place):
    """The field as a LoDTensor on ``place`` (copied to the device for a CUDAPlace)."""
    tensor = LoDTensor(None, field.recursive_sequence_lengths())
    tensor.set(np.asarray(field), place)
    return tensor


class FileDatasetLoader:
    """What ``fluid.io.DataLoader.from_dataset(dataset, places, drop_last)`` returns: iterating it gives,
    per step, a list with one feed dict (name -> LoDTensor) per place (NOTE above)."""

    def __init__(self, dataset, places, drop_last=True):
        if not hasattr(dataset, "_streams"):  # a file_dataset.DatasetBase (which imports this module)
            raise TypeError(f"dataset must be type of DatasetBase (fluid.DatasetFactory().create_dataset(...) or "
                            f"paddle.distributed.QueueDataset/InMemoryDataset), got {type(dataset).__name__}")
        if dygraph_mode.current_tracer() is not None:
            raise RuntimeError("DatasetLoader is not supported in dygraph mode yet")
        self._places = list(places) if isinstance(places, (list, tuple)) else [places]
        thread_num = len(self._places)
        if len(dataset.filelist) < thread_num:
            raise ValueError("Filelist number of dataset {} must be not less than place number {}".format(
                len(dataset.filelist), thread_num))
        if dataset.thread_num != 0 and dataset.thread_num != thread_num:
            _log.warning("thread_num %d which is set in Dataset is ignored", dataset.thread_num)
        dataset.set_thread(thread_num)
        if (getattr(dataset, "queue_num", None) or 0) > thread_num:  # an InMemoryDataset's channels
            _log.warning("queue_num %d which is set in Dataset is ignored", dataset.queue_num)
            dataset.set_queue_num(thread_num)
        dataset._check_ready()
        self._dataset, self._drop_last = dataset, bool(drop_last)

    def __call__(self):
        return self

    def __iter__(self):
        return self._epoch(DatasetBatches(self._dataset, len(self._places)))

    def _epoch(self, batches):
        places, batch_size = self._places, self._dataset.batch_size
        try:
            while True:
                taken = []
                while len(taken) < len(places) and any(batches.live):
                    for k in range(len(batches)):
                        fields = batches.next(k)
                        if fields is None:
                            continue
                        if self._drop_last and batch_samples(fields) != batch_size:
                            batches.live[k] = False
                            continue
                        taken.append(fields)
                        if len(taken) == len(places):
                            break
                if len(taken) < len(places):
                    return
                yield [{name: _on_place(f, place) for name, f in zip(batches.names, fields)}
                       for fields, place in zip(taken, places)]
        finally:
            batches.close()
