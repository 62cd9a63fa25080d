"""CoNLL-2005 semantic role labelling test set (``paddle.dataset.conll05``), read from the original files.

In the folder ``conll05st``: ``conll05st-tests.tar.gz`` (members
``conll05st-release/test.wsj/words/test.wsj.words.gz`` and ``.../props/test.wsj.props.gz``, read in
step, a blank props line ending a sentence), and the dictionaries ``wordDict.txt``, ``verbDict.txt``,
``targetDict.txt`` and the embedding ``emb`` (Paddle 1.8 saves them as ``conll05st%2FwordDict.txt`` and so
on; either name works). Word and verb dictionaries map line ``i`` to ``i``. The label dictionary gives each
tag of targetDict's ``B-x``/``I-x`` lines the ids ``B-x``, ``I-x`` in turn, then ``O`` last.

A sample is nine lists as long as the sentence: word ids, the ids of the words two and one before the
predicate, of the predicate, one and two after it (``bos``/``eos`` past the ends; unknown words are id 0),
the predicate's verb id, the 0/1 mark of that five-word window, and the label ids.

Deliberate difference: fluid gave the tags ids in Python set order, which changed with
``PYTHONHASHSEED``; here tags are numbered in the order targetDict.txt first names them.
"""
import gzip

from . import archive, common

__all__ = ['test', 'get_dict', 'get_embedding']

DATA_URL = 'http://paddlemodels.bj.bcebos.com/conll05st/conll05st-tests.tar.gz'
DATA_MD5 = '387719152ae52d60422c016e92a742fc'
WORDDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FwordDict.txt'
WORDDICT_MD5 = 'ea7fb7d4c75cc6254716f0177a506baa'
VERBDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FverbDict.txt'
VERBDICT_MD5 = '0d2977293bbb6cbefab5b0f97db1e77c'
TRGDICT_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2FtargetDict.txt'
TRGDICT_MD5 = 'd8c7f03ceb5fc2e5a0fa7503a4353751'
EMB_URL = 'http://paddlemodels.bj.bcebos.com/conll05st%2Femb'
EMB_MD5 = 'bf436eb0faa1f6f9103017f8be57cdb7'
WORDS_NAME = 'conll05st-release/test.wsj/words/test.wsj.words.gz'
PROPS_NAME = 'conll05st-release/test.wsj/props/test.wsj.props.gz'
UNK_IDX = 0


def _text_lines(filename):
    with common.guard(filename, 'read dictionary'), open(filename, 'rb') as f:
        return [line.decode('utf-8') for line in common.split_lines(f.read())]


def load_dict(filename):
    """``{line stripped: line number}``."""
    return {line.strip(): i for i, line in enumerate(_text_lines(filename))}


def load_label_dict(filename):
    """``{B-tag: 2k, I-tag: 2k+1, ..., O: last}`` from the B-/I- lines of ``filename``."""
    tags = dict.fromkeys(line.strip()[2:] for line in _text_lines(filename) if line.strip().startswith(('B-', 'I-')))
    d = {prefix + tag: 2 * i + j for i, tag in enumerate(tags) for j, prefix in enumerate(('B-', 'I-'))}
    d['O'] = len(d)
    return d


def _bracket_labels(column, bad):
    """One predicate's props column (``(A0*``, ``*``, ``*)``, ``(V*)``) as B-/I-/O labels."""
    out, tag, inside = [], 'O', False
    for l in column:
        if l == '*':
            out.append('I-' + tag if inside else 'O')
        elif l == '*)':
            out.append('I-' + tag)
            inside = False
        elif '(' in l:
            tag = l[1:l.find('*')]
            out.append('B-' + tag)
            inside = ')' not in l
        else:
            raise bad('unexpected label %r' % l)
    return out


def _predicates(sentence, rows, bad):
    """``(sentence, verb, labels)`` for each predicate column of one sentence's props rows."""
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise bad('rows of different widths')
    columns = list(zip(*rows))
    verbs = [x for x in columns[0] if x != '-']
    if len(verbs) < width - 1:
        raise bad('%d verbs for %d predicate columns' % (len(verbs), width - 1))
    for i, column in enumerate(columns[1:]):
        yield sentence, verbs[i], _bracket_labels(column, bad)


def corpus_reader(data_path, words_name, props_name):
    """Reader of ``(words, predicate, labels)`` per predicate of each sentence."""

    def reader():
        with common.guard(data_path, 'read the words and props members'):
            members = archive.tar_read(data_path, [words_name, props_name])
            words = gzip.decompress(members[words_name]).decode('utf-8').split('\n')
            props = gzip.decompress(members[props_name]).decode('utf-8').split('\n')
        if not props[-1]:  # the newline ending the file ends no line
            props.pop()
        sentence, rows = [], []
        for lineno, (word, prop) in enumerate(zip(words, props), 1):
            label = prop.split()
            if label:
                sentence.append(word.strip())
                rows.append(label)
            elif rows:
                yield from _predicates(sentence, rows, lambda p: common.format_error(
                    data_path, '%s: the sentence ending at line %d: %s' % (props_name, lineno, p)))
                sentence, rows = [], []

    return reader


def reader_creator(corpus_reader, word_dict=None, predicate_dict=None, label_dict=None):
    """Reader of the nine id lists per ``(sentence, predicate, labels)`` of ``corpus_reader``."""

    def reader():
        for sentence, predicate, labels in corpus_reader():
            n = len(sentence)
            if 'B-V' not in labels:
                raise ValueError('conll05: the labels of predicate %r have no B-V: %s' % (predicate, labels))
            v = labels.index('B-V')
            context = [sentence[k] if 0 <= k < n else ('bos' if k < v else 'eos') for k in range(v - 2, v + 3)]
            yield ([word_dict.get(w, UNK_IDX) for w in sentence], *([word_dict.get(w, UNK_IDX)] * n for w in context),
                   [predicate_dict.get(predicate)] * n, [int(abs(k - v) <= 2) for k in range(n)],
                   [label_dict.get(w) for w in labels])

    return reader


def get_dict():
    """``(word_dict, verb_dict, label_dict)``."""
    return (load_dict(common.download(WORDDICT_URL, 'conll05st', WORDDICT_MD5)),
            load_dict(common.download(VERBDICT_URL, 'conll05st', VERBDICT_MD5)),
            load_label_dict(common.download(TRGDICT_URL, 'conll05st', TRGDICT_MD5)))


def get_embedding():
    """Path of the trained word embedding file ``emb``."""
    return common.download(EMB_URL, 'conll05st', EMB_MD5)


def test():
    """The test.wsj reader (fluid trains on it too: the train set is not free)."""
    word_dict, verb_dict, label_dict = get_dict()
    reader = corpus_reader(common.download(DATA_URL, 'conll05st', DATA_MD5), WORDS_NAME, PROPS_NAME)
    return reader_creator(reader, word_dict, verb_dict, label_dict)


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return common.fetch_files('conll05st', (WORDDICT_URL, WORDDICT_MD5), (VERBDICT_URL, VERBDICT_MD5),
                              (TRGDICT_URL, TRGDICT_MD5), (EMB_URL, EMB_MD5), (DATA_URL, DATA_MD5))
