"""DataLoader.from_generator in dygraph mode (REFERENCE I58): no feed list, iterable and return_list forced
(with fluid's warnings), exactly one place, eager tensors out, shared-memory workers with use_multiprocess."""
import warnings

import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import Tensor

pytestmark = pytest.mark.filterwarnings("ignore:Please NOTE")


def _samples(n=10):
    def reader():
        for i in range(n):
            yield np.full([3], i, "float32"), np.array([i], "int64")
    return reader


def _sample_lists(n=3, size=4):
    def reader():
        for b in range(n):
            yield [(np.full([3], b * size + i, "float32"), np.array([i], "int64")) for i in range(size)]
    return reader


def _batches(n=3):
    def reader():
        for b in range(n):
            yield np.full([2, 5], b, "float64"), np.arange(2, dtype="int32")
    return reader


@pytest.mark.timeout(30)
@pytest.mark.parametrize("use_multiprocess", [False, True])
def test_three_generators_yield_eager_tensors(use_multiprocess):
    place = fluid.CPUPlace()
    with fluid.dygraph.guard(place):
        loaders = [fluid.io.DataLoader.from_generator(capacity=4, use_multiprocess=use_multiprocess)
                   for _ in range(3)]
        loaders[0].set_sample_generator(_samples(), batch_size=4, places=place)  # drop_last: 2 batches
        loaders[1].set_sample_list_generator(_sample_lists(), places=place)
        loaders[2].set_batch_generator(_batches(), places=place)
        got = [[data for data in loader()] for loader in loaders]
    assert [len(g) for g in got] == [2, 3, 3]
    for steps in got:
        for image, label in steps:
            assert isinstance(image, Tensor) and isinstance(label, Tensor) and image.stop_gradient
    image, label = got[0][1]
    assert image.shape == [4, 3] and label.shape == [4, 1] and label.dtype == "int64"
    np.testing.assert_array_equal(image.numpy()[:, 0], [4, 5, 6, 7])
    image, label = got[1][2]
    np.testing.assert_array_equal(image.numpy()[:, 0], [8, 9, 10, 11])
    image, label = got[2][0]
    assert image.dtype == "float64" and label.dtype == "int32"  # batches pass through without a cast


@pytest.mark.timeout(30)
def test_forced_modes_warn_and_places_default_to_the_guard_place():
    with fluid.dygraph.guard():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loader = fluid.io.DataLoader.from_generator(capacity=2, iterable=False, return_list=False)
        messages = " ".join(str(w.message) for w in caught)
        assert "iterable mode only" in messages and "return as list only" in messages
        assert loader.iterable
        loader.set_batch_generator(_batches(1))  # no places: the dygraph place
        (image, label), = list(loader())
        assert image.shape == [2, 5]


@pytest.mark.timeout(30)
def test_exactly_one_place():
    with fluid.dygraph.guard():
        loader = fluid.io.DataLoader.from_generator(capacity=2)
        with pytest.raises(AssertionError, match="Number of places must be 1 in imperative mode"):
            loader.set_batch_generator(_batches(), places=[fluid.CPUPlace(), fluid.CPUPlace()])


@pytest.mark.timeout(30)
def test_trains_a_layer_and_restarts_after_break():
    with fluid.dygraph.guard():
        fc = fluid.dygraph.Linear(3, 4)
        opt = fluid.optimizer.SGD(0.01, parameter_list=fc.parameters())
        loader = fluid.io.DataLoader.from_generator(capacity=2)
        loader.set_sample_list_generator(_sample_lists(n=5), places=fluid.CPUPlace())
        for i, (image, label) in enumerate(loader()):
            loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fc(image), label))
            loss.backward()
            opt.minimize(loss)
            fc.clear_gradients()
            if i == 1:
                break
        first = [image.numpy()[0, 0] for image, _ in loader()]
        assert first == [0, 4, 8, 12, 16]  # a new epoch starts from the beginning
