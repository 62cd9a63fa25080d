"""``fluid.optimizer``: the base Optimizer with SGD, Momentum, Adam, Adagrad and RMSProp (base.py), fluid 1.8's
other update rules (more.py), the parameter-averaging wrappers ModelAverage, ExponentialMovingAverage and
LookaheadOptimizer (average.py), RecomputeOptimizer (recompute.py) and the multi-device wrappers
DGCMomentumOptimizer and PipelineOptimizer (multi_device.py). Their update ops are in ops/optimizer.py and
ops/optimizer_more.py."""
from . import average, base, more, multi_device, recompute
from .average import *  # noqa: F401,F403
from .base import *  # noqa: F401,F403
from .more import *  # noqa: F401,F403
from .multi_device import DGCMomentumOptimizer, PipelineOptimizer  # noqa: F401
from ..regularizer import append_regularization_ops  # noqa: F401  (fluid.optimizer imports it too)
from .recompute import RecomputeOptimizer  # noqa: F401

__all__ = ["Adadelta", "AdadeltaOptimizer", "Adagrad", "AdagradOptimizer", "Adam", "AdamOptimizer", "Adamax",
           "AdamaxOptimizer", "DGCMomentumOptimizer", "DecayedAdagrad", "DecayedAdagradOptimizer", "Dpsgd",
           "DpsgdOptimizer",
           "ExponentialMovingAverage", "Ftrl", "FtrlOptimizer", "Lamb", "LambOptimizer", "LarsMomentum",
           "LarsMomentumOptimizer", "LookaheadOptimizer", "ModelAverage", "Momentum", "MomentumOptimizer",
           "Optimizer", "PipelineOptimizer", "RMSProp", "RMSPropOptimizer", "RecomputeOptimizer", "SGD",
           "SGDOptimizer"]
