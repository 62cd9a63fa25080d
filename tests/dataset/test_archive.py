"""The tar / tar.gz reader under every dataset: the header formats real archives use, and damage that
``tarfile`` alone would not report."""
import gzip
import io
import os
import tarfile
import zlib

import numpy as np
import pytest

from minifluid.dataset import archive, common


def _tar_bytes(members, fmt=tarfile.GNU_FORMAT):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode='w', format=fmt) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(data)
            tf.addfile(info, None if data is None else io.BytesIO(data))
    return bio.getvalue()


def _write(tmp_path, data, name='a.tar'):
    path = str(tmp_path / name)
    with open(path, 'wb') as f:
        f.write(data)
    return path


def _read_all(path):
    return [(m.name, m.read()) for m in archive.tar_members(path)]


LONG = 'aclImdb/' + 'x' * 120 + '/review.txt'


@pytest.mark.parametrize('fmt', [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
def test_header_formats_long_names_directories_and_dot_prefix(tmp_path, fmt):
    members = {'./d': None, './d/a.txt': b'alpha\n', 'd/' + 'y' * 90 + '/' + 'z' * 60: b'', LONG: b'b' * 700}
    if fmt == tarfile.USTAR_FORMAT:
        members.pop('d/' + 'y' * 90 + '/' + 'z' * 60)  # ustar splits it into prefix and name, kept below
        members['d/' + 'y' * 90 + '/z'] = b'q'
    got = _read_all(_write(tmp_path, _tar_bytes(members, fmt)))
    expected = [(n[2:] if n.startswith('./') else n, d) for n, d in members.items() if d is not None]
    assert got == expected


def test_gzip_members_padding_and_partial_reads(tmp_path):
    raw = _tar_bytes({'a': b'1' * 3000, 'b': b'line one\nline two\nlast', 'c': b'3'})
    data = gzip.compress(raw[:5000]) + gzip.compress(raw[5000:]) + b'\0' * 100  # two gzip members, padding
    path = _write(tmp_path, data, 'a.tar.gz')
    seen = []
    for member in archive.tar_members(path):
        if member.name == 'a':
            assert member.read(10) == b'1' * 10  # the rest is skipped for us
        elif member.name == 'b':
            assert list(member) == [b'line one\n', b'line two\n', b'last']
        seen.append(member.name)
    assert seen == ['a', 'b', 'c']
    assert archive.tar_read(path, ['./c', 'a']) == {'c': b'3', 'a': b'1' * 3000}


@pytest.mark.parametrize('gz', [False, True])
def test_archive_cut_between_members_is_an_error_not_a_short_read(tmp_path, gz):
    raw = _tar_bytes({'a': b'x' * 100, 'b': b'y' * 100})
    cut = raw[:1024]  # header + data block of 'a': tarfile alone would end quietly after one member
    path = _write(tmp_path, gzip.compress(cut) if gz else cut, 't.tar.gz' if gz else 't.tar')
    with pytest.raises(common.DatasetFormatError, match='truncated') as ei:
        _read_all(path)
    assert path in str(ei.value)
    # tarfile itself reads this archive without complaint: the reason for our own reader
    with tarfile.open(path) as tf:
        assert [m.name for m in tf] == ['a']


def test_archive_cut_inside_a_member(tmp_path):
    path = _write(tmp_path, _tar_bytes({'a': b'x' * 5000})[:3000])
    with pytest.raises(common.DatasetFormatError, match='ends inside member a'):
        _read_all(path)


def test_gzip_stream_cut_short_or_corrupted(tmp_path):
    data = gzip.compress(_tar_bytes({'a': os.urandom(5000)}))
    path = _write(tmp_path, data[:-100], 't.tar.gz')
    with pytest.raises(common.DatasetFormatError, match='EOFError') as ei:
        _read_all(path)
    assert path in str(ei.value)
    bad = bytearray(data)
    bad[-6] ^= 0xFF  # the CRC trailer
    with pytest.raises(common.DatasetFormatError, match='error') as ei:
        _read_all(_write(tmp_path, bytes(bad), 'crc.tar.gz'))
    assert isinstance(ei.value.__cause__, zlib.error)


def test_not_an_archive_damaged_header_and_missing_member(tmp_path):
    path = _write(tmp_path, b'this is no tar file' * 50, 'x.tar.gz')
    with pytest.raises(common.DatasetFormatError, match='not a tar archive at byte 0'):
        archive.tar_read(path, ['a'])
    with pytest.raises(common.DatasetFormatError, match='not a tar archive'):
        archive.tar_read(_write(tmp_path, b'', 'empty.tar'), ['a'])
    raw = bytearray(_tar_bytes({'a': b'1', 'b': b'2'}))
    raw[1024 + 5] ^= 0x20  # second header's name: its checksum no longer matches
    with pytest.raises(common.DatasetFormatError, match=r'no valid tar header at byte 1024 \(checksum mismatch'):
        _read_all(_write(tmp_path, bytes(raw)))
    path = _write(tmp_path, _tar_bytes({'./d/a': b'1', 'd/b': b'2'}), 'ok.tar')
    assert archive.tar_read(path, ['d/a', './d/b']) == {'d/a': b'1', 'd/b': b'2'}
    with pytest.raises(common.DatasetFormatError, match=r'member d/c missing .* 2 files: d/a, d/b'):
        archive.tar_read(path, ['d/c'])


@pytest.mark.parametrize('gz', [False, True])
@pytest.mark.parametrize('chunk', [700, 4096, 1 << 20])
def test_reads_and_skips_across_chunk_boundaries(tmp_path, monkeypatch, gz, chunk):
    """Headers, members and padding that straddle the reader's chunks (``_CHUNK`` made small): members read
    whole, in part, line by line or not at all all leave the walk on the next header."""
    monkeypatch.setattr(archive, '_CHUNK', chunk)
    rng = np.random.RandomState(chunk)
    members = {'m%02d' % i: bytes(rng.randint(0, 256, size).astype(np.uint8))
               for i, size in enumerate([0, 1, 511, 512, 513, 699, 700, 701, 3000, 5000, 20000, 3])}
    members['lines'] = b'first\nsecond\n' * 400 + b'last'
    raw = _tar_bytes(members)
    path = _write(tmp_path, gzip.compress(raw) if gz else raw, 'c.tar.gz' if gz else 'c.tar')
    got = {}
    for i, member in enumerate(archive.tar_members(path)):
        if member.name == 'lines':
            got[member.name] = b''.join(member)
        elif i % 3 == 0:
            got[member.name] = member.read()
        elif i % 3 == 1:
            got[member.name] = member.read(300) + member.read(450)  # and the rest is skipped
            members[member.name] = members[member.name][:750]
    assert got == {n: d for i, (n, d) in enumerate(members.items()) if i % 3 != 2 or n == 'lines'}
