"""``paddle.static`` (2.x): fluid's static-graph names, except that ``data``'s dtype defaults to
``paddle.get_default_dtype()`` (fluid.data's to float32)."""
import minifluid as _fluid
from ..framework.dtypes import get_default_dtype

__all__ = list(_fluid.__all__)


def data(name, shape, dtype=None, lod_level=0):
    """paddle.static.data: fluid.data with ``dtype`` None meaning ``paddle.get_default_dtype()``."""
    return _fluid.data(name, shape, get_default_dtype() if dtype is None else dtype, lod_level)


def __getattr__(name):
    return getattr(_fluid, name)
