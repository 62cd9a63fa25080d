"""Penn Treebank as in Mikolov's ``simple-examples.tgz`` (``paddle.dataset.imikolov``).

Members ``./simple-examples/data/ptb.train.txt`` (train) and ``ptb.valid.txt`` (test). As in fluid 1.8
on Python 3, words are ``bytes`` while ``'<s>'``, ``'<e>'`` and ``'<unk>'`` are ``str``: ``build_dict``
counts every word of train + valid plus one ``'<s>'`` and one ``'<e>'`` per line, keeps those seen more
than ``min_word_freq`` times, most frequent first (ties by the word), and appends ``'<unk>'`` as the last
id. The corpus's own ``<unk>`` tokens are the word ``b'<unk>'`` with an id of their own; ``'<unk>'``'s id
goes to words the dictionary lacks.

Readers stream the member on every pass. ``DataType.NGRAM`` yields, per line ``<s> words <e>`` of at
least ``n`` ids, each window of ``n`` consecutive ids as a tuple; ``DataType.SEQ`` yields
``([<s>] + ids, ids + [<e>])``, skipping lines whose source is longer than ``n`` when ``n > 0``.
"""
import collections
import contextlib

from . import archive, common

__all__ = ['train', 'test', 'build_dict', 'DataType']

URL = 'https://dataset.bj.bcebos.com/imikolov%2Fsimple-examples.tgz'
MD5 = '30177ea32e27c525793142b6bf2c8e2d'
TRAIN_FILE = './simple-examples/data/ptb.train.txt'
TEST_FILE = './simple-examples/data/ptb.valid.txt'


class DataType(object):
    NGRAM = 1
    SEQ = 2


def _archive():
    return common.download(URL, 'imikolov', MD5)


def word_count(f, word_freq=None):
    """Add the words of each line of ``f`` (a file or any iterable of lines) and one ``'<s>'`` and one
    ``'<e>'`` per line to ``word_freq`` (a new ``defaultdict(int)`` when None); returns it."""
    if word_freq is None:
        word_freq = collections.defaultdict(int)
    counts, lines = collections.Counter(), 0
    for line in f:
        counts.update(line.split())
        lines += 1
    if lines:
        counts['<s>'] += lines
        counts['<e>'] += lines
    for word, count in counts.items():
        word_freq[word] = word_freq.get(word, 0) + count
    return word_freq


def _word_freq(path):
    members = archive.tar_read(path, [TRAIN_FILE, TEST_FILE])
    word_freq = {}
    for name in (TRAIN_FILE, TEST_FILE):
        word_count(common.split_lines(members[name[2:]]), word_freq)
    return word_freq


def build_dict(min_word_freq=50):
    """``{word: id}`` over train + valid (see the module doc for the rules); counts are kept per process."""
    path = _archive()
    word_freq = common.cached(path, 'imikolov-counts', lambda: _word_freq(path))
    kept = [(w, c) for w, c in word_freq.items() if c > min_word_freq]
    # fluid compared the words themselves; a str marker and a bytes word tied in count compare as bytes here
    kept.sort(key=lambda wc: (-wc[1], wc[0] if isinstance(wc[0], bytes) else wc[0].encode()))
    word_idx = {w: i for i, (w, _) in enumerate(kept)}
    word_idx['<unk>'] = len(kept)
    return word_idx


def _member_lines(path, name):
    """Stream the lines of one member; a missing member is a DatasetFormatError."""
    seen = []
    with contextlib.closing(archive.tar_members(path)) as members:
        for member in members:
            if member.name == name[2:]:
                yield from member
                return
            seen.append(member.name)
    raise archive.missing_member(path, [name], seen)


def reader_creator(filename, word_idx, n, data_type):
    """Reader over member ``filename`` of the archive (see the module doc)."""
    if data_type not in (DataType.NGRAM, DataType.SEQ):
        raise ValueError('imikolov: data_type must be DataType.NGRAM or DataType.SEQ, got %r' % (data_type,))
    if data_type == DataType.NGRAM and n < 1:
        raise ValueError('imikolov: NGRAM needs a window n >= 1, got %r' % (n,))
    path = _archive()

    def reader():
        get, unk = word_idx.get, word_idx['<unk>']
        with common.guard(path, 'read %s' % filename):
            for line in _member_lines(path, filename):
                ids = [get(w, unk) for w in line.split()]
                if data_type == DataType.NGRAM:
                    ids = [get('<s>', unk)] + ids + [get('<e>', unk)]
                    for i in range(n, len(ids) + 1):
                        yield tuple(ids[i - n:i])
                else:
                    src_seq = [word_idx['<s>']] + ids
                    if n > 0 and len(src_seq) > n:
                        continue
                    yield src_seq, ids + [word_idx['<e>']]

    return reader


def train(word_idx, n, data_type=DataType.NGRAM):
    """Train reader over ``ptb.train.txt``: n-gram tuples, or (src, trg) id lists for ``DataType.SEQ``."""
    return reader_creator(TRAIN_FILE, word_idx, n, data_type)


def test(word_idx, n, data_type=DataType.NGRAM):
    """Test reader over ``ptb.valid.txt``: n-gram tuples, or (src, trg) id lists for ``DataType.SEQ``."""
    return reader_creator(TEST_FILE, word_idx, n, data_type)


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return common.fetch_files('imikolov', (URL, MD5))
