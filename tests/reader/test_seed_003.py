"""Seed 003 (the Data Reader interface doc): its reader creators and decorator examples, bounded by firstn.

The doc's readers loop forever (``while True``); ``firstn`` bounds them here. ``paddle.dataset.mnist``
is replaced by a small in-memory image/label reader of the same shape (784 floats in [-1, 1], an int).
"""
import numpy
import pytest

from minifluid.reader import batch, buffered, compose, firstn, shuffle


def reader_creator_random_image(width, height):
    def reader():
        while True:
            yield numpy.random.uniform(-1, 1, size=width * height)
    return reader


def reader_creator_random_image_and_label(width, height, label):
    def reader():
        while True:
            yield numpy.random.uniform(-1, 1, size=width * height), label
    return reader


def reader_creator_bool(t):
    def reader():
        while True:
            yield t
    return reader


def fake_mnist_train(n=300):
    """Stands in for ``paddle.dataset.mnist.train()``: yields (image of 784 floats, int label)."""
    def reader():
        rng = numpy.random.RandomState(0)
        for i in range(n):
            yield rng.uniform(-1, 1, 28 * 28).astype("float32"), i % 10
    return reader


def custom_batch_reader():
    while True:
        samples = []
        for _ in range(128):
            samples.append((numpy.random.uniform(-1, 1, 28 * 28),))  # a tuple is appended
        yield samples


def test_single_item_reader_creator():
    images = list(firstn(reader_creator_random_image(20, 20), 5)())
    assert len(images) == 5
    for image in images:
        assert image.shape == (400,)
        assert ((image >= -1) & (image <= 1)).all()


def test_image_and_label_reader_creator():
    samples = list(firstn(reader_creator_random_image_and_label(28, 28, 7), 3)())
    assert [label for _, label in samples] == [7, 7, 7]
    assert all(image.shape == (784,) for image, _ in samples)


def test_custom_batch_reader_yields_lists_of_tuples():
    (samples,) = list(firstn(custom_batch_reader, 1)())
    assert len(samples) == 128
    assert all(isinstance(s, tuple) and len(s) == 1 and s[0].shape == (784,) for s in samples)


def test_batch_of_mnist_like_reader():
    batches = list(batch(fake_mnist_train(), 128)())
    assert [len(b) for b in batches] == [128, 128, 44]
    image, label = batches[0][0]
    assert image.shape == (784,) and isinstance(label, int)


def test_compose_real_and_random_images_with_bool_readers():
    reader = compose(fake_mnist_train(), reader_creator_random_image(20, 20),
                     reader_creator_bool(True), reader_creator_bool(False), check_alignment=False)
    batches = list(firstn(batch(reader, 128), 2)())
    assert [len(b) for b in batches] == [128, 128]
    for sample in batches[0]:
        true_image, true_label, fake_image, true_flag, false_flag = sample  # flat 5-tuple
        assert true_image.shape == (784,) and 0 <= true_label < 10
        assert fake_image.shape == (400,)
        assert true_flag is True and false_flag is False


@pytest.mark.timeout(30)
def test_buffered_prefetch_of_endless_reader():
    buffered_reader = buffered(reader_creator_random_image_and_label(28, 28, 1), 100)
    samples = list(firstn(buffered_reader, 250)())
    assert len(samples) == 250
    assert all(image.shape == (784,) and label == 1 for image, label in samples)


def test_shuffle_mnist_like_reader():
    source = fake_mnist_train(1000)
    shuffled = list(shuffle(source, 512)())
    assert len(shuffled) == 1000
    assert sorted(label for _, label in shuffled) == sorted(label for _, label in source())
    expected = numpy.sort(numpy.stack([image for image, _ in source()]), axis=0)
    numpy.testing.assert_array_equal(numpy.sort(numpy.stack([image for image, _ in shuffled]), axis=0),
                                     expected)


@pytest.mark.timeout(30)
def test_shuffled_buffered_batches_of_endless_composed_reader():
    reader = compose(reader_creator_random_image(20, 20), reader_creator_bool(True))
    pipeline = batch(firstn(shuffle(buffered(reader, 64), 32), 200), 64)
    batches = list(pipeline())
    assert [len(b) for b in batches] == [64, 64, 64, 8]
    for image, flag in (s for b in batches for s in b):
        assert image.shape == (400,) and flag is True
