"""The double buffer (fluid's BufferedReader): what sits between the batch queue and the consumer.

Every stage here has the same small interface: ``get()`` returns the next batch or END_OF_DATA
(raising ReaderKilledError after the batches produced before a failure), ``occupancy()`` says how
many batches are ready, ``capacity()`` how many can be (the queue's plus what the stage holds
itself), ``clear()`` drops what is staged, ``stop()`` ends any thread.

* ``DirectStage``: no double buffer; ``get`` is a queue pop.
* ``ReadAheadStage`` (double buffer on CPU): after handing out a batch it takes the next one, if the
  producer has it ready, into a slot; no extra thread, because on CPU another thread would only
  contend for the GIL (the producer thread already runs ahead by ``capacity`` batches).
* ``WorkerStage`` (``use_multiprocess`` on CPU places): no queue; ``get`` reads the worker's pipe
  (``worker.ProcessBatchSource``), which already holds ``capacity`` batches ahead.
* ``CudaPrefetchStage`` (double buffer on a CUDAPlace, needs CuPy): a ``minifluid-prefetch`` thread
  copies each batch host -> device through pinned staging buffers on its own non-blocking stream
  and records an event; ``get`` makes the consumer's stream wait on that event. Device arrays are
  fresh per batch (CuPy's pool makes that cheap), so the batch the consumer holds is never
  overwritten; a pinned staging slot is reused only after the copy out of it has completed. The
  consumer is assumed to compute on the null stream (CuPy's default).
  The loop follows NOTE [ Feeding: topology and shutdown ] in ``loops.py``.
"""
import threading
from collections import deque

import numpy as np

from ..errors import QUEUE_KILLED_MESSAGE, ExceptionWrapper, ReaderKilledError
from ..lod_tensor import LoDTensor
from . import options
from .loops import Forwarded
from .queue import END_OF_DATA, BlockingQueue

__all__ = ["DirectStage", "ReadAheadStage", "CudaPrefetchStage", "WorkerStage", "make_stage", "PREFETCH_SLOTS"]

PREFETCH_SLOTS = 2
"""Batches the CUDA prefetch thread keeps ready on the device (fluid's BufferedReader keeps 2)."""

READ_AHEAD = 16
"""Most batches the CPU read-ahead moves out of the queue at once (the queue's hand-over group)."""


class DirectStage:
    """No buffering beyond the queue itself."""

    def __init__(self, queue, timeout=None, stall=None):
        self.queue, self.timeout, self.stall = queue, timeout, stall

    def get(self, generation=None):
        return self.queue.pop(self.timeout, generation, self.stall)

    def occupancy(self):
        return len(self.queue)

    def capacity(self):
        return self.queue.capacity()

    def clear(self):
        pass

    def stop(self):
        pass


class ReadAheadStage:
    """CPU double buffer: batches read ahead into a local slot list, in the consumer's thread.

    Each refill takes every batch already queued (up to ``READ_AHEAD``) under one lock, so the
    consumer pays one queue hand-over per group rather than per batch; the next batch is always
    ready before the current one is used (fluid's double buffer, without a copy thread on CPU)."""

    def __init__(self, queue, timeout=None, stall=None):
        self.queue, self.timeout, self.stall = queue, timeout, stall
        self._ahead = deque()
        self._ahead_generation = None  # the queue generation the read-ahead batches came from

    def get(self, generation=None):
        ahead = self._ahead
        if ahead and self._ahead_generation == generation:
            try:
                return ahead.popleft()
            except IndexError:  # emptied by reset() from another thread meanwhile
                pass
        ahead.clear()  # batches of an earlier epoch (a reset() raced with the last refill)
        item = self.queue.pop(self.timeout, generation, self.stall)
        if item is not END_OF_DATA:
            self._ahead_generation = generation
            ahead.extend(self.queue.take_ready(READ_AHEAD, generation))
        return item

    def occupancy(self):
        return len(self.queue) + len(self._ahead)

    def capacity(self):
        """The queue, plus what one refill may move out of it (``get`` refills only an empty slot list)."""
        return self.queue.capacity() + min(READ_AHEAD, self.queue.capacity())

    def clear(self):
        self._ahead.clear()

    def stop(self):
        self._ahead.clear()


class WorkerStage:
    """use_multiprocess on CPU places: the stage is the worker's pipe itself (a ``ProcessBatchSource``)."""

    timeout = None  # the worker source applies the loader's timeout (ReaderTimeoutError)

    def __init__(self, source):
        self.source = source
        self._error = None

    def get(self, generation=None):
        if self._error is not None:  # like a killed queue: the error again, until the epoch is stopped
            raise Forwarded(self._error).error()
        try:
            return next(self.source)
        except StopIteration:
            return END_OF_DATA
        except ReaderKilledError as e:  # reader error, worker death, timeout, /dev/shm full
            self._error = e
            raise
        except BaseException as e:  # e.g. Ctrl-C while waiting: the source has shut its worker down, so
            # the epoch cannot go on; say so from now on instead of ending it as if the data had run out
            self._error = ReaderKilledError(
                f"{QUEUE_KILLED_MESSAGE}\n  The epoch was interrupted by {type(e).__name__} while waiting for "
                "the worker process, which has been stopped; call reset() (non-iterable mode) or start a new "
                "epoch to read again.")
            self._error.__cause__ = e
            raise

    def occupancy(self):
        return self.source.ready()

    def capacity(self):
        return 1  # ``ready()`` only says whether the next batch is already waiting in its pipe

    def clear(self):
        pass

    def stop(self):
        self.source.close()


def _pinned_view(cupy, slot, index, host):
    """A pinned-memory ndarray shaped like ``host`` (grown on demand), stored in ``slot[index]``."""
    mem = slot[index] if index < len(slot) else None
    if mem is None or mem.size() < host.nbytes:
        mem = cupy.cuda.alloc_pinned_memory(max(host.nbytes, 1))
        if index < len(slot):
            slot[index] = mem
        else:
            slot.append(mem)
    return np.frombuffer(mem, host.dtype, host.size).reshape(host.shape)


def _cuda_prefetch_loop(cupy, source, ready, places, stop_event, pinned=True):
    """Copy batches from ``source`` (host) to ``ready`` (device); see the module docstring. Without
    ``pinned`` (``fluid.reader.use_pinned_memory(False)``) the copies read the batch's own memory."""
    streams = {}
    staging = [([], None) for _ in range(PREFETCH_SLOTS + 2)]  # (pinned buffers, event of their last copy)
    count = 0
    try:
        while not stop_event.is_set():
            try:
                batch = source.pop()
            except ReaderKilledError:
                ready.kill(source.killed_by)
                return
            if batch is END_OF_DATA:
                ready.close()
                return
            place = places[count % len(places)]
            buffers, last_copy = staging[count % len(staging)]
            if last_copy is not None:
                last_copy.synchronize()  # the pinned slot is free again only once its copy is done
            with cupy.cuda.Device(place.device_id):
                stream = streams.get(place.device_id)
                if stream is None:
                    stream = streams[place.device_id] = cupy.cuda.Stream(non_blocking=True)
                hosts, lods, devices = [], [], []
                for i, field in enumerate(batch):
                    array, lod = (field._array, field._lod) if isinstance(field, LoDTensor) else (field, None)
                    host = np.ascontiguousarray(array)
                    if pinned:
                        staged = _pinned_view(cupy, buffers, i, host)
                        np.copyto(staged, host)
                        host = staged
                    with stream:
                        devices.append(cupy.empty(host.shape, host.dtype))
                    hosts.append(host)
                    lods.append(lod)
                # The pool may have handed us memory the consumer freed while its kernels (on the null
                # stream) still read it: order our copies after everything queued there so far.
                stream.wait_event(cupy.cuda.Stream.null.record())
                for device, host in zip(devices, hosts):
                    device.set(host, stream=stream)
                fields = [LoDTensor(device, lod, place) for device, lod in zip(devices, lods)]
                copied = stream.record()
            staging[count % len(staging)] = (buffers, copied)
            count += 1
            if not ready.push((fields, copied)):
                return
    except BaseException:
        ready.kill(ExceptionWrapper(where=f"thread {threading.current_thread().name}"))


class CudaPrefetchStage:
    """CUDA double buffer: a prefetch thread stages batches on the device ahead of the consumer."""

    def __init__(self, queue, places, timeout=None, stall=None):
        cupy = places[0].array_module()  # CuPy, or a clear error when there is no usable GPU
        self._cupy = cupy
        self.queue, self.timeout, self.stall = queue, timeout, stall
        self._ready = BlockingQueue(PREFETCH_SLOTS)
        self._stop_event = threading.Event()
        pinned = options.use_pinned_memory() is not False
        self._thread = threading.Thread(target=_cuda_prefetch_loop, name="minifluid-prefetch", daemon=True,
                                        args=(cupy, queue, self._ready, list(places), self._stop_event, pinned))
        self._thread.start()

    def get(self, generation=None):
        item = self._ready.pop(self.timeout, None, self.stall)  # a fresh stage per epoch: no generation
        if item is END_OF_DATA:
            return item
        fields, copied = item
        self._cupy.cuda.get_current_stream().wait_event(copied)
        return fields

    def occupancy(self):
        return len(self.queue) + len(self._ready)

    def capacity(self):
        return self.queue.capacity() + PREFETCH_SLOTS

    def clear(self):
        pass

    def stop(self, join_timeout=5.0):
        """Close the device queue first (a blocked push returns), then join the thread."""
        self._stop_event.set()
        self._ready.close()
        self._thread.join(join_timeout)


def make_stage(queue, places, use_double_buffer, timeout=None, stall=None):
    """The stage for one epoch: CUDA prefetch on GPU places, read-ahead on CPU, or none.
    ``timeout`` (seconds, None = forever) bounds each wait for a batch (QueueTimeout); ``stall``
    (a ``loops.StallWatch``) warns when a wait gets long."""
    if use_double_buffer and places and any(p.is_gpu_place() for p in places):
        return CudaPrefetchStage(queue, places, timeout, stall)
    return ReadAheadStage(queue, timeout, stall) if use_double_buffer else DirectStage(queue, timeout, stall)
