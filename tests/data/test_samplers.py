"""WeightedRandomSampler and DistributedBatchSampler (paddle.io)."""
import numpy as np
import pytest

from minifluid.data.dataset import DistributedBatchSampler, WeightedRandomSampler
from minifluid.io import DataLoader


class Numbers:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.array([i], "int64")


def test_weighted_sampler_draws_in_proportion_and_only_positive_weights():
    weights = np.array([0.0, 1.0, 3.0, 0.0])
    np.random.seed(0)
    drawn = list(WeightedRandomSampler(weights, 4000, replacement=True))
    counts = np.bincount(drawn, minlength=4)
    assert counts[0] == counts[3] == 0 and 2.5 < counts[2] / counts[1] < 3.5
    assert len(WeightedRandomSampler(weights, 7)) == 7


def test_weighted_sampler_without_replacement_and_per_row():
    np.random.seed(1)
    idx = list(WeightedRandomSampler([0.5, 0.0, 1.0, 2.0], 3, replacement=False))
    assert sorted(idx) == [0, 2, 3]
    rows = WeightedRandomSampler(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), 2)
    assert len(rows) == 4 and list(rows) == [0, 0, 2, 2]  # each row draws indices into itself


@pytest.mark.parametrize("weights, replacement, message", [
    (np.zeros(5), True, "should have positive values"),
    ([1.0, -1.0], True, "should be positive"),
    ([1.0, np.inf], True, "INF or NaN"),
    ([1.0, 1.0, 0.0], False, "not less than num_samples"),
])
def test_weighted_sampler_checks_weights_when_iterated(weights, replacement, message):
    sampler = WeightedRandomSampler(weights, 3, replacement)  # accepted here, checked when drawing
    with pytest.raises(AssertionError, match=message):
        list(sampler)


@pytest.mark.parametrize("args", [(2.5, True), (-1, True), (0, True), (3, 3)])
def test_weighted_sampler_checks_its_arguments(args):
    with pytest.raises(ValueError):
        WeightedRandomSampler([1.0, 2.0], *args)


def test_distributed_batch_sampler_splits_the_data_between_ranks():
    ranks = [list(DistributedBatchSampler(Numbers(10), 2, num_replicas=4, rank=r)) for r in range(4)]
    # padded to 12 with 0, 1; dealt a batch at a time, the last round split evenly
    assert ranks == [[[0, 1], [8]], [[2, 3], [9]], [[4, 5], [0]], [[6, 7], [1]]]
    assert all(len(DistributedBatchSampler(Numbers(10), 2, num_replicas=4, rank=r)) == 2 for r in range(4))
    assert len(DistributedBatchSampler(Numbers(10), 2, num_replicas=4, rank=0, drop_last=True)) == 1


def test_distributed_batch_sampler_shuffles_alike_in_every_rank_per_epoch():
    samplers = [DistributedBatchSampler(Numbers(16), 4, num_replicas=2, rank=r, shuffle=True) for r in range(2)]
    first = [sum(list(s), []) for s in samplers]
    assert sorted(first[0] + first[1]) == list(range(16)) and first[0] != list(range(8))
    second = [sum(list(s), []) for s in samplers]  # the next epoch: another order, still a partition
    assert sorted(second[0] + second[1]) == list(range(16)) and second != first
    for s in samplers:
        s.set_epoch(0)
    assert [sum(list(s), []) for s in samplers] == first


def test_distributed_batch_sampler_reads_paddles_launcher_environment(monkeypatch):
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "3")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "2")
    sampler = DistributedBatchSampler(Numbers(9), 1)
    assert (sampler.nranks, sampler.local_rank) == (3, 2) and list(sampler) == [[2], [5], [8]]
    monkeypatch.delenv("PADDLE_TRAINERS_NUM")
    monkeypatch.delenv("PADDLE_TRAINER_ID")
    single = DistributedBatchSampler(Numbers(5), 2)
    assert (single.nranks, single.local_rank) == (1, 0) and list(single) == [[0, 1], [2, 3], [4]]
    with pytest.raises(AssertionError, match="rank"):
        DistributedBatchSampler(Numbers(5), 2, num_replicas=2, rank=2)


def test_distributed_batch_sampler_drives_a_data_loader():
    loader = DataLoader(Numbers(10), batch_sampler=DistributedBatchSampler(Numbers(10), 3, num_replicas=2, rank=1),
                        return_list=True)
    assert [b[0].reshape(-1).tolist() for b in loader] == [[3, 4, 5], [8, 9]]  # the last round (6..9) split evenly
