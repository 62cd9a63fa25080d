"""DataLoader.from_generator: iterable and non-iterable feeding over a producer thread and a BlockingQueue.

NOTE [ DataLoader.from_generator: epoch, queue and stage ]
(This loader's part of NOTE [ Feeding: topology and shutdown ] in loops.py.) One epoch:

    user generator --adapters.py--> batch reader --transport--> producer thread "minifluid-producer"
        --push--> BlockingQueue(capacity) --stage (prefetch.py)--> FeedReader.read_next / read_round
        --> iterable ``__next__`` (feed dicts) | ``read`` op in exe.run (non-iterable) | CompiledProgram

* Transport (``worker.open_batch_source``, where both loaders choose it): the producer thread
  iterates the batch reader itself (conversion happens in that thread), or, with
  ``use_multiprocess=True``, a ``ProcessBatchSource`` runs it in a forked worker (conversion there,
  batches back through shared memory), forked from the consumer's thread. On CPU places the
  consumer then reads the worker's pipe itself (``prefetch.WorkerStage``: no producer thread and no queue in
  between; the worker already reads ``capacity`` batches ahead, and a relay thread would trade the
  GIL with a busy consumer several times per batch). On CUDA places a producer thread relays into the
  queue, so the CUDA double buffer works as usual. ``WorkerStage`` repeats a worker's error until
  the epoch is stopped, like a killed queue.
* The producer is the only pusher and pushes, closes and kills with the queue generation it started
  with; every reopen bumps it, so a late producer of an old epoch is refused, and a consumer waiting
  in an epoch that ``reset()`` ended (from another thread too) gets EOF. A second ``start()`` without
  ``reset()`` raises. One reader at a time: another thread reading while one waits, or starting an
  epoch while another thread's epoch is open, gets ``ConcurrentReadError``.
* Shutdown order (``_stop``): (1) close the queue, so a push blocked on a full queue returns at once
  (Paddle #22320: joining a producer blocked in push hangs reset); (2) stop the prefetch stage (its
  own queue first, then join); (3) non-iterable only: ``queue.reset()`` empties and reopens the
  queue for the next ``start()``, even when (1)-(2) were cut short by Ctrl-C. Iterable mode uses a
  fresh queue per epoch. A producer busy in the user's generator is not waited for.
* Non-iterable scope objects (created once, at construction, in the global scope): the queue var holds
  the BlockingQueue; the READER vars hold the FeedReader (``queue.reader``), which the ``read`` kernel
  and CompiledProgram call (``read_next``, ``read_round``, ``stage``).
"""
import atexit
import functools
import gc
import logging
import numbers
import threading
import warnings
import weakref

import numpy as np

from ..dtypes import to_numpy_dtype
from ..errors import CONCURRENT_READ_MESSAGE, ConcurrentReadError, EOFException, LoaderStateError
from ..executor.scope import global_scope
from ..framework import dygraph_mode
from ..framework.program import default_main_program, default_startup_program
from ..framework.unique_name import UniqueNameGenerator
from ..layers import io as layers_io
from ..lod_tensor import LoDTensor
from ..places import non_empty_places
from . import adapters, options
from .dataloader import DatasetLoader
from .dataset_feed import FileDatasetLoader
from .diagnosis import loader_label
from .feeder import SlotSpec, slot_specs
from .feed_reader import NOT_STARTED_MESSAGE, PRODUCER_THREAD_NAME, FeedReader
from .loops import EpochIterator, StallWatch, ThreadSource, creation_site, wait_seconds
from .prefetch import WorkerStage, make_stage
from .queue import BlockingQueue
from .worker import open_batch_source

__all__ = ["DataLoader", "GeneratorLoader", "DataLoaderBase", "FeedReader", "PRODUCER_THREAD_NAME",
           "NOT_STARTED_MESSAGE"]

_log = logging.getLogger("minifluid.data")

WAKE_LEVEL = 16
"""Batches moved per producer/consumer hand-over when capacity allows (NOTE [ Queue wake level ])."""

_loader_names = UniqueNameGenerator()
"""DataLoaders name their queue and reader vars with their own counter (REFERENCE A5)."""


# --- producer ---------------------------------------------------------------------------------------
class _Producer(ThreadSource):
    """The producer thread of one epoch (``minifluid-producer``), logging fluid's line for reader errors."""

    def __init__(self, source, queue, name=PRODUCER_THREAD_NAME, timeout=None, stall=None):
        super().__init__(source, queue, name, timeout, stall, warn_reader_errors=True)


class _WorkerFeed:
    """The producer role when the consumer reads the worker's pipe: closing it stops the worker."""

    def __init__(self, stage):
        self.stage = stage  # the worker capped OpenBLAS's threads before it forked (data/worker.py)

    def close(self):
        self.stage.stop()


# --- consumer ---------------------------------------------------------------------------------------
def _check(condition, message):
    """fluid asserts these; an explicit raise keeps them under ``python -O`` (an assert vanishes there)."""
    if not condition:
        raise AssertionError(message)


def _check_batch_size(batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
        raise TypeError(f"batch_size must be a positive int, but received {batch_size!r} "
                        f"({type(batch_size).__name__})")
    _check(batch_size > 0, f"batch_size must be larger than 0, but received {batch_size}")


def _new_queue(capacity):
    return BlockingQueue(capacity, wake_level=max(1, min(WAKE_LEVEL, capacity // 4)))


def _tensor(field, place):
    if isinstance(field, LoDTensor):
        if field._placement is None:
            field._placement = place
        return field
    return LoDTensor(field, None, place)


def _convert_places(places, use_double_buffer):
    places = non_empty_places(places, "an iterable DataLoader")
    for p in places:
        if not hasattr(p, "is_gpu_place"):
            raise TypeError(f"places must be CPUPlace/CUDAPlace objects, got {type(p).__name__}")
        if p.is_gpu_place() and not use_double_buffer:
            raise RuntimeError("Place cannot be CUDAPlace when use_double_buffer is False")
    return places


def _live_owner(scope, queue_name):
    queue = scope.find_value(queue_name)
    owner = getattr(queue, "owner", None)
    return owner() if owner is not None else None


def _refuse_a_live_namesake(scope, queue_name):
    """Two live readers under one queue name would read each other's data (the read ops find their
    reader by name in the global scope): refuse the second, as fluid does (its queue is InitOnce).
    A namesake whose loader is gone is replaced (a notebook cell run again)."""
    if _live_owner(scope, queue_name) is None:
        return
    gc.collect()  # the earlier loader may only be waiting in a reference cycle
    if _live_owner(scope, queue_name) is not None:
        raise ValueError(
            f"A reader queue named {queue_name!r} already belongs to another live py_reader/DataLoader: "
            "two readers with one name would read each other's data. Give each its own name "
            "(py_reader(name=...)); py_reader(name=None) takes names from fluid.unique_name, so two "
            "built under separate unique_name.guard()s get the same ones.")


# --- loaders ----------------------------------------------------------------------------------------
class DataLoaderBase:
    """What every loader is: callable (``loader()`` returns itself) and iterable."""

    def __call__(self):
        return self

    def __iter__(self):
        raise NotImplementedError()

    def __next__(self):
        raise NotImplementedError()


_live_loaders = weakref.WeakSet()


def _abandon_epoch(loader_ref, epoch):
    """End of an epoch iterator: stop that epoch's producer if it is still the current one."""
    loader = loader_ref()
    if loader is not None and loader._epochs == epoch and loader._epoch_open:
        loader._end_epoch()


class _EpochIterator(EpochIterator):
    """What ``iter(loader)`` returns: reads one epoch; when dropped (``break``), the epoch stops."""

    def __init__(self, loader, epoch):
        self._loader, self._epoch = loader, epoch
        super().__init__(functools.partial(_abandon_epoch, weakref.ref(loader), epoch))

    def _step(self):
        loader = self._loader
        if loader._epochs != self._epoch or not loader._epoch_open:
            raise StopIteration  # a newer iter(loader) replaced this epoch, or it has ended
        return loader._next_step()


class GeneratorLoader(DataLoaderBase):
    """The loader ``DataLoader.from_generator`` returns (see its docstring for the arguments).

    Diagnosis: ``print(loader.bottleneck())`` after (or during) an epoch says whether the reader or
    the model is the bottleneck; ``loader.stats()`` gives the counters (batches, mean queue
    occupancy, seconds waiting for data vs. computing).
    """

    _eager = None  # the dygraph tracer when built in dygraph mode (REFERENCE I58)

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False,
                 use_multiprocess=False, drop_last=True, timeout=None):
        if not capacity:
            raise ValueError("Please give value to capacity.")
        self._eager = dygraph_mode.current_tracer()  # REFERENCE I58: the one place the loader asks
        if self._eager is not None:  # no feed list: the fields (count, dtype) come from the data
            if not iterable:
                warnings.warn("Please NOTE: imperative mode can support iterable mode only. Change to iterable mode.")
            if not return_list:
                warnings.warn("Please NOTE: imperative mode can support return as list only. Change to return as "
                              "list.")
            self._setup(None, capacity, use_double_buffer, True, True, use_multiprocess, drop_last, timeout)
            return
        if not feed_list:
            raise Exception("Feed list must be given under static mode.")
        program = default_main_program()
        feed_vars = [program.global_block().var(v) if isinstance(v, str) else v for v in feed_list]
        self._setup(slot_specs(feed_vars), capacity, use_double_buffer, iterable, return_list, use_multiprocess,
                    drop_last, timeout, weakref.ref(program))
        if not iterable:
            names = [_loader_names(k) for k in ("lod_tensor_blocking_queue", "create_py_reader", "double_buffer")]
            reader_names = names[1:] if use_double_buffer else names[1:2]
            self._attach_scope(names[0], reader_names)
            s = self._slots
            # fluid creates an unordered loader's reader in the startup program (its queue is shared by places)
            startup = None if self._keep_order else default_startup_program().global_block()
            reader = layers_io.build_reader_ops(
                program.global_block(), names[0], names[1], names[2] if use_double_buffer else None,
                [x.shape for x in s], [x.dtype for x in s], [x.lod_level for x in s], [x.need_check for x in s],
                startup_block=startup)
            layers_io.insert_read_op(program.global_block(), reader, feed_vars, drop_last)

    def _setup(self, slots, capacity, use_double_buffer, iterable, return_list, use_multiprocess, drop_last,
               timeout, program_ref=None):
        self._slots, self._names = slots, None if slots is None else [s.name for s in slots]
        self._capacity, self._use_double_buffer = int(capacity), bool(use_double_buffer)
        self._iterable, self._return_list, self._drop_last = bool(iterable), bool(return_list), bool(drop_last)
        self._use_multiprocess, self._timeout = bool(use_multiprocess), wait_seconds(timeout)
        self._keep_order = options.keep_data_loader_order()
        self._batch_reader = None
        self._places = None
        self._producer = None
        self._worker_pid_list = []
        self._queue = None
        self._reader = FeedReader(slots, self._capacity, check_feed=not iterable)
        self._consumer_timeout = None if self._use_multiprocess else self._timeout  # a worker times out itself
        self._epochs = 0
        self._epoch_open = False
        self._epoch_thread = None  # the thread that started the open epoch (one reader at a time)
        self._epoch_lock = threading.Lock()
        self._created_at = creation_site()
        self._reader.label = loader_label(self._names, program_ref, self._created_at)
        self._stall = StallWatch(self._describe)
        _live_loaders.add(self)

    def _describe(self):
        """How a warning names this loader: its feed variables, where it was made, how far it read."""
        names = self._names if self._names is not None else "(dygraph)"
        return (f"DataLoader.from_generator(feed_list={names}) created at {self._created_at} "
                f"(epoch {self._reader.stats.epoch}, {self._reader.stats.batches} batches read)")

    def _attach_scope(self, queue_name, reader_names):
        """Non-iterable: one queue and stage for the loader's life, in the global scope with its reader."""
        scope = global_scope()
        _refuse_a_live_namesake(scope, queue_name)
        self._queue = _new_queue(self._capacity)
        self._queue.reader = self._reader
        self._queue.owner = weakref.ref(self)
        self._stage = make_stage(self._queue, None, self._use_double_buffer, self._consumer_timeout, self._stall)
        self._reader.set_stage(self._stage)
        scope.var(queue_name).set_value(self._queue)
        for name in reader_names:
            scope.var(name).set_value(self._reader)

    @classmethod
    def _for_reader_ops(cls, capacity, use_double_buffer, queue_name, reader_names, slots):
        """The runtime behind ``layers.py_reader`` (data/py_reader.py; its graph is built by layers/io.py)."""
        loader = cls.__new__(cls)
        specs = [SlotSpec(name, tuple(shape), to_numpy_dtype(dtype), int(lod), bool(check))
                 for name, shape, dtype, lod, check in slots]
        loader._setup(specs, capacity, use_double_buffer, False, False, False, True, None)
        loader._attach_scope(queue_name, reader_names)
        return loader

    # --- properties ---------------------------------------------------------------------------------
    @property
    def iterable(self):
        return self._iterable

    @staticmethod
    def _check_input_array(item):
        """One field of a batch as an ndarray; ragged nested lists are a TypeError saying so."""
        return adapters.as_batch_field(item)

    @property
    def _thread(self):
        """The producer thread of the current epoch (None when none runs or a worker's pipe is read)."""
        return getattr(self._producer, "thread", None)

    @property
    def queue(self):
        """The BlockingQueue (non-iterable: fixed; iterable: the current epoch's). Taking it allows
        pushing batches by hand (J66), so the read op then no longer insists on ``start()``."""
        self._reader.external = not self._iterable
        return self._queue

    # --- data sources (each returns the loader; REFERENCE H48-H51) ----------------------------------
    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        """Feed from a generator of single samples, batched here.

        Args:
            reader (callable): ``reader()`` yields one sample at a time: a tuple/list with one field per
                variable of ``feed_list`` (ndarrays, numbers or nested lists), without a batch dim.
            batch_size (int): samples per batch.
            drop_last (bool, default True): drop a last batch smaller than ``batch_size``.
            places (place or list of places): where batches go; required in iterable mode (e.g.
                ``fluid.CPUPlace()`` or ``fluid.cpu_places()``), ignored in non-iterable mode.

        Returns:
            the loader itself.
        """
        _check_batch_size(batch_size)
        return self._set_source(adapters.from_sample_generator(reader, batch_size, drop_last, self._slots), places)

    def set_sample_list_generator(self, reader, places=None):
        """Feed from a generator of sample lists (what ``fluid.io.batch(reader, n)`` yields).

        Args:
            reader (callable): ``reader()`` yields lists of samples; each sample has one field per
                variable of ``feed_list``. The fields are stacked (with LoD for lod_level > 0 variables).
            places (place or list of places): as for ``set_sample_generator``.

        Returns:
            the loader itself.
        """
        return self._set_source(adapters.from_sample_list_generator(reader, self._slots), places)

    def set_batch_generator(self, reader, places=None):
        """Feed from a generator of ready-made batches (the fastest kind: no stacking here).

        Args:
            reader (callable): ``reader()`` yields one batch at a time: a tuple/list with one field per
                variable of ``feed_list`` (ndarrays or LoDTensors with the batch as dim 0).
            places (place or list of places): as for ``set_sample_generator``.

        Returns:
            the loader itself.
        """
        return self._set_source(adapters.from_batch_generator(reader, self._names), places)

    def _set_source(self, batch_reader, places):
        if self._iterable:
            if places is None and self._eager is not None:
                places = self._eager.expected_place
            _check(places is not None, "Places cannot be None when DataLoader is iterable")
            self._places = _convert_places(places, self._use_double_buffer)
            _check(self._eager is None or len(self._places) == 1, "Number of places must be 1 in imperative mode")
        elif places is not None:
            _log.info("places would be ommited when DataLoader is not iterable")
        self._batch_reader = batch_reader
        return self

    def _start_epoch(self, queue, queue_stage):
        """Open the source and start reading it (the transport is chosen by ``worker.open_batch_source``):
        from the worker's pipe (use_multiprocess on CPU places), or through ``queue``, fed by a producer
        thread (relaying a worker's batches on CUDA places) and read by the stage ``queue_stage()``
        returns. The stage is made first (it may fail: a CUDAPlace without a GPU), and a source opened is
        closed again if anything after it fails, so no worker outlives a failed start."""
        reads_worker = self._use_multiprocess and not any(p.is_gpu_place() for p in self._places or ())
        stage = None if reads_worker else queue_stage()
        source = open_batch_source(self._batch_reader, num_workers=int(self._use_multiprocess),
                                   thread=None if reads_worker else PRODUCER_THREAD_NAME, capacity=self._capacity,
                                   timeout=self._timeout, stall=self._stall, queue=queue, feeder=_Producer,
                                   name="minifluid-worker-0")
        try:
            worker = source if reads_worker else getattr(source, "source", None)
            self._worker_pid_list = list(getattr(worker, "worker_pids", ()))
            if reads_worker:
                stage = WorkerStage(source)
                self._reader.begin_epoch(stage)
                self._producer = _WorkerFeed(stage)
            else:
                self._reader.begin_epoch(stage, queue.generation)
                self._producer = source
        except BaseException:
            source.close()
            raise

    def _worker_pids(self):
        """Pids of the worker process of the current (or last) epoch; [] without use_multiprocess."""
        return list(self._worker_pid_list)

    def _stop(self):
        """Stop the producer and the stage, in the order of the NOTE above (never waiting for user code)."""
        producer, self._producer = self._producer, None
        try:
            if producer is not None:
                producer.close()
        finally:
            self._reader.end_epoch()

    # --- iterable mode ------------------------------------------------------------------------------
    def __iter__(self):
        """Start an epoch (stopping the previous one) and return its iterator; abandoning that iterator
        (``break``) stops the producer when the iterator is garbage-collected."""
        self._begin_iterable_epoch()
        return _EpochIterator(self, self._epochs)

    def __next__(self):
        if not self._epoch_open:
            if self._epochs:
                raise StopIteration
            # next(loader()) without iter(): the loader's own first epoch, with no epoch iterator whose
            # collection would end it (it ends at EOF, on an error, or when the loader is collected)
            self._begin_iterable_epoch()
        return self._next_step()

    def _begin_iterable_epoch(self):
        _check(self._iterable, "DataLoader is not iterable")
        _check(self._batch_reader is not None, "Data source of DataLoader has not set yet")
        with self._epoch_lock:  # two threads starting epochs at once: one of them is refused
            owner, me = self._epoch_thread, threading.current_thread()
            if self._epoch_open and owner is not None and owner is not me and owner.is_alive():
                raise ConcurrentReadError(CONCURRENT_READ_MESSAGE.format(owner.name))
            self._stop()
            self._queue = _new_queue(self._capacity)
            self._start_epoch(self._queue, lambda: make_stage(self._queue, self._places, self._use_double_buffer,
                                                              self._consumer_timeout, self._stall))
            self._epochs += 1
            self._epoch_open, self._epoch_thread = True, me

    def _next_step(self):
        """One step: a batch per place, as feed dicts (or lists with return_list). With several places and
        drop_last=False the last step may hold fewer batches than places: an ordered loader returns just
        those, an unordered one (``keep_data_loader_order(False)``) an empty entry for each place left
        without data, as fluid's readers do (CompiledProgram runs no replica for an empty feed)."""
        places = self._places
        try:
            if len(places) == 1:
                batches = (self._reader.read_next(),)
            else:
                batches = self._reader.read_round(len(places), self._drop_last)
        except EOFException:
            self._end_epoch()
            raise StopIteration from None
        except ConcurrentReadError:  # another thread's read: its epoch goes on
            raise
        except LoaderStateError:
            if not self._epoch_open:  # another thread read the end of data as this read began
                raise StopIteration from None
            self._end_epoch()
            raise
        except BaseException:  # reader failure, timeout, Ctrl-C
            self._end_epoch()
            raise
        if self._eager is not None:  # dygraph: the one batch as eager tensors
            return [self._eager.eager_tensor(f) for f in batches[0]]
        if self._return_list:
            steps = [[_tensor(f, p) for f in b] for b, p in zip(batches, places)]
        else:
            steps, names = [], self._names
            for batch, place in zip(batches, places):  # plain loops: per batch, comprehensions cost ~0.3 us more
                feed = {}
                for name, field in zip(names, batch):
                    feed[name] = LoDTensor(field, None, place) if type(field) is np.ndarray else _tensor(field, place)
                steps.append(feed)
        if len(steps) < len(places) and not self._keep_order:  # fluid's unordered reader: every place has an
            steps += [[] if self._return_list else {} for _ in range(len(places) - len(steps))]  # entry, maybe empty
        return steps

    def _end_epoch(self):
        self._epoch_open = False
        self._stop()

    def _reset(self):
        """Stop the current epoch in either mode (fluid's private ``_reset``, which its tests call on
        an iterable loader left early); non-iterable loaders are also ready to ``start()`` again."""
        if self._iterable:
            self._end_epoch()
        else:
            self.reset()

    def _stop_feeding(self):
        """Ask the producer to stop pushing (``py_reader.exited = True``); the consumer then reaches EOF."""
        if self._producer is not None:
            self._producer.close()

    # --- non-iterable mode --------------------------------------------------------------------------
    def start(self):
        """Start reading one epoch (non-iterable mode): ``exe.run`` then takes its batches until it raises
        ``fluid.core.EOFException``; call ``reset()`` after that (or to stop early) before the next
        ``start()``.

        Raises:
            AssertionError: the loader is iterable, or has no data source (``set_*_generator``) yet.
            RuntimeError: ``start()`` again without ``reset()``.
        """
        _check(not self._iterable, "start() cannot be called when DataLoader is iterable")
        _check(self._batch_reader is not None, "Data source of DataLoader has not set yet")
        if self._producer is not None:
            raise RuntimeError("start() was called twice without reset(): the DataLoader is already running. "
                               "Call reset() after the EOFException that ends an epoch (or to abandon it) "
                               "before starting again.")
        if self._queue.is_closed():  # a reset() cut short (Ctrl-C) left it closed: the epoch would be empty
            self._queue.reset()
        self._start_epoch(self._queue, lambda: self._stage)

    def reset(self):
        """End the epoch (non-iterable mode): stops the producer and empties the queue, so ``start()``
        can begin the next. Safe at any time: after EOFException, midway, before ``start()``, twice, and
        from another thread while ``exe.run`` waits for a batch (that run then raises EOFException). It
        does not wait for a generator busy in its own code (NOTE [ Feeding: topology and shutdown ] in
        loops.py).

        Raises:
            AssertionError: the loader is iterable (there an epoch ends with its ``for`` loop).
        """
        _check(not self._iterable, "reset() cannot be called when DataLoader is iterable")
        try:
            self._stop()
        finally:
            self._queue.reset()
            self._reader.set_stage(self._stage)  # the queue's stage again (a worker's stage ends with its epoch)

    # --- diagnosis ----------------------------------------------------------------------------------
    def _stats_source(self):
        stats = self._reader.stats
        return stats if stats.batches or self._reader.last_stats is None else self._reader.last_stats

    def stats(self):
        """Counters of the current epoch (or the last one, before the next reads anything)."""
        return self._stats_source().summary()

    def bottleneck(self):
        """One line: "reader-bound: ..." or "compute-bound: ..."."""
        return self._stats_source().verdict()

    def __del__(self):
        try:
            self._stop()
        except Exception:
            pass


@atexit.register
def _stop_all_loaders():
    """At exit, close every live loader's queue (no joins: a producer stuck in user code must not delay
    the exit) so no producer is left blocked in a push; a loader reading a worker's pipe stops its worker
    (SIGTERM, then SIGKILL after loops.PROCESS_JOIN_TIMEOUT) and unlinks its segments."""
    for loader in list(_live_loaders):
        producer = loader._producer
        if producer is not None:
            producer.close()


class DataLoader:
    """fluid.io.DataLoader.

    ``DataLoader.from_generator(...)`` builds the generator-fed loader (this module);
    ``DataLoader(dataset, ...)`` builds the map-style loader (``data/dataloader.py``).
    """

    def __new__(cls, dataset, *args, **kwargs):
        return DatasetLoader(dataset, *args, **kwargs)

    @staticmethod
    def from_generator(feed_list=None, capacity=None, use_double_buffer=True, iterable=True, return_list=False,
                       use_multiprocess=False, drop_last=True, timeout=None):
        """A loader fed by a Python generator (set with ``set_sample_generator``,
        ``set_sample_list_generator`` or ``set_batch_generator``).

        Args:
            feed_list (list of Variable): the variables fed, in the order the generator yields fields.
            capacity (int): batches buffered in the queue.
            use_double_buffer (bool, default True): read one batch ahead (on a CUDAPlace: copy it to
                the device ahead, on a stream of its own).
            iterable (bool, default True): ``for data in loader(): exe.run(feed=data)``; False inserts
                read ops at the head of the main program and uses ``start()`` / ``reset()``.
            return_list (bool, default False): per place, a list of tensors instead of a dict.
            use_multiprocess (bool, default False): run the generator in a worker process (shared memory).
            drop_last (bool, default True): with several places, drop a last round that cannot give
                every place a batch.
            timeout (float or None): seconds to wait for one batch before raising ``ReaderTimeoutError``;
                None or 0 waits forever (as ``DataLoader(dataset, timeout=0)``), with a
                ``DataLoaderStallWarning`` after ``data.loops.STALL_WARNING_S`` seconds without a batch.

        Diagnosis: ``print(loader.bottleneck())`` -> "reader-bound: ..." or "compute-bound: ...".
        """
        return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list, use_multiprocess,
                               drop_last, timeout)

    @staticmethod
    def from_dataset(dataset, places, drop_last=True):
        """A loader over a fluid.dataset QueueDataset/InMemoryDataset: one reader per place; each step is a
        list with one feed dict per place; ``drop_last`` drops short batches (``data/dataset_feed.py``)."""
        return FileDatasetLoader(dataset, places, drop_last)
