"""Reader decorators that read in background threads (``buffered``, ``xmap_readers``) or processes
(``multiprocess_reader``).

NOTE [ Reader decorator workers: protocol ]
* Each call of a decorated reader starts its own workers, so the reader can be iterated again and
  again. Workers are daemons named ``minifluid-buffered``, ``minifluid-xmap-N`` (plus the feeder
  ``minifluid-xmap-feed``) and ``minifluid-mpreader-N``.
* A worker loop is a module-level function. It catches everything (errors cross boundaries as
  values, see ``minifluid.errors``) and ends by sending ``_EndOfData`` or ``_WorkerFailed`` to the
  consumer; samples travel as they are.
* Nothing blocks for more than ``POLL_INTERVAL``: a worker puts with a timeout and re-checks the stop
  event; the consumer gets with a timeout and re-checks that its producers are still alive.
* The consumer is a generator whose ``finally`` (end of data, error, ``break``, ``close()``, garbage
  collection) sets the stop event; threads then exit within ``POLL_INTERVAL``, after closing the
  source iterator (a source stuck inside its own code is left to finish its current sample: Python
  cannot interrupt a thread). Processes are terminated and joined (killed after ``JOIN_TIMEOUT``).
* What the consumer raises when a worker fails:
  ``buffered`` / ``xmap_readers``: ``ReaderKilledError`` (a SystemError, fluid's queue-killed
  wording), ``__cause__`` the original exception object, message with its type, text and traceback.
  ``multiprocess_reader``: ``MultiprocessReaderError`` (a ValueError, fluid's "multiprocess reader
  raises an exception"), ``__cause__`` the child's exception rebuilt in the parent; a child that dies
  without reporting (SIGKILL, segfault, ``os._exit``) gives the same class, naming pid and exit code,
  with a ``WorkerDiedError`` as ``__cause__``.
"""
import multiprocessing
import multiprocessing.connection
import os
import pickle
import queue
import signal
import threading
from dataclasses import dataclass

from minifluid.errors import QUEUE_KILLED_MESSAGE, ExceptionWrapper, ReaderKilledError, WorkerDiedError

__all__ = ["MULTIPROCESS_READER_MESSAGE", "MultiprocessReaderError", "buffered", "multiprocess_reader",
           "xmap_readers"]

POLL_INTERVAL = 0.05
"""Seconds any worker or consumer blocks on a queue, pipe or condition before re-checking whether it
must stop or whether its producers are still alive; it bounds how late a stop or a death is noticed."""

JOIN_TIMEOUT = 1.0
"""Seconds to wait for a terminated (SIGTERM) reader process before killing it (SIGKILL)."""

MULTIPROCESS_READER_MESSAGE = "multiprocess reader raises an exception"


class MultiprocessReaderError(ValueError):
    """A ``multiprocess_reader`` child raised or died; fluid raised a bare ValueError here."""


@dataclass(frozen=True)
class _EndOfData:
    """A producer sent its last sample; ``source`` says which child process it was."""
    source: int = 0


@dataclass(frozen=True, eq=False)
class _WorkerFailed:
    """A producer caught an exception; the consumer raises it."""
    wrapper: ExceptionWrapper


@dataclass(frozen=True)
class _Stopped:
    """Returned by ``_take`` when the stop event was set before an item arrived."""


_END = _EndOfData()
_STOPPED = _Stopped()


# ---------------------------------------------------------------------------------------------------
# Thread plumbing shared by buffered and xmap_readers.

def _put(target_queue, item, stop_event):
    """Put ``item`` unless ``stop_event`` is set first; returns whether it was put."""
    while not stop_event.is_set():
        try:
            target_queue.put(item, timeout=POLL_INTERVAL)
            return True
        except queue.Full:
            pass
    return False


def _take(source_queue, stop_event):
    """Get the next item, or ``_STOPPED`` once ``stop_event`` is set."""
    while not stop_event.is_set():
        try:
            return source_queue.get(timeout=POLL_INTERVAL)
        except queue.Empty:
            pass
    return _STOPPED


def _receive(source_queue, producers):
    """Consumer side: get the next item; raise if every producer thread ended without sending one."""
    while True:
        try:
            return source_queue.get(timeout=POLL_INTERVAL)
        except queue.Empty:
            if any(t.is_alive() for t in producers):
                continue
        try:  # a producer may have put its last item just before it ended
            return source_queue.get_nowait()
        except queue.Empty:
            names = ", ".join(t.name for t in producers)
            raise ReaderKilledError(f"{QUEUE_KILLED_MESSAGE}\n  Threads {names} ended without "
                                    f"sending their end-of-data marker.") from None


def _close(iterator):
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def _failure(where=None):
    """Wrap the exception being handled, saying where it happened (default: this thread)."""
    return _WorkerFailed(ExceptionWrapper(where=where or f"thread {threading.current_thread().name}"))


# ---------------------------------------------------------------------------------------------------
# buffered

def _buffer_loop(reader, sample_queue, stop_event):
    """Thread body of ``buffered``: read the source into ``sample_queue``, then ``_END`` or a failure."""
    try:
        samples = iter(reader())
        try:
            for sample in samples:
                if not _put(sample_queue, sample, stop_event):
                    return
        finally:
            _close(samples)
        last = _END
    except BaseException:
        last = _failure()
    _put(sample_queue, last, stop_event)


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
        sample_queue = queue.Queue(maxsize=size)
        stop_event = threading.Event()
        thread = threading.Thread(target=_buffer_loop, args=(reader, sample_queue, stop_event),
                                  name="minifluid-buffered", daemon=True)
        thread.start()
        try:
            while True:
                item = _receive(sample_queue, [thread])
                if isinstance(item, _EndOfData):
                    return
                if isinstance(item, _WorkerFailed):
                    raise item.wrapper.error()
                yield item
        finally:
            stop_event.set()

    return buffered_reader


# ---------------------------------------------------------------------------------------------------
# xmap_readers

class _OrderGate:
    """Lets mapped results into the output queue one at a time, in source order (``order=True``).

    A worker holding result ``i`` sleeps on a condition until result ``i - 1`` has been queued; it is
    woken by ``advance`` (the timeout only serves to notice the stop event).
    """

    def __init__(self):
        self._next_index = 0
        self._turn = threading.Condition()

    def wait_turn(self, index, stop_event):
        with self._turn:
            while self._next_index != index:
                if stop_event.is_set():
                    return False
                self._turn.wait(POLL_INTERVAL)
        return True

    def advance(self):
        with self._turn:
            self._next_index += 1
            self._turn.notify_all()


def _xmap_feed_loop(reader, task_queue, stop_event, num_workers):
    """Feeder thread of ``xmap_readers``: queue ``(index, sample)`` tasks, then one end task per worker.

    A failure of the source becomes a task too, so with ``order=True`` it surfaces after every sample
    the source produced before it.
    """
    index = 0
    try:
        samples = iter(reader())
        try:
            for sample in samples:
                if not _put(task_queue, (index, sample), stop_event):
                    return
                index += 1
        finally:
            _close(samples)
        last_tasks = [(index, _END)] * num_workers
    except BaseException:
        last_tasks = [(index, _failure())]
    for task in last_tasks:
        if not _put(task_queue, task, stop_event):
            return


def _xmap_work_loop(mapper, task_queue, result_queue, stop_event, gate):
    """Worker thread of ``xmap_readers``: map tasks into ``result_queue`` (in order when ``gate``)."""
    while True:
        task = _take(task_queue, stop_event)
        if task is _STOPPED:
            return
        index, sample = task
        if isinstance(sample, _EndOfData):
            _put(result_queue, _END, stop_event)
            return
        if isinstance(sample, _WorkerFailed):
            result = sample
        else:
            try:
                result = mapper(sample)
            except BaseException:
                result = _failure()
        if gate is not None and not gate.wait_turn(index, stop_event):
            return
        was_put = _put(result_queue, result, stop_event)
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
        task_queue = queue.Queue(maxsize=buffer_size)
        result_queue = queue.Queue(maxsize=buffer_size)
        stop_event = threading.Event()
        gate = _OrderGate() if order else None
        feeder = threading.Thread(target=_xmap_feed_loop, args=(reader, task_queue, stop_event, process_num),
                                  name="minifluid-xmap-feed", daemon=True)
        workers = [threading.Thread(target=_xmap_work_loop,
                                    args=(mapper, task_queue, result_queue, stop_event, gate),
                                    name=f"minifluid-xmap-{i}", daemon=True)
                   for i in range(process_num)]
        for thread in [feeder, *workers]:
            thread.start()
        try:
            running = process_num
            while running:
                item = _receive(result_queue, workers)
                if isinstance(item, _EndOfData):
                    running -= 1
                elif isinstance(item, _WorkerFailed):
                    raise item.wrapper.error()
                else:
                    yield item
        finally:
            stop_event.set()

    return xmapped_reader


# ---------------------------------------------------------------------------------------------------
# multiprocess_reader

def _mp_reader_loop(reader, send, index):
    """Child process body of ``multiprocess_reader``: send pickled samples, then ``_EndOfData``.

    Samples are pickled here, not by a queue's feeder thread, so a sample that cannot be pickled is
    reported as this child's failure instead of being dropped.
    """
    try:
        for sample in reader():
            if sample is None:
                raise ValueError("sample has None")
            send(pickle.dumps(sample, protocol=pickle.HIGHEST_PROTOCOL))
        last = _EndOfData(source=index)
    except BaseException:
        last = _failure(f"process {multiprocessing.current_process().name} (pid {os.getpid()})")
    try:
        send(pickle.dumps(last, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:  # the parent is gone and closed the pipe; nobody is left to tell
        pass


def _died_error(process):
    """The consumer-side error for a child that ended without sending its end-of-data marker."""
    process.join(JOIN_TIMEOUT)  # reap it, so the exit code is known
    code = process.exitcode
    how = f"exit code {code}"
    if code is not None and code < 0:
        try:
            how += f", killed by {signal.Signals(-code).name}"
        except ValueError:
            how += f", killed by signal {-code}"
    detail = f"process {process.name} (pid {process.pid}) died ({how}) before sending all its samples"
    error = MultiprocessReaderError(f"{MULTIPROCESS_READER_MESSAGE}: {detail}")
    error.__cause__ = WorkerDiedError(detail)
    return error


def _pipe_messages(connections, processes):
    """Yield unpickled messages from the children's pipes (one each) as they arrive."""
    live = dict(zip(connections, processes))
    while live:
        ready = multiprocessing.connection.wait(list(live), timeout=POLL_INTERVAL)
        for conn in ready:
            try:
                message = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):  # the only writer is gone (OSError: it died in mid-message)
                message = None
            if message is None:  # (raised outside the handler: ``from None`` would drop the cause)
                raise _died_error(live[conn])
            if isinstance(message, _EndOfData):
                del live[conn]
            yield message
        if not ready:
            for conn, process in live.items():
                if process.exitcode is not None and not conn.poll():
                    raise _died_error(process)


def _stop_processes(processes):
    for process in processes:
        if process.exitcode is None:
            process.terminate()
    for process in processes:
        process.join(JOIN_TIMEOUT)
        if process.exitcode is None:
            process.kill()
            process.join()
        process.close()


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
        context = multiprocessing.get_context("fork")
        processes, connections = [], []
        try:
            for index, reader in enumerate(readers):
                receiver, sender = context.Pipe(duplex=False)
                connections.append(receiver)
                process = context.Process(target=_mp_reader_loop, args=(reader, sender.send_bytes, index),
                                          name=f"minifluid-mpreader-{index}", daemon=True)
                try:
                    process.start()
                finally:  # only the child may hold the write end, so its death reads as EOF
                    sender.close()
                processes.append(process)
            for message in _pipe_messages(connections, processes):
                if isinstance(message, _WorkerFailed):
                    raise message.wrapper.error(MultiprocessReaderError, MULTIPROCESS_READER_MESSAGE)
                if not isinstance(message, _EndOfData):
                    yield message
        finally:
            _stop_processes(processes)
            for conn in connections:
                conn.close()

    return mp_reader
