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
and the autograd tape), layer (Layer), container (Sequential, LayerList, ParameterList), nn (Linear, Conv2D, Pool2D, BatchNorm, Dropout), nn_more (Embedding,
LayerNorm, GroupNorm, InstanceNorm, PRelu, Conv2DTranspose), checkpoint (save/load). The paddle 2.x
namespaces (paddle_nn, functional, paddle_optimizer, paddle_io) are imported by the compat ``paddle``
namespace, not here.
"""
from . import base, container, nn
from .base import (disable_dygraph, enable_dygraph, enabled, guard, in_dygraph_mode, no_grad, to_variable)
from .checkpoint import load_dygraph, save_dygraph
from .container import LayerList, ParameterList, Sequential
from .layer import Layer
from .nn import BatchNorm, Conv2D, Dropout, Linear, Pool2D
from .nn_more import Conv2DTranspose, Embedding, GroupNorm, InstanceNorm, LayerNorm, PRelu
from .tensor import ParamBase, Tensor

VarBase = Tensor

__all__ = ["BatchNorm", "Conv2D", "Conv2DTranspose", "Dropout", "Embedding", "GroupNorm", "InstanceNorm", "Layer",
           "LayerList", "LayerNorm", "Linear", "PRelu", "ParamBase", "ParameterList", "Pool2D", "Sequential",
           "Tensor", "VarBase", "base", "container", "disable_dygraph", "enable_dygraph", "enabled", "guard",
           "in_dygraph_mode", "load_dygraph", "nn", "no_grad", "save_dygraph", "to_variable"]
