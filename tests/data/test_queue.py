"""BlockingQueue: fluid's LoDTensorBlockingQueue semantics (REFERENCE G39-G44) and minifluid's extras."""
import threading
import time

import pytest

from minifluid.data.queue import (END_OF_DATA, NOTHING, BlockingQueue, OrderedMultiDeviceQueue, QueueTimeout)
from minifluid.errors import QUEUE_KILLED_MESSAGE, ExceptionWrapper, ReaderKilledError


def wrapper_for(exc):
    try:
        raise exc
    except Exception:
        return ExceptionWrapper(where="test")


@pytest.mark.parametrize("capacity", [0, -1, None])
def test_capacity_must_be_positive(capacity):
    with pytest.raises(ValueError):
        BlockingQueue(capacity)


def test_fifo_size_capacity():
    q = BlockingQueue(3)
    assert q.capacity() == 3 and q.size() == 0
    assert q.push("a") and q.push("b")
    assert q.size() == 2 and len(q) == 2
    assert q.pop() == "a" and q.pop() == "b"
    assert q.size() == 0


@pytest.mark.timeout(10)
def test_push_blocks_while_full_until_a_pop():
    q = BlockingQueue(1)
    q.push(1)
    done = threading.Event()

    def producer():
        q.push(2)
        done.set()

    t = threading.Thread(target=producer)
    t.start()
    assert not done.wait(0.2)  # back-pressure: still blocked
    assert q.pop() == 1
    assert done.wait(5)
    t.join()
    assert q.pop() == 2


def test_push_after_close_returns_false_and_enqueues_nothing():
    q = BlockingQueue(2)
    q.close()
    assert q.push(1) is False
    assert q.size() == 0
    assert q.is_closed()


@pytest.mark.timeout(10)
def test_close_drains_then_signals_end_of_data():
    q = BlockingQueue(4)
    for i in range(3):
        q.push(i)
    q.close()
    assert [q.pop(), q.pop(), q.pop()] == [0, 1, 2]
    assert q.pop() is END_OF_DATA
    assert q.pop() is END_OF_DATA  # and keeps saying so


@pytest.mark.timeout(10)
def test_close_wakes_a_blocked_pop_and_a_blocked_push():
    empty, full = BlockingQueue(1), BlockingQueue(1)
    full.push(0)
    results = {}
    threads = [threading.Thread(target=lambda: results.__setitem__("pop", empty.pop())),
               threading.Thread(target=lambda: results.__setitem__("push", full.push(1)))]
    for t in threads:
        t.start()
    time.sleep(0.1)
    empty.close()
    full.close()
    for t in threads:
        t.join(5)
    assert results == {"pop": END_OF_DATA, "push": False}


def test_kill_refuses_pushes_and_pop_raises_the_chained_fatal_error():
    q = BlockingQueue(2)
    q.kill(wrapper_for(ValueError("bad file")))
    assert q.is_killed() and q.is_closed()
    with pytest.raises(ReaderKilledError) as push_err:
        q.push(1)
    with pytest.raises(SystemError) as pop_err:
        q.pop()
    for err in (push_err.value, pop_err.value):
        assert QUEUE_KILLED_MESSAGE in str(err)
        assert "ValueError: bad file" in str(err)
        assert isinstance(err.__cause__, ValueError)


def test_kill_delivers_items_queued_before_the_failure_first():
    q = BlockingQueue(4)
    q.push("made before the failure")
    q.kill(wrapper_for(RuntimeError("then it failed")))
    assert q.pop() == "made before the failure"
    with pytest.raises(ReaderKilledError):
        q.pop()


@pytest.mark.timeout(10)
def test_kill_wakes_a_blocked_pop():
    q = BlockingQueue(1)
    errors = []

    def consumer():
        try:
            q.pop()
        except ReaderKilledError as e:
            errors.append(e)

    t = threading.Thread(target=consumer)
    t.start()
    time.sleep(0.1)
    q.kill(wrapper_for(KeyError("k")))
    t.join(5)
    assert len(errors) == 1 and isinstance(errors[0].__cause__, KeyError)


def test_reopen_clears_items_and_closed_flag_but_not_a_kill():
    q = BlockingQueue(3)
    q.push(1)
    q.close()
    q.reopen()
    assert q.size() == 0 and not q.is_closed()
    assert q.push(2) and q.pop() == 2
    q.kill()
    with pytest.raises(RuntimeError, match="killed"):
        q.reopen()
    q.reset()  # reset clears the kill too
    assert not q.is_killed() and q.push(3) and q.pop() == 3


def test_generation_guards_against_a_stale_producer():
    q = BlockingQueue(3)
    gen = q.generation
    q.reopen()
    assert q.push("late", generation=gen) is False
    q.close(generation=gen)  # no-op: stale
    q.kill(wrapper_for(ValueError()), generation=gen)  # no-op: stale
    assert not q.is_closed() and not q.is_killed()
    assert q.push("current", generation=q.generation)
    assert q.pop() == "current"


def test_try_pop_never_blocks():
    q = BlockingQueue(2)
    assert q.try_pop() is NOTHING
    q.push(5)
    assert q.try_pop() == 5


def test_timeouts():
    q = BlockingQueue(1)
    with pytest.raises(QueueTimeout):
        q.pop(timeout=0.05)
    q.push(1)
    with pytest.raises(QueueTimeout):
        q.push(2, timeout=0.05)


@pytest.mark.timeout(10)
def test_a_dead_producer_is_noticed():
    q = BlockingQueue(2)
    dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    q.watch_producer(dead.is_alive)
    with pytest.raises(ReaderKilledError, match="stopped without closing"):
        q.pop()


def test_speed_test_mode_never_pops():
    q = BlockingQueue(2, speed_test_mode=True)
    q.push("head")
    assert [q.pop() for _ in range(3)] == ["head"] * 3


@pytest.mark.timeout(20)
def test_wake_level_keeps_fifo_and_a_slow_producer_is_still_read():
    q = BlockingQueue(16, wake_level=4)
    received = []

    def producer():
        for i in range(50):
            q.push(i)
            if i % 10 == 0:
                time.sleep(0.02)  # fewer than wake_level queued for a while
        q.close()

    t = threading.Thread(target=producer)
    t.start()
    while (item := q.pop()) is not END_OF_DATA:
        received.append(item)
    t.join()
    assert received == list(range(50))
    # a single hand-pushed item is read without waiting for the wake level
    q2 = BlockingQueue(16, wake_level=8)
    q2.push("only")
    assert q2.pop(timeout=1) == "only"
    threading.Timer(0.05, q2.push, args=("later",)).start()
    assert q2.pop(timeout=2) == "later"


def test_ordered_multi_device_queue_round_robin():
    q = OrderedMultiDeviceQueue(5)
    assert not q.wait_for_inited(1)
    q.set_device_count(2)
    assert q.wait_for_inited(1)
    assert q.device_queue(0).capacity() == 3 and q.device_queue(1).capacity() == 3
    for i in range(4):
        q.push(i)
    assert [q.pop(0), q.pop(0)] == [0, 2] and [q.pop(1), q.pop(1)] == [1, 3]
    q.push("x")
    q.reset()
    assert q.size() == 0
    q.push("a")
    assert q.pop(0) == "a"  # index restarts at device 0
    q.close()
    assert q.pop(1) is END_OF_DATA


def test_take_ready_moves_a_group_in_order_without_blocking():
    q = BlockingQueue(8)
    assert q.take_ready(4) == ()
    for i in range(6):
        q.push(i)
    assert q.take_ready(4) == [0, 1, 2, 3] and q.size() == 2
    q.close()
    assert q.take_ready(10) == [4, 5] and q.pop() is END_OF_DATA


class _CountingCondition(threading.Condition):
    """The queue's condition, counting the wake-ups it sends."""

    def __init__(self):
        super().__init__(threading.Lock())
        self.wakes = 0

    def notify(self, n=1):
        self.wakes += 1
        super().notify(n)


def _until(predicate):
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, "the other thread never started waiting"
        time.sleep(0.001)


@pytest.mark.timeout(30)
def test_wake_level_a_waiting_consumer_is_not_woken_for_fewer_items():
    q = BlockingQueue(16, wake_level=4)
    q._cond = cond = _CountingCondition()
    got = []
    consumer = threading.Thread(target=lambda: got.append(q.pop()))
    consumer.start()
    _until(lambda: q._get_waiters == 1)
    q.push("a")  # the consumer is inside its wait: below the wake level, nobody is woken
    assert cond.wakes == 0
    consumer.join(10)
    assert got == ["a"]  # ...and it still reads the item on its own (NOTE [ Queue wake level ])


@pytest.mark.timeout(30)
def test_wake_level_a_blocked_producer_is_woken_once_wake_level_slots_are_free():
    q = BlockingQueue(8, wake_level=4)
    q._cond = cond = _CountingCondition()
    for i in range(8):
        q.push(i)
    producer = threading.Thread(target=q.push, args=(8,))
    producer.start()
    _until(lambda: q._put_waiters == 1)
    assert [q.pop() for _ in range(3)] == [0, 1, 2] and cond.wakes == 0  # 3 free slots: keep it waiting
    assert q.pop() == 3 and cond.wakes == 1  # 4 free: one wake-up for the group
    producer.join(10)
    assert not producer.is_alive() and [q.pop() for _ in range(5)] == [4, 5, 6, 7, 8]


@pytest.mark.timeout(30)
def test_a_loaders_queue_wakes_its_consumer_per_group_of_batches():
    """from_generator's queue has a wake level (data/loader.py WAKE_LEVEL, capped at capacity // 4): with
    it switched off (1), every batch pushed would wake the waiting consumer."""
    import minifluid as fluid
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 1], "float32")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=64, iterable=False)
    q = loader._queue
    q._cond = cond = _CountingCondition()
    got = []
    consumer = threading.Thread(target=lambda: got.append(q.pop()))
    consumer.start()
    _until(lambda: q._get_waiters == 1)
    for i in range(15):  # a group is 16 batches: the consumer sleeps on
        q.push(i)
    assert cond.wakes == 0
    q.push(15)
    consumer.join(10)
    assert cond.wakes == 1 and got == [0]
