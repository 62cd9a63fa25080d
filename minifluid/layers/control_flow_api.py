"""``fluid.layers.control_flow`` as a module (the compat entry maps ``paddle.fluid.layers.control_flow``
here): every ``fluid.layers`` name, and the names fluid 1.8 keeps in that module only: ConditionalBlock and
the routing layers (layers/routing.py), which are its ``__all__``."""
from . import *  # noqa: F401,F403  (imported after the package: only the compat entry loads this module)
from .control_flow import ConditionalBlock  # noqa: F401
from .routing import merge_lod_tensor, select_input, select_output, split_lod_tensor  # noqa: F401

__all__ = ["ConditionalBlock", "merge_lod_tensor", "select_input", "select_output", "split_lod_tensor"]
