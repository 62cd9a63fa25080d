"""UCI Boston housing (``paddle.dataset.uci_housing``) from ``housing.data``, never downloaded.

``housing.data`` holds 506 rows of 14 whitespace-separated numbers (13 features, then the price). As in
fluid, each feature column becomes ``(x - mean) / (max - min)`` over *all* rows, the first
``int(rows * 0.8)`` rows are the train split and the rest the test split (404 / 102), and a sample is
``(features float64 [13], price float64 [1])``. The file is parsed once per process. Unlike fluid,
nothing is plotted into ``./image/ranges.png`` as a side effect.
"""
import re

import numpy as np

from . import common

__all__ = ['train', 'test', 'feature_names', 'load_data', 'predict_reader']

URL = 'http://paddlemodels.bj.bcebos.com/uci_housing/housing.data'
MD5 = 'd4accdce7a25600298819f8e28e8d593'
feature_names = ['CRIM', 'ZN', 'INDUS', 'CHAS', 'NOX', 'RM', 'AGE', 'DIS', 'RAD', 'TAX', 'PTRATIO', 'B', 'LSTAT']


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
    return common.cached(filename, ('uci_housing', feature_num, ratio),
                         lambda: _parse(filename, feature_num, ratio))


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
