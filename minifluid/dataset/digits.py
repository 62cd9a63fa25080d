"""Real handwritten digits shipped in the package, so examples and tests can train offline.

Data: the 1,797 8x8 UCI digits (E. Alpaydin & C. Kaynak) as bundled with
scikit-learn; see DIGITS_LICENSE.txt. Split (fixed, deterministic): the indices
0..1796 are shuffled once with ``np.random.RandomState(0).permutation``; the
first 1,437 are the train split, the last 360 the test split.
"""
import importlib.resources

import numpy as np

__all__ = ['train', 'test', 'load', 'image_shape', 'TRAIN_SIZE', 'TEST_SIZE']

image_shape = (1, 8, 8)  # (C, H, W) for conv nets: reshape the flat [64] image
TRAIN_SIZE = 1437
TEST_SIZE = 360

_cache = {}


def _arrays():
    """Decode the npz once per process; every reader shares the result."""
    if not _cache:
        with importlib.resources.files(__package__).joinpath('digits.npz').open('rb') as f:
            with np.load(f) as z:
                images, labels = z['images'], z['labels']
        order = np.random.RandomState(0).permutation(len(labels))
        x = (images.astype(np.float32) / 16.0)[order]
        y = labels.astype(np.int64)[order]
        for name, sl in (('train', slice(0, TRAIN_SIZE)), ('test', slice(TRAIN_SIZE, None))):
            xs, ys = x[sl], y[sl]
            xs.setflags(write=False)
            ys.setflags(write=False)
            _cache[name] = (xs, ys)
    return _cache


def load(mode='train'):
    """Whole split as (images float32 [N, 64] in [0, 1], labels int64 [N]), for map-style datasets."""
    if mode not in ('train', 'test'):
        raise ValueError("digits.load: mode must be 'train' or 'test', got %r" % (mode,))
    x, y = _arrays()[mode]
    return x.copy(), y.copy()


def _reader(mode):
    def reader():
        x, y = _arrays()[mode]
        for i in range(len(y)):
            yield x[i].copy(), int(y[i])
    return reader


def train():
    """Sample reader over the 1,437-image train split: yields (float32 [64] in [0, 1], int label)."""
    return _reader('train')


def test():
    """Sample reader over the 360-image test split: yields (float32 [64] in [0, 1], int label)."""
    return _reader('test')
