"""The vectorised tokeniser under imdb (``minifluid/dataset/wordids.py``) gives exactly what fluid's
``doc.translate(None, punctuation).lower().split()`` gives, whatever the words: long ones, NUL bytes, other
whitespace, non-ASCII bytes, and a hash table that must grow and probe past collisions."""
import random
import string

import numpy as np
import pytest

from minifluid.dataset import wordids


def fluid_tokens(doc):
    return doc.rstrip(b'\n\r').translate(None, string.punctuation.encode()).lower().split()


def random_docs(rng, count, words_per_doc, nul=False):
    seps = [b' ', b'\n', b'\t', b'\r\n', b'\x0b', b'\x0c', b'  ', b'\x1c', b'\xa0']  # \x1c, \xa0: no space here
    docs = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(0, words_per_doc)):
            size = rng.choice([1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 25, 41])
            pool = b'aAbBz\xc3\xa9.,\'!' if rng.random() < 0.9 else bytes(range(1, 256))
            parts += [bytes(rng.choice(pool) for _ in range(size)), rng.choice(seps)]
        if nul and rng.random() < 0.3:
            parts.insert(0, b'a\x00b ')
        docs.append(b''.join(parts))
    return docs


def check(docs, vocab):
    ids = wordids.word_ids(docs, vocab)
    assert len(ids) == len(docs)
    for doc, doc_ids in zip(docs, ids):
        assert doc_ids.dtype == np.int32
        assert [vocab.words[i] for i in doc_ids.tolist()] == fluid_tokens(doc), doc
    assert len(set(vocab.words)) == len(vocab.words) and all(vocab[w] == i for i, w in enumerate(vocab.words))


@pytest.mark.parametrize('nul', [False, True])
def test_same_words_as_fluids_tokenising(nul):
    rng = random.Random(5)
    vocab = wordids.Vocabulary()
    for _ in range(40):  # batches share the vocabulary, as imdb's batches do
        check(random_docs(rng, rng.randint(0, 8), 40, nul), vocab)


def test_table_grows_and_probes_past_collisions(monkeypatch):
    monkeypatch.setattr(wordids, '_PROBE_BATCH', 64)
    vocab = wordids.Vocabulary()
    vocab._keys, vocab._ids = np.zeros(128, np.uint64), np.zeros(128, np.int32)  # a tiny table: many collisions
    rng = random.Random(7)
    letters = string.ascii_lowercase.encode()
    words = sorted({bytes(rng.choice(letters) for _ in range(rng.randint(1, 8))) for _ in range(3000)})
    for start in range(0, 2000, 500):
        docs = [b' '.join(rng.choice(words[:start + 500]) for _ in range(50)) for _ in range(20)]
        check(docs, vocab)
    assert len(vocab._keys) > 128 and np.count_nonzero(vocab._keys) == sum(len(w) <= 8 for w in vocab.words)


def test_empty_inputs():
    vocab = wordids.Vocabulary()
    assert wordids.word_ids([], vocab) == []
    assert [a.tolist() for a in wordids.word_ids([b'', b' ,. ', b'x'], vocab)] == [[], [], [0]]
