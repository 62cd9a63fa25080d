"""PyReader, layers.py_reader / create_py_reader_by_data / read_file / double_buffer (REFERENCE O84-O86),
bottleneck diagnosis, and the CUDA double buffer (skipped without a GPU)."""
import os
import sys
import time

import numpy as np
import pytest

import minifluid as fluid
from minifluid.data.diagnosis import EpochStats, verdict_of
from minifluid.framework import unique_name
from minifluid.framework.variable import VarType
from minifluid.layers import io as layers_io

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def batches(n):
    def reader():
        for i in range(n):
            yield np.full([2, 3], i, "float32"), np.full([2, 1], i, "int64")
    return reader


@pytest.mark.timeout(30)
@pytest.mark.parametrize("iterable", [True, False])
def test_py_reader_class_wraps_from_generator(iterable):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="int64")
        reader = fluid.io.PyReader(feed_list=[x, y], capacity=4, iterable=iterable)
        loss = fluid.layers.mean(x)
    assert reader.iterable is iterable
    exe = fluid.Executor(fluid.CPUPlace())
    if iterable:
        reader.decorate_batch_generator(batches(3), places=fluid.CPUPlace())
        values = [float(np.asarray(exe.run(main, feed=d, fetch_list=[loss])[0]).reshape(-1)[0]) for d in reader()]
        reader.decorate_sample_list_generator(fluid.io.batch(lambda: ((np.ones(3), [1]) for _ in range(5)), 2),
                                              places=fluid.CPUPlace())
        assert [np.asarray(d[0]["x"]).shape[0] for d in reader()] == [2, 2, 1]
    else:
        reader.decorate_sample_generator(lambda: ((np.full(3, i, "float32"), [i]) for i in range(6)), batch_size=2)
        values = []
        reader.start()
        try:
            while True:
                values.append(float(np.asarray(exe.run(main, fetch_list=[loss])[0]).reshape(-1)[0]))
        except fluid.core.EOFException:
            reader.reset()
        assert reader.queue is not None
    assert values == ([0.0, 1.0, 2.0] if iterable else [0.5, 2.5, 4.5])


@pytest.mark.timeout(30)
def test_layers_py_reader_and_read_file():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), unique_name.guard():
        reader = layers_io.py_reader(capacity=4, shapes=[[-1, 3], [-1, 1]], dtypes=["float32", "int64"])
        assert unique_name.generate("lod_tensor_blocking_queue") == "lod_tensor_blocking_queue_1"  # global names
        image, label = layers_io.read_file(reader)
        loss = fluid.layers.mean(image)
    assert reader.type == VarType.READER and reader.name == "double_buffer_0"
    # as fluid builds it: the reader is created in the startup program, the main program reads it
    assert [op.type for op in main.global_block().ops] == ["create_double_buffer_reader", "read", "mean"]
    assert [op.type for op in startup.global_block().ops] == ["create_py_reader"]
    assert startup.global_block().ops[0].input("blocking_queue") == ["lod_tensor_blocking_queue_0"]
    assert main._inference_optimize().global_block().ops[0].type == "mean"  # the two reader ops pruned
    assert label.dtype == "int64" and tuple(image.shape) == (-1, 3)
    reader.decorate_tensor_provider(batches(2))
    exe = fluid.Executor(fluid.CPUPlace())
    got = []
    reader.start()
    try:
        while True:
            got.append(exe.run(main, fetch_list=[loss, label]))
    except fluid.core.EOFException:
        reader.reset()
    assert [int(lbl[0, 0]) for _, lbl in got] == [0, 1]
    clone = main.clone()  # the runtime is shared, not copied
    assert clone.global_block().var("double_buffer_0").queue is reader.queue


@pytest.mark.timeout(30)
def test_two_live_py_readers_with_one_name_are_refused_not_left_reading_each_others_data():
    def net():
        main = fluid.Program()
        with fluid.program_guard(main, fluid.Program()), unique_name.guard():  # global names restart at 0
            reader = layers_io.py_reader(capacity=2, shapes=[[-1, 1]], dtypes=["float32"])
            out = fluid.layers.scale(layers_io.read_file(reader), scale=1.0)
        return main, reader, out

    train_main, train_reader, train_out = net()
    with pytest.raises(ValueError, match="'lod_tensor_blocking_queue_0' already belongs to another live"):
        net()
    train_reader.decorate_batch_generator(lambda: iter([[np.full((1, 1), 1.0, "float32")]]))
    train_reader.start()
    assert fluid.Executor().run(train_main, fetch_list=[train_out])[0].tolist() == [[1.0]]
    train_reader.reset()
    del train_main, train_reader, train_out  # gone: the name may be taken again (a notebook cell run twice)
    net()


@pytest.mark.timeout(30)
def test_named_py_reader_and_create_by_data_and_double_buffer():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        reader = layers_io.py_reader(capacity=2, shapes=[[-1, 2]], dtypes=["float32"], name="train",
                                     use_double_buffer=False)
        assert reader.name == "train_reader"
        assert startup.global_block().has_var("train_queue") and main.global_block().has_var("train_reader")
        buffered = layers_io.double_buffer(reader)
        out = layers_io.read_file(buffered)  # one slot: a single variable
        assert isinstance(out, fluid.Variable)
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        with pytest.raises(TypeError):
            layers_io.create_py_reader_by_data(capacity=2, feed_list=x)
        by_data = layers_io.create_py_reader_by_data(capacity=2, feed_list=[x], name="bydata")
        (xout,) = [layers_io.read_file(by_data)]
    buffered.decorate_paddle_reader(fluid.io.batch(lambda: iter([([1.0, 2.0],), ([3.0, 4.0],)]), 2))
    exe = fluid.Executor(fluid.CPUPlace())
    buffered.start()
    by_data.decorate_batch_generator(lambda: iter([(np.ones([1, 2], "float32"),)]))
    by_data.start()
    value, xv = exe.run(main, fetch_list=[out, xout])
    assert value.tolist() == [[1.0, 2.0], [3.0, 4.0]] and xv.tolist() == [[1.0, 1.0]]
    buffered.reset()
    by_data.reset()


@pytest.mark.timeout(30)
def test_diagnosis_counters_and_verdict():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4)
    assert loader.bottleneck().startswith("no verdict yet")
    loader.set_batch_generator(batches(20), places=fluid.CPUPlace())
    for _ in loader():
        pass
    stats = loader.stats()
    assert stats["batches"] == 20 and stats["queue_capacity"] == 4
    assert stats["compute_s"] > 0 and stats["wait_s"] + stats["first_batch_wait_s"] > 0
    assert loader.bottleneck().split(":")[0] in ("reader-bound", "compute-bound")

    def slow():  # a reader much slower than the (empty) model
        for i in range(5):
            time.sleep(0.02)
            yield np.zeros([1, 3], "float32"), np.zeros([1, 1], "int64")

    loader.set_batch_generator(slow, places=fluid.CPUPlace())
    for _ in loader():
        pass
    assert loader.bottleneck().startswith("reader-bound: ")
    assert "use_multiprocess=True, xmap_readers" in loader.bottleneck()  # 20 ms a batch: worth a process
    assert loader.stats()["wait_fraction"] > 0.5


def test_reader_bound_verdict_for_light_batches_advises_against_a_worker_process():
    stats = EpochStats(capacity=64)
    t = 0.0
    for _ in range(100):  # 30 us a batch: 20 waiting for the reader, 10 computing, an empty queue
        stats.record(t, t + 20e-6, 0)
        t += 30e-6
    verdict = stats.verdict()
    assert verdict.startswith("reader-bound: ") and "a batch takes only 30 us" in verdict
    assert "set_batch_generator" in verdict and "would add over 100 us" in verdict
    heavy = EpochStats(capacity=64)
    for i in range(10):  # 20 ms a batch, mostly waiting: a process for the reader pays off
        heavy.record(i * 0.02, i * 0.02 + 0.015, 0)
    assert "(use_multiprocess=True, xmap_readers" in heavy.verdict()


def test_profile_loader_judges_all_epochs_by_the_one_epoch_rule():
    sys.path.insert(0, os.path.join(REPO, "tools"))
    try:
        import profile_loader
    finally:
        sys.path.remove(os.path.join(REPO, "tools"))
    full = ({"batches": 50, "wait_s": 0.5, "compute_s": 0.5, "wait_fraction": 0.5, "mean_queue_occupancy": 60.0,
             "queue_capacity": 64, "epoch": 0, "first_batch_wait_s": 0.0}, "")
    starved = ({**full[0], "mean_queue_occupancy": 1.0}, "")
    # waiting half the time with a full queue is GIL hand-over, not a slow reader (as for one epoch)
    assert profile_loader.overall([full, full])["verdict"] == "compute-bound"
    result = profile_loader.overall([starved, starved])
    assert result["verdict"] == "reader-bound" and result["batches"] == 100
    assert result["advice"] == verdict_of(
        {**starved[0], "batches": 100, "wait_s": 1.0, "compute_s": 1.0}, steady_batches=98)
    assert "use_multiprocess=True, xmap_readers" in result["advice"]  # ~10 ms a batch: worth a process


@pytest.mark.skipif(not fluid.is_compiled_with_cuda(), reason="needs CuPy and a CUDA GPU (CUDA double buffer)")
@pytest.mark.timeout(60)
def test_cuda_double_buffer_yields_device_tensors_in_order():
    import cupy
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[x, y], capacity=4)
    loader.set_batch_generator(batches(10), places=fluid.CUDAPlace(0))
    seen = []
    for step in loader():
        t = step[0]["y"]
        assert isinstance(t._array, cupy.ndarray)
        seen.append(int(np.asarray(t)[0, 0]))
    assert seen == list(range(10))


@pytest.mark.timeout(30)
def test_py_reader_thread_and_exited():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        reader = layers_io.py_reader(capacity=2, shapes=[[-1, 1]], dtypes=["float32"], use_double_buffer=False)
        out = layers_io.read_file(reader)

    def endless():
        i = 0
        while True:
            yield [np.full([1, 1], i, "float32")]
            i += 1

    reader.decorate_batch_generator(endless)
    assert reader.thread is None and reader.exited
    reader.start()
    exe = fluid.Executor(fluid.CPUPlace())
    assert exe.run(main, fetch_list=[out])[0].tolist() == [[0.0]]
    assert reader.thread.is_alive() and not reader.exited
    reader.exited = True  # the feeding thread stops pushing: what was queued is read, then EOF
    reader.thread.join(5)
    assert reader.exited
    with pytest.raises(fluid.core.EOFException):
        for _ in range(10):
            exe.run(main, fetch_list=[out])
    reader.reset()
    assert reader.thread is None
