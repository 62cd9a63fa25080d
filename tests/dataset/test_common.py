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
        common.download(uci_housing.URL, 'uci_housing', common.md5file(path))


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
