"""UCI Boston housing (``paddle.dataset.uci_housing``) from ``housing.data``, never downloaded.

``housing.data`` holds 506 rows of 14 whitespace-separated numbers (13 features, then the price). As in
fluid, each feature column becomes ``(x - mean) / (max - min)`` over *all* rows, the first
``int(rows * 0.8)`` rows are the train split and the rest the test split (404 / 102), and a sample is
``(features float64 [13], price float64 [1])``. The file is parsed once per process; ``UCI_TRAIN_DATA`` and
``UCI_TEST_DATA`` hold the last rows read (``None`` before). Unlike fluid, loading plots nothing into
``./image/ranges.png``: ``feature_range`` does when called. ``fluid_model()`` unpacks the book's trained
``fit_a_line.fluid.tar`` (put it in the ``uci_housing`` folder) into a new temporary folder.
"""
import os
import re
import tempfile

import numpy as np

from . import archive, common

__all__ = ['train', 'test', 'feature_names', 'load_data', 'predict_reader', 'fluid_model', 'feature_range']

URL = 'http://paddlemodels.bj.bcebos.com/uci_housing/housing.data'
MD5 = 'd4accdce7a25600298819f8e28e8d593'
feature_names = ['CRIM', 'ZN', 'INDUS', 'CHAS', 'NOX', 'RM', 'AGE', 'DIS', 'RAD', 'TAX', 'PTRATIO', 'B', 'LSTAT']
UCI_TRAIN_DATA = None
UCI_TEST_DATA = None
FLUID_URL_MODEL = 'https://github.com/PaddlePaddle/book/raw/develop/01.fit_a_line/fluid/fit_a_line.fluid.tar'
FLUID_MD5_MODEL = '6e6dd637ccd5993961f68bfbde46090b'


def feature_range(maximums, minimums):
    """Bar chart of each feature's range (``maximums - minimums``) saved as ``./image/ranges.png``; needs
    matplotlib."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError('uci_housing.feature_range draws with matplotlib, which is not installed: '
                          'pip install matplotlib') from e
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    count = len(maximums)
    ax.bar(list(range(count)), np.asarray(maximums) - np.asarray(minimums), color='r', align='center')
    ax.set_title('feature scale')
    plt.xticks(list(range(count)), feature_names[:count])
    plt.xlim([-1, count])
    fig.set_figheight(6)
    fig.set_figwidth(10)
    os.makedirs('image', exist_ok=True)
    fig.savefig(os.path.join('image', 'ranges.png'), dpi=48)
    plt.close(fig)


def _parse(filename, feature_num, ratio):
    with common.guard(filename), open(filename, 'rb') as f:
        text = f.read()
    try:
        data = np.array(text.split(), dtype=np.float64)
    except ValueError:
        lineno, field = next((i, f) for i, line in enumerate(text.splitlines(), 1) for f in line.split()
                             if not re.fullmatch(rb'[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?', f))
        raise common.format_error(filename, 'line %d: %r is not a number' % (lineno, field)) from None
    if data.size == 0 or data.size % feature_num:
        raise common.format_error(filename, '%d numbers do not make rows of %d (13 features and the price)'
                                  % (data.size, feature_num))
    data = data.reshape(-1, feature_num)
    maximums, minimums = data.max(axis=0), data.min(axis=0)
    avgs = data.sum(axis=0) / data.shape[0]
    features = slice(0, feature_num - 1)
    data[:, features] = (data[:, features] - avgs[features]) / (maximums[features] - minimums[features])
    offset = int(data.shape[0] * ratio)
    return data[:offset], data[offset:]


def load_data(filename, feature_num=14, ratio=0.8):
    """Normalised ``(train rows, test rows)`` of ``filename``, parsed once per process."""
    global UCI_TRAIN_DATA, UCI_TEST_DATA
    UCI_TRAIN_DATA, UCI_TEST_DATA = splits = common.cached(filename, ('uci_housing', feature_num, ratio),
                                                           lambda: _parse(filename, feature_num, ratio))
    return splits


def _split(index):
    return load_data(common.download(URL, 'uci_housing', MD5))[index]


def _reader_creator(index):
    rows = _split(index)

    def reader():
        for row in rows:
            yield row[:-1].copy(), row[-1:].copy()

    return reader


def train():
    """Reader over the first 80% of rows: ``(normalised features float64 [13], price float64 [1])``."""
    return _reader_creator(0)


def test():
    """Reader over the last 20% of rows: ``(normalised features float64 [13], price float64 [1])``."""
    return _reader_creator(1)


def predict_reader():
    """The first test row's features as a one-tuple, for inference."""
    return (_split(1)[0][:-1].copy(),)


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return common.fetch_files('uci_housing', (URL, MD5))


def fluid_model():
    """A new temporary folder holding the files of ``fit_a_line.fluid.tar`` (the book's trained model)."""
    path = common.download(FLUID_URL_MODEL, 'uci_housing', FLUID_MD5_MODEL, 'fit_a_line.fluid.tar')
    dirpath = tempfile.mkdtemp()
    archive.tar_extract(path, dirpath)
    return dirpath
