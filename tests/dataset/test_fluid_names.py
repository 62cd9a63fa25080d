"""The rest of fluid 1.8's public dataset functions: each module's ``fetch`` and ``common.fetch_all`` (find and
check, never download), ``common.must_mkdirs``, uci_housing's ``UCI_*_DATA``, ``fluid_model`` and
``feature_range``, imikolov's ``word_count``, movielens's module tables, ``mnist.reader_creator`` and
``image.batch_images_from_tar``."""
import io
import os
import pickle
import sys

import numpy as np
import pytest

import dataset_files as files
from minifluid import dataset
from minifluid.dataset import common, image, imikolov, mnist, movielens, uci_housing

# every public function and table of fluid 1.8.5's dataset modules (read from its sources)
FLUID_NAMES = {
    'common': 'DATA_HOME download md5file split cluster_files_reader must_mkdirs fetch_all',
    'uci_housing': 'feature_names UCI_TRAIN_DATA UCI_TEST_DATA FLUID_URL_MODEL FLUID_MD5_MODEL feature_range '
                   'load_data train test fluid_model predict_reader fetch',
    'cifar': 'reader_creator train100 test100 train10 test10 fetch',
    'imdb': 'tokenize build_dict reader_creator train test word_dict fetch',
    'imikolov': 'DataType word_count build_dict reader_creator train test fetch',
    'movielens': 'MovieInfo UserInfo MOVIE_INFO MOVIE_TITLE_DICT CATEGORIES_DICT USER_INFO get_movie_title_dict '
                 'max_movie_id max_user_id max_job_id movie_categories user_info movie_info unittest fetch '
                 'age_table train test',
    'conll05': 'load_label_dict load_dict corpus_reader reader_creator get_dict get_embedding test fetch',
    'wmt14': 'reader_creator train test gen get_dict fetch',
    'wmt16': 'reader_creator train test validation get_dict fetch',
    'flowers': 'default_mapper train_mapper test_mapper reader_creator train test valid fetch',
    'image': 'batch_images_from_tar load_image_bytes load_image resize_short to_chw center_crop random_crop '
             'left_right_flip simple_transform load_and_transform',
    'mnist': 'reader_creator train test fetch',
}


@pytest.mark.parametrize('module', sorted(FLUID_NAMES))
def test_every_public_name_of_fluid_18(module):
    missing = [n for n in FLUID_NAMES[module].split() if not hasattr(getattr(dataset, module), n)]
    assert not missing, missing


def test_fetch_finds_and_checks_files_and_fetch_all_names_every_missing_one(home, paddle_cache):
    path = files.write_uci_housing(home, [[1.0] * 14] * 5)
    with pytest.warns(common.DatasetMD5Warning):  # fetch checks the MD5 as the readers do
        assert uci_housing.fetch() == [path]
    with pytest.raises(common.DatasetNotFoundError) as ei:
        common.fetch_all()
    msg = str(ei.value)
    for module in ('cifar', 'imdb', 'imikolov', 'movielens', 'conll05', 'wmt14', 'wmt16', 'flowers', 'mnist'):
        assert '\n%s: dataset file' % module in msg, module
    assert 'uci_housing:' not in msg and 'digits' not in msg  # present / embedded
    assert 'never downloads' in msg


def test_must_mkdirs(tmp_path):
    target = str(tmp_path / 'a' / 'b')
    common.must_mkdirs(target)
    common.must_mkdirs(target)  # exists: no error
    assert os.path.isdir(target)


def test_uci_housing_module_tables_follow_the_last_load(home):
    files.write_uci_housing(home, [[float(i)] * 14 for i in range(10)])
    uci_housing.train()
    assert uci_housing.UCI_TRAIN_DATA.shape == (8, 14) and uci_housing.UCI_TEST_DATA.shape == (2, 14)
    assert uci_housing.UCI_TEST_DATA[0][-1] == 8.0  # prices are not normalised


def test_uci_housing_fluid_model_unpacks_the_books_tar(home):
    folder = os.path.join(home, 'uci_housing')
    os.makedirs(folder)
    tar = files.write_tar(os.path.join(folder, 'fit_a_line.fluid.tar'),
                          {'fit_a_line.inference.model/__model__': b'program',
                           'fit_a_line.inference.model/fc_0.w_0': b'weights'}, gz=False)
    out = uci_housing.fluid_model()
    assert open(os.path.join(out, 'fit_a_line.inference.model', 'fc_0.w_0'), 'rb').read() == b'weights'
    assert sorted(os.listdir(os.path.join(out, 'fit_a_line.inference.model'))) == ['__model__', 'fc_0.w_0']
    assert out != uci_housing.fluid_model()  # a new folder each call
    files.write_tar(tar, {'../escape': b'x'}, gz=False)
    with pytest.raises(common.DatasetFormatError, match=r'member \.\./escape would be written outside'):
        uci_housing.fluid_model()
    os.remove(tar)
    with pytest.raises(common.DatasetNotFoundError, match='fit_a_line.fluid.tar'):
        uci_housing.fluid_model()


def test_uci_housing_feature_range_needs_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    with pytest.raises(ImportError, match='pip install matplotlib'):
        uci_housing.feature_range(np.ones(13), np.zeros(13))


def test_imikolov_word_count_adds_sentence_marks_per_line():
    counts = imikolov.word_count(io.BytesIO(b' a b a \n\n c \n'))
    assert dict(counts) == {b'a': 2, b'b': 1, b'c': 1, '<s>': 3, '<e>': 3}  # the empty line gets marks too
    more = imikolov.word_count([b'a'], counts)
    assert more is counts and counts[b'a'] == 3 and counts['<s>'] == 4
    assert dict(imikolov.word_count([])) == {}


def test_movielens_module_tables_are_the_info_functions(home):
    files.write_movielens(home, ['1::Toy Story (1995)::Comedy'], ['1::F::1::10::48067'], ['1::1::5::978300760'])
    info = movielens.movie_info()
    assert movielens.MOVIE_INFO is info and movielens.USER_INFO is movielens.user_info()
    assert movielens.MOVIE_TITLE_DICT == {'toy': 0, 'story': 1} and movielens.CATEGORIES_DICT == {'Comedy': 0}


def test_movielens_unittest_prints_both_counts(home, capsys):
    files.write_movielens(home, ['1::Toy Story (1995)::Comedy'], ['1::F::1::10::48067'],
                          ['1::1::%d::978300760' % (1 + i % 5) for i in range(30)])
    movielens.unittest()
    train, test = map(int, capsys.readouterr().out.split())
    assert train + test == 30 and test == sum(1 for _ in movielens.test()())


def test_mnist_reader_creator_on_named_files(home):
    files.write_mnist(home, 'train', np.arange(5 * 784).reshape(5, 28, 28) % 256, [3, 1, 4, 1, 5])
    folder = os.path.join(home, 'mnist')
    reader = mnist.reader_creator(os.path.join(folder, 'train-images-idx3-ubyte.gz'),
                                  os.path.join(folder, 'train-labels-idx1-ubyte.gz'), 2)
    samples = list(reader())
    assert [label for _, label in samples] == [3, 1, 4, 1, 5]  # 5 is not a multiple of the buffer: all read
    assert samples[1][0].dtype == np.float32 and samples[1][0][0] == np.float32(784 % 256 / 255.0 * 2 - 1)
    with pytest.raises(ValueError, match='buffer_size'):
        mnist.reader_creator('a', 'b', 0)


def test_batch_images_from_tar(tmp_path):
    members = {'jpg/image_%05d.jpg' % i: b'jpeg %d' % i for i in range(1, 6)}
    data_file = files.write_tar(str(tmp_path / '102flowers.tgz'), members)
    img2label = {'jpg/image_00001.jpg': 7, 'jpg/image_00003.jpg': 8, 'jpg/image_00004.jpg': 9,
                 'jpg/image_00005.jpg': 10}
    meta = image.batch_images_from_tar(data_file, 'train', img2label, num_per_batch=3)
    assert meta == os.path.join(data_file + '_batch', 'train.txt')
    paths = open(meta).read().split()
    assert paths == [os.path.abspath(os.path.join(data_file + '_batch', 'train', 'batch_%d' % i)) for i in (0, 1)]
    batches = [pickle.load(open(p, 'rb')) for p in paths]
    assert batches == [{'label': [7, 8, 9], 'data': [b'jpeg 1', b'jpeg 3', b'jpeg 4']},
                       {'label': [10], 'data': [b'jpeg 5']}]
    os.remove(data_file)  # the batch folder exists: the archive is not read again
    assert image.batch_images_from_tar(data_file, 'train', img2label) == meta
