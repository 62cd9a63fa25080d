"""Where dataset files are found, how they are checked, and the archive reading every dataset shares.

minifluid never downloads. ``download(url, module_name, md5sum, save_name=None)`` keeps fluid's
signature but only *finds* the file, by the name Paddle saves it under, in

1. ``$MINIFLUID_DATA_HOME/<module_name>/`` when that variable is set, then
2. ``DATA_HOME/<module_name>/`` (``DATA_HOME`` is Paddle's own cache, ``~/.cache/paddle/dataset``; assign
   another folder to it to move it),

so the files a user already downloaded with Paddle just work. A URL whose last part is quoted
(``imdb%2FaclImdb_v1.tar.gz``: Paddle 1.8 keeps the ``%2F``) is also found under its plain name
(``aclImdb_v1.tar.gz``: older Paddles and the original archive). A missing file raises
``DatasetNotFoundError`` naming every folder searched, the URL Paddle fetched it from and its MD5; a
file whose MD5 differs from Paddle's warns once (``DatasetMD5Warning``) and is read; a malformed file
(truncated archive, missing member, bad line) raises ``DatasetFormatError`` naming the file.
"""
import contextlib
import glob
import hashlib
import itertools
import os
import pickle
import sys
import tarfile
import threading
import urllib.parse
import warnings
import zipfile
import zlib

__all__ = ['DATA_HOME', 'download', 'md5file', 'split', 'cluster_files_reader', 'ENV_VAR', 'must_mkdirs',
           'fetch_all', 'DatasetNotFoundError', 'DatasetFormatError', 'DatasetMD5Warning']

DATA_HOME = os.path.expanduser('~/.cache/paddle/dataset')
ENV_VAR = 'MINIFLUID_DATA_HOME'


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is in none of the lookup folders."""


class DatasetFormatError(ValueError):
    """A dataset file exists but is not what the reader expects (truncated, missing member, bad line)."""


class DatasetMD5Warning(UserWarning):
    """A dataset file's MD5 differs from the one Paddle downloads."""


# errors that reading a damaged archive or text file raises; re-raised as DatasetFormatError
_READ_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zlib.error, EOFError, OSError, pickle.UnpicklingError,
                UnicodeDecodeError)


def search_dirs(module_name):
    """The folders searched for ``module_name``'s files, in order, with where each comes from."""
    home = os.environ.get(ENV_VAR)
    return ([(os.path.join(os.path.expanduser(home), module_name), '$' + ENV_VAR)] if home else []) + \
        [(os.path.join(os.path.expanduser(DATA_HOME), module_name), "Paddle's cache, common.DATA_HOME")]


def download(url, module_name, md5sum, save_name=None):
    """Path of the local copy of ``url`` (fluid's signature; nothing is ever downloaded), found under
    ``save_name`` or the URL's last part, quoted as Paddle 1.8 saves it, then unquoted. Raises
    ``DatasetNotFoundError`` listing the folders searched; warns once if the MD5 differs."""
    quoted = url.rsplit('/', 1)[-1]
    names = [save_name] if save_name else sorted({quoted, urllib.parse.unquote(quoted).rsplit('/', 1)[-1]},
                                                 key=lambda n: n != quoted)
    path = locate(module_name, names, url, md5sum)
    check_md5(path, md5sum)
    return path


def locate(module_name, names, url, md5sum):
    """The first of ``names`` found in ``module_name``'s lookup folders (see the module doc)."""
    dirs = search_dirs(module_name)
    for folder, _ in dirs:
        for path in (os.path.join(folder, name) for name in names):
            if os.path.isfile(path):
                return path
    hint = '' if os.environ.get(ENV_VAR) else '; or set %s=<dir> and use <dir>/%s/' % (ENV_VAR, module_name)
    raise DatasetNotFoundError(
        'dataset file %s not found; searched %s. Paddle downloads it from %s (md5 %s); minifluid never '
        'downloads: put the file in one of those folders%s'
        % (' or '.join(names), ', '.join('%s (%s)' % d for d in dirs), url, md5sum, hint))


def must_mkdirs(path):
    """Create folder ``path`` and its parents; no error when it exists."""
    os.makedirs(path, exist_ok=True)


def fetch_files(module_name, *files):
    """Paths of ``(url, md5)`` files of one module (``download`` each): what each module's ``fetch()`` does."""
    return [download(url, module_name, md5) for url, md5 in files]


def fetch_all():
    """Check that every dataset module's files are present and have Paddle's MD5 (each module's
    ``fetch()``); nothing is downloaded. Every missing file is named in one ``DatasetNotFoundError``."""
    import importlib
    package = importlib.import_module(__package__)
    missing = []
    for name in package.__all__:
        fetch = getattr(getattr(package, name), 'fetch', None)
        try:
            if fetch is not None:
                fetch()
        except DatasetNotFoundError as e:
            missing.append('%s: %s' % (name, e))
    if missing:
        raise DatasetNotFoundError('%d dataset module(s) lack files:\n%s' % (len(missing), '\n'.join(missing)))


def md5file(fname):
    """Hex MD5 of a file's bytes."""
    h = hashlib.md5()
    with open(fname, 'rb') as f:
        for chunk in iter(lambda: f.read(1 << 20), b''):
            h.update(chunk)
    return h.hexdigest()


_lock = threading.RLock()
_md5_seen, _cache = {}, {}  # (path, stamp) -> md5 (each file summed once); (path, kind) -> (stamp, value)


def _stamp(path):
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


def check_md5(path, md5sum):
    """Warn once per file version when its MD5 is not Paddle's; never refuses to read it."""
    key = (path, _stamp(path))
    with _lock:
        if key in _md5_seen:
            return
        got = _md5_seen[key] = md5file(path)
    if md5sum and got != md5sum:
        warnings.warn('%s: md5 is %s but the file Paddle downloads has md5 %s (another version, or damaged); '
                      'reading it anyway' % (path, got, md5sum), DatasetMD5Warning, stacklevel=_caller_level())


def _caller_level():
    """The ``stacklevel`` that points a warning at the first frame outside this package."""
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_globals.get('__name__', '').startswith(__package__ + '.'):
        frame, level = frame.f_back, level + 1
    return level


def cached(path, kind, build):
    """``build()``'s value, kept per process until ``path`` changes (mtime or size)."""
    key, stamp = (path, kind), _stamp(path)
    with _lock:
        hit = _cache.get(key)
        if hit is None or hit[0] != stamp:
            hit = _cache[key] = (stamp, build())
        return hit[1]


@contextlib.contextmanager
def guard(path, what='read'):
    """Turn the errors a damaged file raises into one ``DatasetFormatError`` naming the file."""
    try:
        yield
    except (DatasetFormatError, DatasetNotFoundError):
        raise
    except _READ_ERRORS as e:
        raise damaged(path, what, e) from e


def damaged(path, what, error):
    """The ``DatasetFormatError`` for ``error`` (one of ``_READ_ERRORS``) raised while doing ``what``."""
    return DatasetFormatError('%s: cannot %s: %s: %s (truncated or damaged file?)'
                              % (path, what, type(error).__name__, error))


def split_lines(data):
    """``data``'s lines without their newline, as iterating a binary file splits them (on ``\\n`` only)."""
    lines = data.split(b'\n')
    if not lines[-1]:
        lines.pop()
    return lines


def format_error(path, problem):
    return DatasetFormatError('%s: %s' % (path, problem))


def split(reader, line_count, suffix="%05d.pickle", dumper=pickle.dump):
    """Write ``reader()``'s samples into files of ``line_count`` samples each, named ``suffix % i``.

    The default pickle dumper gets a binary file, any other dumper a text file."""
    if not callable(dumper):
        raise TypeError("dumper should be callable.")
    samples = iter(reader())
    for index in itertools.count():
        lines = list(itertools.islice(samples, line_count))
        if not lines:
            break
        with open(suffix % index, 'wb' if dumper is pickle.dump else 'w') as f:
            dumper(lines, f)


def cluster_files_reader(files_pattern, trainer_count, trainer_id, loader=pickle.load):
    """Reader over the files ``split`` wrote that belong to ``trainer_id``: sorted names, every
    ``trainer_count``-th one. The default pickle loader gets a binary file, any other a text file."""

    def reader():
        if not callable(loader):
            raise TypeError("loader should be callable.")
        for fn in sorted(glob.glob(files_pattern))[trainer_id::trainer_count]:
            with open(fn, 'rb' if loader is pickle.load else 'r') as f:
                yield from loader(f)

    return reader
