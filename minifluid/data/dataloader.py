"""The map-style loader: Dataset + sampler + collate_fn -> batches, read ahead by a thread or workers.

NOTE [ DatasetLoader: one epoch, one batch source ]
* ``loader()`` and ``iter(loader)`` start an epoch: ``iter(batch_sampler)`` runs in the caller's
  thread (so ``np.random.seed`` decides a shuffled order), and one *batch source* is opened: an
  iterator of batches (lists of ndarrays, one per field) with ``close()``. Epoch iterators are
  independent of each other.
* Sources, picked by ``worker.open_batch_source`` (the transport choice of both loaders):
  ``num_workers=0, use_buffer_reader=False``: a generator; fetch + collate in the consumer's thread,
  and an error is raised as it is (no boundary was crossed).
  ``num_workers=0, use_buffer_reader=True``: a ``loops.ThreadSource``; the daemon thread
  ``minifluid-dataset-loader`` pushes batches into a ``BlockingQueue`` (``prefetch_factor`` batches per
  place) that it closes at the end, or kills with the ``ExceptionWrapper``.
  ``num_workers>0``: ``ProcessPoolBatchSource`` (data/worker.py): forked workers run ``_MapFetcher``
  and batches come back in order through shared memory. An IterableDataset is iterated by each of the
  workers (``ProcessBatchSource``), which split it by ``get_worker_info()``; batches come round-robin.
* Errors: a thread or worker failure reaches the consumer as ``ReaderKilledError`` (fluid's
  "Blocking queue is killed ..." SystemError) with the original exception as ``__cause__``.
* Shutdown: the epoch iterator is a ``loops.EpochIterator`` (NOTE [ Feeding: topology and shutdown ] in
  loops.py): its source is closed at the end of data, on any error out of ``next``, by ``close()``, and
  when it is garbage-collected (a ``break``); the thread is joined, a ``__getitem__`` in progress finished.
"""
import functools
import itertools

import numpy as np

from minifluid.data.collate import (default_collate_deferred, default_collate_fn, default_convert_fn,
                                   describe_samples, flatten_batch, restore_batch)
from minifluid.data.dataset import BatchSampler, IterableDataset, RandomSampler, SequenceSampler
from minifluid.data.feeder import DeferredField
from minifluid.data.loops import EpochIterator, StallWatch, ThreadSource, creation_site, wait_seconds
from minifluid.data.worker import open_batch_source
from minifluid.framework import dygraph_mode
from minifluid.lod_tensor import LoDTensor
from minifluid.places import CPUPlace, non_empty_places

__all__ = ["THREAD_NAME", "DatasetLoader"]

THREAD_NAME = "minifluid-dataset-loader"


# --- fetching: indices -> batch (runs in the consumer, the loader thread or a worker process) ---------
def _as_field(field):
    return field if isinstance(field, (np.ndarray, LoDTensor, DeferredField)) else np.asarray(field)


def _as_fields(batch):
    """What a collate_fn returned -> list of fields (ndarray, LoDTensor or a worker's DeferredField), a
    ``StructuredBatch`` for dicts and nested lists (NOTE [ Nested batches: dicts and lists of fields ])."""
    return flatten_batch(batch, _as_field)


def _collate(collate_fn, samples, indices, what, batched):
    """``collate_fn(samples)`` (``samples[0]`` unless ``batched``); a TypeError/ValueError is re-raised
    naming the indices and sample types."""
    try:
        return _as_fields(collate_fn(samples if batched else samples[0]))
    except (TypeError, ValueError) as exc:
        context = f"{exc}\n  The samples of this batch:\n    " + \
            describe_samples(indices, samples, what).replace("\n", "\n    ")
        try:
            err = type(exc)(context)
        except Exception:
            exc.add_note(context)
            raise
        raise err from exc


class _MapFetcher:
    """``fetch(indices) -> batch``: reads the samples and collates them (one index, no batch dim, when
    ``auto_collate`` is False). A plain object, so forked workers run it as is."""

    def __init__(self, dataset, collate_fn, auto_collate):
        self.dataset, self.auto_collate = dataset, auto_collate
        self.collate_fn = collate_fn or (default_collate_fn if auto_collate else default_convert_fn)

    def __call__(self, indices, collate_fn=None):
        samples = []
        for i in indices:
            try:
                samples.append(self.dataset[i])
            except Exception as exc:
                exc.add_note(f"(raised by {type(self.dataset).__name__}.__getitem__({i!r}))")
                raise
        return _collate(collate_fn or self.collate_fn, samples, list(indices), "dataset index", self.auto_collate)

    def deferred(self, indices):
        """``self(indices)`` in a worker process: with the default collate, big fields are stacked
        straight into the shared-memory slot (NOTE [ Shared-memory slots ... ] in shm.py)."""
        return self(indices, default_collate_deferred if self.collate_fn is default_collate_fn else None)


def _iterable_batches(dataset, batch_size, drop_last, collate_fn):
    """Batches from an IterableDataset's stream (samples one by one when ``batch_size`` is None)."""
    collate_fn = collate_fn or (default_collate_fn if batch_size else default_convert_fn)
    samples_iter, start = iter(dataset), 0
    while True:
        samples = list(itertools.islice(samples_iter, batch_size or 1))
        if not samples or (drop_last and batch_size and len(samples) < batch_size):
            return
        positions = list(range(start, start + len(samples)))
        yield _collate(collate_fn, samples, positions, "stream sample", batch_size is not None)
        start += len(samples)


def _close_source(source):
    """End an epoch's source: stop its thread (waiting for a ``__getitem__`` in progress, at most
    ``loops.THREAD_JOIN_TIMEOUT``) or workers, and drop what the thread read ahead, so its memory goes now."""
    if isinstance(source, ThreadSource):
        source.close(wait_for_reader=True)
        source.queue.take_ready(source.queue.capacity())
    else:
        getattr(source, "close", lambda: None)()


# --- the loader -----------------------------------------------------------------------------------
class _EpochIter(EpochIterator):
    """One epoch: groups one batch per place and hands them to ``loader._to_output``."""

    def __init__(self, loader):
        self._loader = loader
        self._num_places = len(loader.places)
        self._source = loader._open_source()
        super().__init__(functools.partial(_close_source, self._source))

    def __len__(self):
        return len(self._loader)

    def _step(self):
        batches = []
        try:
            while len(batches) < self._num_places:
                batches.append(next(self._source))
        except StopIteration:
            if not batches:
                raise
        return self._loader._to_output(batches)

    def _worker_pids(self):
        """Pids of this epoch's worker processes (in worker-id order); [] without workers."""
        return list(getattr(self._source, "worker_pids", ()))


class DatasetLoader:
    """Loads batches from a ``Dataset`` (or ``IterableDataset``) by sampling and collating.

    Args:
        dataset (Dataset | IterableDataset). feed_list (list of Variable or str): feed-dict names.
        places (place or list, default [CPUPlace()]): one batch per place per step.
        return_list (bool, default False): lists of arrays instead of feed dicts; also the behaviour
            when ``feed_list`` is None (paddle asserts there instead).
        batch_sampler (BatchSampler): replaces batch_size / shuffle / drop_last (give one or the other).
        batch_size (int or None, default 1): None yields single samples, no batch dim.
        shuffle, drop_last (bool): RandomSampler on numpy's global RNG; drop a short last batch.
        collate_fn (callable): samples -> list of arrays; default ``default_collate_fn``.
        num_workers (int, default 0): worker processes. use_buffer_reader (bool, default True): with
            ``num_workers=0``, read ahead in a thread. use_shared_memory: accepted; workers always use it.
        timeout (float, default 0 = forever): per batch. prefetch_factor (int, default 2): read-ahead
            batches per place (thread) or per worker. worker_init_fn: ``worker_init_fn(worker_id)``.

    A step yields ``[field0, field1, ...]`` (return_list) or ``[{name: field}]``; with P places a list
    of P of them. With a feed_list the fields are LoDTensors on their places (fluid's static mode).
    Raises ``ReaderKilledError`` (``__cause__``: the original error) if a reader fails.
    """

    def __init__(self, dataset, feed_list=None, places=None, return_list=False, batch_sampler=None,
                 batch_size=1, shuffle=False, drop_last=False, collate_fn=None, num_workers=0,
                 use_buffer_reader=True, use_shared_memory=True, timeout=0, worker_init_fn=None,
                 prefetch_factor=2):
        if num_workers < 0:
            raise AssertionError("num_workers should be a non-negative value")
        if prefetch_factor <= 0:
            raise AssertionError("prefetch_factor should be a positive value")
        self.dataset = dataset
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and shuffle:
            raise ValueError(f"IterableDataset not support shuffle, but got shuffle={shuffle}")
        if self._iterable and batch_sampler is not None:
            raise ValueError("IterableDataset expect unspecified batch_sampler")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise AssertionError("batch_size/shuffle/drop_last should not be set when batch_sampler is given")
            batch_size = None
        elif batch_size is not None:
            if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
                raise AssertionError("batch_size should be None or a positive value when batch_sampler "
                                     "is not given")
            if not self._iterable:
                batch_sampler = BatchSampler(dataset=dataset, batch_size=batch_size, shuffle=shuffle,
                                             drop_last=drop_last)
        self.batch_sampler, self.batch_size, self.drop_last = batch_sampler, batch_size, drop_last
        self._sampler = None if self._iterable or batch_sampler is not None else \
            RandomSampler(dataset) if shuffle else SequenceSampler(dataset)  # batch_size=None: one by one
        self.collate_fn, self.num_workers, self.worker_init_fn = collate_fn, num_workers, worker_init_fn
        self.use_buffer_reader, self.use_shared_memory = use_buffer_reader, use_shared_memory
        self.prefetch_factor = prefetch_factor
        self.timeout = wait_seconds(timeout)
        self.places = _as_place_list(places)
        self.feed_list = feed_list
        self._feed_names = None if feed_list is None else [getattr(v, "name", v) for v in feed_list]
        self.return_list = bool(return_list) or feed_list is None
        self._created_at = creation_site()
        self._stall = StallWatch(self._describe)

    def _describe(self):
        """How a warning names this loader: its dataset and where it was made."""
        return (f"DataLoader({type(self.dataset).__name__}, num_workers={self.num_workers}) created at "
                f"{self._created_at}")

    def __call__(self):
        """Start an epoch (the same as ``iter(loader)``)."""
        return _EpochIter(self)

    def __iter__(self):
        return _EpochIter(self)

    def __len__(self):
        """Batches per epoch, as fluid counts (with P places an epoch has ceil(batches / P) steps).
        TypeError for an IterableDataset (unknown)."""
        if self._iterable:
            raise TypeError(f"length of a DataLoader over an IterableDataset ({type(self.dataset).__name__}) "
                            "is unknown")
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.dataset)

    def _open_source(self):
        """The epoch's batch source (NOTE [ DatasetLoader: one epoch, one batch source ]); the transport is
        chosen by ``worker.open_batch_source``."""
        capacity = self.prefetch_factor * len(self.places)
        thread = THREAD_NAME if self.use_buffer_reader and self.num_workers == 0 else None
        common = {"num_workers": self.num_workers, "thread": thread, "timeout": self.timeout, "stall": self._stall}
        if self.num_workers > 0:
            common.update(dataset=self.dataset, worker_init_fn=self.worker_init_fn)
        if self._iterable:
            def batches():
                return _iterable_batches(self.dataset, self.batch_size, self.drop_last, self.collate_fn)
            return open_batch_source(batches, capacity=capacity, **common)
        if self.batch_sampler is not None:
            index_batches, fetch = iter(self.batch_sampler), _MapFetcher(self.dataset, self.collate_fn, True)
        else:
            index_batches = ([i] for i in iter(self._sampler))
            fetch = _MapFetcher(self.dataset, self.collate_fn, False)
        if self.num_workers > 0:
            capacity = self.prefetch_factor * self.num_workers
        return open_batch_source(fetch=fetch, index_batches=index_batches, capacity=capacity, **common)

    def _to_output(self, batches):
        """One step's batches (one per place) -> what the user's loop gets. In dygraph mode (REFERENCE
        I58): a list of eager tensors (return_list is implied), and exactly one place. Otherwise per place
        a list of fields (return_list) or a feed dict; one place's list alone with return_list, else a
        list with one entry per place. The fields are LoDTensors on their places, as in fluid's static
        mode, when there is a feed_list (ndarrays without one: fluid has no such mode)."""
        tracer = dygraph_mode.current_tracer()
        if tracer is not None:
            if len(self.places) != 1:
                raise AssertionError("Number of places must be 1 in imperative mode")
            return restore_batch(batches[0], tracer.eager_tensor)
        placed = [functools.partial(_placed, place=place) if self.feed_list is not None else None
                  for place in self.places]
        if self.return_list:
            steps = [restore_batch(batch, convert) for batch, convert in zip(batches, placed)]
            return steps[0] if len(self.places) == 1 else steps
        outputs = []
        for batch, convert in zip(batches, placed):
            if len(batch) != len(self._feed_names):
                raise ValueError(f"The number of fields in the batch ({len(batch)}) does not match "
                                 f"len(feed_list) ({len(self._feed_names)}): {self._feed_names}")
            outputs.append({name: convert(field) for name, field in zip(self._feed_names, batch)})
        return outputs


def _placed(field, place):
    """A batch field as a LoDTensor on ``place`` (copied to the device for a GPU place)."""
    if isinstance(field, LoDTensor):
        if field._placement is None:
            field.set(field._array, place)  # keeps its LoD
        return field
    tensor = LoDTensor()
    tensor.set(field, place)
    return tensor


def _as_place_list(places):
    return [CPUPlace()] if places is None else non_empty_places(places, "DataLoader(dataset)")
