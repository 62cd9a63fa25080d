"""uci_housing, cifar, image and flowers on small files written in the original formats; expectations
worked out by hand from fluid's rules."""
import io
import os
import sys

import numpy as np
import pytest

import dataset_files as files
from minifluid.dataset import cifar, common, flowers, image, uci_housing


# ---------------------------------------------------------------- uci_housing

def _housing_rows():
    rows = np.zeros((10, 14))
    rows[:, 0] = np.arange(10) * 10.0        # 0..90: mean 45, range 90
    rows[:, 1] = [5.0] * 9 + [15.0]          # mean 6, range 10
    rows[:, 2:13] = 1.0 + np.arange(10)[:, None]
    rows[:, 13] = 20.0 + np.arange(10)       # the price is not normalised
    return rows


def test_uci_housing_normalises_over_all_rows_and_splits_8_2(home):
    files.write_uci_housing(home, _housing_rows())
    train, test = list(uci_housing.train()()), list(uci_housing.test()())
    assert len(train) == 8 and len(test) == 2       # int(10 * 0.8) rows, in file order
    x, y = train[0]
    assert x.dtype == np.float64 and x.shape == (13,) and y.shape == (1,)
    assert x[0] == pytest.approx(-0.5) and x[1] == pytest.approx(-0.1) and y[0] == 20.0
    x, y = test[0]                                  # row 8, normalised with all ten rows' statistics
    assert x[0] == pytest.approx(35 / 90) and x[1] == pytest.approx(-0.1) and y[0] == 28.0
    assert test[1][0][1] == pytest.approx(0.9) and test[1][0][2] == pytest.approx(0.5)
    assert len(uci_housing.feature_names) == 13 and uci_housing.feature_names[-1] == 'LSTAT'
    np.testing.assert_array_equal(uci_housing.predict_reader()[0], test[0][0])


def test_uci_housing_samples_are_copies(home):
    files.write_uci_housing(home, _housing_rows())
    x, _ = next(uci_housing.train()())
    x[:] = 99
    assert next(uci_housing.train()())[0][0] == pytest.approx(-0.5)


def test_uci_housing_bad_number_names_the_line(home):
    path = files.write_uci_housing(home, _housing_rows())
    with open(path, 'a') as f:
        f.write(' 1.0 2.0 oops\n')
    with pytest.raises(common.DatasetFormatError, match=r"line 11: b?'oops' is not a number") as ei:
        uci_housing.train()
    assert path in str(ei.value)


def test_uci_housing_row_count_must_fit(home):
    path = files.write_uci_housing(home, _housing_rows())
    with open(path, 'a') as f:
        f.write(' 1.0 2.0\n')
    with pytest.raises(common.DatasetFormatError, match='142 numbers do not make rows of 14'):
        uci_housing.test()


# ---------------------------------------------------------------- cifar

def test_cifar10_scales_pixels_and_reads_batches_in_archive_order(home):
    a = np.zeros((2, 3072), np.uint8)
    a[0, :3] = (0, 255, 51)
    b = np.full((1, 3072), 102, np.uint8)
    t = np.full((3, 3072), 255, np.uint8)
    files.write_cifar(home, 10, [('data_batch_2', b, [7]), ('data_batch_1', a, [3, 9]), ('test_batch', t, [0, 1, 2])])
    train = list(cifar.train10()())
    assert [y for _, y in train] == [7, 3, 9]        # archive order, not name order
    x = train[1][0]
    assert x.dtype == np.float32 and x.shape == (3072,)
    assert x[:3].tolist() == [0.0, 1.0, np.float32(0.2)] and type(train[1][1]) is int
    assert train[0][0][0] == np.float32(0.4)
    test = list(cifar.test10()())
    assert [y for _, y in test] == [0, 1, 2] and all((s == 1.0).all() for s, _ in test)


def test_cifar10_cycle_repeats(home):
    files.write_cifar(home, 10, [('data_batch_1', np.zeros((2, 3072), np.uint8), [4, 5])])
    it = cifar.train10(cycle=True)()
    assert [next(it)[1] for _ in range(5)] == [4, 5, 4, 5, 4]
    assert list(cifar.test10()()) == []


def test_cifar100_uses_fine_labels(home):
    files.write_cifar(home, 100, [('train', np.ones((2, 3072), np.uint8), [98, 99]),
                                  ('test', np.ones((1, 3072), np.uint8), [42])])
    assert [y for _, y in cifar.train100()()] == [98, 99]
    assert [y for _, y in cifar.test100()()] == [42]


def test_cifar_truncated_archive(home):
    path = files.write_cifar(home, 10, [('data_batch_1', np.zeros((50, 3072), np.uint8), [0] * 50)])
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:len(data) // 2])
    with pytest.raises(common.DatasetFormatError, match='cifar-10-python.tar.gz: cannot read'):
        list(cifar.train10()())


def test_cifar_member_that_is_no_batch(home):
    os.makedirs(os.path.join(home, 'cifar'))
    files.write_tar(os.path.join(home, 'cifar', 'cifar-10-python.tar.gz'),
                    {'cifar-10-batches-py/data_batch_1': b'not a pickle'})
    with pytest.raises(common.DatasetFormatError, match='UnpicklingError'):
        list(cifar.train10()())
    files.write_tar(os.path.join(home, 'cifar', 'cifar-10-python.tar.gz'),
                    {'cifar-10-batches-py/data_batch_1': files.python2_pickle({b'labels': [1, 2]})})
    with pytest.raises(common.DatasetFormatError, match='data_batch_1 is not a CIFAR batch'):
        list(cifar.train10()())


# ---------------------------------------------------------------- image

def _png(array):
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, 'PNG')
    return buf.getvalue()


def test_load_image_bytes_is_bgr_hwc_uint8_and_grey_hw():
    rgb = np.zeros((4, 6, 3), np.uint8)
    rgb[..., 0] = 200  # red
    rgb[0, 0] = (10, 20, 30)
    im = image.load_image_bytes(_png(rgb))
    assert im.dtype == np.uint8 and im.shape == (4, 6, 3)
    assert im[0, 0].tolist() == [30, 20, 10] and im[1, 1].tolist() == [0, 0, 200]
    grey = image.load_image_bytes(_png(rgb), is_color=False)
    assert grey.shape == (4, 6) and grey[1, 1] == round(200 * 0.299)
    with pytest.raises(ValueError, match='cannot decode 5 bytes'):
        image.load_image_bytes(b'nope!')


def test_load_image_file(tmp_path):
    path = tmp_path / 'x.png'
    path.write_bytes(_png(np.full((3, 5, 3), 7, np.uint8)))
    assert image.load_image(str(path)).shape == (3, 5, 3)
    with pytest.raises(FileNotFoundError, match='missing.png'):
        image.load_image(str(tmp_path / 'missing.png'))


def test_resize_crop_flip_and_transform():
    im = np.arange(40 * 60 * 3, dtype=np.uint32).reshape(40, 60, 3).astype(np.uint8)
    assert image.resize_short(im, 20).shape == (20, 30, 3)         # short side 20, 60 * 20 // 40
    assert image.resize_short(im.transpose(1, 0, 2), 20).shape == (30, 20, 3)
    assert image.resize_short(im[:, :, 0], 10).shape == (10, 15)
    assert image.resize_short(im.astype(np.float32), 20).dtype == np.float32
    np.testing.assert_array_equal(image.center_crop(im, 20), im[10:30, 20:40])
    np.testing.assert_array_equal(image.left_right_flip(im), im[:, ::-1])
    np.random.seed(3)
    h, w = np.random.randint(0, 21), np.random.randint(0, 41)
    np.random.seed(3)
    np.testing.assert_array_equal(image.random_crop(im, 20), im[h:h + 20, w:w + 20])
    np.testing.assert_array_equal(image.to_chw(im), im.transpose(2, 0, 1))
    flat = np.full((40, 60, 3), 100, np.uint8)
    out = image.simple_transform(flat, 20, 16, False, mean=[1.0, 2.0, 3.0])
    assert out.dtype == np.float32 and out.shape == (3, 16, 16)
    assert out[:, 0, 0].tolist() == [99.0, 98.0, 97.0]
    assert image.simple_transform(flat, 20, 16, True).shape == (3, 16, 16)
    assert image.simple_transform(flat[:, :, 0], 20, 16, False, is_color=False).shape == (16, 16)


def test_missing_pillow_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'PIL', None)
    with pytest.raises(ImportError, match=r'minifluid\[image\]'):
        image.load_image_bytes(b'x')
    with pytest.raises(ImportError, match=r'minifluid\[image\]'):
        image.resize_short(np.zeros((4, 4, 3), np.uint8), 2)


# ---------------------------------------------------------------- flowers

def _jpeg(bgr_colour, size=(300, 260)):
    from PIL import Image
    buf = io.BytesIO()
    Image.new('RGB', size, tuple(bgr_colour[::-1])).save(buf, 'JPEG', quality=95)
    return buf.getvalue()


@pytest.fixture
def flower_files(home):
    colours = [(0, 0, 255), (0, 255, 0), (255, 0, 0), (128, 128, 128), (10, 20, 30)]
    # image i (1-based) has label 10 + i; fluid's train reads tstid, test reads trnid
    files.write_flowers(home, [_jpeg(c) for c in colours], [11, 12, 13, 14, 15],
                        {'tstid': [2, 4, 5], 'trnid': [1], 'valid': [3]})
    return colours


def test_flowers_splits_labels_and_default_mappers(flower_files):
    train = list(flowers.train(use_xmap=False)())
    assert [y for _, y in train] == [11, 13, 14]                # images 2, 4, 5, labels minus one
    x, _ = train[0]
    assert x.dtype == np.float32 and x.shape == (3 * 224 * 224,)
    test = list(flowers.test(use_xmap=False)())
    assert [y for _, y in test] == [10]
    chw = test[0][0].reshape(3, 224, 224)                        # image 1 is pure red: BGR (0, 0, 255)
    mean = [103.94, 116.78, 123.68]
    assert np.allclose(chw[:, 100, 100], [0 - mean[0], 0 - mean[1], 255 - mean[2]], atol=3)
    assert [y for _, y in flowers.valid(use_xmap=False)()] == [12]


def test_flowers_xmap_gives_the_same_samples(flower_files):
    got = sorted(y for _, y in flowers.test(use_xmap=True)())
    assert got == [10]
    assert sorted(y for _, y in flowers.train(mapper=lambda s: (len(s[0]) > 0, s[1]))()) == [11, 13, 14]


def test_flowers_custom_mapper_gets_jpeg_bytes(flower_files):
    out = list(flowers.valid(mapper=lambda sample: sample, use_xmap=False)())
    assert len(out) == 1 and out[0][0][:2] == b'\xff\xd8' and out[0][1] == 12


def test_flowers_split_naming_a_missing_image(home):
    files.write_flowers(home, [_jpeg((1, 2, 3))], [1], {'tstid': [1, 7], 'trnid': [1], 'valid': [1]})
    with pytest.raises(common.DatasetFormatError, match='tstid names images up to 7 but .*imagelabels.mat has 1'):
        flowers.train()


def test_flowers_without_scipy_names_the_extra(flower_files, monkeypatch):
    monkeypatch.setitem(sys.modules, 'scipy', None)
    monkeypatch.setitem(sys.modules, 'scipy.io', None)
    with pytest.raises(ImportError, match=r'minifluid\[flowers\]'):
        flowers.train()


@pytest.mark.parametrize('is_color', [True, False])
@pytest.mark.parametrize('is_train', [True, False])
@pytest.mark.parametrize('size', [(300, 260), (260, 300)])
def test_transform_bytes_is_load_then_simple_transform(is_color, is_train, size):
    """flowers' default mappers resize the decoded image before it becomes an array: the same numbers."""
    from PIL import Image
    buf = io.BytesIO()
    noise = np.random.RandomState(3).randint(0, 256, (size[1], size[0], 3)).astype(np.uint8)
    Image.fromarray(noise).save(buf, 'JPEG', quality=90)
    mean = [103.94, 116.78, 123.68] if is_color else [120.0]
    np.random.seed(11)
    want = [image.simple_transform(image.load_image_bytes(buf.getvalue(), is_color), 256, 224, is_train,
                                   is_color, mean) for _ in range(4)]
    np.random.seed(11)
    got = [image.transform_bytes(buf.getvalue(), 256, 224, is_train, is_color, mean) for _ in range(4)]
    for w, g in zip(want, got):
        assert g.dtype == np.float32 and g.shape == w.shape and np.array_equal(g, w)
    assert is_train == any(not np.array_equal(got[0], g) for g in got[1:])  # random crops / flips differ


def test_flowers_default_mapper_is_load_then_simple_transform(flower_files):
    data = _jpeg((10, 200, 30), size=(280, 320))
    np.random.seed(5)
    x, y = flowers.train_mapper((data, 7))
    np.random.seed(5)
    want = image.simple_transform(image.load_image_bytes(data), 256, 224, True, mean=[103.94, 116.78, 123.68])
    assert y == 7 and x.shape == (3 * 224 * 224,) and np.array_equal(x, want.flatten())
