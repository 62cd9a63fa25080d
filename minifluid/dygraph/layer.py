"""``fluid.dygraph.Layer``: a module of eager parameters and sublayers, registered by assignment.

``self.fc = Linear(...)`` registers a sublayer and ``self.w = self.create_parameter(...)`` a parameter,
in assignment order. ``state_dict()`` keys are structured names (``fc.weight``), as fluid 1.8 and
paddle 2.x save them. ``train()`` / ``eval()`` set ``training`` on the layer and all its sublayers;
layers with train/test behaviour (Dropout, BatchNorm) pass ``is_test = not self.training`` to their
op. Unlike fluid 1.8, ``eval()`` does not also switch off gradient recording for the whole program
(use ``fluid.dygraph.no_grad()`` for that).
"""
import collections
import re

import numpy as np

from ..framework import unique_name
from ..framework.variable import Variable
from ..layers.helper import LayerHelper
from .tensor import ParamBase, default_tracer

__all__ = ["Layer"]


def _snake(name):
    """fluid's camel-to-snake rule for default name scopes: MyLayer -> my_layer, Conv2D -> conv2_d."""
    return re.sub("([a-z0-9])([A-Z])", r"\1_\2", re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)).lower()


def _check_tensor_inputs(layer, inputs):
    for i, x in enumerate(inputs):
        if x is not None and not isinstance(x, Variable):
            kind = type(x)
            kind = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
            raise TypeError(f"{type(layer).__name__} expects a Tensor as input {i}, but got {kind}; convert it "
                            "first with fluid.dygraph.to_variable(x) (paddle 2.x: paddle.to_tensor(x))")


class Layer:
    """Base class of dygraph models.

    Args:
        name_scope (str, optional): prefix of parameter names (default: the class name in snake case,
            giving ``linear_0.w_0``).
        dtype (str, default 'float32'): dtype of the parameters the layer creates.
    """

    def __init__(self, name_scope=None, dtype="float32"):
        self.training = True
        self._full_name = unique_name.generate(name_scope or _snake(type(self).__name__))
        self._dtype = dtype
        self._parameters = collections.OrderedDict()
        self._sub_layers = collections.OrderedDict()

    def full_name(self):
        return self._full_name

    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    _tensor_inputs = False
    """True for minifluid's own layers: every positional input must be a Tensor (a user's layer may
    take anything, as in fluid)."""

    def __call__(self, *inputs, **kwargs):
        if self._tensor_inputs:
            _check_tensor_inputs(self, inputs)
        return self.forward(*inputs, **kwargs)

    # --- parameters and sublayers ----------------------------------------------------------------
    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None):
        """An eager parameter named ``<full_name>.w_<k>`` (``.b_<k>`` for biases), initialised now like
        the static layers' (Xavier weights, zero biases unless ``attr``/``default_initializer`` say)."""
        if attr is False:
            return None
        helper = LayerHelper(type(self).__name__, name=self._full_name)
        attr, shape = helper._param_attr(attr, shape, is_bias, default_initializer)
        return default_tracer().create_parameter(attr, shape, dtype or self._dtype)

    def add_parameter(self, name, parameter):
        self._require_init()
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name, sublayer):
        self._require_init()
        self._sub_layers[name] = sublayer
        return sublayer

    def _require_init(self):
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"super({type(self).__name__}, self).__init__() should be called first")

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, ParamBase):
            self._require_init()
            d.pop(name, None)
            d["_sub_layers"].pop(name, None)
            d["_parameters"][name] = value
        elif isinstance(value, Layer):
            self._require_init()
            d.pop(name, None)
            d["_parameters"].pop(name, None)
            d["_sub_layers"][name] = value
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None:
                raise TypeError(f"assigning a {type(value).__name__} to parameter {name!r} (a Parameter or None "
                                "is required)")
            d["_parameters"][name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        if name in d.get("_parameters", ()):
            return d["_parameters"][name]
        if name in d.get("_sub_layers", ()):
            return d["_sub_layers"][name]
        if name == "_helper" and "_full_name" in d:  # fluid 1.8 layers build their ops with self._helper
            return LayerHelper(type(self).__name__, name=d["_full_name"])
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self.__dict__.get("_parameters", {}), self.__dict__.get("_sub_layers", {})):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def named_sublayers(self, prefix="", include_self=False, layers_set=None):
        """(structured name, layer) for every sublayer, depth first, each layer once."""
        layers_set = set() if layers_set is None else layers_set
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None or id(layer) in layers_set:
                continue
            name = prefix + ("." if prefix else "") + key
            layers_set.add(id(layer))
            yield name, layer
            yield from layer.named_sublayers(name, False, layers_set)

    def sublayers(self, include_sublayers=True):
        if not include_sublayers:
            return [layer for layer in self._sub_layers.values() if layer is not None]
        return [layer for _, layer in self.named_sublayers()]

    def named_parameters(self, prefix="", include_sublayers=True):
        """(structured name, parameter) for this layer's parameters, then its sublayers'."""
        layers = self.named_sublayers(prefix, include_self=True) if include_sublayers else [(prefix, self)]
        seen = set()
        for layer_prefix, layer in layers:
            for key, param in layer._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen.add(id(param))
                yield layer_prefix + ("." if layer_prefix else "") + key, param

    def parameters(self, include_sublayers=True):
        """Every parameter (trainable or not), each once, in registration order."""
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def clear_gradients(self):
        """Drop the accumulated gradient of every trainable parameter."""
        for p in self.parameters():
            if p.trainable:
                p.clear_gradient()

    # --- modes ---------------------------------------------------------------------------------------
    def train(self):
        for _, layer in self.named_sublayers(include_self=True):
            layer.training = True
        return self

    def eval(self):
        for _, layer in self.named_sublayers(include_self=True):
            layer.training = False
        return self

    # --- state ---------------------------------------------------------------------------------------
    def state_dict(self, destination=None, include_sublayers=True, structured_name_prefix=""):
        """OrderedDict structured name -> parameter (an eager Tensor)."""
        destination = collections.OrderedDict() if destination is None else destination
        for name, param in self.named_parameters(include_sublayers=include_sublayers):
            destination[structured_name_prefix + name] = param
        return destination

    def set_dict(self, stat_dict, include_sublayers=True, use_structured_name=True):
        """Copy values (ndarrays or Tensors) into the parameters, by structured name (or by parameter
        name when ``use_structured_name`` is False).

        Raises:
            AssertionError: a parameter is missing from ``stat_dict`` or has another shape.
        """
        for key, param in self.state_dict(include_sublayers=include_sublayers).items():
            key = key if use_structured_name else param.name
            assert key in stat_dict, f"Parameter not found, Can't not find [ {key} ] in stat_dict"
            value = np.asarray(stat_dict[key])
            assert list(value.shape) == param.shape, (
                f"Parameter shape not match, Dygraph Parameter [ {key} ] need tensor with shape {param.shape} "
                f"but load tensor with shape {list(value.shape)}")
            param.set_value(value)

    load_dict = set_dict
    set_state_dict = set_dict
