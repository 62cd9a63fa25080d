"""``fluid.generator.Generator``: a random-number generator whose state can be saved and restored.

It wraps a numpy ``Generator`` (PCG64). ``manual_seed`` reseeds it, ``seed()`` reseeds it from the
OS and returns the seed, ``get_state`` / ``set_state`` save and restore it exactly, and ``random()``
draws one uint64. ``np_generator`` is the numpy Generator itself, for code that wants arrays.
"""
import numpy as np

from .places import CPUPlace

__all__ = ["Generator"]


class GeneratorState:
    """A snapshot of a Generator (what ``get_state`` returns; pass it to ``set_state``)."""

    __slots__ = ("_seed", "_bit_state")

    def __init__(self, seed, bit_state):
        self._seed, self._bit_state = seed, bit_state

    def current_seed(self):
        return self._seed


class Generator:
    """A CPU random-number generator (only CPUPlace, as in fluid).

    Args:
        place (CPUPlace or None): where it generates; any other place is a ValueError.
    """

    def __init__(self, place=None):
        if place is not None and not (isinstance(place, CPUPlace) or place == "cpu"):
            raise ValueError(f"Generator class with {place} does is not supported yet, currently only support "
                             "generator with CPUPlace ")
        self.place = CPUPlace()
        self.seed()

    def manual_seed(self, seed):
        """Reseed with ``seed`` (an int >= 0); returns the generator."""
        self._seed = int(seed)
        self.np_generator = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        """Reseed from the operating system's entropy; returns the new seed."""
        self.manual_seed(int(np.random.SeedSequence().generate_state(1, np.uint64)[0]))
        return self._seed

    def initial_seed(self):
        """The seed of the last ``manual_seed`` / ``seed``."""
        return self._seed

    def get_state(self):
        return GeneratorState(self._seed, self.np_generator.bit_generator.state)

    def set_state(self, state):
        if not isinstance(state, GeneratorState):
            raise TypeError(f"set_state expects what get_state returned, got {type(state).__name__}")
        self._seed = state._seed
        self.np_generator.bit_generator.state = state._bit_state

    def random(self):
        """One uniformly distributed uint64, as a Python int."""
        return int(self.np_generator.integers(0, 2**64, dtype=np.uint64))
