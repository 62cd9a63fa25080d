"""MNIST sample readers over local IDX files, mirroring paddle.dataset.mnist without ever downloading.

Files are looked up in ``$MINIFLUID_DATA_HOME/mnist`` (else ``~/.cache/minifluid/mnist``):
``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
``t10k-labels-idx1-ubyte``, each raw or gzipped (``.gz``).
"""
import gzip
import os
import zlib

import numpy as np

__all__ = ['train', 'test', 'data_dir', 'ENV_VAR']

ENV_VAR = 'MINIFLUID_DATA_HOME'
_IMAGES_MAGIC, _LABELS_MAGIC = 2051, 2049
_FILES = {'train': ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte'),
          't10k': ('t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte')}
_cache = {}  # path -> ((mtime_ns, size), uint8 array), so later epochs don't re-gunzip


def data_dir():
    """Directory searched for the IDX files, resolved at call time so the env var can change."""
    home = os.environ.get(ENV_VAR)
    if home:
        return os.path.join(os.path.expanduser(home), 'mnist')
    return os.path.join(os.path.expanduser('~'), '.cache', 'minifluid', 'mnist')


def _find(prefix):
    """Paths of (images, labels) for a split; a missing file is an error listing what was expected."""
    d = data_dir()
    found, missing = [], []
    for name in _FILES[prefix]:
        raw = os.path.join(d, name)
        hit = next((p for p in (raw, raw + '.gz') if os.path.isfile(p)), None)
        if hit is None:
            missing.append('%s (or %s.gz)' % (raw, raw))
        found.append(hit)
    if missing:
        raise FileNotFoundError(
            'MNIST %s files not found: %s. Put the standard MNIST IDX files (raw or .gz) in %s '
            '(set %s to use $%s/mnist instead of ~/.cache/minifluid/mnist). '
            'minifluid never downloads data.' % (prefix, ', '.join(missing), d, ENV_VAR, ENV_VAR))
    return found


def _read_idx(path, magic, ndim):
    """Parse one big-endian uint8 IDX file into an array shaped by its header, validating it."""
    st = os.stat(path)
    stamp = (st.st_mtime_ns, st.st_size)
    if path in _cache and _cache[path][0] == stamp:
        return _cache[path][1]
    try:
        with (gzip.open if path.endswith('.gz') else open)(path, 'rb') as f:
            buf = f.read()
    except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError
        raise ValueError('%s: cannot read IDX file: %s' % (path, e)) from e
    head = 4 * (1 + ndim)
    if len(buf) < head:
        raise ValueError('%s: truncated IDX header (%d bytes, need %d)' % (path, len(buf), head))
    got = int(np.frombuffer(buf, '>u4', 1)[0])
    if got != magic:
        raise ValueError('%s: bad IDX magic number %d, expected %d' % (path, got, magic))
    dims = tuple(int(v) for v in np.frombuffer(buf, '>u4', ndim, 4))
    need = int(np.prod(dims, dtype=np.int64))
    if len(buf) - head != need:
        raise ValueError('%s: IDX payload is %d bytes but header dims %s need %d (truncated or corrupt)'
                         % (path, len(buf) - head, dims, need))
    arr = np.frombuffer(buf, np.uint8, need, head).reshape(dims)
    _cache[path] = (stamp, arr)
    return arr


def _reader(prefix):
    images_path, labels_path = _find(prefix)

    def reader():
        images = _read_idx(images_path, _IMAGES_MAGIC, 3)
        labels = _read_idx(labels_path, _LABELS_MAGIC, 1)
        if len(images) != len(labels):
            raise ValueError('%s has %d images but %s has %d labels'
                             % (images_path, len(images), labels_path, len(labels)))
        flat = images.reshape(len(images), -1)
        for i in range(len(labels)):
            yield flat[i].astype(np.float32) / 255.0 * 2.0 - 1.0, int(labels[i])
    return reader


def train():
    """Sample reader over the 60k train set: yields (float32 [784] in [-1, 1], int label)."""
    return _reader('train')


def test():
    """Sample reader over the 10k t10k set: yields (float32 [784] in [-1, 1], int label)."""
    return _reader('t10k')
