"""MovieLens 1M (``paddle.dataset.movielens``) from the original ``ml-1m.zip``.

Members ``ml-1m/movies.dat`` (``id::Title (year)::Genre|Genre``), ``ml-1m/users.dat``
(``id::M|F::age::job::zip``) and ``ml-1m/ratings.dat`` (``user::movie::stars::time``), latin-1 text.
A sample is ``[user id, 0 male / 1 female, age bucket (index in age_table), job id, movie id,
[category ids], [title word ids], [stars * 2 - 5.0]]``. Each rating line draws one number from a
``RandomState(rand_seed)`` stream; the line is a test sample when it is below ``test_ratio``, so train
and test split the ratings exactly as fluid's reseeded global generator did, without touching numpy's
global state. Movies, users and ratings are parsed once per process.

Deliberate difference: fluid built the title-word and category dictionaries from Python sets, so their ids
changed with ``PYTHONHASHSEED`` from run to run; here ids follow first appearance in ``movies.dat``.
"""
import functools
import re
import warnings
import zipfile

import numpy as np

from . import archive, common

__all__ = ['train', 'test', 'get_movie_title_dict', 'max_movie_id', 'max_user_id', 'age_table',
           'movie_categories', 'max_job_id', 'user_info', 'movie_info', 'MovieInfo', 'UserInfo']

age_table = [1, 18, 25, 35, 45, 50, 56]
URL = 'https://dataset.bj.bcebos.com/movielens%2Fml-1m.zip'
MD5 = 'c4d9eecfca2ab87c1945afe126590906'
_TITLE = re.compile(r'^(.*)\((\d+)\)$')


class MovieInfo(object):
    """Movie id, title and categories."""

    def __init__(self, index, categories, title):
        self.index = int(index)
        self.categories = categories
        self.title = title

    def value(self):
        """``[movie id, [category ids], [title word ids]]``."""
        meta = _meta()
        return [self.index, [meta.categories[c] for c in self.categories],
                [meta.titles[w.lower()] for w in self.title.split()]]

    def __str__(self):
        return "<MovieInfo id(%d), title(%s), categories(%s)>" % (self.index, self.title, self.categories)

    __repr__ = __str__


class UserInfo(object):
    """User id, gender, age bucket and job."""

    def __init__(self, index, gender, age, job_id):
        self.index = int(index)
        self.is_male = gender == 'M'
        self.age = age_table.index(int(age))
        self.job_id = int(job_id)

    def value(self):
        """``[user id, 0 male / 1 female, age bucket, job id]``."""
        return [self.index, 0 if self.is_male else 1, self.age, self.job_id]

    def __str__(self):
        return "<UserInfo id(%d), gender(%s), age(%d), job(%d)>" % (
            self.index, "M" if self.is_male else "F", age_table[self.age], self.job_id)

    __repr__ = __str__


class _Meta:
    """Everything parsed from one copy of the zip."""

    def __init__(self, path):
        self.path, self.movies, self.titles, self.categories, self.users = path, {}, {}, {}, {}
        with common.guard(path, 'read zip archive'), zipfile.ZipFile(path) as package:
            for lineno, fields in self._lines(package, 'movies.dat'):
                match = _TITLE.match(fields[1]) if len(fields) == 3 else None
                if match is None:
                    raise self.bad('movies.dat', lineno, 'expected id::Title (year)::Genres, got %r'
                                   % '::'.join(fields))
                for c in fields[2].split('|'):
                    self.categories.setdefault(c, len(self.categories))
                for w in match.group(1).split():
                    self.titles.setdefault(w.lower(), len(self.titles))
                self.movies[int(fields[0])] = MovieInfo(fields[0], fields[2].split('|'), match.group(1))
            for lineno, fields in self._lines(package, 'users.dat'):
                try:
                    uid, gender, age, job, _ = fields
                    self.users[int(uid)] = UserInfo(uid, gender, age, job)
                except ValueError:
                    raise self.bad('users.dat', lineno, 'expected id::M|F::age (one of %s)::job::zip, got %r'
                                   % (age_table, '::'.join(fields))) from None
            with archive.zip_open(package, path, 'ml-1m/ratings.dat') as f:
                self.ratings = self._ratings(f.read())

    def _lines(self, package, name):
        with archive.zip_open(package, self.path, 'ml-1m/' + name) as f:
            for lineno, line in enumerate(f.read().decode('latin-1').split('\n'), 1):
                if line.strip():
                    yield lineno, line.strip().split('::')

    def bad(self, name, lineno, problem):
        return common.format_error(self.path, 'ml-1m/%s line %d: %s' % (name, lineno, problem))

    def _ratings(self, data):
        """``(user ids, movie ids, ratings)`` arrays, one entry per line."""
        lines = [line for line in data.split(b'\n') if line.strip()]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('error', DeprecationWarning)  # numpy < 2.3 only warns on a bad number
                values = np.fromstring(data.replace(b'::', b' '), np.int64, sep=' ').reshape(len(lines), 4)
        except (ValueError, DeprecationWarning):
            lineno, line = next(((i, l) for i, l in enumerate(data.split(b'\n'), 1)
                                 if l.strip() and not re.fullmatch(rb'\s*\d+::\d+::\d+::\d+\s*', l)), (0, b''))
            raise self.bad('ratings.dat', lineno, 'expected user::movie::stars::time, got %r' % line) from None
        for column, known, what in ((0, self.users, 'user'), (1, self.movies, 'movie')):
            unknown = np.setdiff1d(values[:, column], np.fromiter(known, np.int64, len(known)))
            if unknown.size:
                row = int(np.flatnonzero(values[:, column] == unknown[0])[0])
                raise self.bad('ratings.dat', row + 1, 'unknown %s id %d' % (what, unknown[0]))
        return values[:, 0], values[:, 1], values[:, 2] * 2 - 5.0


MOVIE_INFO = None  # fluid's module globals: None until a function first reads the zip
MOVIE_TITLE_DICT = None
CATEGORIES_DICT = None
USER_INFO = None


def _meta():
    global MOVIE_INFO, MOVIE_TITLE_DICT, CATEGORIES_DICT, USER_INFO
    path = common.download(URL, 'movielens', MD5)
    meta = common.cached(path, 'movielens', lambda: _Meta(path))
    MOVIE_INFO, MOVIE_TITLE_DICT, CATEGORIES_DICT, USER_INFO = meta.movies, meta.titles, meta.categories, meta.users
    return meta


def __reader__(rand_seed=0, test_ratio=0.1, is_test=False):
    meta = _meta()
    uids, mids, ratings = meta.ratings
    chosen = (np.random.RandomState(rand_seed).random_sample(len(uids)) < test_ratio) == is_test
    users = {uid: info.value() for uid, info in meta.users.items()}
    movies = {mid: info.value() for mid, info in meta.movies.items()}
    for uid, mid, rating in zip(uids[chosen].tolist(), mids[chosen].tolist(), ratings[chosen].tolist()):
        mov_id, categories, title = movies[mid]
        yield users[uid] + [mov_id, list(categories), list(title), [rating]]


def __reader_creator__(**kwargs):
    common.download(URL, 'movielens', MD5)  # a missing file fails here, not at the first sample
    return lambda: __reader__(**kwargs)


train = functools.partial(__reader_creator__, is_test=False)
test = functools.partial(__reader_creator__, is_test=True)
train.__doc__ = "Train reader (about 90% of the ratings): ``train(rand_seed=0, test_ratio=0.1)``."
test.__doc__ = "Test reader (about 10% of the ratings): ``test(rand_seed=0, test_ratio=0.1)``."


def get_movie_title_dict():
    """``{lower-cased title word: id}``."""
    return _meta().titles


def max_movie_id():
    """The largest movie id."""
    return max(_meta().movies)


def max_user_id():
    """The largest user id."""
    return max(_meta().users)


def max_job_id():
    """The largest job id."""
    return max(u.job_id for u in _meta().users.values())


def movie_categories():
    """``{category: id}``."""
    return _meta().categories


def user_info():
    """``{user id: UserInfo}``."""
    return _meta().users


def movie_info():
    """``{movie id: MovieInfo}``."""
    return _meta().movies


def fetch():
    """Paths of this module's files, found and MD5-checked as the readers do; nothing is downloaded."""
    return common.fetch_files('movielens', (URL, MD5))


def unittest():
    """Print the number of train and test samples."""
    print(sum(1 for _ in train()()), sum(1 for _ in test()()))
