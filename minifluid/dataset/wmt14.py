"""WMT14 French-English, Paddle's shrunk ``wmt14.tgz`` (``paddle.dataset.wmt14``).

The archive holds the dictionaries (the one member ending in ``src.dict``, the one ending in
``trg.dict``: a word per line, ``<s>``, ``<e>``, ``<unk>`` first) and tab-separated ``source\\ttarget``
lines in the members ending in ``train/train``, ``test/test`` and ``gen/gen``. A dictionary is the first
``dict_size`` lines, line ``i`` having id ``i``. A sample is ``(source ids with <s> and <e> around them,
[<s>] + target ids, target ids + [<e>])``; unknown words are id 2, lines without exactly one tab are
skipped, and so are pairs whose source (with its two marks) or target is longer than 80 ids. The
dictionaries are read once per process and dict_size; the data streams on every pass.
"""
from . import archive, common

__all__ = ['train', 'test', 'gen', 'get_dict']

URL_DEV_TEST = 'http://www-lium.univ-lemans.fr/~schwenk/cslm_joint_paper/data/dev+test.tgz'
MD5_DEV_TEST = '7d7897317ddd8ba0ae5c5fa7248d3ff5'
URL_TRAIN = 'http://paddlemodels.bj.bcebos.com/wmt/wmt14.tgz'
MD5_TRAIN = '0791583d57d5beb693b9414c5b36798c'
URL_MODEL = 'http://paddlemodels.bj.bcebos.com/wmt%2Fwmt14.tgz'
MD5_MODEL = '0cb4a5366189b6acba876491c8724fa3'
START = "<s>"
END = "<e>"
UNK = "<unk>"
UNK_IDX = 2
_MAX_LEN = 80


def _read_dicts(tar_file):
    """Every line of the src.dict and trg.dict members, stripped and decoded."""
    found = {'src.dict': [], 'trg.dict': []}
    with common.guard(tar_file, 'read the dictionaries'):
        for member in archive.tar_members(tar_file):
            for suffix in found:
                if member.name.endswith(suffix):
                    found[suffix].append([line.strip().decode('utf-8') for line in member])
    for suffix, hits in found.items():
        if len(hits) != 1:
            raise common.format_error(tar_file, 'expected one member ending in %s, found %d' % (suffix, len(hits)))
    return found['src.dict'][0], found['trg.dict'][0]


def __read_to_dict(tar_file, dict_size):
    """The first ``dict_size`` lines of each dictionary as ``{word: line number}`` (a later duplicate wins)."""
    dicts = common.cached(tar_file, 'wmt14-dicts', lambda: _read_dicts(tar_file))
    return tuple({word: i for i, word in enumerate(words[:dict_size])} for words in dicts)


def reader_creator(tar_file, file_name, dict_size):
    """Reader over the members of ``tar_file`` ending in ``file_name``."""

    def reader():
        src_dict, trg_dict = __read_to_dict(tar_file, dict_size)
        if START not in trg_dict or END not in trg_dict:
            raise common.format_error(tar_file, 'trg.dict lacks %s or %s in its first %d lines'
                                      % (START, END, dict_size))
        with common.guard(tar_file, 'read %s' % file_name):
            for member in archive.tar_members(tar_file):
                for line in member if member.name.endswith(file_name) else ():
                    pair = line.decode('utf-8').strip().split('\t')
                    if len(pair) != 2:
                        continue
                    src_ids = [src_dict.get(w, UNK_IDX) for w in [START] + pair[0].split() + [END]]
                    trg_ids = [trg_dict.get(w, UNK_IDX) for w in pair[1].split()]
                    if len(src_ids) <= _MAX_LEN and len(trg_ids) <= _MAX_LEN:
                        yield src_ids, [trg_dict[START]] + trg_ids, trg_ids + [trg_dict[END]]

    return reader


def _archive():
    return common.download(URL_TRAIN, 'wmt14', MD5_TRAIN)


def train(dict_size):
    """Train reader: ``(src ids, trg ids, next trg ids)``."""
    return reader_creator(_archive(), 'train/train', dict_size)


def test(dict_size):
    """Test reader: ``(src ids, trg ids, next trg ids)``."""
    return reader_creator(_archive(), 'test/test', dict_size)


def gen(dict_size):
    """Generation reader: ``(src ids, trg ids, next trg ids)``."""
    return reader_creator(_archive(), 'gen/gen', dict_size)


def get_dict(dict_size, reverse=True):
    """``(src_dict, trg_dict)``: ``{id: word}`` when ``reverse`` (the default), else ``{word: id}``."""
    src_dict, trg_dict = __read_to_dict(_archive(), dict_size)
    if reverse:
        src_dict = {v: k for k, v in src_dict.items()}
        trg_dict = {v: k for k, v in trg_dict.items()}
    return src_dict, trg_dict


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded. Unlike
    fluid, the pretrained model archive (``URL_MODEL``), which no reader uses, is not required."""
    return common.fetch_files('wmt14', (URL_TRAIN, MD5_TRAIN))
