"""Documents to word ids at numpy speed, with fluid's imdb tokenising: ASCII punctuation deleted, ASCII
letters lower-cased, split on ASCII whitespace, all on bytes (``doc.translate(None, punctuation).lower()
.split()``, exactly).

NOTE [ no Python object per word ]: a review corpus is about 12 million words over some 100,000 distinct
ones; a dict lookup per word costs seconds. Here a batch of documents is joined into one buffer and each
word's first 8 bytes, read as one little-endian uint64 and masked to its length, are its key: exact for
words of up to 8 bytes, since no word holds a NUL byte (a batch with one takes the per-word way). Keys go
through ``Vocabulary``'s hash table, one vectorised probe round at a time, so only the words new to the
table are looked at one by one. Longer words (about one in ten) are grouped within the batch by sorting
their 8-byte columns, then looked up once per distinct word.
"""
import string

import numpy as np

__all__ = ['Vocabulary', 'word_ids']

_PUNCTUATION = string.punctuation.encode()
_IN_WORD = bytes(c not in b' \t\n\r\x0b\x0c' for c in range(256))  # 0 where bytes.split() splits
_MASK = np.array([(1 << 8 * k) - 1 for k in range(8)] + [(1 << 64) - 1], np.uint64)  # the low k bytes
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of key * this
_PROBE_BATCH = 1 << 14


class Vocabulary(dict):
    """bytes word -> id, an unseen word getting the next id; ``words[id]`` is the word. Words of up to 8
    bytes also sit in an open-addressing table keyed by their uint64 key (see the module's NOTE)."""

    def __init__(self):
        super().__init__()
        self.words = []
        self._keys, self._ids = np.zeros(1 << 16, np.uint64), np.zeros(1 << 16, np.int32)

    def __missing__(self, word):
        self[word] = len(self.words)
        self.words.append(word)
        return self[word]

    def _slots(self, keys):
        """The table slot of each (nonzero) key, claiming a free slot for a key not yet there."""
        table, bits = self._keys, len(self._keys).bit_length() - 1
        out = ((keys * _GOLDEN) >> np.uint64(64 - bits)).astype(np.int64)
        todo = np.flatnonzero(table[out] != keys)  # most keys are in the table at their first slot
        keys, slots = keys[todo], out[todo]
        while len(todo):  # equal keys probe in lockstep, so they always meet in one slot
            free = table[slots] == 0
            table[slots[free]] = keys[free]  # among keys racing for a free slot, one wins
            hit = table[slots] == keys
            out[todo[hit]] = slots[hit]
            todo, keys, slots = todo[~hit], keys[~hit], (slots[~hit] + 1) & (len(table) - 1)
        return out

    def _grow(self):
        held = np.flatnonzero(self._keys)
        keys, ids = self._keys[held], self._ids[held]
        self._keys, self._ids = np.zeros(2 * len(self._keys), np.uint64), np.zeros(2 * len(self._keys), np.int32)
        self._ids[self._slots(keys)] = ids

    def short_ids(self, keys, blob, starts, lengths):
        """Ids of the words of up to 8 bytes at ``blob[starts:starts + lengths]``, given their keys; only
        the words new to the table are sliced out and looked up."""
        out = np.empty(len(keys), np.int32)
        for at in range(0, len(keys), _PROBE_BATCH):
            while 2 * (len(self.words) + _PROBE_BATCH) > len(self._keys):  # at most half full
                self._grow()
            slots = self._slots(keys[at:at + _PROBE_BATCH])
            ids = self._ids[slots]
            claimed = np.flatnonzero(ids == 0)  # ids are stored + 1: 0 is a slot claimed just now
            if len(claimed):
                new, first = np.unique(slots[claimed], return_index=True)
                rows = claimed[first] + at
                words = zip(starts[rows].tolist(), lengths[rows].tolist())
                self._ids[new] = [self[blob[a:a + k]] + 1 for a, k in words]
                ids[claimed] = self._ids[slots[claimed]]
            out[at:at + len(slots)] = ids - 1
        return out


def _row_groups(columns):
    """Group ids (equal rows, equal id) of the rows of uint64 ``columns``: one lexicographic sort."""
    order = np.lexsort(columns[::-1])
    change = np.zeros(len(order), bool)
    for column in columns:
        ordered = column[order]
        change[1:] |= ordered[1:] != ordered[:-1]
    groups = np.empty(len(order), np.int64)
    groups[order] = np.cumsum(change)
    return groups


def word_ids(docs, vocab):
    """Each of ``docs`` (bytes) tokenised as fluid's imdb did, as an int32 array of ``vocab`` ids (a
    ``Vocabulary``; new words are added to it)."""
    texts = [doc.translate(None, _PUNCTUATION).lower() for doc in docs]
    blob = b' ' + b' '.join(texts) + b' '
    if not texts or b'\0' in blob:
        return [np.array([vocab[w] for w in text.split()], np.int32) for text in texts]
    n = len(blob)
    buf = np.frombuffer(blob + bytes(8), np.uint8)
    in_word = np.frombuffer(blob.translate(_IN_WORD), bool)  # blob starts and ends with a space
    starts = np.flatnonzero(in_word[1:] > in_word[:-1]) + 1
    lengths = np.flatnonzero(in_word[1:] < in_word[:-1]) + 1 - starts
    words8 = np.ndarray((n + 1,), '<u8', buf, 0, (1,))  # words8[i]: the 8 bytes from byte i on
    keys = words8[starts] & _MASK[np.minimum(lengths, 8)]
    ids = np.empty(len(starts), np.int32)
    short = np.flatnonzero(lengths <= 8)
    ids[short] = vocab.short_ids(keys[short], blob, starts[short], lengths[short])
    rows = np.flatnonzero(lengths > 8)
    if len(rows):
        columns, at = [keys[rows]], 8
        while (lengths[rows] > at).any():  # bytes past a word's end read as 0 (masked)
            columns.append(words8[np.minimum(starts[rows] + at, n)] & _MASK[np.clip(lengths[rows] - at, 0, 8)])
            at += 8
        group = _row_groups(columns)
        first = np.empty(group.max() + 1, np.int64)
        first[group] = rows  # a word of each group (its last)
        pos, end = starts[first].tolist(), (starts[first] + lengths[first]).tolist()
        ids[rows] = np.array([vocab[blob[a:b]] for a, b in zip(pos, end)], np.int32)[group]
    bounds = np.cumsum([1] + [len(t) + 1 for t in texts])  # each document's first byte in blob, then the end
    return np.split(ids, np.searchsorted(starts, bounds[1:-1]))
