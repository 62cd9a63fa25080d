"""``fluid.dygraph``: imperative mode. Ops run as they are called, on eager tensors, and
``loss.backward()`` computes gradients with the ops' registered gradient kernels.

    with fluid.dygraph.guard():
        model = MyLayer()                       # a fluid.dygraph.Layer
        opt = fluid.optimizer.Adam(1e-3, parameter_list=model.parameters())
        for image, label in loader():           # eager tensors
            loss = fluid.layers.mean(fluid.layers.cross_entropy(model(image), label))
            loss.backward()
            opt.minimize(loss)
            model.clear_gradients()

Module map: base (mode, to_variable, no_grad), tensor (Tensor, ParamBase), tracer (eager op execution
and the autograd tape), layer (Layer), container (Sequential, LayerList, ParameterList), autograd (grad),
parallel (DataParallel), jit (TracedLayer), nn (Linear, Conv2D, Pool2D, BatchNorm, Dropout), nn_more
(Embedding, LayerNorm, GroupNorm, InstanceNorm, PRelu, Conv2DTranspose), nn_3d (Conv3D, Conv3DTranspose, SpectralNorm), nn_units (GRUUnit, NCE,
BilinearTensorProduct), losses (MSELoss, L1Loss, BCELoss, NLLLoss), checkpoint (save/load); the learning-rate
decays live in minifluid/lr_decay.py (``learning_rate_scheduler`` here) so that layers/ and optimizer.py can
use them too. The paddle 2.x
namespaces (paddle_nn, functional, paddle_optimizer, paddle_io) are imported by the compat ``paddle``
namespace, not here.
"""
from . import base, container, jit, nn, parallel
from .base import (BackwardStrategy, disable_dygraph, disable_imperative, enable_dygraph, enable_imperative, enabled, grad, guard,
                   in_dygraph_mode, no_grad, to_variable)
from .. import lr_decay as learning_rate_scheduler
from ..lr_decay import (CosineDecay, ExponentialDecay, InverseTimeDecay, LambdaDecay, LinearLrWarmup, MultiStepDecay,
                        NaturalExpDecay, NoamDecay, PiecewiseDecay, PolynomialDecay, ReduceLROnPlateau, StepDecay)
from .checkpoint import load_dygraph, save_dygraph
from .container import LayerList, ParameterList, Sequential
from .jit import TracedLayer
from .layer import Layer
from .losses import BCELoss, L1Loss, MSELoss, NLLLoss
from .nn import BatchNorm, Conv2D, Dropout, Linear, Pool2D
from .nn_3d import Conv3D, Conv3DTranspose, SpectralNorm
from .nn_more import Conv2DTranspose, Embedding, GroupNorm, InstanceNorm, LayerNorm, PRelu
from .nn_units import NCE, BilinearTensorProduct, GRUUnit, TreeConv
from .parallel import DataParallel, ParallelEnv, prepare_context
from .tensor import ParamBase, Tensor

VarBase = Tensor

__all__ = ["BCELoss", "BackwardStrategy", "BatchNorm", "BilinearTensorProduct", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose",
           "CosineDecay",
           "DataParallel", "Dropout", "Embedding", "ExponentialDecay", "GRUUnit", "GroupNorm", "InstanceNorm",
           "InverseTimeDecay", "L1Loss", "LambdaDecay", "Layer", "LayerList", "LayerNorm", "Linear", "LinearLrWarmup",
           "MSELoss", "MultiStepDecay", "NCE", "NLLLoss", "NaturalExpDecay", "NoamDecay", "PRelu", "ParallelEnv",
           "ParamBase", "ParameterList", "PiecewiseDecay", "PolynomialDecay", "Pool2D", "ReduceLROnPlateau",
           "Sequential", "SpectralNorm", "StepDecay", "Tensor", "TracedLayer", "TreeConv", "VarBase", "base", "container",
           "disable_dygraph", "disable_imperative", "enable_dygraph", "enable_imperative", "enabled", "grad", "guard",
           "in_dygraph_mode", "jit", "learning_rate_scheduler", "load_dygraph", "nn", "no_grad", "parallel",
           "prepare_context", "save_dygraph", "to_variable"]
