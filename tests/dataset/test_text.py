"""imdb, imikolov, movielens, conll05, wmt14 and wmt16 on small files written in the original formats;
every expected id below is worked out by hand from fluid's rules (the comments show the counting)."""
import os
import re

import numpy as np
import pytest

import dataset_files as files
from minifluid.dataset import common, conll05, imdb, imikolov, movielens, wmt14, wmt16

# ---------------------------------------------------------------- imdb

IMDB_DOCS = {
    'aclImdb/README': b'not a review',
    'aclImdb/train/pos/0_9.txt': b"Good movie, GOOD acting! <br />Don't miss.",
    'aclImdb/train/neg/1_2.txt': b'Bad movie. Bad, bad acting.',
    'aclImdb/train/unsup/2_0.txt': b'good good good good good',
    'aclImdb/test/pos/3_8.txt': b'Good!',
    'aclImdb/test/neg/4_1.txt': b'bad movie',
}
ALL = re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$")


def test_imdb_tokenizes_bytes_like_fluid(home):
    files.write_imdb(home, IMDB_DOCS)
    docs = list(imdb.tokenize(re.compile(r'aclImdb/train/.*\.txt$')))
    # punctuation deleted (so <br /> leaves "br" and don't becomes dont), lower-cased, bytes
    assert docs == [[b'good', b'movie', b'good', b'acting', b'br', b'dont', b'miss'],
                    [b'bad', b'movie', b'bad', b'bad', b'acting'], [b'good'] * 5]


def test_imdb_dictionary_cutoff_order_and_unk(home):
    files.write_imdb(home, IMDB_DOCS)
    # train+test pos/neg counts: bad 4, good 3, movie 3, acting 2, br/dont/miss 1 (unsup not counted)
    d = imdb.build_dict(ALL, 1)
    assert d == {b'bad': 0, b'good': 1, b'movie': 2, b'acting': 3, '<unk>': 4}
    assert imdb.build_dict(ALL, 3) == {b'bad': 0, '<unk>': 1}


def test_imdb_readers_pos_first_label_0_unknown_words_unk(home):
    files.write_imdb(home, IMDB_DOCS)
    d = imdb.build_dict(ALL, 1)
    assert list(imdb.train(d)()) == [([1, 2, 1, 3, 4, 4, 4], 0), ([0, 2, 0, 0, 3], 1)]
    assert list(imdb.test(d)()) == [([1], 0), ([0, 2], 1)]
    reader = imdb.train({b'movie': 0, '<unk>': 1})
    assert list(reader()) == list(reader()) == [([1, 0, 1, 1, 1, 1, 1], 0), ([1, 0, 1, 1, 1], 1)]


def test_imdb_word_dict_keeps_words_seen_more_than_150_times(home):
    files.write_imdb(home, {'aclImdb/train/pos/0_1.txt': b'wow ' * 151 + b'meh ' * 150,
                            'aclImdb/test/neg/0_1.txt': b'meh'})
    assert imdb.word_dict() == {b'meh': 0, b'wow': 1, '<unk>': 2}  # meh 151 = wow 151: ties by the word
    files.write_imdb(home, {'aclImdb/train/pos/0_1.txt': b'wow ' * 151 + b'meh ' * 150})
    assert imdb.word_dict() == {b'wow': 0, '<unk>': 1}  # a rewritten archive is read again


def test_imdb_truncated_archive(home):
    path = files.write_imdb(home, {'aclImdb/train/pos/%d_1.txt' % i: os.urandom(3000) for i in range(20)})
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:len(data) * 2 // 3])
    with pytest.raises(common.DatasetFormatError) as ei:
        imdb.word_dict()
    assert path in str(ei.value)


# ---------------------------------------------------------------- imikolov

def _ptb(home):
    files.write_imikolov(home, b' a a a a b b \n a b c <unk> \n', b' b <unk> \n')
    # counts over train+valid: a 5, b 4, <s> 3, <e> 3 (one per line), b'<unk>' 2, c 1


def test_imikolov_dictionary(home):
    _ptb(home)
    d = imikolov.build_dict(min_word_freq=1)
    assert d == {b'a': 0, b'b': 1, '<e>': 2, '<s>': 3, b'<unk>': 4, '<unk>': 5}
    assert imikolov.build_dict() == {'<unk>': 0}  # nothing is seen more than 50 times


def test_imikolov_ngram_windows_with_marks_and_unk(home):
    _ptb(home)
    d = imikolov.build_dict(min_word_freq=1)
    # line 1: <s> a a a a b b <e> = 3 0 0 0 0 1 1 2; line 2: <s> a b c <unk> <e> = 3 0 1 5 4 2
    assert list(imikolov.train(d, 3)()) == [(3, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 1), (0, 1, 1), (1, 1, 2),
                                           (3, 0, 1), (0, 1, 5), (1, 5, 4), (5, 4, 2)]
    assert list(imikolov.test(d, 4)()) == [(3, 1, 4, 2)]
    assert list(imikolov.test(d, 5)()) == []  # a line shorter than the window gives nothing


def test_imikolov_seq(home):
    _ptb(home)
    d = imikolov.build_dict(min_word_freq=1)
    seq = imikolov.DataType.SEQ
    assert list(imikolov.train(d, 0, seq)()) == [([3, 0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1, 2]),
                                                ([3, 0, 1, 5, 4], [0, 1, 5, 4, 2])]
    assert list(imikolov.train(d, 5, seq)()) == [([3, 0, 1, 5, 4], [0, 1, 5, 4, 2])]  # source over 5 skipped


def test_imikolov_bad_arguments_and_missing_member(home):
    _ptb(home)
    with pytest.raises(ValueError, match='data_type'):
        imikolov.train({'<unk>': 0}, 3, data_type=7)
    path = os.path.join(home, 'imikolov', 'simple-examples.tgz')
    files.write_tar(path, {'simple-examples/data/ptb.train.txt': b' a \n'}, prefix_dot=True)
    assert list(imikolov.train({'<unk>': 0}, 1)()) == [(0,), (0,), (0,)]
    with pytest.raises(common.DatasetFormatError, match='simple-examples/data/ptb.valid.txt missing'):
        list(imikolov.test({'<unk>': 0}, 1)())


# ---------------------------------------------------------------- movielens

MOVIES = ["1::Toy Story (1995)::Animation|Children's|Comedy", '2::Jumanji (1995)::Adventure|Children\'s|Fantasy',
          '5::Father of the Bride Part II (1995)::Comedy']
USERS = ['1::F::1::10::48067', '2::M::56::16::70072', '3::M::25::15::55117']
RATINGS = ['%d::%d::%d::978300760' % (1 + i % 3, (1, 2, 5)[i % 3], 1 + i % 5) for i in range(40)]


def test_movielens_samples_and_label_offsets(home):
    files.write_movielens(home, MOVIES, USERS, RATINGS)
    everything = list(movielens.train(test_ratio=0.0)())
    assert len(everything) == 40 and list(movielens.test(test_ratio=0.0)()) == []
    # user 1: female (1), age 1 -> bucket 0, job 10; movie 1: categories Animation 0, Children's 1, Comedy 2,
    # title words toy 0, story 1; stars 1 -> 1 * 2 - 5
    assert everything[0] == [1, 1, 0, 10, 1, [0, 1, 2], [0, 1], [-3.0]]
    # user 2: male, age 56 -> bucket 6; movie 2: Adventure 3, Children's 1, Fantasy 4; jumanji 2; stars 2
    assert everything[1] == [2, 0, 6, 16, 2, [3, 1, 4], [2], [-1.0]]
    # movie 5: Comedy 2; father of the bride part ii = 3..8; stars 3
    assert everything[2] == [3, 0, 2, 15, 5, [2], [3, 4, 5, 6, 7, 8], [1.0]]
    assert everything[4][-1] == [5.0]


def test_movielens_split_is_fluids_reseeded_generator(home):
    files.write_movielens(home, MOVIES, USERS, RATINGS)
    everything = list(movielens.train(test_ratio=0.0)())
    for seed, ratio in ((0, 0.1), (0, 0.5), (7, 0.3)):
        np.random.seed(seed)  # what fluid did: reseed the global generator, one draw per line
        is_test = [np.random.random() < ratio for _ in range(40)]
        assert list(movielens.test(rand_seed=seed, test_ratio=ratio)()) == \
            [s for s, t in zip(everything, is_test) if t]
        assert list(movielens.train(rand_seed=seed, test_ratio=ratio)()) == \
            [s for s, t in zip(everything, is_test) if not t]


def test_movielens_info_functions(home):
    files.write_movielens(home, MOVIES, USERS, RATINGS)
    assert movielens.max_user_id() == 3 and movielens.max_movie_id() == 5 and movielens.max_job_id() == 16
    assert movielens.movie_categories() == {'Animation': 0, "Children's": 1, 'Comedy': 2, 'Adventure': 3,
                                            'Fantasy': 4}
    assert movielens.get_movie_title_dict() == {'toy': 0, 'story': 1, 'jumanji': 2, 'father': 3, 'of': 4,
                                                'the': 5, 'bride': 6, 'part': 7, 'ii': 8}
    assert movielens.age_table == [1, 18, 25, 35, 45, 50, 56]
    assert str(movielens.user_info()[2]) == '<UserInfo id(2), gender(M), age(56), job(16)>'
    toy = movielens.movie_info()[1]
    assert toy.title == 'Toy Story ' and toy.value() == [1, [0, 1, 2], [0, 1]]  # the year's space stays


@pytest.mark.parametrize('line,problem', [('1::5::x::1', r'ratings.dat line 3: expected user::movie::stars::time'),
                                          ('1::9::4::1', 'ratings.dat line 3: unknown movie id 9')])
def test_movielens_bad_rating_line(home, line, problem):
    path = files.write_movielens(home, MOVIES, USERS, RATINGS[:2] + [line])
    with pytest.raises(common.DatasetFormatError, match=problem) as ei:
        movielens.max_user_id()
    assert path in str(ei.value)


def test_movielens_missing_member(home):
    path = os.path.join(home, 'movielens', 'ml-1m.zip')
    os.makedirs(os.path.dirname(path))
    import zipfile
    with zipfile.ZipFile(path, 'w') as z:
        z.writestr('ml-1m/movies.dat', MOVIES[0] + '\n')
    with pytest.raises(common.DatasetFormatError, match='ml-1m/users.dat missing from the archive'):
        movielens.movie_info()


# ---------------------------------------------------------------- conll05

CONLL_WORDS = ['The', 'cat', 'sat', 'on', 'mats', '.', '', 'Dogs', 'bark', 'and', 'sit', '.', '']
CONLL_PROPS = ['- (A0*', '- *)', 'sit (V*)', '- (AM-LOC*', '- *)', '- *', '',
               '- (A0*) (A0*)', 'bark (V*) *', '- * *', 'sit * (V*)', '- * *', '']
WORD_DICT = ['<unk>', 'The', 'cat', 'sat', 'on', 'mats', '.', 'bos', 'eos', 'Dogs', 'bark', 'and']


def _conll(home, props=CONLL_PROPS, targets=('B-A0', 'I-A0', 'B-AM-LOC', 'I-AM-LOC', 'B-V', 'I-V', 'O')):
    return files.write_conll05(home, CONLL_WORDS, props, WORD_DICT, ['sit', 'bark'], list(targets),
                               b'\0' * 16 + np.ones((12, 2), np.float32).tobytes(), paddle_names=True)


def test_conll05_dictionaries(home):
    _conll(home)
    words, verbs, labels = conll05.get_dict()
    assert words == {w: i for i, w in enumerate(WORD_DICT)} and verbs == {'sit': 0, 'bark': 1}
    assert labels == {'B-A0': 0, 'I-A0': 1, 'B-AM-LOC': 2, 'I-AM-LOC': 3, 'B-V': 4, 'I-V': 5, 'O': 6}
    assert conll05.get_embedding() == os.path.join(home, 'conll05st', 'conll05st%2Femb')


def test_conll05_label_ids_follow_first_mention(home):
    _conll(home, targets=['I-A1', 'B-A0', 'B-A1', 'O'])
    assert conll05.get_dict()[2] == {'B-A1': 0, 'I-A1': 1, 'B-A0': 2, 'I-A0': 3, 'O': 4}


def test_conll05_samples(home):
    _conll(home)
    samples = list(conll05.test()())
    assert len(samples) == 3  # one per predicate column
    # sentence 1, predicate "sat" (position 2): context The cat [sat] on mats
    assert samples[0] == ([1, 2, 3, 4, 5, 6], [1] * 6, [2] * 6, [3] * 6, [4] * 6, [5] * 6, [0] * 6,
                          [1, 1, 1, 1, 1, 0], [0, 1, 4, 2, 3, 6])
    # sentence 2, predicate "bark" (position 1): bos Dogs [bark] and sit; "sit" is no word of the dictionary
    assert samples[1] == ([9, 10, 11, 0, 6], [7] * 5, [9] * 5, [10] * 5, [11] * 5, [0] * 5, [1] * 5,
                          [1, 1, 1, 1, 0], [0, 4, 6, 6, 6])
    # predicate "sit" (position 3): bark and [sit] . eos
    assert samples[2] == ([9, 10, 11, 0, 6], [10] * 5, [11] * 5, [0] * 5, [6] * 5, [8] * 5, [0] * 5,
                          [0, 1, 1, 1, 1], [0, 6, 6, 4, 6])


def test_conll05_bad_label_names_member_and_line(home):
    path = os.path.join(_conll(home, props=CONLL_PROPS[:4] + ['- ???'] + CONLL_PROPS[5:]), 'conll05st-tests.tar.gz')
    with pytest.raises(common.DatasetFormatError, match=r"test.wsj.props.gz: the sentence ending at line 7: "
                                                        r"unexpected label '\?\?\?'") as ei:
        list(conll05.test()())
    assert path in str(ei.value)


def test_conll05_missing_dictionary(home):
    folder = _conll(home)
    os.remove(os.path.join(folder, 'conll05st%2FverbDict.txt'))
    with pytest.raises(common.DatasetNotFoundError, match=r'conll05st%2FverbDict.txt or verbDict.txt'):
        conll05.test()


# ---------------------------------------------------------------- wmt14

def _wmt14(home):
    marks = ['<s>', '<e>', '<unk>']
    pairs = [('le chat', 'the cat'), ('x\ty', 'two tabs: skipped'), (' '.join(['le'] * 78), 'the'),
             (' '.join(['le'] * 79), 'the'), ('le', ' '.join(['the'] * 80)), ('le', ' '.join(['the'] * 81))]
    files.write_wmt14(home, marks + ['le', 'chat'], marks + ['the', 'cat'],
                      {'train': pairs, 'test': [('chat', 'cat')], 'gen': [('le', 'the')]})


def test_wmt14_samples_dict_size_and_length_limit(home):
    _wmt14(home)
    samples = list(wmt14.train(4)())
    # dict_size 4 keeps <s> <e> <unk> le / the: chat and cat are unknown (2)
    assert samples[0] == ([0, 3, 2, 1], [0, 3, 2], [3, 2, 1])
    # the tab-less line is skipped; a source of 78 words + 2 marks (80) stays, 79 + 2 goes; target 80 stays
    assert [(len(s), len(t)) for s, t, _ in samples] == [(4, 3), (80, 2), (3, 81)]
    assert list(wmt14.test(5)()) == [([0, 4, 1], [0, 4], [4, 1])]
    assert list(wmt14.gen(5)()) == [([0, 3, 1], [0, 3], [3, 1])]


def test_wmt14_get_dict(home):
    _wmt14(home)
    src, trg = wmt14.get_dict(4)
    assert src == {0: '<s>', 1: '<e>', 2: '<unk>', 3: 'le'} and trg[3] == 'the'
    assert wmt14.get_dict(100, reverse=False)[1] == {'<s>': 0, '<e>': 1, '<unk>': 2, 'the': 3, 'cat': 4}


def test_wmt14_target_dict_without_end_mark(home):
    _wmt14(home)
    with pytest.raises(common.DatasetFormatError, match='trg.dict lacks <s> or <e> in its first 1 lines'):
        list(wmt14.train(1)())


# ---------------------------------------------------------------- wmt16

def _wmt16(home):
    files.write_wmt16(home, {'train': [('a b a', 'x y'), ('a c', 'x z z'), ('no', 'tab\there'), ('c d', 'y')],
                             'test': [('d', 'q')], 'val': [('a', 'x')]})
    # English counts a 3, c 2, b 1, d 1; German x 2, y 2, z 2 (ties keep first appearance)


def test_wmt16_dictionaries_and_samples(home):
    _wmt16(home)
    assert wmt16.get_dict('en', 5) == {'<s>': 0, '<e>': 1, '<unk>': 2, 'a': 3, 'c': 4}
    assert wmt16.get_dict('de', 5, reverse=True) == {0: '<s>', 1: '<e>', 2: '<unk>', 3: 'x', 4: 'y'}
    assert list(wmt16.train(5, 5)()) == [([0, 3, 2, 3, 1], [0, 3, 4], [3, 4, 1]),
                                         ([0, 3, 4, 1], [0, 3, 2, 2], [3, 2, 2, 1]),
                                         ([0, 4, 2, 1], [0, 4], [4, 1])]
    assert list(wmt16.train(5, 5, src_lang='de')())[0] == ([0, 3, 4, 1], [0, 3, 2, 3], [3, 2, 3, 1])
    assert list(wmt16.test(5, 5)()) == [([0, 2, 1], [0, 2], [2, 1])]
    assert list(wmt16.validation(5, 5)()) == [([0, 3, 1], [0, 3], [3, 1])]
    assert len(wmt16.get_dict('en', 10 ** 6)) == 7  # capped at 11,250: all four words + three marks


def test_wmt16_reads_paddles_saved_dictionary_of_the_right_length(home):
    _wmt16(home)
    with open(os.path.join(home, 'wmt16', 'en_5.dict'), 'w') as f:
        f.write('<s>\n<e>\n<unk>\nd\nb\n')
    with open(os.path.join(home, 'wmt16', 'de_5.dict'), 'w') as f:
        f.write('<s>\n<e>\n<unk>\n')  # 3 lines, not 5: rebuilt as Paddle would
    assert list(wmt16.train(5, 5)())[2] == ([0, 2, 3, 1], [0, 4], [4, 1])


def test_wmt16_bad_language():
    with pytest.raises(ValueError, match='Only support: en'):
        wmt16.train(10, 10, src_lang='fr')
