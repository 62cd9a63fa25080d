"""Op definitions. Importing this package registers every op family."""
from . import registry  # noqa: F401  (first: the families register into it)
from . import activation, conv, debug, io, loss, math, nn, pool, reduce, shape, tensor  # noqa: F401
from . import optimizer  # noqa: F401

__all__ = ["registry"]
