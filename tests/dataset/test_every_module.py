"""What every dataset module does the same way, each on its own files in their original format (written
small by ``tools/dataset_files.py``): a missing file is a ``DatasetNotFoundError`` naming it, both lookup
folders, Paddle's URL and MD5; a file with another MD5 warns once, naming both sums, and is read; a file
cut short is a ``DatasetFormatError`` naming it, never a bare tarfile / zipfile / gzip traceback."""
import os
import warnings

import pytest

import dataset_files as files
from minifluid import dataset
from minifluid.dataset import common

# module -> (a read of its train split as a book script writes it, its main file, that file's URL / MD5 names)
READS = {
    'uci_housing': (lambda d: list(d.uci_housing.train()()), 'housing.data', 'URL', 'MD5'),
    'cifar': (lambda d: list(d.cifar.train10()()), 'cifar-10-python.tar.gz', 'CIFAR10_URL', 'CIFAR10_MD5'),
    'imdb': (lambda d: list(d.imdb.train(d.imdb.word_dict())()), 'aclImdb_v1.tar.gz', 'URL', 'MD5'),
    'imikolov': (lambda d: list(d.imikolov.train(d.imikolov.build_dict(1), 3)()), 'simple-examples.tgz', 'URL',
                 'MD5'),
    'movielens': (lambda d: list(d.movielens.train()()), 'ml-1m.zip', 'URL', 'MD5'),
    'conll05': (lambda d: list(d.conll05.test()()), 'conll05st-tests.tar.gz', 'DATA_URL', 'DATA_MD5'),
    'wmt14': (lambda d: list(d.wmt14.train(100)()), 'wmt14.tgz', 'URL_TRAIN', 'MD5_TRAIN'),
    'wmt16': (lambda d: list(d.wmt16.train(100, 100)()), 'wmt16.tar.gz', 'DATA_URL', 'DATA_MD5'),
    'flowers': (lambda d: list(d.flowers.train(use_xmap=False)()), '102flowers.tgz', 'DATA_URL', 'DATA_MD5'),
    'mnist': (lambda d: list(d.mnist.train()()), 'train-images-idx3-ubyte.gz', 'TRAIN_IMAGE_URL', 'TRAIN_IMAGE_MD5'),
}
FOLDER = {'conll05': 'conll05st'}


@pytest.mark.parametrize('module', sorted(READS))
def test_missing_file_names_it_the_folders_url_and_md5(home, paddle_cache, module):
    read, name, url, md5 = READS[module]
    files.synth(home, [module], scale=0.0005)
    folder = FOLDER.get(module, module)
    os.remove(os.path.join(home, folder, name))  # the module's other files are there
    with warnings.catch_warnings(), pytest.raises(common.DatasetNotFoundError) as ei:
        warnings.simplefilter('ignore')
        read(dataset)
    msg, owner = str(ei.value), getattr(dataset, module)
    assert name in msg and getattr(owner, url) in msg and getattr(owner, md5) in msg
    assert os.path.join(home, folder) in msg and os.path.join(paddle_cache, folder) in msg
    assert 'never downloads' in msg


@pytest.mark.parametrize('module', sorted(READS))
def test_other_md5_warns_once_per_file_naming_both_sums_then_reads(home, module):
    read, name, url, md5 = READS[module]
    files.synth(home, [module], scale=0.0005)
    with pytest.warns(common.DatasetMD5Warning) as record:
        samples = read(dataset)
        read(dataset)  # a second read: no new warning
    assert samples
    path = os.path.join(home, FOLDER.get(module, module), name)
    about = [str(w.message) for w in record if path + ':' in str(w.message)]
    assert len(about) == 1 and getattr(getattr(dataset, module), md5) in about[0]
    assert common.md5file(path) in about[0]
    assert len({str(w.message) for w in record}) == len(record)  # each file once


@pytest.mark.parametrize('module', sorted(READS))
def test_file_cut_short_is_a_format_error_naming_it(home, module):
    read, name, url, md5 = READS[module]
    files.synth(home, [module], scale=0.0005)
    path = os.path.join(home, FOLDER.get(module, module), name)
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:len(data) // 2 + 1])  # inside the train split of each file
    with warnings.catch_warnings(), pytest.raises(common.DatasetFormatError) as ei:
        warnings.simplefilter('ignore')
        read(dataset)
    assert path in str(ei.value)
