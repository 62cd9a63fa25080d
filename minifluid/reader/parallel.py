"""Reader decorators that read in background threads (``buffered``, ``xmap_readers``) or processes
(``multiprocess_reader``), built from the feeding runtime's loop parts (``minifluid/data/loops.py``).

NOTE [ Reader decorator workers: protocol ]
(The decorators' part of NOTE [ Feeding: topology and shutdown ] in minifluid/data/loops.py.)
* Each call of a decorated reader starts its own workers, so the reader can be iterated again and
  again. Workers are daemons named ``minifluid-buffered``, ``minifluid-xmap-N`` (plus the feeder
  ``minifluid-xmap-feed``) and ``minifluid-mpreader-N``.
* Threads pass items through ``BlockingQueue``s: ``buffered`` is one ``ThreadSource``; ``xmap_readers``
  is a ``ThreadSource`` feeding ``(index, sample)`` tasks to mapper threads, which push their results
  (each mapper ends with ``EndOfData``). A failure of the source becomes the last task, so with
  ``order=True`` it surfaces after every sample before it; a mapper's failure is its last result.
  Samples travel as they are.
* The consumer is a generator whose ``finally`` (end of data, error, ``break``, ``close()``, garbage
  collection) closes the queues: threads stop at their next push or pop, after closing the source
  iterator (a source busy in its own code finishes its current sample in the background). Processes are
  a ``loops.ProcessGroup`` (the loaders' process manager): its ``receive`` notices a death, its ``stop``
  ends them (SIGTERM, SIGKILL after ``PROCESS_JOIN_TIMEOUT``).
* What the consumer raises when a worker fails:
  ``buffered`` / ``xmap_readers``: ``ReaderKilledError`` (a SystemError, fluid's queue-killed
  wording), ``__cause__`` the original exception object, message with its type, text and traceback.
  ``multiprocess_reader``: ``MultiprocessReaderError`` (a ValueError, fluid's "multiprocess reader
  raises an exception"), ``__cause__`` the child's exception rebuilt in the parent; a child that dies
  without reporting (SIGKILL, segfault, ``os._exit``) gives the same class with the loaders' death
  sentence (``loops.Child.died``: name, pid, signal or exit code), its ``WorkerDiedError`` as ``__cause__``.
"""
import multiprocessing
import os
import pickle
import threading
from dataclasses import dataclass

from minifluid.data.loops import END_OF_DATA, POLL_INTERVAL, EndOfData, ProcessGroup, ThreadSource, close_iterator
from minifluid.data.queue import BlockingQueue
from minifluid.errors import ExceptionWrapper, WorkerDiedError

__all__ = ["MULTIPROCESS_READER_MESSAGE", "MultiprocessReaderError", "buffered", "multiprocess_reader",
           "xmap_readers"]

MULTIPROCESS_READER_MESSAGE = "multiprocess reader raises an exception"

_UNBOUNDED = 2**62
"""Capacity of a queue asked for with size 0 ("unbounded")."""


class MultiprocessReaderError(ValueError):
    """A ``multiprocess_reader`` child raised or died; fluid raised a bare ValueError here."""


@dataclass(frozen=True, eq=False)
class _WorkerFailed:
    """A producer caught an exception; the consumer raises it."""
    wrapper: ExceptionWrapper


def _failure(where=None):
    """Wrap the exception being handled, saying where it happened (default: this thread)."""
    return _WorkerFailed(ExceptionWrapper(where=where or f"thread {threading.current_thread().name}"))


def _capacity(size):
    return size if size > 0 else _UNBOUNDED


class _Read:
    """``reader()``'s samples, the call made where they are iterated (in the feeder thread)."""

    def __init__(self, reader):
        self._reader, self._samples = reader, None

    def __iter__(self):
        self._samples = iter(self._reader())
        return self._samples

    def close(self):
        close_iterator(self._samples)


# ---------------------------------------------------------------------------------------------------
# buffered

def buffered(reader, size):
    """Read ahead up to ``size`` samples in a daemon thread (``minifluid-buffered``).

    Args:
        reader (callable): sample reader.
        size (int): queue capacity; 0 means unbounded.

    Returns:
        A reader yielding the same samples in the same order.

    Raises:
        ReaderKilledError: (when iterated) the source raised; ``__cause__`` is the original exception.
            See NOTE [ Reader decorator workers: protocol ].
    """

    def buffered_reader():
        source = ThreadSource(_Read(reader), BlockingQueue(_capacity(size)), "minifluid-buffered")
        try:
            yield from source
        finally:
            source.close()

    return buffered_reader


# ---------------------------------------------------------------------------------------------------
# xmap_readers

class _OrderGate:
    """Lets mapped results into the output queue one at a time, in source order (``order=True``).

    A worker holding result ``i`` sleeps on a condition until result ``i - 1`` has been queued; it is
    woken by ``advance`` (the timeout only serves to notice that the consumer stopped).
    """

    def __init__(self):
        self._next_index = 0
        self._turn = threading.Condition()

    def wait_turn(self, index, stopped):
        with self._turn:
            while self._next_index != index:
                if stopped():
                    return False
                self._turn.wait(POLL_INTERVAL)
        return True

    def advance(self):
        with self._turn:
            self._next_index += 1
            self._turn.notify_all()


class _Tasks(_Read):
    """``(index, sample)`` tasks of ``reader()``; a failure of the source is the last task."""

    def __iter__(self):
        return self._tasks()

    def _tasks(self):
        index = 0
        try:
            self._samples = iter(self._reader())
            for sample in self._samples:
                yield index, sample
                index += 1
        except GeneratorExit:  # closed by the consumer's stop: nothing to report
            raise
        except BaseException:
            yield index, _failure()


def _xmap_work_loop(mapper, tasks, results, gate, worker_id):
    """Mapper thread of ``xmap_readers``: map tasks into ``results`` (in order when ``gate``)."""
    while True:
        task = tasks.pop()
        if task is END_OF_DATA:
            results.push(EndOfData(worker_id))
            return
        index, sample = task
        if isinstance(sample, _WorkerFailed):
            result = sample
        else:
            try:
                result = mapper(sample)
            except BaseException:
                result = _failure()
        if gate is not None and not gate.wait_turn(index, results.is_closed):
            return
        was_put = results.push(result)
        if gate is not None:
            gate.advance()
        if not was_put or isinstance(result, _WorkerFailed):
            return


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """Map samples with ``process_num`` threads (``minifluid-xmap-N``).

    Args:
        mapper (callable): applied to each sample.
        reader (callable): sample reader, read by one feeder thread (``minifluid-xmap-feed``).
        process_num (int): number of mapping threads.
        buffer_size (int): capacity of the task and result queues; 0 means unbounded.
        order (bool, default False): keep the source order; otherwise results come as they finish.

    Raises:
        ValueError: ``process_num`` < 1.
        ReaderKilledError: (when iterated) the source or the mapper raised; ``__cause__`` is the
            original exception. See NOTE [ Reader decorator workers: protocol ].
    """
    if process_num < 1:
        raise ValueError("xmap_readers needs process_num >= 1, but got process_num={}".format(process_num))

    def xmapped_reader():
        results = BlockingQueue(_capacity(buffer_size))
        feeder = ThreadSource(_Tasks(reader), BlockingQueue(_capacity(buffer_size)), "minifluid-xmap-feed")
        gate = _OrderGate() if order else None
        workers = [threading.Thread(target=_xmap_work_loop, args=(mapper, feeder.queue, results, gate, i),
                                    name=f"minifluid-xmap-{i}", daemon=True) for i in range(process_num)]
        for thread in workers:
            thread.start()
        results.watch_producer(lambda: any(t.is_alive() for t in workers))
        try:
            running = process_num
            while running:
                item = results.pop()
                if isinstance(item, EndOfData):
                    running -= 1
                elif isinstance(item, _WorkerFailed):
                    raise item.wrapper.error()
                else:
                    yield item
        finally:
            results.close()  # a mapper's next push returns False
            feeder.close()  # and mappers waiting for a task see the end

    return xmapped_reader


# ---------------------------------------------------------------------------------------------------
# multiprocess_reader

def _mp_reader_loop(conn, inherited, reader, index):
    """Child process body of ``multiprocess_reader``: send pickled samples, then ``EndOfData``.

    Samples are pickled here, not by a queue's feeder thread, so a sample that cannot be pickled is
    reported as this child's failure instead of being dropped.
    """
    for parent_end in inherited:
        parent_end.close()
    try:
        for sample in reader():
            if sample is None:
                raise ValueError("sample has None")
            conn.send_bytes(pickle.dumps(sample, protocol=pickle.HIGHEST_PROTOCOL))
        last = EndOfData(source=index)
    except BaseException:
        last = _failure(f"process {multiprocessing.current_process().name} (pid {os.getpid()})")
    try:
        conn.send_bytes(pickle.dumps(last, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:  # the parent is gone and closed the pipe; nobody is left to tell
        pass


def multiprocess_reader(readers, use_pipe=True, queue_size=1000):
    """Run each reader in its own forked process (``minifluid-mpreader-N``) and interleave their samples.

    Unlike fluid (JSON), samples are pickled, so numpy arrays work and tuples stay tuples. Processes
    are forked, so readers may be closures or lambdas. The order across readers is not defined.

    Args:
        readers (list of callable): sample readers, one process each.
        use_pipe (bool, default True): accepted for compatibility; both settings use one pipe per child.
            fluid's ``use_pipe=False`` shared one ``multiprocessing.Queue``, and a shared stream cannot
            survive a child killed in the middle of a sample: its partial message (or the write lock it
            held) wedged the consumer for good. With a pipe each, a death reads as EOF on that pipe.
        queue_size (int, default 1000): accepted for compatibility (each pipe buffers what the OS holds).

    Raises:
        MultiprocessReaderError: (a ValueError, when iterated) a child raised (a sample of None
            included: "sample has None") or died. See NOTE [ Reader decorator workers: protocol ].
    """
    readers = list(readers)
    if not readers:
        raise ValueError("multiprocess_reader needs at least one reader")

    def mp_reader():
        processes = ProcessGroup("multiprocess_reader process")
        try:
            live = [processes.start(_mp_reader_loop, f"minifluid-mpreader-{index}", (reader, index), duplex=False)
                    for index, reader in enumerate(readers)]
            while live:
                try:
                    child, message = processes.receive(live)
                except WorkerDiedError as e:  # ended before sending all its samples
                    raise MultiprocessReaderError(f"{MULTIPROCESS_READER_MESSAGE}: {e.detail}") from e
                if isinstance(message, EndOfData):
                    live.remove(child)
                elif isinstance(message, _WorkerFailed):
                    raise message.wrapper.error(MultiprocessReaderError, MULTIPROCESS_READER_MESSAGE)
                else:
                    yield message
        finally:
            processes.stop()

    return mp_reader
