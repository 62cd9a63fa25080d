"""The CPU double buffer (prefetch.ReadAheadStage): batches leave the queue a group at a time."""
import pytest

import minifluid as fluid
from minifluid.data.prefetch import make_stage
from minifluid.data.queue import END_OF_DATA, BlockingQueue


def _queue_of(n):
    q = BlockingQueue(8)
    for i in range(n):
        q.push(i)
    q.close()
    return q


@pytest.mark.parametrize("use_double_buffer", [True, False])
def test_cpu_double_buffer_reads_ahead_what_is_queued(use_double_buffer):
    q = _queue_of(5)
    stage = make_stage(q, [fluid.CPUPlace()], use_double_buffer)
    assert stage.get() == 0
    # with the double buffer the next batches are already taken (one hand-over for the group);
    # without it they are still in the queue
    assert len(q) == (0 if use_double_buffer else 4) and stage.occupancy() == 4
    assert [stage.get() for _ in range(4)] == [1, 2, 3, 4] and stage.get() is END_OF_DATA
