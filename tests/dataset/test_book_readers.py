"""The dataset-reading part of each fluid book test, written the way those scripts write it (``import
paddle``, ``paddle.batch(paddle.reader.shuffle(paddle.dataset.X.train(...), buf_size=...), ...)``), on the
small files ``tools/make_book_data.py`` writes: every reader yields batches whose samples fit the
dictionaries the scripts size their embeddings with, and ``fluid.DataFeeder`` turns them into feeds."""
import numpy as np
import pytest

import dataset_files
import make_book_data
from minifluid import compat
from minifluid.dataset import common


@pytest.fixture(scope='module')
def book_data(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp('book_data'))
    make_book_data.main([folder, '--scale', '0.01'])
    return folder


@pytest.fixture
def paddle(book_data, monkeypatch, tmp_path):
    monkeypatch.setenv(common.ENV_VAR, book_data)
    monkeypatch.setattr(common, 'DATA_HOME', str(tmp_path))
    compat.install()
    try:
        import paddle
        yield paddle
    finally:
        compat.uninstall()


def _first(reader):
    batch = next(reader())
    assert batch, 'the reader yielded an empty batch'
    return batch


def _feed(fluid, variables, batch):
    return fluid.DataFeeder(feed_list=variables, place=fluid.CPUPlace()).feed(batch)


def test_fit_a_line(paddle):
    import paddle.fluid as fluid
    batch = _first(paddle.batch(paddle.reader.shuffle(paddle.dataset.uci_housing.train(), buf_size=500),
                                batch_size=20))
    assert len(batch) == 20 and batch[0][0].shape == (13,) and batch[0][1].shape == (1,)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.layers.data(name='x', shape=[13], dtype='float32')
        y = fluid.layers.data(name='y', shape=[1], dtype='float32')
        feed = _feed(fluid, [x, y], batch)
    assert np.asarray(feed['x']).shape == (20, 13) and np.asarray(feed['y']).dtype == np.float32
    test = _first(paddle.batch(paddle.dataset.uci_housing.test(), batch_size=10))
    assert len(test) == 10


def test_image_classification(paddle):
    import paddle.fluid as fluid
    batch = _first(paddle.batch(paddle.reader.shuffle(paddle.dataset.cifar.train10(), buf_size=128 * 10),
                                batch_size=128))
    assert len(batch) == 128 and all(0 <= label < 10 for _, label in batch)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        images = fluid.layers.data(name='pixel', shape=[3, 32, 32], dtype='float32')
        label = fluid.layers.data(name='label', shape=[1], dtype='int64')
        feed = _feed(fluid, [images, label], batch)
    pixels = np.asarray(feed['pixel'])
    assert pixels.shape == (128, 3, 32, 32) and 0.0 <= pixels.min() and pixels.max() <= 1.0
    assert len(_first(paddle.batch(paddle.dataset.cifar.test10(), batch_size=128))) > 0


def test_word2vec(paddle):
    word_dict = paddle.dataset.imikolov.build_dict()
    dict_size = len(word_dict)
    batch = _first(paddle.batch(paddle.dataset.imikolov.train(word_dict, 5), 100))
    assert len(batch) == 100 and all(len(s) == 5 and all(0 <= i < dict_size for i in s) for s in batch)
    assert dict_size > 10  # the min_word_freq=50 cutoff keeps words of the small corpus too


def test_recommender_system(paddle):
    import paddle.fluid as fluid
    movielens = paddle.dataset.movielens
    sizes = [movielens.max_user_id() + 1, 2, len(movielens.age_table), movielens.max_job_id() + 1,
             movielens.max_movie_id() + 1, len(movielens.movie_categories()), len(movielens.get_movie_title_dict())]
    batch = _first(paddle.batch(paddle.reader.shuffle(movielens.train(), buf_size=8192), batch_size=256))
    assert len(batch) == 256
    for sample in batch:
        assert all(0 <= sample[k] < sizes[k] for k in range(5))
        assert all(0 <= c < sizes[5] for c in sample[5]) and all(0 <= w < sizes[6] for w in sample[6])
        assert -3.0 <= sample[7][0] <= 5.0
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        names = ['user_id', 'gender_id', 'age_id', 'job_id', 'movie_id']
        variables = [fluid.layers.data(name=n, shape=[1], dtype='int64') for n in names]
        variables += [fluid.layers.data(name=n, shape=[1], dtype='int64', lod_level=1)
                      for n in ('category_id', 'movie_title')]
        variables.append(fluid.layers.data(name='score', shape=[1], dtype='float32'))
        feed = _feed(fluid, variables, batch)
    assert len(feed['category_id'].lod()[0]) == 257 and np.asarray(feed['score']).shape == (256, 1)
    assert len(_first(paddle.batch(movielens.test(), batch_size=256))) > 0


def test_understand_sentiment(paddle):
    import paddle.fluid as fluid
    word_dict = paddle.dataset.imdb.word_dict()
    batch = _first(paddle.batch(paddle.reader.shuffle(paddle.dataset.imdb.train(word_dict), buf_size=1000),
                                batch_size=50))
    assert len(batch) == 50 and {label for _, label in batch} <= {0, 1}
    assert all(0 <= i < len(word_dict) for ids, _ in batch for i in ids)
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        data = fluid.layers.data(name='words', shape=[1], dtype='int64', lod_level=1)
        label = fluid.layers.data(name='label', shape=[1], dtype='int64')
        feed = _feed(fluid, [data, label], [([[i] for i in ids], [y]) for ids, y in batch])
    assert feed['words'].lod()[0][-1] == sum(len(ids) for ids, _ in batch)


def test_label_semantic_roles(paddle):
    conll05 = paddle.dataset.conll05
    word_dict, verb_dict, label_dict = conll05.get_dict()
    batch = _first(paddle.batch(paddle.reader.shuffle(conll05.test(), buf_size=8192), batch_size=10))
    assert len(batch) == 10
    for sample in batch:
        assert len(sample) == 9 and len({len(field) for field in sample}) == 1
        assert all(0 <= i < len(word_dict) for field in sample[:6] for i in field)
        assert all(0 <= i < len(verb_dict) for i in sample[6]) and set(sample[7]) <= {0, 1}
        assert all(0 <= i < len(label_dict) for i in sample[8])
    with open(conll05.get_embedding(), 'rb') as f:  # the book loads it as [len(word_dict), 32] after 16 bytes
        f.read(16)
        assert np.fromfile(f, dtype=np.float32).reshape(len(word_dict), 32).shape == (len(word_dict), 32)


@pytest.mark.parametrize('reader', ['train', 'test'])
def test_machine_translation_and_rnn_encoder_decoder(paddle, reader):
    dict_size = 30000
    src_dict, trg_dict = paddle.dataset.wmt14.get_dict(dict_size)
    assert src_dict[0] == '<s>' and trg_dict[1] == '<e>'
    batch = _first(paddle.batch(paddle.reader.shuffle(getattr(paddle.dataset.wmt14, reader)(dict_size),
                                                      buf_size=1000), batch_size=16))
    for src, trg, trg_next in batch:
        assert src[0] == 0 and src[-1] == 1 and trg[0] == 0 and trg_next[-1] == 1 and trg[1:] == trg_next[:-1]
        assert max(src + trg) < dict_size


def test_recognize_digits(paddle):
    batch = _first(paddle.batch(paddle.reader.shuffle(paddle.dataset.mnist.train(), buf_size=500), batch_size=64))
    assert len(batch) == 64 and batch[0][0].shape == (784,)


def test_recognize_digits_data_is_learnable(paddle):
    """The book's recognize_digits tests train until test accuracy passes 0.2: a nearest-centroid
    classifier fitted on the train file must already do much better on the test file (random pixels
    with random labels never passed, and those tests ran until their timeout)."""
    train = list(paddle.dataset.mnist.train()())
    test = list(paddle.dataset.mnist.test()())
    x, y = np.array([s[0] for s in train]), np.array([s[1] for s in train])
    assert x.min() >= -1.0 and x.max() <= 1.0 and len(set(y.tolist())) == 10  # MNIST's [-1, 1] pixels, all classes
    centroids = np.stack([x[y == k].mean(axis=0) for k in range(10)])
    tx, ty = np.array([s[0] for s in test]), np.array([s[1] for s in test])
    predicted = np.argmin(((tx[:, None, :] - centroids[None]) ** 2).sum(-1), axis=1)
    assert (predicted == ty).mean() > 0.6


def test_book_data_covers_every_module_and_rejects_unknown_ones(tmp_path, capsys):
    make_book_data.main([str(tmp_path), '--scale', '0.001', '--modules', 'wmt16,uci_housing'])
    assert sorted(p.name for p in tmp_path.iterdir()) == ['uci_housing', 'wmt16']
    assert 'MINIFLUID_DATA_HOME=' in capsys.readouterr().out
    with pytest.raises(SystemExit):
        make_book_data.main([str(tmp_path), '--modules', 'nope'])
    assert set(make_book_data.ALL_MODULES) == {n[len('_synth_'):] for n in dir(dataset_files)
                                               if n.startswith('_synth_')}
