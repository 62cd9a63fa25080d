"""Dict and nested samples collate key-wise and position-wise, as paddle 2.x does, and keep their
structure through the thread and the shared-memory worker paths (issue 14.4)."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import io
from minifluid.data.collate import default_collate_fn
from minifluid.data.dataset import Dataset, IterableDataset
from minifluid.dygraph import paddle_io
from minifluid.dygraph.tensor import Tensor


def _sample(i):
    return {"image": np.full([2, 3], i, "float32"), "label": i,
            "meta": {"name": f"img{i}", "boxes": (np.arange(4, dtype="int32") + i, [float(i), 1.0])}}


class DictDataset(Dataset):
    def __getitem__(self, i):
        return _sample(i)

    def __len__(self):
        return 10


class DictStream(IterableDataset):
    def __iter__(self):
        return (_sample(i) for i in range(10))


def _check_batch(batch, first, size):
    """``batch`` holds samples first .. first + size - 1 with every key and nesting level in place."""
    ids = list(range(first, first + size))
    assert list(batch) == ["image", "label", "meta"] and list(batch["meta"]) == ["name", "boxes"]
    np.testing.assert_array_equal(np.asarray(batch["image"]), np.full([size, 2, 3], 1, "float32") *
                                  np.array(ids, "float32")[:, None, None])
    np.testing.assert_array_equal(np.asarray(batch["label"]), ids)
    assert batch["meta"]["name"] == [f"img{i}" for i in ids]
    boxes, pair = batch["meta"]["boxes"]
    np.testing.assert_array_equal(np.asarray(boxes), np.arange(4)[None] + np.array(ids)[:, None])
    np.testing.assert_array_equal(np.asarray(pair), [[float(i), 1.0] for i in ids])


def test_default_collate_fn_follows_paddle_2_rules():
    batch = default_collate_fn([_sample(i) for i in range(3)])
    _check_batch(batch, 0, 3)
    assert batch["label"].dtype == np.int64 and batch["image"].dtype == np.float32
    assert isinstance(batch["meta"]["boxes"], list) and batch["meta"]["boxes"][0].dtype == np.int32
    assert batch["meta"]["boxes"][1].dtype == np.float32  # a list of Python floats is one float32 field
    # the first sample's key order decides; a later sample with other keys is a clear error
    assert list(default_collate_fn([{"b": 1, "a": 2}, {"a": 3, "b": 4}])) == ["b", "a"]
    with pytest.raises(TypeError, match=r"the sample is a dict with keys \['x', 'y'\] in the batch's first sample "
                                        r"but \['x', 'z'\] in its sample 1"):
        default_collate_fn([{"x": 1, "y": 2}, {"x": 1, "z": 2}])
    with pytest.raises(TypeError, match=r"the sample\['a'\]\[1\] of type\(s\) int, str"):
        default_collate_fn([{"a": (np.ones(1), 1)}, {"a": (np.ones(1), "x")}])
    # flat samples keep their flat list of fields
    assert [f.shape for f in default_collate_fn([(np.ones(2), 1)] * 4)] == [(4, 2), (4,)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_workers, use_buffer_reader", [(0, False), (0, True), (2, True)])
def test_fluid_io_dataloader_keeps_dict_batches(num_workers, use_buffer_reader):
    loader = io.DataLoader(DictDataset(), batch_size=4, return_list=True, num_workers=num_workers,
                           use_buffer_reader=use_buffer_reader)
    batches = list(loader)
    assert len(batches) == 3
    for n, batch in enumerate(batches):
        _check_batch(batch, 4 * n, 4 if n < 2 else 2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_workers", [0, 1])
def test_iterable_dataset_dict_batches_cross_the_worker_too(num_workers):
    batches = list(io.DataLoader(DictStream(), batch_size=5, return_list=True, num_workers=num_workers))
    assert len(batches) == 2
    _check_batch(batches[0], 0, 5)
    _check_batch(batches[1], 5, 5)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_paddle_io_dataloader_gives_dicts_of_eager_tensors(num_workers):
    for n, batch in enumerate(paddle_io.DataLoader(DictDataset(), batch_size=5, num_workers=num_workers)):
        assert isinstance(batch["image"], Tensor) and isinstance(batch["meta"]["boxes"][0], Tensor)
        _check_batch(batch, 5 * n, 5)
        assert batch["image"].numpy().shape == (5, 2, 3)


@pytest.mark.timeout(60)
def test_without_batching_a_dict_sample_stays_a_dict():
    sample = next(iter(io.DataLoader(DictDataset(), batch_size=None, return_list=True, num_workers=2)))
    assert sample["meta"]["name"] == "img0" and sample["image"].shape == (2, 3) and int(sample["label"]) == 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_collate_fn_returning_a_dict_keeps_its_keys(num_workers):
    def collate(samples):
        return {"x": np.stack([s["image"] for s in samples]), "n": len(samples)}
    batches = list(io.DataLoader(DictDataset(), batch_size=4, return_list=True, collate_fn=collate,
                                 num_workers=num_workers))
    assert [b["n"] for b in batches] == [4, 4, 2] and batches[2]["x"].shape == (2, 2, 3)


@pytest.mark.timeout(60)
def test_static_feed_dicts_take_the_arrays_in_order():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        image = fluid.data("image", [None, 2, 3], "float32")
        label = fluid.data("label", [None], "int64")
    class Pairs(Dataset):
        def __getitem__(self, i):
            return {"image": np.full([2, 3], i, "float32"), "label": i}

        def __len__(self):
            return 6
    (feed,) = next(iter(io.DataLoader(Pairs(), feed_list=[image, label], batch_size=3)))
    assert sorted(feed) == ["image", "label"] and np.asarray(feed["label"]).tolist() == [0, 1, 2]
    assert np.asarray(feed["image"])[2, 0, 0] == 2 and feed["image"].shape() == [3, 2, 3]  # LoDTensors
