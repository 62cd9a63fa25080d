"""Oxford 102 Flowers (``paddle.dataset.flowers``) from ``102flowers.tgz``, ``imagelabels.mat``, ``setid.mat``.

Needs the optional extra ``flowers`` (Pillow to decode, scipy to read the two MATLAB files). The split ids
come from ``setid.mat``, swapped as in fluid: ``train`` reads ``tstid`` (the larger set), ``test`` reads
``trnid``, ``valid`` reads ``valid``. Image ``i`` is the member ``jpg/image_%05d.jpg``, its label
``imagelabels.mat['labels'][i - 1] - 1`` (so 0..101). Raw samples ``(jpeg bytes, label)`` stream from the
archive in archive order on every pass (fluid first copied them into pickled batch files beside the
archive; nothing is written here) and go through ``mapper`` on ``min(4, cpu_count())`` threads
(``xmap_readers``, unordered) or in order (``use_xmap=False``). The default mappers decode to BGR,
resize the short side to 256, crop 224 (random crop and mirror for train, centre for test) and subtract
the BGR mean ``[103.94, 116.78, 123.68]``: a sample is ``(float32 [3 * 224 * 224], int label)``.
"""
import functools
from multiprocessing import cpu_count

from ..reader import map_readers, xmap_readers
from . import archive, common
from .image import transform_bytes

__all__ = ['train', 'test', 'valid']

DATA_URL = 'http://paddlemodels.bj.bcebos.com/flowers/102flowers.tgz'
LABEL_URL = 'http://paddlemodels.bj.bcebos.com/flowers/imagelabels.mat'
SETID_URL = 'http://paddlemodels.bj.bcebos.com/flowers/setid.mat'
DATA_MD5 = '52808999861908f626f3c1f4e79d11fa'
LABEL_MD5 = 'e0620be6f572b9609742df49c70aed4d'
SETID_MD5 = 'a5357ecc9cb78c4bef273ce3793fc85c'
# the official readme's train ids (trnid) are the smaller set, so fluid swapped train and test
TRAIN_FLAG = 'tstid'
TEST_FLAG = 'trnid'
VALID_FLAG = 'valid'


def default_mapper(is_train, sample):
    """Decode, resize, crop and centre one ``(jpeg bytes, label)`` sample."""
    img, label = sample
    img = transform_bytes(img, 256, 224, is_train, mean=[103.94, 116.78, 123.68])
    return img.reshape(-1), label


train_mapper = functools.partial(default_mapper, True)
test_mapper = functools.partial(default_mapper, False)


def _mat_vector(path, key):
    """The 1-D vector stored under ``key`` in a MATLAB file."""
    try:
        import scipy.io
    except ImportError as e:
        raise ImportError('paddle.dataset.flowers reads %s with scipy, which is not installed: '
                          'pip install "minifluid[flowers]" (or pip install scipy Pillow)' % path) from e
    try:
        content = scipy.io.loadmat(path)
    except Exception as e:  # scipy raises ValueError, TypeError, OSError ... for a damaged file
        raise common.format_error(path, 'cannot read MATLAB file: %s: %s' % (type(e).__name__, e)) from e
    if key not in content:
        raise common.format_error(path, 'no variable %r (it has %s)'
                                  % (key, sorted(k for k in content if not k.startswith('__'))))
    return content[key].reshape(-1)


def reader_creator(data_file, label_file, setid_file, dataset_name, mapper, buffered_size=1024, use_xmap=True,
                   cycle=False):
    """Reader over the images of split ``dataset_name`` (a ``setid.mat`` variable), mapped by ``mapper``."""
    labels, ids = _mat_vector(label_file, 'labels'), _mat_vector(setid_file, dataset_name).astype(int)
    if ids.size and not (1 <= ids.min() and ids.max() <= len(labels)):
        raise common.format_error(setid_file, '%s names images up to %d but %s has %d labels'
                                  % (dataset_name, ids.max(), label_file, len(labels)))
    img2label = {"jpg/image_%05d.jpg" % i: int(labels[i - 1]) - 1 for i in ids.tolist()}

    def reader():
        while True:
            with common.guard(data_file, 'read images'):
                for member in archive.tar_members(data_file):
                    if member.name in img2label:
                        yield member.read(), img2label[member.name]
            if not cycle:
                break

    if use_xmap:
        return xmap_readers(mapper, reader, min(4, cpu_count()), buffered_size)
    return map_readers(mapper, reader)


def _creator(flag, mapper, buffered_size, use_xmap, cycle=False):
    files = [common.download(url, 'flowers', md5) for url, md5 in ((DATA_URL, DATA_MD5), (LABEL_URL, LABEL_MD5),
                                                                    (SETID_URL, SETID_MD5))]
    return reader_creator(*files, flag, mapper, buffered_size, use_xmap, cycle=cycle)


def train(mapper=train_mapper, buffered_size=1024, use_xmap=True, cycle=False):
    """Train reader (``tstid``, 6,149 images): ``(float32 [150528], label in [0, 101])``."""
    return _creator(TRAIN_FLAG, mapper, buffered_size, use_xmap, cycle)


def test(mapper=test_mapper, buffered_size=1024, use_xmap=True, cycle=False):
    """Test reader (``trnid``, 1,020 images): ``(float32 [150528], label in [0, 101])``."""
    return _creator(TEST_FLAG, mapper, buffered_size, use_xmap, cycle)


def valid(mapper=test_mapper, buffered_size=1024, use_xmap=True):
    """Validation reader (``valid``, 1,020 images): ``(float32 [150528], label in [0, 101])``."""
    return _creator(VALID_FLAG, mapper, buffered_size, use_xmap)


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return common.fetch_files('flowers', (DATA_URL, DATA_MD5), (LABEL_URL, LABEL_MD5), (SETID_URL, SETID_MD5))
