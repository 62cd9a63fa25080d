"""``paddle.framework.random``: seeding numpy's global RNG and the Programs' ``random_seed``."""
import numpy as np

from ...framework.program import Program, default_main_program, default_startup_program

__all__ = ["seed"]


def seed(value):
    """Seed numpy's global RNG, which minifluid's random ops and initializers draw from when their
    Program has no ``random_seed``."""
    np.random.seed(int(value))


def _manual_program_seed(value):
    """Set ``random_seed`` on the default main and startup Programs and on every Program created later."""
    default_main_program().random_seed = value
    default_startup_program().random_seed = value
    Program().global_seed(value)
