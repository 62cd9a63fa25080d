"""WMT16 Multi30k English-German, Paddle's tokenised ``wmt16.tar.gz`` (``paddle.dataset.wmt16``).

Members ``wmt16/train``, ``wmt16/test`` and ``wmt16/val``: lines ``english\\tgerman``; lines without
exactly one tab are skipped. A language's dictionary of ``dict_size`` (capped at 11,250 English /
19,220 German words) is ``<s>``, ``<e>``, ``<unk>`` (ids 0, 1, 2), then the ``dict_size - 3`` words most
frequent in that column of the train member (ties in order of first appearance). Paddle saved it as
``<lang>_<dict_size>.dict`` next to the archive and reused such a file when it had ``dict_size`` lines;
minifluid reads such a file too when one is in a lookup folder, and otherwise builds the dictionary in
memory, once per process, writing nothing. A sample is ``([<s>] + source ids + [<e>], [<s>] + target
ids, target ids + [<e>])``, unknown words mapping to ``<unk>``'s id.
"""
import collections
import os

from . import archive, common

__all__ = ["train", "test", "validation", "get_dict"]

DATA_URL = "http://paddlemodels.bj.bcebos.com/wmt/wmt16.tar.gz"
DATA_MD5 = "0c38be43600334966403524a40dcd81e"
TOTAL_EN_WORDS = 11250
TOTAL_DE_WORDS = 19220
START_MARK = "<s>"
END_MARK = "<e>"
UNK_MARK = "<unk>"


def _archive():
    return common.download(DATA_URL, "wmt16", DATA_MD5, "wmt16.tar.gz")


_TOTAL = {"en": TOTAL_EN_WORDS, "de": TOTAL_DE_WORDS}


def _pairs(tar_file, name):
    """The ``[english, german]`` pairs of a member's lines that have exactly one tab."""
    with common.guard(tar_file, "read %s" % name):
        for line in common.split_lines(archive.tar_read(tar_file, [name])[name]):
            pair = line.decode("utf-8").strip().split("\t")
            if len(pair) == 2:
                yield pair


def _column_counts(tar_file):
    """``(english counts, german counts)`` over the train member, in order of first appearance."""
    counts = (collections.Counter(), collections.Counter())
    for pair in _pairs(tar_file, "wmt16/train"):
        counts[0].update(pair[0].split())
        counts[1].update(pair[1].split())
    return counts


def _dict_lines(tar_file, dict_size, lang):
    """The dictionary's lines: Paddle's saved file when a lookup folder has one of the right length."""
    for folder, _ in common.search_dirs("wmt16"):
        path = os.path.join(folder, "%s_%d.dict" % (lang, dict_size))
        if os.path.isfile(path):
            with common.guard(path), open(path, "rb") as f:
                lines = [line.strip().decode("utf-8") for line in f]
            if len(lines) == dict_size:
                return lines
    counts = common.cached(tar_file, "wmt16-counts", lambda: _column_counts(tar_file))[0 if lang == "en" else 1]
    ranked = sorted(counts.items(), key=lambda x: x[1], reverse=True)  # stable: ties keep first appearance
    return [START_MARK, END_MARK, UNK_MARK] + [w for w, _ in ranked[:dict_size - 3 if dict_size >= 3 else None]]


def __load_dict(tar_file, dict_size, lang, reverse=False):
    lines = enumerate(_dict_lines(tar_file, dict_size, lang))
    # a corpus word equal to a mark overrides the mark's id, as reading Paddle's file back did
    return {idx: word for idx, word in lines} if reverse else {word: idx for idx, word in lines}


def reader_creator(tar_file, file_name, src_dict_size, trg_dict_size, src_lang):
    """Reader over member ``file_name`` with ``src_lang`` ("en" or "de") as the source."""

    def reader():
        src_dict = __load_dict(tar_file, src_dict_size, src_lang)
        trg_dict = __load_dict(tar_file, trg_dict_size, "de" if src_lang == "en" else "en")
        # the marks have the same ids in both languages; the source dictionary decides them
        start_id, end_id, unk_id = src_dict[START_MARK], src_dict[END_MARK], src_dict[UNK_MARK]
        src_col = 0 if src_lang == "en" else 1
        for pair in _pairs(tar_file, file_name):
            src_ids = [start_id] + [src_dict.get(w, unk_id) for w in pair[src_col].split()] + [end_id]
            trg_ids = [trg_dict.get(w, unk_id) for w in pair[1 - src_col].split()]
            yield src_ids, [start_id] + trg_ids, trg_ids + [end_id]

    return reader


def _creator(file_name, src_dict_size, trg_dict_size, src_lang):
    if src_lang not in ["en", "de"]:
        raise ValueError("An error language type.  Only support: en (for English); de(for Germany).")
    trg_lang = "de" if src_lang == "en" else "en"
    return reader_creator(_archive(), file_name, min(src_dict_size, _TOTAL[src_lang]),
                          min(trg_dict_size, _TOTAL[trg_lang]), src_lang)


def train(src_dict_size, trg_dict_size, src_lang="en"):
    """Train reader (``wmt16/train``): ``(src ids, trg ids, next trg ids)``."""
    return _creator("wmt16/train", src_dict_size, trg_dict_size, src_lang)


def test(src_dict_size, trg_dict_size, src_lang="en"):
    """Test reader (``wmt16/test``): ``(src ids, trg ids, next trg ids)``."""
    return _creator("wmt16/test", src_dict_size, trg_dict_size, src_lang)


def validation(src_dict_size, trg_dict_size, src_lang="en"):
    """Validation reader (``wmt16/val``): ``(src ids, trg ids, next trg ids)``."""
    return _creator("wmt16/val", src_dict_size, trg_dict_size, src_lang)


def get_dict(lang, dict_size, reverse=False):
    """``lang``'s dictionary (``{word: id}``, or ``{id: word}`` when ``reverse``); unlike Paddle's, it
    needs no earlier train/test/validation call to exist."""
    return __load_dict(_archive(), min(dict_size, TOTAL_EN_WORDS if lang == "en" else TOTAL_DE_WORDS), lang, reverse)


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return [_archive()]
