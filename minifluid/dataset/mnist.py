"""MNIST (``paddle.dataset.mnist``) from the standard IDX files, found like every other dataset.

Files, in the folder ``mnist`` (see ``common``: ``$MINIFLUID_DATA_HOME/mnist``, then Paddle's cache
``~/.cache/paddle/dataset/mnist``): ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz`` as Paddle downloads them, or the same names
without ``.gz``, uncompressed. A sample is ``(float32 [784] = uint8 / 255 * 2 - 1, int label)``. Each
file is decoded once per process.
"""
import gzip

import numpy as np

from . import common

__all__ = ['train', 'test', 'ENV_VAR']

ENV_VAR = common.ENV_VAR
URL_PREFIX = 'https://dataset.bj.bcebos.com/mnist/'
TEST_IMAGE_URL = URL_PREFIX + 't10k-images-idx3-ubyte.gz'
TEST_IMAGE_MD5 = '9fb629c4189551a2d022fa330f9573f3'
TEST_LABEL_URL = URL_PREFIX + 't10k-labels-idx1-ubyte.gz'
TEST_LABEL_MD5 = 'ec29112dd5afa0611ce80d1b7f02629c'
TRAIN_IMAGE_URL = URL_PREFIX + 'train-images-idx3-ubyte.gz'
TRAIN_IMAGE_MD5 = 'f68b3c2dcbeaaa9fbdd348bbdeb94873'
TRAIN_LABEL_URL = URL_PREFIX + 'train-labels-idx1-ubyte.gz'
TRAIN_LABEL_MD5 = 'd53e105ee54ea40749a09fcbcd1e9432'
_IMAGES_MAGIC, _LABELS_MAGIC = 2051, 2049


def _find(url, md5):
    """The .gz file Paddle downloads (MD5-checked), else the uncompressed one."""
    gz_name = url.rsplit('/', 1)[-1]
    path = common.locate('mnist', [gz_name, gz_name[:-3]], url, md5)
    if path.endswith('.gz'):
        common.check_md5(path, md5)
    return path


def _read_idx(path, magic, ndim):
    """One big-endian uint8 IDX file as an array shaped by its header (validated), decoded once per process."""
    def parse():
        with common.guard(path, 'read IDX file'), (gzip.open if path.endswith('.gz') else open)(path, 'rb') as f:
            buf = f.read()
        head = 4 * (1 + ndim)
        if len(buf) < head:
            raise common.format_error(path, 'truncated IDX header (%d bytes, need %d)' % (len(buf), head))
        got = int(np.frombuffer(buf, '>u4', 1)[0])
        if got != magic:
            raise common.format_error(path, 'bad IDX magic number %d, expected %d' % (got, magic))
        dims = tuple(int(v) for v in np.frombuffer(buf, '>u4', ndim, 4))
        need = int(np.prod(dims, dtype=np.int64))
        if len(buf) - head != need:
            raise common.format_error(path, 'IDX payload is %d bytes but header dims %s need %d (truncated or '
                                      'corrupt)' % (len(buf) - head, dims, need))
        return np.frombuffer(buf, np.uint8, need, head).reshape(dims)
    return common.cached(path, 'idx', parse)


def reader_creator(image_filename, label_filename, buffer_size):
    """Reader over one IDX image file (gzipped or not) and its label file, converting ``buffer_size``
    samples at a time."""
    if not (isinstance(buffer_size, int) and buffer_size > 0):
        raise ValueError('mnist.reader_creator: buffer_size must be a positive int, got %r' % (buffer_size,))

    def reader():
        images = _read_idx(image_filename, _IMAGES_MAGIC, 3)
        labels = _read_idx(label_filename, _LABELS_MAGIC, 1)
        if len(images) != len(labels):
            raise common.format_error(image_filename, '%d images but %s has %d labels'
                                      % (len(images), label_filename, len(labels)))
        flat = images.reshape(len(images), -1)
        for start in range(0, len(labels), buffer_size):
            pixels = flat[start:start + buffer_size].astype(np.float32) / 255.0 * 2.0 - 1.0
            yield from zip(pixels, labels[start:start + buffer_size].tolist())
    return reader


def _reader(image_url, image_md5, label_url, label_md5):
    return reader_creator(_find(image_url, image_md5), _find(label_url, label_md5), 100)


def train():
    """Reader over the 60k train set: ``(float32 [784] in [-1, 1], int label)``."""
    return _reader(TRAIN_IMAGE_URL, TRAIN_IMAGE_MD5, TRAIN_LABEL_URL, TRAIN_LABEL_MD5)


def test():
    """Reader over the 10k t10k set: ``(float32 [784] in [-1, 1], int label)``."""
    return _reader(TEST_IMAGE_URL, TEST_IMAGE_MD5, TEST_LABEL_URL, TEST_LABEL_MD5)


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return [_find(url, md5) for url, md5 in ((TRAIN_IMAGE_URL, TRAIN_IMAGE_MD5), (TRAIN_LABEL_URL, TRAIN_LABEL_MD5),
                                             (TEST_IMAGE_URL, TEST_IMAGE_MD5), (TEST_LABEL_URL, TEST_LABEL_MD5))]
