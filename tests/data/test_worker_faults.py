"""Faults around worker processes and multi-place rounds (issue 23 points 6, 8, 9, 10, 12, 14)."""
import multiprocessing

import numpy as np
import pytest

import minifluid as fluid
from minifluid.errors import ReaderKilledError

from .test_loader_errors import build



def batch(i):
    return np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")


def three_then_fail():
    for i in range(3):
        yield batch(i)
    raise ValueError("cannot open /data/part-00003")


def labels(step):
    return [int(np.asarray(d["label"])[0, 0]) for d in step]


# --- 9: a batch made before a failure is delivered on several places too ----------------------------------
@pytest.mark.timeout(60)
@pytest.mark.parametrize("use_multiprocess", [False, True])
def test_two_places_without_drop_last_deliver_the_batch_made_before_a_failure(use_multiprocess):
    _, loader, _ = build(True, use_multiprocess=use_multiprocess, drop_last=False)
    loader.set_batch_generator(three_then_fail, places=fluid.cpu_places(2))
    got = []
    with pytest.raises(ReaderKilledError, match="part-00003"):
        for step in loader():
            got.append(labels(step))
    assert got == [[0, 1], [2]]


@pytest.mark.timeout(60)
def test_data_parallel_non_iterable_runs_the_last_batch_then_raises():
    main, loader, loss = build(False, drop_last=False)
    loader.set_batch_generator(three_then_fail)
    exe = fluid.Executor(fluid.CPUPlace())
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    loader.start()
    got = []
    try:
        with pytest.raises(ReaderKilledError, match="part-00003"):
            while True:
                got.append([int(v[0, 0]) for v in exe.run(compiled, fetch_list=["label"], return_merged=False)[0]])
    finally:
        loader.reset()
    assert got == [[0, 1], [2]]


@pytest.mark.timeout(60)
def test_with_drop_last_a_short_round_before_a_failure_is_dropped_as_at_the_end():
    _, loader, _ = build(True, drop_last=True)
    loader.set_batch_generator(three_then_fail, places=fluid.cpu_places(2))
    got = []
    with pytest.raises(ReaderKilledError, match="part-00003"):
        for step in loader():
            got.append(labels(step))
    assert got == [[0, 1]]


# --- 10: a worker's reader raising SystemExit / KeyboardInterrupt / GeneratorExit keeps its type ----------
def raising(exc_type):
    def reader():
        yield batch(0)
        raise exc_type("the reader gave up")
    return reader


class RaisingDataset(fluid.io.Dataset):
    def __init__(self, exc_type):
        self.exc_type = exc_type

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 4:
            raise self.exc_type("the reader gave up")
        return np.full([4], i, "float32"), np.array([i], "int64")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("exc_type", [SystemExit, KeyboardInterrupt, GeneratorExit])
@pytest.mark.parametrize("transport", ["thread", "worker", "pool"])
def test_a_reader_raising_a_base_exception_is_reported_with_its_type(transport, exc_type):
    if transport == "pool":
        loader = fluid.io.DataLoader(RaisingDataset(exc_type), batch_size=2, num_workers=2, return_list=True)
        got = []
        with pytest.raises(ReaderKilledError) as info:
            for _, label in loader:
                got.append(int(label[0, 0]))
        assert got == [0, 2]
    else:
        _, loader, _ = build(True, use_multiprocess=transport == "worker")
        loader.set_batch_generator(raising(exc_type), places=fluid.CPUPlace())
        got = []
        with pytest.raises(ReaderKilledError) as info:
            for step in loader():
                got.extend(labels(step))
        assert got == [0]
    assert type(info.value.__cause__) is exc_type
    assert f"{exc_type.__name__}: the reader gave up" in str(info.value)
    assert "without reporting an error" not in str(info.value)
    assert multiprocessing.active_children() == []
