"""Where dataset files are looked up, the missing-file message, the MD5 warning, and fluid's split /
cluster_files_reader."""
import hashlib
import os
import pickle
import subprocess
import sys
import warnings

import pytest

import dataset_files as files
from minifluid.dataset import common, imdb, uci_housing

ROWS = [[float(i)] * 14 for i in range(10)]


def test_env_folder_comes_before_paddles_cache(home, paddle_cache):
    files.write_uci_housing(paddle_cache, [[1.0] * 13 + [5.0]] * 5)
    assert common.download(uci_housing.URL, 'uci_housing', uci_housing.MD5) == \
        os.path.join(paddle_cache, 'uci_housing', 'housing.data')
    files.write_uci_housing(home, [[1.0] * 13 + [7.0]] * 5)
    assert common.download(uci_housing.URL, 'uci_housing', uci_housing.MD5) == \
        os.path.join(home, 'uci_housing', 'housing.data')


def test_paddle_cache_alone_when_env_unset(paddle_cache, monkeypatch):
    monkeypatch.delenv(common.ENV_VAR)
    files.write_uci_housing(paddle_cache, ROWS)
    assert len(list(uci_housing.train()())) == 8
    # fluid code that points DATA_HOME elsewhere is followed at call time
    monkeypatch.setattr(common, 'DATA_HOME', os.path.join(paddle_cache, 'nowhere'))
    with pytest.raises(common.DatasetNotFoundError, match='nowhere'):
        common.download(uci_housing.URL, 'uci_housing', uci_housing.MD5)


def test_missing_file_message_names_file_folders_url_md5(home, paddle_cache):
    with pytest.raises(FileNotFoundError) as ei:
        imdb.word_dict()
    msg = str(ei.value)
    assert isinstance(ei.value, common.DatasetNotFoundError)
    assert 'imdb%2FaclImdb_v1.tar.gz or aclImdb_v1.tar.gz' in msg
    assert os.path.join(home, 'imdb') in msg and os.path.join(paddle_cache, 'imdb') in msg
    assert 'https://dataset.bj.bcebos.com/imdb%2FaclImdb_v1.tar.gz' in msg and imdb.MD5 in msg
    assert 'never downloads' in msg


def test_missing_file_is_reported_when_the_reader_is_created_not_at_import(home, tmp_path):
    env = dict(os.environ, HOME=str(tmp_path))
    code = 'import minifluid.dataset as d; print(d.__all__)'
    proc = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and 'imdb' in proc.stdout, proc.stderr
    with pytest.raises(common.DatasetNotFoundError, match='housing.data'):
        uci_housing.train()


def test_paddle_18_quoted_name_and_plain_name_both_found(home):
    docs = {'aclImdb/train/pos/0_9.txt': b'good'}
    path = files.write_imdb(home, docs, name='imdb%2FaclImdb_v1.tar.gz')
    assert common.download(imdb.URL, 'imdb', imdb.MD5) == path
    os.rename(path, os.path.join(home, 'imdb', 'aclImdb_v1.tar.gz'))
    assert common.download(imdb.URL, 'imdb', imdb.MD5).endswith(os.sep + 'aclImdb_v1.tar.gz')


def test_md5_mismatch_warns_once_naming_both_sums_then_reads(home):
    path = files.write_uci_housing(home, ROWS)
    with open(path, 'rb') as f:
        actual = hashlib.md5(f.read()).hexdigest()
    with pytest.warns(common.DatasetMD5Warning) as record:
        reader = uci_housing.train()
        uci_housing.test()
    assert len(record) == 1
    msg = str(record[0].message)
    assert actual in msg and uci_housing.MD5 in msg and path in msg
    assert record[0].filename == __file__  # points at the caller, not at minifluid
    assert len(list(reader())) == 8
    assert common.md5file(path) == actual


def test_matching_md5_gives_no_warning(home):
    path = files.write_uci_housing(home, ROWS)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        found = common.download(uci_housing.URL, 'uci_housing', common.md5file(path))
    assert os.path.samefile(found, path)


def test_split_and_cluster_files_reader(tmp_path):
    suffix = str(tmp_path / 'part-%05d.pickle')
    common.split(lambda: iter(range(7)), 3, suffix=suffix)
    parts = sorted(os.listdir(tmp_path))
    assert parts == ['part-00000.pickle', 'part-00001.pickle', 'part-00002.pickle']
    with open(tmp_path / parts[0], 'rb') as f:
        assert pickle.load(f) == [0, 1, 2]
    pattern = str(tmp_path / 'part-*.pickle')
    assert list(common.cluster_files_reader(pattern, 1, 0)()) == list(range(7))
    assert list(common.cluster_files_reader(pattern, 2, 0)()) == [0, 1, 2, 6]
    assert list(common.cluster_files_reader(pattern, 2, 1)()) == [3, 4, 5]
    with pytest.raises(TypeError, match='dumper should be callable'):
        common.split(lambda: iter([1]), 1, dumper=None)


def test_split_with_a_text_dumper(tmp_path):
    import json
    suffix = str(tmp_path / 'p-%d.json')
    common.split(lambda: iter(['a', 'b', 'c']), 2, suffix=suffix, dumper=json.dump)
    assert list(common.cluster_files_reader(str(tmp_path / 'p-*.json'), 1, 0, loader=json.load)()) == ['a', 'b', 'c']


LEGACY_DATA_HOME = '''
import sys
import paddle
import paddle.dataset.common
import paddle.dataset.uci_housing as uci_housing
paddle.dataset.common.DATA_HOME = sys.argv[1]       # as fluid 1.x scripts move Paddle's cache
print('train', len(list(uci_housing.train()())))
import paddle.dataset.common as common
common.DATA_HOME = sys.argv[2]
try:
    uci_housing.fetch()
except IOError as e:
    print('missing', sys.argv[2] in str(e))
'''


def test_data_home_set_through_paddle_reaches_the_lookup(tmp_path):
    """A legacy script run by ``python -m minifluid.compat`` that assigns ``paddle.dataset.common.DATA_HOME``
    reads from there (the compat module passes the assignment on to minifluid's ``common``)."""
    moved = str(tmp_path / 'moved_cache')
    files.write_uci_housing(moved, ROWS)
    (tmp_path / 'legacy.py').write_text(LEGACY_DATA_HOME)
    env = {k: v for k, v in os.environ.items() if k != common.ENV_VAR}
    env['HOME'] = str(tmp_path / 'home')  # Paddle's default cache is empty
    proc = subprocess.run([sys.executable, '-m', 'minifluid.compat', str(tmp_path / 'legacy.py'), moved,
                           str(tmp_path / 'elsewhere')], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ['train', '8', 'missing', 'True']


def test_assignments_through_the_compat_module_reach_minifluid(paddle, tmp_path):
    import paddle.dataset.common as pcommon  # noqa: PLC0415
    import paddle.fluid as pfluid  # noqa: PLC0415
    saved = common.DATA_HOME
    try:
        pcommon.DATA_HOME = str(tmp_path)
        assert common.DATA_HOME == str(tmp_path) and pcommon.DATA_HOME == str(tmp_path)
        assert common.search_dirs('imdb')[-1][0] == os.path.join(str(tmp_path), 'imdb')
    finally:
        pcommon.DATA_HOME = saved
    assert common.DATA_HOME == saved
    # submodules stay bound on the proxy: paddle.fluid.layers is still the compat module, minifluid's own
    # attribute is untouched
    import minifluid  # noqa: PLC0415
    assert pfluid.layers.__name__ == 'paddle.fluid.layers' and minifluid.layers.__name__ == 'minifluid.layers'


@pytest.mark.parametrize('order', ['readers first', 'factory first'])
def test_fluid_dataset_factory_and_paddle_dataset_readers_in_one_script(tmp_path, order):
    """``fluid.dataset`` is both fluid 1.8's DatasetFactory module and paddle.dataset's readers, in any
    import order: with ``import minifluid as fluid`` and in a legacy script run through the compat entry."""
    readers = 'import paddle.dataset.mnist\nimport paddle.dataset.uci_housing as uci\n'
    factory = ('import paddle.fluid as fluid\n'
               'ds = fluid.dataset.DatasetFactory().create_dataset("InMemoryDataset")\n'
               'from paddle.fluid.dataset import DatasetFactory, QueueDataset\n'
               'print(type(ds).__name__, isinstance(DatasetFactory().create_dataset("QueueDataset"), QueueDataset))\n')
    check = 'print(callable(paddle.dataset.mnist.train), callable(paddle.dataset.uci_housing.train))\n'
    body = (readers + factory if order == 'readers first' else factory + readers) + 'import paddle\n' + check
    (tmp_path / 'legacy.py').write_text(body)
    proc = subprocess.run([sys.executable, '-m', 'minifluid.compat', str(tmp_path / 'legacy.py')],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ['InMemoryDataset', 'True', 'True', 'True']
    native = ('import minifluid as fluid\n'
              + ('import minifluid.dataset.mnist\n' if order == 'readers first' else '')
              + 'ds = fluid.dataset.DatasetFactory().create_dataset("QueueDataset")\n'
              + 'import minifluid.dataset\n'
              + 'print(type(ds).__name__, fluid.dataset.InMemoryDataset is fluid.InMemoryDataset,'
              + ' callable(fluid.dataset.mnist.train), callable(fluid.dataset.imdb.word_dict))\n')
    proc = subprocess.run([sys.executable, '-c', native], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ['QueueDataset', 'True', 'True', 'True']
