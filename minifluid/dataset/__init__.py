"""Fluid's ``paddle.dataset`` readers over local copies of the original files; nothing here downloads.

``common`` says where files are looked up. ``image`` and ``flowers`` need the optional extras
``image`` / ``flowers``; they import Pillow (and scipy) only when first used.
"""
from . import (cifar, common, conll05, digits, flowers, image, imdb, imikolov, mnist, movielens, uci_housing,
               wmt14, wmt16)

__all__ = ['cifar', 'common', 'conll05', 'digits', 'flowers', 'image', 'imdb', 'imikolov', 'mnist', 'movielens',
           'uci_housing', 'wmt14', 'wmt16']
