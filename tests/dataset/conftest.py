"""Each dataset test gets two empty lookup folders: ``$MINIFLUID_DATA_HOME`` and a stand-in for Paddle's
cache (``common.DATA_HOME``), so nothing on the machine is read. ``tools/dataset_files.py`` writes files in
the original formats."""
import os
import sys

import pytest

from minifluid.dataset import common

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                'tools'))


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The ``$MINIFLUID_DATA_HOME`` folder (files are written under ``<home>/<module>/``)."""
    env, cache = tmp_path / 'home', tmp_path / 'paddle_cache'
    env.mkdir()
    cache.mkdir()
    monkeypatch.setenv(common.ENV_VAR, str(env))
    monkeypatch.setattr(common, 'DATA_HOME', str(cache))
    return str(env)


@pytest.fixture
def paddle_cache(home):
    """The stand-in for Paddle's own cache folder, ``common.DATA_HOME``."""
    return common.DATA_HOME


@pytest.fixture(autouse=True)
def _synthetic_files_have_other_md5s():
    """Files written by the tests never have Paddle's MD5; tests of the warning use ``pytest.warns``."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', common.DatasetMD5Warning)
        yield
