"""The map-style data API: datasets, samplers, default_collate_fn and DatasetLoader."""
import io
import multiprocessing
import threading
import time

import numpy as np
import pytest
from minifluid.data.collate import default_collate_fn
from minifluid.data.dataloader import THREAD_NAME, DatasetLoader
from minifluid.data.dataset import (BatchSampler, ChainDataset, ComposeDataset, Dataset, IterableDataset,
                                    RandomSampler, SequenceSampler, Subset, TensorDataset, get_worker_info)
from minifluid.data.worker import ReaderTimeoutError
from minifluid.errors import QUEUE_KILLED_MESSAGE, ReaderKilledError
from minifluid.places import CPUPlace


class RangeDataset(Dataset):
    """Sample i is (float32 [2] filled with i, int i)."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, idx):
        return np.full([2], idx, dtype="float32"), idx

    def __len__(self):
        return self.n


class FailingDataset(RangeDataset):
    def __getitem__(self, idx):
        if idx == 7:
            raise ValueError("bad sample 7")
        return super().__getitem__(idx)


class StrAtFive(RangeDataset):
    def __getitem__(self, idx):
        return (np.zeros([2], "float32"), "five") if idx == 5 else super().__getitem__(idx)


class SlowDataset(RangeDataset):
    def __getitem__(self, idx):
        time.sleep(0.5)
        return super().__getitem__(idx)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield np.array([i, i], dtype="int64"), float(i)


_init_worker_id = None


def _record_init(worker_id):
    global _init_worker_id
    _init_worker_id = worker_id


class WorkerReport(RangeDataset):
    """Sample i says which worker built it and what worker_init_fn saw there."""

    def __getitem__(self, idx):
        info = get_worker_info()
        return idx, info.id, info.num_workers, -1 if _init_worker_id is None else _init_worker_id


def labels_of(loader):
    return np.concatenate([labels for _, labels in loader()]).tolist()


def loader_threads():
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("drop_last, expected_sizes", [(False, [3, 3, 3, 1]), (True, [3, 3, 3])])
def test_len_and_drop_last(drop_last, expected_sizes):
    loader = DatasetLoader(RangeDataset(10), batch_size=3, drop_last=drop_last)
    assert len(loader) == len(expected_sizes)
    assert [len(labels) for _, labels in loader()] == expected_sizes
    assert [len(labels) for _, labels in iter(loader)] == expected_sizes  # iter() is an epoch too


@pytest.mark.timeout(10)
def test_tqdm_sees_the_length():
    tqdm = pytest.importorskip("tqdm").tqdm
    loader = DatasetLoader(RangeDataset(10), batch_size=4)
    bar = tqdm(loader(), file=io.StringIO())
    assert bar.total == 3 and len(list(bar)) == 3


@pytest.mark.timeout(10)
def test_shuffle_is_a_permutation_that_changes_per_epoch_and_follows_np_seed():
    loader = DatasetLoader(RangeDataset(50), batch_size=7, shuffle=True)
    first, second = labels_of(loader), labels_of(loader)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second
    np.random.seed(3)
    seeded = labels_of(loader)
    np.random.seed(3)
    assert labels_of(loader) == seeded


@pytest.mark.timeout(10)
def test_break_then_new_epoch_starts_from_the_first_batch():
    loader = DatasetLoader(RangeDataset(10), batch_size=2)
    for _, labels in loader():
        break
    assert next(iter(loader))[1].tolist() == [0, 1]


@pytest.mark.timeout(10)
def test_batch_sampler_semantics():
    ds = RangeDataset(10)
    assert list(BatchSampler(ds, batch_size=4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert list(BatchSampler(ds, batch_size=4, drop_last=True)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(BatchSampler(ds, batch_size=4)) == 3 and len(BatchSampler(ds, batch_size=4, drop_last=True)) == 2
    assert list(BatchSampler(sampler=[4, 3, 2], batch_size=2)) == [[4, 3], [2]]
    assert list(BatchSampler(sampler=SequenceSampler(ds), batch_size=5)) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    shuffled = list(BatchSampler(ds, shuffle=True, batch_size=3))
    assert sorted(sum(shuffled, [])) == list(range(10))
    for kwargs in [{}, {"dataset": ds, "sampler": [1]}, {"sampler": [1], "shuffle": True},
                   {"dataset": ds, "batch_size": 0}, {"dataset": ds, "drop_last": 1},
                   {"dataset": Stream(3)}]:
        with pytest.raises(AssertionError):
            BatchSampler(**kwargs)


@pytest.mark.timeout(10)
def test_loader_takes_a_batch_sampler_and_refuses_it_with_batch_size():
    sampler = BatchSampler(sampler=[9, 0, 5, 1], batch_size=3)
    loader = DatasetLoader(RangeDataset(10), batch_sampler=sampler)
    assert len(loader) == 2 and labels_of(loader) == [9, 0, 5, 1]
    with pytest.raises(AssertionError, match="should not be set when batch_sampler is given"):
        DatasetLoader(RangeDataset(10), batch_sampler=sampler, batch_size=4)


@pytest.mark.timeout(10)
def test_random_sampler():
    ds = RangeDataset(6)
    assert sorted(RandomSampler(ds)) == list(range(6)) and len(RandomSampler(ds)) == 6
    drawn = list(RandomSampler(ds, replacement=True, num_samples=20))
    assert len(drawn) == 20 and set(drawn) <= set(range(6))
    assert list(RandomSampler(ds, generator=iter([5, 4, 3, 2, 1, 0, 9]))) == [5, 4, 3, 2, 1, 0]
    gen_a, gen_b = np.random.default_rng(1), np.random.default_rng(1)
    assert list(RandomSampler(ds, generator=gen_a)) == list(RandomSampler(ds, generator=gen_b))
    with pytest.raises(ValueError, match="num_samples should not be specified"):
        RandomSampler(ds, num_samples=3)
    with pytest.raises(TypeError):
        RandomSampler(ds, replacement=1)


@pytest.mark.timeout(10)
def test_tensor_compose_subset_datasets():
    x, y = np.arange(12, dtype="float32").reshape(6, 2), np.arange(6)
    ds = TensorDataset([x, y])
    assert len(ds) == 6 and ds[2][0].tolist() == [4.0, 5.0] and ds[2][1] == 2
    with pytest.raises(ValueError, match="same shape of the 1st dimension"):
        TensorDataset([x, y[:5]])
    images, labels = next(iter(DatasetLoader(ds, batch_size=4)))
    assert images.shape == (4, 2) and labels.dtype == np.int64
    composed = ComposeDataset([ds, RangeDataset(6)])
    assert len(composed) == 6 and len(composed[1]) == 4
    assert Subset(RangeDataset(10), [7, 3])[1][1] == 3 and len(Subset(RangeDataset(10), [7, 3])) == 2
    with pytest.raises(NotImplementedError):
        Dataset()[0]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("num_workers", [0, 1])
def test_iterable_dataset(num_workers):
    loader = DatasetLoader(Stream(10), batch_size=4, num_workers=num_workers)
    batches = list(loader())
    assert [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert np.concatenate([b[1] for b in batches]).tolist() == list(range(10))
    assert batches[0][1].dtype == np.float32
    assert len(list(DatasetLoader(Stream(10), batch_size=4, drop_last=True)())) == 2
    assert len(list(DatasetLoader(ChainDataset([Stream(3), Stream(4)]), batch_size=2)())) == 4
    with pytest.raises(TypeError):
        len(loader)
    with pytest.raises(ValueError, match="not support shuffle"):
        DatasetLoader(Stream(3), shuffle=True)


class SplitStream(IterableDataset):
    """0..n-1; in worker k of N, only its share (by get_worker_info()), tagged with the worker id."""

    def __init__(self, n):
        self.start, self.end = 0, n

    def __iter__(self):
        info = get_worker_info()
        start, end, wid = self.start, self.end, -1
        if info is not None:
            share = -(-(end - start) // info.num_workers)
            start, wid = start + info.id * share, info.id
            end = min(start + share, end)
        for i in range(start, end):
            yield np.array([i], "int64"), np.array([wid], "int64")


def _shrink_to_my_share(worker_id):
    """worker_init_fn: edit this worker's copy of the dataset (get_worker_info().dataset)."""
    info = get_worker_info()
    dataset = info.dataset
    share = -(-(dataset.end - dataset.start) // info.num_workers)
    dataset.start += worker_id * share
    dataset.end = min(dataset.start + share, dataset.end)


@pytest.mark.timeout(30)
def test_each_worker_iterates_its_own_copy_of_an_iterable_dataset():
    batches = list(DatasetLoader(SplitStream(10), batch_size=2, num_workers=2)())
    values = [b[0].ravel().tolist() for b in batches]
    workers = [int(b[1][0, 0]) for b in batches]
    assert values == [[0, 1], [5, 6], [2, 3], [7, 8], [4], [9]]  # round-robin over the workers' batches
    assert workers == [0, 1, 0, 1, 0, 1]
    plain = list(DatasetLoader(Stream(6), batch_size=4, num_workers=3)())  # no split: each reads it all
    assert sorted(np.concatenate([b[1] for b in plain]).tolist()) == sorted(list(range(6)) * 3)


class RangeStream(IterableDataset):
    """start..end-1, whoever iterates it."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return (np.array([i], "int64") for i in range(self.start, self.end))


@pytest.mark.timeout(30)
def test_worker_init_fn_can_split_an_iterable_dataset_through_worker_info():
    loader = DatasetLoader(RangeStream(0, 7), batch_size=1, num_workers=3, worker_init_fn=_shrink_to_my_share)
    assert sorted(int(b[0][0, 0]) for b in loader()) == list(range(7))  # each worker edited its own copy
    assert (loader.dataset.start, loader.dataset.end) == (0, 7)  # the parent's is untouched


@pytest.mark.timeout(10)
def test_batch_size_none_with_drop_last_yields_the_stream_samples():
    samples = list(DatasetLoader(Stream(3), batch_size=None, drop_last=True)())  # a TypeError before
    assert [int(s[1]) for s in samples] == [0, 1, 2] and samples[0][0].shape == (2,)


@pytest.mark.timeout(10)
def test_batch_size_none_yields_samples():
    samples = list(DatasetLoader(RangeDataset(3), batch_size=None)())
    assert len(samples) == 3 and samples[2][0].shape == (2,) and samples[2][1] == 2
    shuffled = [int(label) for _, label in DatasetLoader(RangeDataset(20), batch_size=None, shuffle=True)()]
    assert sorted(shuffled) == list(range(20)) and shuffled != list(range(20))


@pytest.mark.timeout(10)
def test_default_collate_fn_tuples_dicts_numbers():
    arrays = default_collate_fn([(np.zeros([3], "float16"), 1, 0.5, True, np.float64(2.0), [1, 2])] * 4)
    assert [a.shape for a in arrays] == [(4, 3), (4,), (4,), (4,), (4,), (4, 2)]
    assert [a.dtype for a in arrays] == [np.float16, np.int64, np.float32, np.bool_, np.float64, np.int64]
    assert [a.dtype for a in default_collate_fn([([0.5],)] * 2)] == [np.float32]
    dicts = default_collate_fn([{"image": np.ones([2]), "label": 3}] * 5)
    assert {k: a.shape for k, a in dicts.items()} == {"image": (5, 2), "label": (5,)}
    (single,) = default_collate_fn([np.ones([2, 2])] * 3)
    assert single.shape == (3, 2, 2)
    with pytest.raises(ValueError, match="different shapes"):
        default_collate_fn([np.ones([2]), np.ones([3])])
    image, names = default_collate_fn([(np.ones([2]), "a"), (np.ones([2]), "b")])  # strings stay strings
    assert image.shape == (2, 2) and names == ["a", "b"]
    with pytest.raises(TypeError, match=r"field 1 of type\(s\) int, str"):
        default_collate_fn([(np.ones([2]), 1), (np.ones([2]), "b")])


@pytest.mark.timeout(10)
def test_uncollatable_sample_names_the_index_and_types():
    loader = DatasetLoader(StrAtFive(8), batch_size=4, use_buffer_reader=False)
    with pytest.raises(TypeError) as info:
        list(loader())
    text = str(info.value)
    assert "field 1 of type(s) int, str" in text
    assert "dataset index 5 returned (ndarray(float32, (2,)), str)" in text
    assert "dataset indices 4, 6, 7 returned (ndarray(float32, (2,)), int)" in text
    with pytest.raises(ReaderKilledError) as info:  # through the loader thread
        list(DatasetLoader(StrAtFive(8), batch_size=4)())
    assert isinstance(info.value.__cause__, TypeError) and "dataset index 5" in str(info.value)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_getitem_error_reaches_the_consumer_with_its_cause(num_workers):
    loader = DatasetLoader(FailingDataset(20), batch_size=3, num_workers=num_workers)
    seen = []
    with pytest.raises(ReaderKilledError) as info:
        for _, labels in loader():
            seen.extend(labels.tolist())
    assert seen == list(range(6))  # batches before the failing one arrive first, in order
    assert isinstance(info.value, SystemError) and QUEUE_KILLED_MESSAGE in str(info.value)
    assert isinstance(info.value.__cause__, ValueError) and str(info.value.__cause__) == "bad sample 7"
    assert "FailingDataset.__getitem__(7)" in str(info.value)  # the producer's traceback, with the index
    assert not loader_threads() and not multiprocessing.active_children()


@pytest.mark.timeout(10)
def test_without_buffer_reader_errors_are_raised_as_they_are_and_no_thread_runs():
    loader = DatasetLoader(FailingDataset(20), batch_size=3, use_buffer_reader=False)
    epoch = loader()
    next(epoch)
    assert not loader_threads()
    with pytest.raises(ValueError, match="bad sample 7"):
        list(epoch)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_early_break_leaves_no_thread_or_process(num_workers):
    loader = DatasetLoader(RangeDataset(200), batch_size=2, num_workers=num_workers)
    for i, _ in enumerate(loader()):
        if num_workers == 0:
            assert len(loader_threads()) == 1
        else:
            assert len(multiprocessing.active_children()) == 2
        if i == 1:
            break
    assert not loader_threads() and not multiprocessing.active_children()
    epoch = iter(loader)
    next(epoch)
    epoch.close()
    assert not loader_threads() and not multiprocessing.active_children()
    with pytest.raises(KeyError):
        for _ in loader():
            raise KeyError("the training step failed")
    assert not loader_threads() and not multiprocessing.active_children()


@pytest.mark.timeout(20)
@pytest.mark.parametrize("shuffle", [False, True])
def test_workers_give_the_same_batches_in_the_same_order(shuffle):
    def epoch(num_workers):
        np.random.seed(11)
        return [[f.tolist() for f in batch] for batch in DatasetLoader(
            RangeDataset(23), batch_size=4, shuffle=shuffle, num_workers=num_workers)()]
    assert epoch(2) == epoch(0)


@pytest.mark.timeout(20)
def test_worker_init_fn_runs_in_each_worker():
    loader = DatasetLoader(WorkerReport(8), batch_size=2, num_workers=2, worker_init_fn=_record_init)
    for i, (indices, worker_ids, num_workers, init_ids) in enumerate(loader()):
        assert worker_ids.tolist() == init_ids.tolist() == [i % 2, i % 2]
        assert num_workers.tolist() == [2, 2]
    assert get_worker_info() is None


@pytest.mark.timeout(20)
@pytest.mark.parametrize("num_workers", [0, 1])
def test_timeout(num_workers):
    loader = DatasetLoader(SlowDataset(4), batch_size=1, num_workers=num_workers, timeout=0.1)
    with pytest.raises(ReaderTimeoutError, match="timeout=0.1"):
        list(loader())
    assert not multiprocessing.active_children()


@pytest.mark.timeout(10)
def test_outputs_per_place_and_feed_dicts():
    ds = RangeDataset(10)
    (feed,) = next(iter(DatasetLoader(ds, feed_list=["x", "y"], batch_size=4)))
    assert sorted(feed) == ["x", "y"] and feed["x"].shape() == [4, 2] and feed["x"]._place() == CPUPlace()
    images, labels = next(iter(DatasetLoader(ds, batch_size=4)))  # feed_list=None: lists
    assert labels.tolist() == [0, 1, 2, 3]
    two_places = DatasetLoader(ds, batch_size=2, places=[CPUPlace(), CPUPlace()], return_list=True)
    steps = list(two_places())
    assert len(steps) == 3 and len(two_places) == 5  # fluid's len: batches, not steps
    assert [[b[1].tolist() for b in step] for step in steps] == [[[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9]]]
    with pytest.raises(ValueError, match="does not match len"):
        next(iter(DatasetLoader(ds, feed_list=["x"], batch_size=4)))


# --- big samples: workers stack them straight into shared memory ------------------------------------
class BigDataset(Dataset):
    """Sample i: (float32 [3, 48, 48] = 27 KB from a seeded rng, int64 [1] = i)."""

    def __getitem__(self, idx):
        return np.random.RandomState(idx).rand(3, 48, 48).astype("float32"), np.array([idx])

    def __len__(self):
        return 21


def test_default_collate_deferred_fills_what_default_collate_fn_gives():
    from minifluid.data.collate import default_collate_deferred
    from minifluid.data.feeder import DeferredField
    samples = [BigDataset()[i] for i in range(5)]
    fields = default_collate_deferred(samples)
    assert [type(f) is DeferredField for f in fields] == [True, False]  # the small label is stacked at once
    image = fields[0].fill(np.full(fields[0].shape, -1, fields[0].dtype))
    want = default_collate_fn(samples)
    assert image.dtype == want[0].dtype and image.shape == want[0].shape
    np.testing.assert_array_equal(image, want[0])
    np.testing.assert_array_equal(fields[1], want[1])
    plain = default_collate_deferred([1, 2])  # anything else: the usual path
    assert len(plain) == 1 and plain[0].dtype == np.int64 and plain[0].tolist() == [1, 2]


@pytest.mark.timeout(30)
def test_big_samples_through_two_workers_equal_zero_workers():
    def epoch(workers):
        loader = DatasetLoader(BigDataset(), batch_size=4, num_workers=workers, return_list=True, places=CPUPlace())
        return [(np.array(image), np.array(label)) for image, label in loader]
    got, want = epoch(2), epoch(0)
    assert [len(label) for _, label in got] == [4, 4, 4, 4, 4, 1]
    for (image, label), (image_ref, label_ref) in zip(got, want, strict=True):
        assert image.dtype == np.float32 and image.shape == (len(label), 3, 48, 48)
        np.testing.assert_array_equal(image, image_ref)
        np.testing.assert_array_equal(label, label_ref)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_paddle_io_loader_with_a_static_feed_list_feeds_a_data_parallel_program(num_workers):
    import minifluid as fluid
    from minifluid.dygraph.paddle_io import DataLoader as PaddleDataLoader
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2])
        y = fluid.data("y", [None], dtype="int64")
        loss = fluid.layers.reduce_mean(fluid.layers.fc(x, size=1))
    places = [CPUPlace(), CPUPlace()]
    loader = PaddleDataLoader(RangeDataset(10), feed_list=[x, y], places=places, batch_size=2, return_list=False,
                              num_workers=num_workers)  # paddle 2.x's eager default, yet static variables
    assert len(loader) == 5
    exe = fluid.Executor()
    exe.run(startup)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=places)
    steps = list(loader)
    assert len(steps) == 3 and [len(step) for step in steps] == [2, 2, 1]
    for step in steps:
        for feed in step:
            assert feed["x"].shape() == [2, 2] and feed["x"]._place()._equals(CPUPlace())
        exe.run(compiled, feed=step, fetch_list=[loss])
    lists = list(PaddleDataLoader(RangeDataset(4), feed_list=[x, y], places=places, batch_size=2))
    assert len(lists) == 1 and [np.asarray(f).tolist() for f in lists[0][1]] == [[[2.0, 2.0], [3.0, 3.0]], [2, 3]]


@pytest.mark.parametrize("kwargs, message", [({"num_workers": -1}, "num_workers"), ({"timeout": -1}, "timeout"),
                                             ({"prefetch_factor": 0}, "prefetch_factor")])
def test_argument_checks_are_fluids_assertion_errors(kwargs, message):
    with pytest.raises(AssertionError, match=message):  # raised explicitly: python -O keeps them
        DatasetLoader(RangeDataset(4), **kwargs)
