"""IMDB movie reviews (``paddle.dataset.imdb``) from the original ``aclImdb_v1.tar.gz``.

Reviews are the archive's ``aclImdb/{train,test}/{pos,neg}/*.txt`` members. Tokenising is fluid's:
ASCII punctuation deleted, ASCII letters lower-cased, split on whitespace, all on bytes, so (as in fluid 1.8
on Python 3) dictionary keys are ``bytes`` and only ``'<unk>'`` is a ``str``. ``word_dict()`` keeps the
words of train + test seen more than 150 times, most frequent first (ties by the word), ids from 0, and
``'<unk>'`` last. A sample is ``(list of int ids, label)``, label 0 for pos and 1 for neg, all positive
reviews first, each group in archive order.

NOTE [ one pass over the archive ]: fluid re-read the 84 MB archive for every ``word_dict``/``train``/
``test`` call (and twice per split). Here one pass tokenises every review the patterns asked for into
int32 ids over a process-wide vocabulary (cached per archive), 8 MB of reviews at a time with numpy
(``wordids.py``); a dictionary is then a count over those ids, and a split's samples one lookup-table
gather. ``tools/bench_datasets.py`` measures the whole first pass (word_dict + train) on a real-size archive.
"""
import re
import threading

import numpy as np

from . import archive, common, wordids

__all__ = ['build_dict', 'train', 'test', 'word_dict']

URL = 'https://dataset.bj.bcebos.com/imdb%2FaclImdb_v1.tar.gz'
MD5 = '7c2ac02c03563afcf9b574c7e56c153a'


_BATCH_BYTES = 8 << 20


class _Corpus:
    """The reviews of one archive read so far, as id arrays over one vocabulary."""

    def __init__(self, path):
        self.path, self.vocab, self.docs, self.names = path, wordids.Vocabulary(), {}, None
        self.matches = {}  # (pattern, flags) -> the member names it matches, in archive order
        self.lock = threading.Lock()

    def docs_matching(self, pattern):
        """Id arrays of the members ``pattern`` matches, in archive order (one pass when needed)."""
        with self.lock:
            key = (pattern.pattern, pattern.flags)
            if key not in self.matches:
                matched = None if self.names is None else [n for n in self.names if pattern.match(n)]
                if matched is None or any(n not in self.docs for n in matched):
                    matched = self._read(pattern)
                self.matches[key] = matched
            return [self.docs[n] for n in self.matches[key]]

    def _read(self, pattern):
        """Tokenise the members ``pattern`` matches that are not yet read; their names in archive order."""
        names, matched, batch, size = [], [], {}, 0
        for member in archive.tar_members(self.path):
            names.append(member.name)
            if pattern.match(member.name):
                matched.append(member.name)
                if member.name not in self.docs:
                    batch[member.name] = member.read()
                    size += member.size
                if size >= _BATCH_BYTES:
                    self.docs.update(zip(batch, wordids.word_ids(list(batch.values()), self.vocab)))
                    batch, size = {}, 0
        self.docs.update(zip(batch, wordids.word_ids(list(batch.values()), self.vocab)))
        self.names = names
        return matched


def _corpus():
    path = common.download(URL, 'imdb', MD5)
    return common.cached(path, 'imdb-corpus', lambda: _Corpus(path))


def tokenize(pattern):
    """Yield the token list (bytes words) of each member ``pattern`` matches, in archive order."""
    corpus = _corpus()
    words = corpus.vocab.words
    for ids in corpus.docs_matching(pattern):
        yield [words[i] for i in ids.tolist()]


def build_dict(pattern, cutoff):
    """``{word: id}`` of the words seen more than ``cutoff`` times in the members ``pattern`` matches:
    most frequent first, ties by the word, then ``'<unk>'``."""
    corpus = _corpus()
    docs, words = corpus.docs_matching(pattern), corpus.vocab.words
    counts = np.bincount(np.concatenate(docs + [np.zeros(0, np.int32)]), minlength=len(words))
    kept = np.flatnonzero(counts > cutoff)
    ranked = sorted(zip((-counts[kept]).tolist(), [words[i] for i in kept.tolist()]))
    word_idx = {word: rank for rank, (_, word) in enumerate(ranked)}
    word_idx['<unk>'] = len(ranked)
    return word_idx


def reader_creator(pos_pattern, neg_pattern, word_idx):
    """Reader over the ``pos_pattern`` reviews (label 0) then the ``neg_pattern`` ones (label 1)."""
    corpus = _corpus()
    groups = [(corpus.docs_matching(p), label) for p, label in ((pos_pattern, 0), (neg_pattern, 1))]
    table = np.full(len(corpus.vocab.words), word_idx['<unk>'], np.int32)  # vocabulary id -> word_idx id
    for word, idx in word_idx.items():
        if word in corpus.vocab:
            table[corpus.vocab[word]] = idx
    samples = [(table[doc], label) for docs, label in groups for doc in docs]

    def reader():
        for ids, label in samples:
            yield ids.tolist(), label

    return reader


def train(word_idx):
    """Train reader: ``(ids, label)`` over ``aclImdb/train/{pos,neg}``."""
    return reader_creator(re.compile(r"aclImdb/train/pos/.*\.txt$"), re.compile(r"aclImdb/train/neg/.*\.txt$"),
                          word_idx)


def test(word_idx):
    """Test reader: ``(ids, label)`` over ``aclImdb/test/{pos,neg}``."""
    return reader_creator(re.compile(r"aclImdb/test/pos/.*\.txt$"), re.compile(r"aclImdb/test/neg/.*\.txt$"),
                          word_idx)


def word_dict():
    """The train + test dictionary with fluid's cutoff of 150 (a new dict on every call)."""
    return build_dict(re.compile(r"aclImdb/((train)|(test))/((pos)|(neg))/.*\.txt$"), 150)


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return common.fetch_files('imdb', (URL, MD5))
