"""``fluid.contrib``: the book's high-level Trainer / Inferencer (fluid 1.0-1.5's API) and fluid 1.8's
``contrib.multiclass_nms2`` (layers/detection.py) and ``contrib.tree_conv`` (layers/tree_conv.py)."""
from ..layers.detection import multiclass_nms2
from ..layers.tree_conv import tree_conv
from . import inferencer, trainer
from .inferencer import Inferencer
from .trainer import (BeginEpochEvent, BeginStepEvent, CheckpointConfig, EndEpochEvent, EndStepEvent, Trainer)

__all__ = ["BeginEpochEvent", "BeginStepEvent", "CheckpointConfig", "EndEpochEvent", "EndStepEvent", "Inferencer",
           "Trainer", "inferencer", "multiclass_nms2", "trainer", "tree_conv"]
