"""Argument checks of the loaders that used to hang or depend on `python -O` (issue 23 points 1 and 12)."""
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import minifluid as fluid

EMPTY_PLACES = r"places is empty"


def build(iterable=True, **kwargs):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=4, iterable=iterable, **kwargs)
        loss = fluid.layers.mean(image)
    return main, loader, loss


def batches(n=4):
    def reader():
        for i in range(n):
            yield np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")
    return reader


def samples(n=4):
    def reader():
        for i in range(n):
            yield np.full([4], i, "float32"), np.array([i], "int64")
    return reader


# --- 23.1: an empty place list is an error at once, in every loader mode ---------------------------------
@pytest.mark.parametrize("use_multiprocess", [False, True])
@pytest.mark.parametrize("setter", ["batch", "sample", "sample_list"])
def test_an_empty_place_list_is_refused_when_the_source_is_set(setter, use_multiprocess):
    _, loader, _ = build(use_multiprocess=use_multiprocess)
    with pytest.raises(ValueError, match=EMPTY_PLACES):
        if setter == "batch":
            loader.set_batch_generator(batches(), places=[])
        elif setter == "sample":
            loader.set_sample_generator(samples(), batch_size=2, places=[])
        else:
            loader.set_sample_list_generator(fluid.io.batch(samples(), 2), places=[])


def test_cpu_num_zero_is_refused_by_the_iterable_loader_and_by_data_parallel(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "0")
    _, loader, _ = build()
    with pytest.raises(ValueError, match=r"places is empty.*CPU_NUM"):
        loader.set_batch_generator(batches(), places=fluid.cpu_places())
    main, loader, loss = build(iterable=False)
    loader.set_batch_generator(batches())
    exe = fluid.Executor(fluid.CPUPlace())
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name)  # places from CPU_NUM
    loader.start()
    try:
        with pytest.raises(ValueError, match=r"places is empty.*CPU_NUM"):  # it used to return [] forever
            exe.run(compiled, fetch_list=[loss])
    finally:
        loader.reset()


def test_data_parallel_refuses_an_empty_place_list_at_once():
    main, _, loss = build(iterable=False)
    with pytest.raises(ValueError, match=EMPTY_PLACES):
        fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=[])


def test_read_round_refuses_zero_places():
    main, loader, _ = build(iterable=False)
    loader.set_batch_generator(batches())
    loader.start()
    try:
        with pytest.raises(ValueError, match="at least one place"):
            loader.queue.reader.read_round(0)
    finally:
        loader.reset()


def test_dataset_loader_refuses_an_empty_place_list():
    with pytest.raises(ValueError, match=EMPTY_PLACES):
        fluid.io.DataLoader(fluid.io.TensorDataset([np.zeros([4, 2], "float32")]), places=[])


# --- 23.12: checks are exceptions even under python -O; one timeout meaning ---------------------------------
@pytest.mark.timeout(60)
def test_checks_hold_under_python_O():
    script = textwrap.dedent("""
        import numpy as np, minifluid as fluid
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image], capacity=2)
        checks = [lambda: loader.set_sample_generator(lambda: iter([]), 0, places=fluid.CPUPlace()),
                  lambda: loader.set_batch_generator(lambda: iter([])),
                  lambda: loader.start(), lambda: loader.reset()]
        for check in checks:
            try:
                check()
            except AssertionError as e:
                print("raised", e)
            else:
                print("passed silently")
    """)
    proc = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True, timeout=50)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "raised batch_size must be larger than 0, but received 0",
        "raised Places cannot be None when DataLoader is iterable",
        "raised start() cannot be called when DataLoader is iterable",
        "raised reset() cannot be called when DataLoader is iterable"]


@pytest.mark.parametrize("batch_size", [None, 2.5, "4", True])
def test_batch_size_of_the_wrong_type_is_named(batch_size):
    _, loader, _ = build()
    with pytest.raises(TypeError, match=r"batch_size must be a positive int, but received " + repr(batch_size)
                       .replace("(", r"\(").replace(".", r"\.")):
        loader.set_sample_generator(samples(), batch_size, places=fluid.CPUPlace())


@pytest.mark.parametrize("timeout", [-1, "1", [1]])
def test_a_timeout_that_is_not_a_non_negative_number_is_refused(timeout):
    error = AssertionError if timeout == -1 else TypeError  # a negative one: fluid's AssertionError
    with pytest.raises(error, match="timeout"):
        build(timeout=timeout)
    with pytest.raises(error, match="timeout"):
        fluid.io.DataLoader(fluid.io.TensorDataset([np.zeros([4, 2], "float32")]), timeout=timeout)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("use_multiprocess", [False, True])
def test_timeout_zero_waits_like_none_in_both_loaders(use_multiprocess):
    """timeout=0 means "wait forever" in DataLoader(dataset) (paddle's meaning); from_generator agrees."""
    _, loader, _ = build(use_multiprocess=use_multiprocess, timeout=0)

    def slow():
        for i in range(2):
            time.sleep(0.2)  # the reader is not ready at once: timeout=0 must not mean "fail at once"
            yield np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")
    loader.set_batch_generator(slow, places=fluid.CPUPlace())
    assert [int(np.asarray(step[0]["label"])[0, 0]) for step in loader()] == [0, 1]
