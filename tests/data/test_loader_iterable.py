"""DataLoader.from_generator, iterable mode (REFERENCE H, I, K) and the shared batch-count rules."""

import numpy as np
import pytest

import minifluid as fluid
from minifluid.data.loader import PRODUCER_THREAD_NAME, DataLoaderBase
from minifluid.lod_tensor import LoDTensor
from minifluid.data.leak_checks import live_threads


def live_producers(timeout=3.0):
    """Producer threads still alive after a short grace period (they are joined by the loader)."""
    return live_threads(PRODUCER_THREAD_NAME, timeout)


def build(iterable=True, capacity=8, **kwargs):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        image = fluid.data(name="image", shape=[None, 4], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[image, label], capacity=capacity, iterable=iterable,
                                                    **kwargs)
        loss = fluid.layers.mean(image)
    return main, loader, loss


def samples(n):
    def reader():
        for i in range(n):
            yield np.full([4], i, "float32"), np.array([i], "int64")
    return reader


def batches(n, bs=2):
    def reader():
        for i in range(n):
            yield np.full([bs, 4], i, "float32"), np.full([bs, 1], i, "int64")
    return reader


def labels_of(step):
    return [int(np.asarray(d["label"]).ravel()[0]) for d in step]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("iterable", [True, False])
@pytest.mark.parametrize("n, drop_last, expect", [(165, True, 5), (165, False, 6), (160, True, 5), (160, False, 5),
                                                  (200, True, 6), (200, False, 7), (159, True, 4), (159, False, 5)])
def test_batch_counts_at_batch_size_32(iterable, n, drop_last, expect):
    main, loader, loss = build(iterable)
    if iterable:
        loader.set_sample_generator(samples(n), 32, drop_last=drop_last, places=fluid.cpu_places(1))
        sizes = [np.asarray(step[0]["image"]).shape[0] for step in loader()]
    else:
        loader.set_sample_generator(samples(n), 32, drop_last=drop_last)
        exe, sizes = fluid.Executor(fluid.CPUPlace()), []
        loader.start()
        try:
            while True:
                (img,) = exe.run(main, fetch_list=["image"])
                sizes.append(img.shape[0])
        except fluid.core.EOFException:
            loader.reset()
    assert len(sizes) == expect
    assert sum(sizes) == (expect * 32 if drop_last else n)


@pytest.mark.timeout(30)
def test_sample_generator_equals_batch_plus_data_feeder():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        img = fluid.layers.data(name="img", shape=[1, 2, 2], dtype="float32")  # flat samples get reshaped
        lbl = fluid.data(name="lbl", shape=[None, 1], dtype="int64")
        loader = fluid.io.DataLoader.from_generator(feed_list=[img, lbl], capacity=4)
        feeder = fluid.DataFeeder([img, lbl], fluid.CPUPlace())

    def reader():
        rng = np.random.RandomState(7)
        for i in range(23):
            yield rng.rand(4), i  # float64 -> float32, int -> int64 [N, 1]

    loader.set_sample_generator(reader, batch_size=5, drop_last=False, places=fluid.CPUPlace())
    got = [step[0] for step in loader()]
    want = [feeder.feed(b) for b in fluid.io.batch(reader, 5)()]
    assert len(got) == len(want) == 5
    for g, w in zip(got, want):
        for name in ("img", "lbl"):
            a, b = np.asarray(g[name]), np.asarray(w[name])
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.timeout(30)
def test_each_call_restarts_break_and_reiterate_and_exe_run_accepts_the_steps():
    main, loader, loss = build()
    loader.set_batch_generator(batches(6), places=fluid.cpu_places(1))
    exe = fluid.Executor(fluid.CPUPlace())
    first = []
    for step in loader():
        (value,) = exe.run(main, feed=step, fetch_list=[loss])
        first.append(float(np.asarray(value).reshape(-1)[0]))
        if len(first) == 2:
            break
    assert first == [0.0, 1.0]
    assert not live_producers(), "break must stop the producer"
    assert [labels_of(s)[0] for s in loader()] == list(range(6))  # restarts from batch 0
    assert [labels_of(s)[0] for s in loader()] == list(range(6))  # and again after StopIteration
    assert not live_producers()


@pytest.mark.timeout(30)
def test_return_list_and_tensor_types():
    main, loader, _ = build(return_list=True)
    loader.set_batch_generator(batches(2), places=fluid.CPUPlace())
    steps = list(loader())
    assert len(steps) == 2 and len(steps[0]) == 1
    image, label = steps[1][0]
    assert isinstance(image, LoDTensor) and isinstance(label, LoDTensor)
    assert np.asarray(label).ravel().tolist() == [1, 1]
    assert loader() is loader


@pytest.mark.timeout(30)
def test_batch_values_are_copied_when_made_with_their_lod():
    """NOTE [ Batches are copied when they are made ] (data/adapters.py): what the generator does with its
    arrays afterwards never changes a batch already made."""
    main, loader, _ = build()
    arrays = [np.full([2, 4], i, "float32") for i in range(3)]
    lod = LoDTensor(np.ones([3, 1], "int64"), [[1, 2]])
    loader.set_batch_generator(lambda: ((a, lod) for a in arrays), places=fluid.CPUPlace())
    steps = list(loader())
    for a in arrays:
        a[:] = -1  # the user reuses the arrays after the epoch
    lod._array[:] = -1
    for i, step in enumerate(steps):
        assert np.asarray(step[0]["image"]).tolist() == np.full([2, 4], i).tolist()
        assert np.asarray(step[0]["label"]).ravel().tolist() == [1, 1, 1]
        assert step[0]["label"].recursive_sequence_lengths() == [[1, 2]]


@pytest.mark.timeout(30)
def test_lod_slots_go_through_the_feeder():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        words = fluid.data(name="words", shape=[None, 1], dtype="int64", lod_level=1)
        loader = fluid.io.DataLoader.from_generator(feed_list=[words], capacity=2)
    loader.set_sample_generator(lambda: iter([([1, 2, 3],), ([4, 5],), ([6, 7, 8, 9],)]), batch_size=3,
                                places=fluid.CPUPlace())
    (step,) = list(loader())
    t = step[0]["words"]
    assert np.asarray(t).shape == (9, 1) and t.recursive_sequence_lengths() == [[3, 2, 4]]


@pytest.mark.timeout(30)
def test_two_loaders_over_the_same_vars_interleave():
    main, first, _ = build()
    with fluid.program_guard(main, fluid.Program()):
        second = fluid.io.DataLoader.from_generator(feed_list=[main.global_block().var("image"),
                                                               main.global_block().var("label")], capacity=2)
    first.set_batch_generator(batches(4), places=fluid.CPUPlace())
    second.set_batch_generator(lambda: ((np.zeros([1, 4], "float32"), np.full([1, 1], 100 + i, "int64"))
                                        for i in range(4)), places=fluid.CPUPlace())
    pairs = [(labels_of(a)[0], labels_of(b)[0]) for a, b in zip(first(), second())]
    assert pairs == [(0, 100), (1, 101), (2, 102), (3, 103)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_places", [1, 2, 4])
def test_keep_order_on_several_places(num_places):
    main, loader, _ = build()
    loader.set_batch_generator(batches(4 * 5), places=fluid.cpu_places(num_places))
    steps = list(loader())
    assert len(steps) == 20 // num_places
    for s, step in enumerate(steps):
        assert len(step) == num_places
        assert labels_of(step) == [num_places * s + k for k in range(num_places)]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("drop_last, consumed, last_len", [(True, 100, 4), (False, 101, 1)])
def test_101_batches_on_4_places(drop_last, consumed, last_len):
    main, loader, _ = build(drop_last=drop_last)
    loader.set_batch_generator(batches(101), places=fluid.cpu_places(4))
    steps = list(loader())
    assert sum(len(s) for s in steps) == consumed
    assert len(steps[-1]) == last_len
    assert [x for s in steps for x in labels_of(s)] == list(range(consumed))


def test_construction_and_source_errors():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 1], dtype="float32")
        for capacity in (None, 0):
            with pytest.raises(ValueError, match="Please give value to capacity."):
                fluid.io.DataLoader.from_generator(feed_list=[x], capacity=capacity)
        for feed_list in (None, []):
            with pytest.raises(Exception, match="Feed list must be given under static mode."):
                fluid.io.DataLoader.from_generator(feed_list=feed_list, capacity=2)
        loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2)
    assert loader.iterable
    with pytest.raises(AssertionError, match="Data source of DataLoader has not set yet"):
        iter(loader)
    with pytest.raises(AssertionError, match=r"start\(\) cannot be called when DataLoader is iterable"):
        loader.start()
    with pytest.raises(AssertionError, match=r"reset\(\) cannot be called when DataLoader is iterable"):
        loader.reset()
    with pytest.raises(AssertionError, match="Places cannot be None when DataLoader is iterable"):
        loader.set_batch_generator(batches(1))
    with pytest.raises(AssertionError, match="batch_size must be larger than 0"):
        loader.set_sample_generator(samples(1), 0, places=fluid.CPUPlace())
    assert loader.set_batch_generator(batches(1), places=fluid.CPUPlace()) is loader
    assert loader.set_sample_list_generator(lambda: iter([]), places=fluid.CPUPlace()) is loader
    assert loader.set_sample_generator(samples(1), 1, places=fluid.CPUPlace()) is loader
    with pytest.raises(RuntimeError, match="Place cannot be CUDAPlace when use_double_buffer is False"):
        fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2, use_double_buffer=False) \
            .set_batch_generator(batches(1), places=fluid.CUDAPlace(0))


def test_base_class_is_abstract_and_callable():
    base = DataLoaderBase()
    assert base() is base
    with pytest.raises(NotImplementedError):
        iter(base)
    with pytest.raises(NotImplementedError):
        next(base)


@pytest.mark.timeout(30)
def test_wrong_field_count_gets_the_set_sample_list_generator_hint():
    main, loader, _ = build()
    batched = fluid.io.batch(samples(6), 3)  # lists of samples given to set_batch_generator by mistake
    loader.set_batch_generator(batched, places=fluid.CPUPlace())
    with pytest.raises(SystemError, match="need to used `set_sample_list_generator`") as err:
        list(loader())
    assert isinstance(err.value.__cause__, ValueError)
    loader.set_sample_generator(lambda: iter([(np.zeros(4, "float32"),)]), 1, places=fluid.CPUPlace())
    with pytest.raises(SystemError, match="The sample number of reader's input data and the input number of feed "
                                          "list are not equal"):
        list(loader())
    assert not live_producers()


@pytest.mark.timeout(30)
def test_a_dict_batch_is_refused_instead_of_feeding_its_keys():
    main, loader, _ = build()
    batch = {"image": np.zeros([2, 4], "float32"), "label": np.zeros([2, 1], "int64")}  # right length
    loader.set_batch_generator(lambda: iter([batch]), places=fluid.CPUPlace())
    with pytest.raises(SystemError, match="got a dict with keys \\['image', 'label'\\]") as err:
        list(loader())
    assert isinstance(err.value.__cause__, TypeError)
    assert not live_producers()


@pytest.mark.timeout(30)
def test_ragged_batch_field_is_a_type_error_in_the_producer():
    main, loader, _ = build()
    loader.set_batch_generator(lambda: iter([([[1.0], [1.0, 2.0]], np.zeros([2, 1], "int64"))]),
                               places=fluid.CPUPlace())
    with pytest.raises(SystemError, match="Faild to convert input data to a regular ndarray") as err:
        list(loader())
    assert isinstance(err.value.__cause__, TypeError)


def test_check_input_array_converts_or_names_the_ragged_data():
    from minifluid.fluid_reader import GeneratorLoader
    check = GeneratorLoader._check_input_array
    assert check([[1, 2], [3, 4]]).shape == (2, 2)
    with pytest.raises(TypeError, match="Faild to convert input data to a regular ndarray"):
        check([np.zeros(2), np.zeros(1)])


@pytest.mark.timeout(60)
def test_private_reset_stops_an_iterable_epoch_left_early():
    def endless():
        i = 0
        while True:
            yield np.full([2, 4], i, "float32"), np.full([2, 1], i, "int64")
            i += 1
    main, loader, _ = build(capacity=2)
    loader.set_batch_generator(endless, places=fluid.CPUPlace())
    epoch = iter(loader())
    assert labels_of(next(epoch)) == [0]
    assert loader._thread is not None and loader._thread.is_alive()
    loader._reset()  # fluid's tests call it after a break; the epoch iterator is still referenced here
    assert loader._thread is None and live_producers() == []
    with pytest.raises(StopIteration):
        next(epoch)
    assert labels_of(next(iter(loader()))) == [0]  # a new epoch starts over
    loader._reset()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("return_list", [False, True])
def test_an_unordered_loader_gives_each_place_an_entry_in_the_last_step(monkeypatch, return_list):
    from minifluid.data import options
    monkeypatch.setattr(options.keep_data_loader_order, "value", True)  # restored after the test
    steps = {}
    for keep in (True, False):
        options.keep_data_loader_order(keep)
        main, loader, loss = build(drop_last=False, return_list=return_list)
        loader.set_batch_generator(batches(7), places=fluid.cpu_places(3))
        steps[keep] = list(loader())
    assert [len(s) for s in steps[True]] == [3, 3, 1]  # ordered: only the places that have a batch
    assert [len(s) for s in steps[False]] == [3, 3, 3] and steps[False][-1][1:] == [[] if return_list else {}] * 2
    if not return_list:
        exe = fluid.Executor()
        compiled = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(3))
        (image,) = exe.run(compiled, feed=steps[False][-1], fetch_list=["image"])
        assert image.shape == (2, 4) and image.ravel().tolist() == [6.0] * 8  # the empty places sat out
