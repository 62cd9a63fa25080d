"""The feeding runtime's shared loop parts (data/loops.py): one message per kind of failure."""
import threading
import time

import numpy as np
import pytest

import minifluid as fluid
from minifluid.data.loops import ThreadSource
from minifluid.data.queue import BlockingQueue
from minifluid.data.worker import ProcessBatchSource
from minifluid.errors import ReaderTimeoutError


def _one_then_stall(stop):
    yield [np.zeros((1, 1))]
    stop.wait(30)


@pytest.mark.timeout(60)
def test_a_thread_a_non_iterable_loader_and_a_worker_time_out_with_one_sentence():
    stop = threading.Event()
    said = []
    try:
        feeder = ThreadSource(_one_then_stall(stop), BlockingQueue(2), "feeder-under-test", timeout=0.3)
        next(feeder)
        with pytest.raises(ReaderTimeoutError) as thread_error:
            next(feeder)
        said.append(str(thread_error.value).replace("thread feeder-under-test", "WHO"))

        with fluid.program_guard(fluid.Program(), fluid.Program()):
            x = fluid.data("x", [None, 1], "float64")
            loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2, iterable=False, timeout=0.3)
        loader.set_batch_generator(lambda: _one_then_stall(stop))
        loader.start()
        reader = loader._reader
        reader.read_next()
        with pytest.raises(ReaderTimeoutError) as loader_error:
            reader.read_next()
        loader.reset()
        said.append(str(loader_error.value).replace("thread minifluid-producer", "WHO"))

        source = ProcessBatchSource(lambda: _one_then_stall(threading.Event()), timeout=0.3)
        next(source)
        pid = source.worker_pids[0]
        with pytest.raises(ReaderTimeoutError) as worker_error:
            next(source)
        said.append(str(worker_error.value).replace(f"worker minifluid-worker-0 (pid {pid})", "WHO"))
    finally:
        stop.set()
    assert said[0] == said[1] == said[2]
    assert "No batch from WHO within timeout=0.3 s." in said[0] and "larger `timeout`" in said[0]
