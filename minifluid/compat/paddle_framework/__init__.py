"""``paddle.framework`` (2.x): default dtype, places, parameter attributes, ``seed``, and ``random``."""
from ...dygraph.base import no_grad
from ...dygraph.checkpoint import load, save
from ...dtypes import get_default_dtype, set_default_dtype
from ...param_attr import ParamAttr
from ...places import CPUPlace, CUDAPinnedPlace, CUDAPlace
from . import random
from .random import seed

__all__ = ["CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "ParamAttr", "get_default_dtype", "load", "no_grad", "random",
           "save", "seed", "set_default_dtype"]
