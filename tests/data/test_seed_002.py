"""Seed 002 (the paddle.io.Dataset notebook): its MnistDataset and asynchronous DataLoader loop.

``mnist.json.gz`` is replaced by the packaged 8x8 digits (``minifluid.dataset.digits``), so images
are [64] instead of [784]; 'valid' and 'eval' both read the digits test split. The dataset class is
otherwise the notebook's: float32 image and float32 label per sample.
"""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.data.dataloader import DatasetLoader
from minifluid.data.dataset import Dataset
from minifluid.dataset import digits
from minifluid.layers.io import data as fluid_data

DataLoader = DatasetLoader  # what minifluid.io.DataLoader(dataset, ...) constructs


class MnistDataset(Dataset):
    def __init__(self, mode):
        if mode == 'train':
            imgs, labels = digits.load('train')
        elif mode in ('valid', 'eval'):
            imgs, labels = digits.load('test')
        else:
            raise Exception("mode can only be one of ['train', 'valid', 'eval']")

        assert len(imgs) == len(labels), \
            "length of train_imgs({}) should be the same as train_labels({})".format(len(imgs), len(labels))

        self.imgs = imgs
        self.labels = labels

    def __getitem__(self, idx):
        img = np.array(self.imgs[idx]).astype('float32')
        label = np.array(self.labels[idx]).astype('float32')

        return img, label

    def __len__(self):
        return len(self.imgs)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("num_workers", [0, 2])
def test_notebook_loop(num_workers):
    train_dataset = MnistDataset(mode='train')
    data_loader = DataLoader(train_dataset, batch_size=100, shuffle=True, num_workers=num_workers)
    shapes = []
    for i, data in enumerate(data_loader()):
        images, labels = data
        shapes.append((images.shape, labels.shape, images.dtype, labels.dtype))
        if i >= 2:
            break
    assert shapes == [((100, 64), (100,), np.float32, np.float32)] * 3


@pytest.mark.timeout(20)
def test_whole_epochs_visit_every_sample_once():
    train_dataset = MnistDataset(mode='train')
    data_loader = DataLoader(train_dataset, batch_size=100, shuffle=True)
    assert len(train_dataset) == digits.TRAIN_SIZE and len(data_loader) == 15
    expected = np.sort(train_dataset.labels.astype('float32'))
    for epoch_id in range(2):
        batches = list(data_loader())
        assert len(batches) == len(data_loader)
        assert [len(labels) for _, labels in batches] == [100] * 14 + [37]
        np.testing.assert_array_equal(np.sort(np.concatenate([labels for _, labels in batches])), expected)


def test_bad_mode():
    with pytest.raises(Exception, match="mode can only be one of"):
        MnistDataset(mode='test')


@pytest.mark.timeout(20)
def test_static_mode_feed_dicts_run_in_the_executor():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        img = fluid_data('img', [None, 64], 'float32')
        label = fluid_data('label', [None], 'float32')
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    loader = DataLoader(MnistDataset(mode='eval'), feed_list=[img, label], places=fluid.CPUPlace(),
                        batch_size=100, drop_last=True)
    steps = 0
    for data in loader():
        images, labels = exe.run(main, feed=data, fetch_list=[img, label])
        assert images.shape == (100, 64) and labels.shape == (100,)
        np.testing.assert_array_equal(images, data[0]['img'])
        steps += 1
    assert steps == len(loader) == 3
