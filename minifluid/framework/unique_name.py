"""Deterministic name generation: ``generate('fc')`` -> ``fc_0``, ``fc_1`` ...

Programs built twice under two ``guard()`` blocks get identical names, which is
how a train and a test program share parameters through the scope.
"""
import contextlib
from collections import defaultdict

__all__ = ["UniqueNameGenerator", "generate", "switch", "guard"]


class UniqueNameGenerator:
    """Counts per key; ``prefix`` is prepended with no separator (fluid: guard('A') -> 'Afc_0')."""

    def __init__(self, prefix=None):
        self.ids = defaultdict(int)
        self.prefix = prefix or ""

    def __call__(self, key):
        n = self.ids[key]
        self.ids[key] = n + 1
        return f"{self.prefix}{key}_{n}"


generator = UniqueNameGenerator()


def generate(key):
    return generator(key)


def switch(new_generator=None):
    """Install ``new_generator`` (a fresh one by default) and return the old one."""
    global generator
    old = generator
    generator = new_generator if new_generator is not None else UniqueNameGenerator()
    return old


@contextlib.contextmanager
def guard(new_generator=None):
    """Use a fresh generator (or a prefix str/bytes, or a given generator) inside the block."""
    if isinstance(new_generator, bytes):
        new_generator = new_generator.decode()
    if isinstance(new_generator, str):
        new_generator = UniqueNameGenerator(new_generator)
    old = switch(new_generator)
    try:
        yield
    finally:
        switch(old)
