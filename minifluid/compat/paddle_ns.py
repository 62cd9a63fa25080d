"""The top-level ``paddle`` namespace as legacy scripts see it (``paddle.batch``, ``paddle.reader`` …)."""
from ..reader import batch

__version__ = "1.8.0-minifluid"

__all__ = ["batch"]
