"""DataLoader.from_generator(iterable=False): reader ops in the Program, start/reset (REFERENCE J, K)."""
import itertools
import threading
import time

import numpy as np
import pytest

import minifluid as fluid
from minifluid.data.loader import NOT_STARTED_MESSAGE, PRODUCER_THREAD_NAME
from minifluid.framework import unique_name
from minifluid.framework.variable import VarType
from minifluid.data.leak_checks import live_threads


def live_producers(timeout=3.0):
    """Producer threads still alive after a short grace period (they are joined by the loader)."""
    return live_threads(PRODUCER_THREAD_NAME, timeout)


def build(capacity=4, before_network=True, use_double_buffer=True, lod=False, **kwargs):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64", lod_level=1 if lod else 0)

        def make_loader():
            return fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=capacity, iterable=False,
                                                      use_double_buffer=use_double_buffer, **kwargs)
        loader = make_loader() if before_network else None
        loss = fluid.layers.mean(image)
        if not before_network:
            loader = make_loader()
    return main, loader, loss


def batches(n, bs=2):
    def reader():
        for i in range(n):
            yield np.full([bs, 4], i, "float32"), np.full([bs, 1], i, "int64")
    return reader


def endless():
    for i in itertools.count():
        yield np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")


def run_epoch(exe, main, loader, fetch):
    values = []
    loader.start()
    try:
        while True:
            values.append(exe.run(main, fetch_list=fetch))
    except fluid.core.EOFException:
        loader.reset()
    return values


def test_ops_vars_names_and_scope():
    with unique_name.guard():
        main, loader, _ = build()
        assert unique_name.generate("lod_tensor_blocking_queue") == "lod_tensor_blocking_queue_0"  # A5
    block = main.global_block()
    types = [op.type for op in block.ops]
    assert types[:3] == ["create_py_reader", "create_double_buffer_reader", "read"]
    create, double, read = block.ops[:3]
    queue_name = create.input("blocking_queue")[0]
    reader_name = create.output("Out")[0]
    assert queue_name.startswith("lod_tensor_blocking_queue_")
    assert reader_name.startswith("create_py_reader_")
    assert double.output("Out")[0].startswith("double_buffer_")
    assert read.input("Reader") == double.output("Out") and read.output("Out") == ["image", "label"]
    assert read.attr("drop_last") is True
    assert create.attr("shape_concat") == [-1, 4, -1, 1] and create.attr("ranks") == [2, 2]
    assert create.attr("lod_levels") == [0, 0] and create.attr("need_check_feed") == [1, 1]
    assert create.attr("dtypes") == ["float32", "int64"]
    assert block.var(reader_name).type == VarType.READER
    scope = fluid.global_scope()
    assert scope.find_var(queue_name).value() is loader.queue
    assert scope.find_value(reader_name) is scope.find_value(double.output("Out")[0]) is loader.queue.reader
    assert not loader.iterable
    with pytest.raises(AssertionError, match="DataLoader is not iterable"):
        iter(loader)


def test_without_double_buffer_no_double_buffer_op():
    main, _, _ = build(use_double_buffer=False)
    assert [op.type for op in main.global_block().ops][:2] == ["create_py_reader", "read"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("before_network", [True, False])
def test_feeds_the_network_whatever_the_creation_order(before_network):
    main, loader, loss = build(before_network=before_network)
    loader.set_batch_generator(batches(3))
    exe = fluid.Executor(fluid.CPUPlace())
    values = run_epoch(exe, main, loader, [loss, "label"])
    assert [float(np.asarray(v).reshape(-1)[0]) for v, _ in values] == [0.0, 1.0, 2.0]
    assert main.global_block().ops[-1].type == "mean"


@pytest.mark.timeout(120)
def test_100_start_eof_reset_cycles_give_the_same_count():
    main, loader, loss = build(capacity=2)
    loader.set_sample_generator(lambda: ((np.ones(4, "float32"), np.array([1])) for _ in range(10)), batch_size=3,
                                drop_last=False)
    exe = fluid.Executor(fluid.CPUPlace())
    counts = {len(run_epoch(exe, main, loader, [loss])) for _ in range(100)}
    assert counts == {4}
    assert not live_producers()


@pytest.mark.timeout(60)
def test_early_reset_mid_epoch_with_an_endless_generator():
    main, loader, loss = build(capacity=2)
    loader.set_batch_generator(endless)
    exe = fluid.Executor(fluid.CPUPlace())
    for _ in range(10):
        loader.start()
        firsts = [float(np.asarray(exe.run(main, fetch_list=[loss])[0]).reshape(-1)[0]) for _ in range(3)]
        assert firsts == [0.0, 1.0, 2.0]  # every start replays from the beginning
        time.sleep(0.01)  # let the producer block on the full queue (Paddle #22320)
        loader.reset()
    assert not live_producers()


@pytest.mark.timeout(30)
def test_reset_before_start_twice_and_not_started_errors():
    main, loader, loss = build()
    loader.reset()  # before start: fine
    loader.reset()  # twice: fine
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(RuntimeError, match="not started"):  # at once: no hang (the test has a timeout)
        exe.run(main, fetch_list=[loss])
    with pytest.raises(AssertionError, match="Data source of DataLoader has not set yet"):
        loader.start()
    loader.set_batch_generator(batches(2))
    loader.start()
    with pytest.raises(RuntimeError, match=r"start\(\) was called twice without reset\(\)"):
        loader.start()
    exe.run(main, fetch_list=[loss])
    loader.reset()
    with pytest.raises(RuntimeError) as err:  # after reset, again not started: no hang
        exe.run(main, fetch_list=[loss])
    assert str(err.value) == NOT_STARTED_MESSAGE
    assert len(run_epoch(exe, main, loader, [loss])) == 2  # and a clean epoch afterwards
    assert not live_producers()


@pytest.mark.timeout(30)
def test_eof_repeats_until_reset():
    main, loader, loss = build()
    loader.set_batch_generator(batches(1))
    exe = fluid.Executor(fluid.CPUPlace())
    loader.start()
    exe.run(main, fetch_list=[loss])
    for _ in range(2):
        with pytest.raises(fluid.core.EOFException, match="There is no next data."):
            exe.run(main, fetch_list=[loss])
    assert not live_producers()  # the producer ends by itself at the end of data
    loader.reset()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_places", [1, 2, 4])
def test_read_round_keeps_order(num_places):
    main, loader, _ = build(capacity=8)
    loader.set_batch_generator(batches(4 * 3))
    reader = fluid.global_scope().find_value(main.global_block().ops[2].input("Reader")[0])
    loader.start()
    rounds = []
    try:
        while True:
            rounds.append([int(b[1][0, 0]) for b in reader.read_round(num_places, True)])
    except fluid.core.EOFException:
        loader.reset()
    assert rounds == [[num_places * s + k for k in range(num_places)] for s in range(12 // num_places)]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("drop_last, consumed", [(True, 100), (False, 101)])
def test_101_batches_on_4_places_through_read_round(drop_last, consumed):
    main, loader, _ = build(capacity=8, drop_last=drop_last)
    loader.set_batch_generator(batches(101))
    reader = loader.queue.reader
    read = main.global_block().ops[2]
    assert read.attr("drop_last") is drop_last
    loader.start()
    got = []
    try:
        while True:
            got.extend(int(b[1][0, 0]) for b in reader.read_round(4, read.attr("drop_last")))
    except fluid.core.EOFException:
        loader.reset()
    assert got == list(range(consumed))


@pytest.mark.timeout(30)
def test_staged_batch_is_read_first_by_the_read_op():
    main, loader, loss = build()
    loader.set_batch_generator(batches(2))
    exe = fluid.Executor(fluid.CPUPlace())
    loader.start()
    reader = loader.queue.reader
    reader.stage([np.full([1, 4], 7.0, "float32"), np.zeros([1, 1], "int64")])
    assert float(np.asarray(exe.run(main, fetch_list=[loss])[0]).reshape(-1)[0]) == 7.0
    assert float(np.asarray(exe.run(main, fetch_list=[loss])[0]).reshape(-1)[0]) == 0.0
    loader.reset()


@pytest.mark.timeout(30)
def test_read_op_checks_shape_and_dtype_of_fluid_data():
    exe = fluid.Executor(fluid.CPUPlace())
    main, loader, loss = build()
    loader.set_batch_generator(lambda: iter([(np.zeros([2, 5], "float32"), np.zeros([2, 1], "int64"))]))
    loader.start()
    with pytest.raises(ValueError, match=r"The fed Variable image should have dimensions = 2, shape = \[-1, 4\], "
                                         r"but received fed shape \[2, 5\]"):
        exe.run(main, fetch_list=[loss])
    loader.reset()
    loader.set_batch_generator(lambda: iter([(np.zeros([2, 4], "float64"), np.zeros([2, 1], "int64"))]))
    loader.start()
    with pytest.raises(ValueError, match="The data type of fed Variable image must be float32, but received float64"):
        exe.run(main, fetch_list=[loss])
    loader.reset()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_double_buffer", [True, False])
def test_lod_levels_of_the_outputs(use_double_buffer):
    main, loader, _ = build(lod=True, use_double_buffer=use_double_buffer)
    loader.set_sample_list_generator(lambda: iter([[(np.zeros(4, "float32"), [1, 2]), (np.ones(4, "float32"), [3])]]))
    exe = fluid.Executor(fluid.CPUPlace())
    loader.start()
    image, label = exe.run(main, fetch_list=["image", "label"], return_numpy=False)
    assert label.recursive_sequence_lengths() == [[2, 1]] and np.asarray(label).ravel().tolist() == [1, 2, 3]
    assert image.recursive_sequence_lengths() == []
    loader.reset()


@pytest.mark.timeout(30)
def test_external_pushes_come_out_unchanged_in_fifo_order():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32")  # not feed-checked
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4, iterable=False)
    queue = loader.queue
    pushed = [np.full([1, 2], i, "float64") for i in range(3)]

    def pusher():
        for i, a in enumerate(pushed):
            if i == 0:
                queue.push([a])
                continue
            array, tensor = fluid.core.LoDTensorArray(), fluid.LoDTensor()  # what fluid code pushes
            tensor.set(a, fluid.CPUPlace())
            array.append(tensor)
            queue.push(array)
        queue.close()

    t = threading.Thread(target=pusher)
    t.start()
    exe = fluid.Executor(fluid.CPUPlace())
    out = []
    try:
        while True:
            out.append(exe.run(main, fetch_list=[x])[0])
    except fluid.core.EOFException:
        pass
    t.join()
    assert [o.dtype for o in out] == [np.float64] * 3
    assert [o.tolist() for o in out] == [a.tolist() for a in pushed]


@pytest.mark.timeout(30)
def test_clone_for_test_keeps_the_reader_and_runs():
    main, loader, loss = build()
    test_prog = main.clone(for_test=True)
    assert [op.type for op in test_prog.global_block().ops][:3] == ["create_py_reader", "create_double_buffer_reader",
                                                                    "read"]
    loader.set_batch_generator(batches(2))
    exe = fluid.Executor(fluid.CPUPlace())
    assert len(run_epoch(exe, test_prog, loader, [loss])) == 2


@pytest.mark.timeout(30)
def test_places_are_ignored_with_a_log(caplog):
    main, loader, _ = build()
    with caplog.at_level("INFO", logger="minifluid.data"):
        assert loader.set_batch_generator(batches(1), places=fluid.CPUPlace()) is loader
    assert "places would be ommited when DataLoader is not iterable" in caplog.text


@pytest.mark.timeout(60)
def test_unordered_loader_creates_its_reader_in_the_startup_program(monkeypatch):
    from minifluid.data import options
    monkeypatch.setattr(options.keep_data_loader_order, "value", True)  # restored after the test
    assert options.keep_data_loader_order() is True
    with pytest.raises(AssertionError):
        options.keep_data_loader_order(0)
    options.keep_data_loader_order(False)
    assert options.keep_data_loader_order() is False
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image], capacity=4, iterable=False)
        loss = fluid.layers.mean(image)
    options.keep_data_loader_order(True)  # loaders read the switch when they are built
    assert [op.type for op in startup.global_block().ops] == ["create_py_reader"]
    assert [op.type for op in main.global_block().ops] == ["create_double_buffer_reader", "read", "mean"]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    loader.set_batch_generator(lambda: ((np.full([2, 4], i, "float32"),) for i in range(8)))
    compiled = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(2))
    seen = [np.asarray(v).reshape(-1)[::8].tolist() for v, in run_epoch(exe, compiled, loader, [image])]
    assert sorted(sum(seen, [])) == list(range(8))  # every batch exactly once, two per step
    assert [op.type for op in build()[0].global_block().ops][:3] == \
        ["create_py_reader", "create_double_buffer_reader", "read"]  # ordered again
