"""The embedded digits split, and the MNIST IDX parser fed synthetic IDX files."""
import gzip
import importlib.resources
import os

import numpy as np
import pytest

from minifluid.dataset import digits, mnist


# ---------------------------------------------------------------- digits

def _collect(reader):
    samples = list(reader())
    return [s[0] for s in samples], [s[1] for s in samples]


def test_digits_npz_is_package_data():
    res = importlib.resources.files('minifluid.dataset')
    assert res.joinpath('digits.npz').is_file()
    assert res.joinpath('DIGITS_LICENSE.txt').is_file()
    with res.joinpath('digits.npz').open('rb') as f, np.load(f) as z:
        assert z['images'].dtype == np.uint8 and z['images'].shape == (1797, 64)
        assert z['labels'].dtype == np.uint8 and z['labels'].shape == (1797,)
        assert z['images'].max() == 16


@pytest.mark.parametrize('mode,n', [('train', 1437), ('test', 360)])
def test_digits_reader_samples(mode, n):
    xs, ys = _collect(getattr(digits, mode)())
    assert len(xs) == n == len(ys)
    for x, y in zip(xs[:5], ys[:5]):
        assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.shape == (64,)
        assert type(y) is int
    x = np.stack(xs)
    assert x.min() == 0.0 and x.max() == 1.0
    assert np.allclose(x * 16, np.round(x * 16))  # still the original 0..16 grid
    assert set(ys) == set(range(10))
    assert x.reshape((-1,) + digits.image_shape).shape == (n, 1, 8, 8)


def test_digits_load_matches_reader_and_is_deterministic():
    for mode in ('train', 'test'):
        x, y = digits.load(mode)
        assert x.dtype == np.float32 and y.dtype == np.int64
        xs, ys = _collect(getattr(digits, mode)())
        np.testing.assert_array_equal(x, np.stack(xs))
        np.testing.assert_array_equal(y, ys)
        x2, y2 = digits.load(mode)
        np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(y, y2)
        x2[0] = 5  # callers get copies; the cached split is untouched
        assert digits.load(mode)[0].max() <= 1.0
    with pytest.raises(ValueError):
        digits.load('val')


def test_digits_split_disjoint_and_complete():
    xtr, _ = digits.load('train')
    xte, _ = digits.load('test')
    assert len(xtr) + len(xte) == 1797
    train_bytes = {r.tobytes() for r in xtr}
    assert not any(r.tobytes() in train_bytes for r in xte)


# ---------------------------------------------------------------- mnist

def _idx(magic, arr):
    head = np.array((magic,) + arr.shape, dtype='>u4').tobytes()
    return head + arr.astype(np.uint8).tobytes()


def _write(d, name, data, gz):
    path = os.path.join(d, name + ('.gz' if gz else ''))
    with (gzip.open if gz else open)(path, 'wb') as f:
        f.write(data)
    return path


@pytest.fixture
def mnist_home(home):
    d = os.path.join(home, 'mnist')
    os.mkdir(d)
    return d


def _fake_split(d, prefix, n, gz, seed):
    rng = np.random.RandomState(seed)
    imgs = rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
    imgs[0, 0, :2] = (0, 255)
    labels = rng.randint(0, 10, size=n).astype(np.uint8)
    _write(d, prefix + '-images-idx3-ubyte', _idx(2051, imgs), gz)
    _write(d, prefix + '-labels-idx1-ubyte', _idx(2049, labels), gz)
    return imgs, labels


@pytest.mark.parametrize('gz', [True, False])
def test_mnist_decodes_and_scales(mnist_home, gz):
    imgs, labels = _fake_split(mnist_home, 'train', 107, gz, seed=1)
    timgs, tlabels = _fake_split(mnist_home, 't10k', 3, not gz, seed=2)
    for reader, im, lb in ((mnist.train(), imgs, labels), (mnist.test(), timgs, tlabels)):
        out = list(reader())
        assert len(out) == len(lb)
        for (x, y), ref, ref_y in zip(out, im, lb):
            assert x.dtype == np.float32 and x.shape == (784,)
            assert type(y) is int and y == int(ref_y)
            np.testing.assert_allclose(x, ref.reshape(-1) / 255.0 * 2.0 - 1.0, rtol=0, atol=1e-6)
        assert out[0][0][0] == -1.0 and out[0][0][1] == 1.0
    assert len(list(mnist.train()())) == 107  # second pass (cached decode) yields the same


def test_mnist_missing_files(mnist_home, paddle_cache):
    with pytest.raises(FileNotFoundError) as ei:
        mnist.train()
    msg = str(ei.value)
    assert 'train-images-idx3-ubyte.gz or train-images-idx3-ubyte' in msg
    assert mnist_home in msg and os.path.join(paddle_cache, 'mnist') in msg
    assert mnist.TRAIN_IMAGE_URL in msg and mnist.TRAIN_IMAGE_MD5 in msg and 'never downloads' in msg


def test_mnist_found_in_paddles_cache_without_env(paddle_cache, monkeypatch):
    monkeypatch.delenv('MINIFLUID_DATA_HOME', raising=False)
    d = os.path.join(paddle_cache, 'mnist')
    os.mkdir(d)
    _, labels = _fake_split(d, 't10k', 5, True, seed=3)
    assert [y for _, y in mnist.test()()] == labels.tolist()


def test_mnist_bad_magic(mnist_home):
    bad = _write(mnist_home, 'train-images-idx3-ubyte',
                 _idx(2049, np.zeros((2, 28, 28), np.uint8)), gz=False)
    _write(mnist_home, 'train-labels-idx1-ubyte', _idx(2049, np.zeros(2, np.uint8)), gz=True)
    with pytest.raises(ValueError, match='magic') as ei:
        list(mnist.train()())
    assert bad in str(ei.value)


def test_mnist_truncated(mnist_home):
    _write(mnist_home, 't10k-images-idx3-ubyte',
           _idx(2051, np.zeros((2, 28, 28), np.uint8))[:-10], gz=True)
    _write(mnist_home, 't10k-labels-idx1-ubyte', _idx(2049, np.zeros(2, np.uint8)), gz=False)
    with pytest.raises(ValueError, match='truncated') as ei:
        list(mnist.test()())
    assert 't10k-images-idx3-ubyte.gz' in str(ei.value)
