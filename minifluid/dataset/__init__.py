"""Fluid's ``paddle.dataset`` readers over local copies of the original files; nothing here downloads.

``common`` says where files are looked up. ``image`` and ``flowers`` need the optional extras
``image`` / ``flowers``; they import Pillow (and scipy) only when first used.

NOTE [ two fluid.dataset ]: ``import minifluid as fluid`` makes this package ``fluid.dataset`` (paddle's
``paddle.dataset`` readers), while fluid 1.8's ``fluid.dataset`` is the module of ``DatasetFactory``,
``InMemoryDataset`` and ``QueueDataset`` (``minifluid/data/file_dataset.py``). Both are reached here, so
``fluid.dataset.DatasetFactory()`` and ``fluid.dataset.mnist.train()`` work in either import order; the
compat ``paddle.fluid.dataset`` is ``file_dataset`` itself.
"""
from ..data.file_dataset import DatasetBase, DatasetFactory, InMemoryDataset, QueueDataset  # noqa: F401
from . import (cifar, common, conll05, digits, flowers, image, imdb, imikolov, mnist, movielens, uci_housing,
               wmt14, wmt16)

__all__ = ['cifar', 'common', 'conll05', 'digits', 'flowers', 'image', 'imdb', 'imikolov', 'mnist', 'movielens',
           'uci_housing', 'wmt14', 'wmt16']
