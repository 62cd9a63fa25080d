"""``fluid.contrib.layers.nn`` (1.8): contrib's layers over ops of their own; tree_conv and multiclass_nms2 live with
their families (layers/tree_conv.py, layers/detection_nms.py)."""
from ...layers.detection_nms import multiclass_nms2
from ...layers.tree_conv import tree_conv

__all__ = ["multiclass_nms2", "tree_conv"]
