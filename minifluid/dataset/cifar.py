"""CIFAR-10 / CIFAR-100 (``paddle.dataset.cifar``) from the original python-pickle archives.

``cifar-10-python.tar.gz`` (batches ``cifar-10-batches-py/data_batch_1..5`` and ``test_batch``) and
``cifar-100-python.tar.gz`` (``cifar-100-python/train`` and ``test``, fine labels). As in fluid, the
members whose names contain the split's word are read in archive order, streaming, on every pass, and a
sample is ``(pixels float32 [3072] = uint8 / 255.0, int label)``; pixels keep the archive's CHW order.
"""
import pickle

import numpy as np

from . import archive, common

__all__ = ['train10', 'test10', 'train100', 'test100']

URL_PREFIX = 'https://dataset.bj.bcebos.com/cifar/'
CIFAR10_URL = URL_PREFIX + 'cifar-10-python.tar.gz'
CIFAR10_MD5 = 'c58f30108f718f92721af3b95e74349a'
CIFAR100_URL = URL_PREFIX + 'cifar-100-python.tar.gz'
CIFAR100_MD5 = 'eb9058c3a382ffc7106e4002c42a8d85'
_CHUNK = 1000  # rows scaled per numpy call


def _batch_arrays(path, name, batch):
    labels = batch.get(b'labels', batch.get(b'fine_labels')) if isinstance(batch, dict) else None
    data = np.asarray(batch.get(b'data')) if labels is not None else None
    if data is None or data.ndim != 2 or len(data) != len(labels):
        raise common.format_error(path, 'member %s is not a CIFAR batch (a dict with data [N, 3072] and N labels '
                                  'or fine_labels)' % name)
    return data, labels


def reader_creator(filename, sub_name, cycle=False):
    """Reader over the members of ``filename`` whose names contain ``sub_name``."""

    def read_once():
        with common.guard(filename, 'read CIFAR batch'):
            for member in archive.tar_members(filename):
                if sub_name not in member.name:
                    continue
                data, labels = _batch_arrays(filename, member.name, pickle.loads(member.read(), encoding='bytes'))
                for start in range(0, len(data), _CHUNK):
                    # the same float64 division then float32 cast as fluid's per-sample expression
                    pixels = (data[start:start + _CHUNK] / 255.0).astype(np.float32)
                    yield from zip(pixels, map(int, labels[start:start + _CHUNK]))

    def reader():
        while True:
            yield from read_once()
            if not cycle:
                break

    return reader


def _creator(url, md5, sub_name, cycle=False):
    return reader_creator(common.download(url, 'cifar', md5), sub_name, cycle=cycle)


def train100():
    """CIFAR-100 train reader: ``(float32 [3072] in [0, 1], fine label in [0, 99])``."""
    return _creator(CIFAR100_URL, CIFAR100_MD5, 'train')


def test100():
    """CIFAR-100 test reader: ``(float32 [3072] in [0, 1], fine label in [0, 99])``."""
    return _creator(CIFAR100_URL, CIFAR100_MD5, 'test')


def train10(cycle=False):
    """CIFAR-10 train reader (``data_batch_*``): ``(float32 [3072] in [0, 1], label in [0, 9])``."""
    return _creator(CIFAR10_URL, CIFAR10_MD5, 'data_batch', cycle)


def test10(cycle=False):
    """CIFAR-10 test reader (``test_batch``): ``(float32 [3072] in [0, 1], label in [0, 9])``."""
    return _creator(CIFAR10_URL, CIFAR10_MD5, 'test_batch', cycle)


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return common.fetch_files('cifar', (CIFAR10_URL, CIFAR10_MD5), (CIFAR100_URL, CIFAR100_MD5))
