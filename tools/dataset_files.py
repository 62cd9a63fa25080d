"""Write ``paddle.dataset`` files in their original formats: same file names, archive layouts and member
names as the files Paddle downloads, with content you give (``write_*``) or synthetic content of any scale
(``synth``; ``scale=1`` gives the real files' sample counts and sizes).

Used by ``tools/make_book_data.py`` (small files for the book tests), ``tools/bench_datasets.py``
(real-size files) and the tests in ``tests/dataset``. Nothing here is part of minifluid.
"""
import gzip
import io
import os
import pickle
import struct
import tarfile
import zipfile

import numpy as np


def _folder(root, module):
    path = os.path.join(root, module)
    os.makedirs(path, exist_ok=True)
    return path


def write_tar(path, members, gz=True, prefix_dot=False):
    """A tar (gzip level 1 when ``gz``) holding ``members`` ({name: bytes}) in the given order."""
    with open(path, 'wb') as raw:
        stream = gzip.GzipFile(fileobj=raw, mode='wb', compresslevel=1, mtime=0) if gz else raw
        with tarfile.open(fileobj=stream, mode='w', format=tarfile.GNU_FORMAT) as tf:
            for name, data in members.items():
                info = tarfile.TarInfo(('./' if prefix_dot else '') + name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tf.addfile(info, io.BytesIO(data))
        if gz:
            stream.close()
    return path


def write_uci_housing(root, rows):
    path = os.path.join(_folder(root, 'uci_housing'), 'housing.data')
    with open(path, 'w') as f:
        for row in np.asarray(rows, dtype=np.float64):
            f.write(' ' + ' '.join('%.4f' % v for v in row) + '\n')
    return path


class _Python2Pickler(pickle._Pickler):
    """Pickles as Python 2's cPickle wrote the CIFAR batches: bytes as (SHORT_)BINSTRING, numpy's
    reconstructor under its numpy 1 path."""
    dispatch = dict(pickle._Pickler.dispatch)

    def save_bytes(self, obj):
        n = len(obj)
        head = pickle.SHORT_BINSTRING + bytes([n]) if n < 256 else pickle.BINSTRING + struct.pack('<i', n)
        self.write(head + obj)
        self.memoize(obj)

    dispatch[bytes] = save_bytes


def python2_pickle(obj):
    buf = io.BytesIO()
    _Python2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue().replace(b'cnumpy._core.multiarray\n', b'cnumpy.core.multiarray\n')


def write_cifar(root, version, batches):
    """``batches``: [(member name inside the top folder, uint8 [N, 3072], labels)]."""
    top = 'cifar-10-batches-py' if version == 10 else 'cifar-100-python'
    key = b'labels' if version == 10 else b'fine_labels'
    members = {}
    for name, data, labels in batches:
        batch = {b'batch_label': name.encode(), key: [int(v) for v in labels], b'data': np.asarray(data, np.uint8)}
        members['%s/%s' % (top, name)] = python2_pickle(batch)
    members['%s/%s' % (top, 'batches.meta' if version == 10 else 'meta')] = python2_pickle({b'num_cases_per_batch': 1})
    return write_tar(os.path.join(_folder(root, 'cifar'), 'cifar-%d-python.tar.gz' % version), members)


def write_imdb(root, docs, name='aclImdb_v1.tar.gz'):
    """``docs``: {member name such as 'aclImdb/train/pos/0_9.txt': bytes}."""
    return write_tar(os.path.join(_folder(root, 'imdb'), name), docs)


def write_imikolov(root, train, valid, name='simple-examples.tgz'):
    """``train`` / ``valid``: the bytes of ptb.train.txt / ptb.valid.txt (members keep the './' prefix)."""
    members = {'simple-examples/data/ptb.train.txt': train, 'simple-examples/data/ptb.valid.txt': valid,
               'simple-examples/data/ptb.test.txt': valid}
    return write_tar(os.path.join(_folder(root, 'imikolov'), name), members, prefix_dot=True)


def write_movielens(root, movies, users, ratings, name='ml-1m.zip'):
    """Lists of text lines (without newline) for movies.dat, users.dat, ratings.dat (latin-1)."""
    path = os.path.join(_folder(root, 'movielens'), name)
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for member, lines in (('movies.dat', movies), ('users.dat', users), ('ratings.dat', ratings)):
            z.writestr('ml-1m/' + member, ''.join(line + '\n' for line in lines).encode('latin-1'))
    return path


def write_conll05(root, words, props, word_dict, verb_dict, target_dict, emb, paddle_names=False):
    """``words``/``props``: lines of test.wsj.words / .props; dictionaries: lists of lines; ``emb``: bytes."""
    folder = _folder(root, 'conll05st')
    members = {'conll05st-release/test.wsj/words/test.wsj.words.gz': gzip.compress(_text(words), 1),
               'conll05st-release/test.wsj/props/test.wsj.props.gz': gzip.compress(_text(props), 1)}
    write_tar(os.path.join(folder, 'conll05st-tests.tar.gz'), members)
    prefix = 'conll05st%2F' if paddle_names else ''
    for name, lines in (('wordDict.txt', word_dict), ('verbDict.txt', verb_dict), ('targetDict.txt', target_dict)):
        with open(os.path.join(folder, prefix + name), 'wb') as f:
            f.write(_text(lines))
    with open(os.path.join(folder, prefix + 'emb'), 'wb') as f:
        f.write(emb)
    return folder


def write_wmt14(root, src_dict, trg_dict, splits):
    """``splits``: {'train'|'test'|'gen': [(source, target)]}; dictionaries: lists of words."""
    members = {'wmt14/src.dict': _text(src_dict), 'wmt14/trg.dict': _text(trg_dict)}
    for split, pairs in splits.items():
        members['wmt14/%s/%s' % (split, split)] = _text('%s\t%s' % p for p in pairs)
    return write_tar(os.path.join(_folder(root, 'wmt14'), 'wmt14.tgz'), members)


def write_wmt16(root, splits):
    """``splits``: {'train'|'test'|'val': [(english, german)]}."""
    members = {'wmt16/%s' % split: _text('%s\t%s' % p for p in pairs) for split, pairs in splits.items()}
    return write_tar(os.path.join(_folder(root, 'wmt16'), 'wmt16.tar.gz'), members)


def write_flowers(root, jpegs, labels, setid):
    """``jpegs``: encoded images 1..N; ``labels``: their classes 1..102; ``setid``: {'trnid'|'valid'|'tstid':
    image numbers}. Needs scipy for the .mat files."""
    import scipy.io
    folder = _folder(root, 'flowers')
    write_tar(os.path.join(folder, '102flowers.tgz'),
              {'jpg/image_%05d.jpg' % (i + 1): data for i, data in enumerate(jpegs)})
    scipy.io.savemat(os.path.join(folder, 'imagelabels.mat'), {'labels': np.asarray([labels], np.uint8)},
                     do_compression=True)
    scipy.io.savemat(os.path.join(folder, 'setid.mat'),
                     {k: np.asarray([v], np.uint16) for k, v in setid.items()}, do_compression=True)
    return folder


def write_mnist(root, prefix, images, labels):
    """``prefix`` 'train' or 't10k'; gzipped IDX files as Paddle downloads them."""
    folder = _folder(root, 'mnist')
    images, labels = np.asarray(images, np.uint8), np.asarray(labels, np.uint8)
    for kind, magic, arr in (('images-idx3', 2051, images), ('labels-idx1', 2049, labels)):
        head = np.array((magic,) + arr.shape, dtype='>u4').tobytes()
        with gzip.open(os.path.join(folder, '%s-%s-ubyte.gz' % (prefix, kind)), 'wb', compresslevel=1) as f:
            f.write(head + arr.tobytes())
    return folder


def _text(lines):
    return ''.join(line + '\n' for line in lines).encode('utf-8')


# ------------------------------------------------------------------ synthetic content

def vocabulary(size, rng):
    """``size`` distinct lower-case words, as an object array of str, lengths as in English text: 1 +
    Poisson(5.5) letters (about a fifth over 8), the 50 shortest first (the most frequent under ``Zipf``),
    so about one word in ten of a ``sentences`` text is longer than 8 letters."""
    letters = np.array(list('abcdefghijklmnopqrstuvwxyz'))
    words, seen = [], set()
    while len(words) < size:
        for w in (''.join(rng.choice(letters, 1 + k)) for k in rng.poisson(5.5, size - len(words)).tolist()):
            if w not in seen:
                seen.add(w)
                words.append(w)
    shortest = sorted(range(len(words)), key=lambda i: len(words[i]))[:50]
    rest = sorted(set(range(len(words))) - set(shortest))
    return np.array([words[i] for i in shortest + rest], dtype=object)


class Zipf:
    """Word ids drawn with probability proportional to 1 / rank."""

    def __init__(self, size, rng):
        self.cdf = np.cumsum(1.0 / np.arange(1, size + 1))
        self.cdf /= self.cdf[-1]
        self.rng = rng

    def __call__(self, n):
        return np.minimum(np.searchsorted(self.cdf, self.rng.random_sample(n)), len(self.cdf) - 1)


def sentences(vocab, zipf, count, mean_len, rng):
    """``count`` sentences of about ``mean_len`` Zipf-distributed words."""
    lengths = np.maximum(1, rng.poisson(mean_len, count))
    ids = zipf(int(lengths.sum()))
    words = vocab[ids].tolist()
    out, at = [], 0
    for n in lengths.tolist():
        out.append(' '.join(words[at:at + n]))
        at += n
    return out


def synth(root, modules, scale=1.0, seed=0):
    """Write synthetic files for each name in ``modules`` under ``root``; ``scale=1`` is real size."""
    rng = np.random.RandomState(seed)
    n = lambda real, least=4: max(least, int(real * scale))  # noqa: E731
    for module in modules:
        globals()['_synth_' + module](root, n, rng)


def _synth_uci_housing(root, n, rng):
    """506 rows on the real columns' scales; the price (about 22 +- 4) is linear in RM and LSTAT plus noise,
    so fit_a_line's linear model can learn it as it learns the real one."""
    scales = np.array([90, 100, 28, 1, 0.5, 4, 100, 11, 24, 520, 10, 400, 37])
    features = rng.rand(506, 13) * scales + np.array([0, 0, 0, 0, 0.38, 3.5, 2, 1, 1, 187, 12.6, 0, 1.7])
    features[:, 3] = rng.rand(506) < 0.07  # CHAS is a 0/1 flag
    rm, lstat = (features[:, 5] - 5.5) / 4, (features[:, 12] - 20) / 37
    price = 22 + 6 * rm - 6 * lstat + rng.randn(506) * 1.5
    write_uci_housing(root, np.column_stack([features, price]))


def _synth_cifar(root, n, rng):
    per = n(10000)
    batches = [('data_batch_%d' % i, rng.randint(0, 256, (per, 3072)), rng.randint(0, 10, per)) for i in range(1, 6)]
    batches.append(('test_batch', rng.randint(0, 256, (per, 3072)), rng.randint(0, 10, per)))
    write_cifar(root, 10, batches)


def _with_markers(texts, markers, per_text, rng):
    """Each text with ``per_text`` words drawn from ``markers`` inserted at random places."""
    out = []
    for text in texts:
        words = text.split(' ')
        for word in rng.choice(markers, per_text):
            words.insert(rng.randint(0, len(words) + 1), word)
        out.append(' '.join(words))
    return out


def _synth_imdb(root, n, rng):
    """Reviews whose polarity a model can learn: a positive one holds a few of two rare words, a negative
    one of two others (frequent enough for imdb.word_dict's cutoff of 150 at scale 0.01)."""
    vocab, docs = vocabulary(n(90000, 400), rng), {}
    zipf = Zipf(len(vocab), rng)
    markers = {'pos': vocab[-2:], 'neg': vocab[-4:-2]}
    marker_rng = np.random.RandomState(7)  # apart from ``rng``: the other modules' files stay as they were
    for split, count in (('train', n(12500)), ('test', n(12500))):
        for polarity in ('pos', 'neg'):
            texts = _with_markers(sentences(vocab, zipf, count, 230, rng), markers[polarity], 3, marker_rng)
            for i, text in enumerate(texts):
                docs['aclImdb/%s/%s/%d_%d.txt' % (split, polarity, i, 7 if polarity == 'pos' else 2)] = \
                    (text.capitalize() + ', fine. <br /><br />The end!').encode()
    for i, text in enumerate(sentences(vocab, zipf, n(50000), 230, rng)):
        docs['aclImdb/train/unsup/%d_0.txt' % i] = text.encode()
    write_imdb(root, docs)


def _synth_imikolov(root, n, rng):
    vocab = vocabulary(n(9999, 300), rng)
    vocab[5] = '<unk>'
    zipf = Zipf(len(vocab), rng)
    train, valid = (sentences(vocab, zipf, n(count), 21, rng) for count in (42068, 3370))
    write_imikolov(root, _text(' %s ' % s for s in train), _text(' %s ' % s for s in valid))


def _synth_movielens(root, n, rng):
    genres = ['Action', 'Adventure', 'Animation', "Children's", 'Comedy', 'Crime', 'Documentary', 'Drama',
              'Fantasy', 'Film-Noir', 'Horror', 'Musical', 'Mystery', 'Romance', 'Sci-Fi', 'Thriller', 'War',
              'Western']
    vocab = vocabulary(n(5000, 50), rng)
    n_movies, n_users = n(3883, 20), n(6040, 20)
    movies = ['%d::%s (%d)::%s' % (i, ' '.join(vocab[rng.randint(0, len(vocab), rng.randint(1, 5))]).title(),
                                   rng.randint(1920, 2001), '|'.join(rng.choice(genres, rng.randint(1, 4), False)))
              for i in range(1, n_movies + 1)]
    # the real table's 3,883 movies (and a title vocabulary past 4,140 words), rated or not: the book test
    # looks up movie 783 and title word 4140; drawn apart from ``rng`` so the other modules' files stay
    more = np.random.RandomState(13)
    more_vocab = vocabulary(6000, more)
    movies += ['%d::%s (%d)::%s' % (i, ' '.join(more_vocab[more.randint(0, 6000, more.randint(1, 6))]).title(),
                                    more.randint(1920, 2001), '|'.join(more.choice(genres, more.randint(1, 4), False)))
               for i in range(n_movies + 1, 3884)]
    ages = [1, 18, 25, 35, 45, 50, 56]
    users = ['%d::%s::%d::%d::%05d' % (i, 'MF'[rng.randint(2)], ages[rng.randint(7)], rng.randint(21), i)
             for i in range(1, n_users + 1)]
    count = n(1000209, 200)
    user, movie, draw = rng.randint(1, n_users + 1, count), rng.randint(1, n_movies + 1, count), rng.randint(1, 6, count)
    # ratings a recommender can learn: a user rates movies of their own parity higher (4 +- 1, else 2 +- 1)
    stars = np.where(user % 2 == movie % 2, 4, 2) + draw % 3 - 1
    cols = (user, movie, stars, rng.randint(956703932, 1046454590, count))
    ratings = ['%d::%d::%d::%d' % r for r in zip(*(c.tolist() for c in cols))]
    write_movielens(root, movies, users, ratings)


def _synth_conll05(root, n, rng, word_dim=32):
    vocab = vocabulary(n(44068, 200), rng)
    vocab = vocab[~np.isin(vocab, ['bos', 'eos'])]  # those two are added below
    verbs = vocab[:n(3162, 30)]
    tags = ['A0', 'A1', 'A2', 'A3', 'A4', 'AM-TMP', 'AM-LOC', 'AM-MNR', 'AM-ADV', 'AM-NEG', 'V']
    zipf = Zipf(len(vocab), rng)
    words, props = [], []
    for sentence in sentences(vocab, zipf, n(2416, 200), 23, rng):  # SRL book test: checks at batches 10-30
        tokens = sentence.split()
        while len(tokens) < 4:
            tokens.append(vocab[0])
        k = min(rng.randint(1, 4), len(tokens) // 2)
        positions = sorted(rng.choice(len(tokens), k, replace=False).tolist())
        columns = [['-'] * len(tokens)] + [['*'] * len(tokens) for _ in positions]
        for c, p in enumerate(positions, 1):
            columns[0][p] = verbs[rng.randint(len(verbs))]
            columns[c][p] = '(V*)'
            arg = [q for q in range(len(tokens)) if q != p][:2]
            tag = tags[rng.randint(len(tags) - 1)]
            if len(arg) == 2 and arg[1] == arg[0] + 1:
                columns[c][arg[0]], columns[c][arg[1]] = '(%s*' % tag, '*)'
            else:
                columns[c][arg[0]] = '(%s*)' % tag
        for i, token in enumerate(tokens):
            words.append(token)
            props.append(' '.join(col[i] for col in columns))
        words.append('')
        props.append('')
    word_dict = ['<unk>'] + vocab.tolist() + ['bos', 'eos']
    target = [p + t for t in tags for p in ('B-', 'I-')] + ['O']
    emb = np.zeros(4, np.int32).tobytes() + rng.randn(len(word_dict), word_dim).astype(np.float32).tobytes()
    write_conll05(root, words, props, word_dict, verbs.tolist(), target, emb)


def _synth_wmt14(root, n, rng):
    src, trg = vocabulary(n(29997, 200), rng), vocabulary(n(29997, 200), rng)
    zs, zt = Zipf(len(src), rng), Zipf(len(trg), rng)
    splits = {split: list(zip(sentences(src, zs, n(count), 25, rng), sentences(trg, zt, n(count), 27, rng)))
              for split, count in (('train', 100000), ('test', 3003), ('gen', 3003))}
    marks = ['<s>', '<e>', '<unk>']
    write_wmt14(root, marks + src.tolist(), marks + trg.tolist(), splits)


def _synth_wmt16(root, n, rng):
    en, de = vocabulary(n(11247, 200), rng), vocabulary(n(19217, 200), rng)
    ze, zd = Zipf(len(en), rng), Zipf(len(de), rng)
    write_wmt16(root, {split: list(zip(sentences(en, ze, n(count), 13, rng), sentences(de, zd, n(count), 12, rng)))
                       for split, count in (('train', 29000), ('test', 1000), ('val', 1014))})


def _synth_flowers(root, n, rng, size=(500, 375)):
    from PIL import Image
    count = n(8189, 12)
    base = [rng.randint(0, 256, (size[1] // 8, size[0] // 8, 3)).astype(np.uint8) for _ in range(8)]
    jpegs = []
    for i in range(count):
        buf = io.BytesIO()
        Image.fromarray(base[i % 8]).resize(size, Image.BILINEAR).save(buf, 'JPEG', quality=90)
        jpegs.append(buf.getvalue())
    ids = rng.permutation(np.arange(1, count + 1))
    third = max(1, count // 8)
    write_flowers(root, jpegs, rng.randint(1, 103, count), {'trnid': np.sort(ids[:third]),
                                                           'valid': np.sort(ids[third:2 * third]),
                                                           'tstid': np.sort(ids[2 * third:])})


def _synth_mnist(root, n, rng):
    """Real handwritten digits, so the book's recognize_digits networks learn them as they learn MNIST (its
    tests train until the test accuracy passes 0.2): minifluid's embedded 8x8 digits (train images from its
    train split, test images from its test split) drawn 3x larger in the middle of the 28x28 canvas, in
    MNIST's white-on-black 0-255 range, with pixel noise."""
    from minifluid.dataset import digits
    for prefix, count, split in (('train', n(60000), 'train'), ('t10k', n(10000), 'test')):
        images, labels = digits.load(split)
        pick = rng.randint(0, len(labels), count)
        canvas = np.zeros((count, 28, 28))
        canvas[:, 2:26, 2:26] = np.kron(images[pick].reshape(-1, 8, 8), np.ones((3, 3))) * 255
        noisy = np.clip(canvas + rng.randint(-30, 31, canvas.shape), 0, 255)
        write_mnist(root, prefix, noisy, labels[pick])
