"""Offline datasets with fluid-style sample readers; nothing here ever downloads."""
from . import digits, mnist

__all__ = ['digits', 'mnist']
