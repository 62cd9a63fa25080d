"""Op definitions. Importing this package registers every op family."""
from . import registry  # noqa: F401  (first: the families register into it)
from . import math, tensor  # noqa: F401

__all__ = ["registry"]
