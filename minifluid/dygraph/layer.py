"""``fluid.dygraph.Layer``: a module of eager parameters and sublayers, registered by assignment.

``self.fc = Linear(...)`` registers a sublayer and ``self.w = self.create_parameter(...)`` a parameter,
in assignment order. ``state_dict()`` keys are structured names (``fc.weight``), as fluid 1.8 and
paddle 2.x save them. ``train()`` / ``eval()`` set ``training`` on the layer and all its sublayers;
layers with train/test behaviour (Dropout, BatchNorm) pass ``is_test = not self.training`` to their
op. Unlike fluid 1.8, ``eval()`` does not also switch off gradient recording for the whole program
(use ``fluid.dygraph.no_grad()`` for that).

As in fluid 1.8, a layer works in both modes. Built inside ``fluid.dygraph.guard()`` its parameters
are eager (ParamBase, initialised at once) and its calls run eagerly; built outside, they are static
Parameters of the default main program (initialisers in the startup program, same names) and each
call appends its ops to the current Program (dygraph/emit.py). A layer is called in the mode its
parameters were made in; the other mode is a clear error. The paddle 2.x layers (paddle_nn.py), whose
calls run eagerly in any mode, also make eager parameters unless ``paddle.enable_static()`` was called.
"""
import collections
import re
import weakref

import numpy as np

from ..executor.scope import global_scope
from ..framework import dygraph_mode, unique_name
from ..framework.program import default_main_program
from ..framework.variable import Parameter, Variable, VarType
from ..layers.activation import check_variable_and_dtype
from ..layers.helper import LayerHelper
from . import base
from .tensor import ParamBase, default_tracer

__all__ = ["Layer"]


class HookRemoveHelper:
    """What ``register_forward_pre_hook`` / ``register_forward_post_hook`` return: ``remove()`` takes the
    hook off its layer (a second call, or one after the layer is gone, does nothing)."""

    next_hook_id = 0

    def __init__(self, hooks):
        self._hooks_ref = weakref.ref(hooks)
        self._hook_id = HookRemoveHelper.next_hook_id
        HookRemoveHelper.next_hook_id += 1

    def remove(self):
        hooks = self._hooks_ref()
        if hooks is not None:
            hooks.pop(self._hook_id, None)


def _snake(name):
    """fluid's camel-to-snake rule for default name scopes: MyLayer -> my_layer, BatchNorm -> batch_norm; a
    digit does not split (Conv2D -> conv2d, Conv3DTranspose -> conv3d_transpose), so a dygraph layer's
    parameters are named as the static layer's (``conv2d_0.w_0``)."""
    return re.sub("([a-z])([A-Z])", r"\1_\2", re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)).lower()


def _check_tensor_inputs(layer, inputs):
    for i, x in enumerate(inputs):
        if x is not None and not isinstance(x, Variable):
            kind = type(x)
            kind = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
            if dygraph_mode._tracer is None:
                raise TypeError(f"{type(layer).__name__} (built in static mode) expects a Variable as input {i}, "
                                f"but got {kind}; feed data through fluid.data(...) variables")
            raise TypeError(f"{type(layer).__name__} expects a Tensor as input {i}, but got {kind}; convert it "
                            "first with fluid.dygraph.to_variable(x) (paddle 2.x: paddle.to_tensor(x))")


def _eager_by_default(layer):
    """A paddle 2.x layer (its calls wrapped by ``eager_api``) makes eager parameters outside dygraph mode,
    unless ``paddle.enable_static()`` asked for static mode."""
    return getattr(type(layer).__call__, "eager_api", False) and not base._static_requested


def _wrong_mode(layer, mode):
    if mode == "static":
        raise RuntimeError(f"{type(layer).__name__} ({layer.full_name()}) was built in static mode (its parameters "
                           "are static Parameters of a Program): call it outside fluid.dygraph.guard(), or build "
                           "it inside the guard to run it eagerly")
    raise RuntimeError(f"{type(layer).__name__} ({layer.full_name()}) was built in dygraph mode (its parameters are "
                       "eager tensors): call it inside fluid.dygraph.guard(), or build it outside the guard to "
                       "append its ops to a static Program")


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
        self._forward_pre_hooks = collections.OrderedDict()
        self._forward_post_hooks = collections.OrderedDict()

    def full_name(self):
        return self._full_name

    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    _tensor_inputs = False
    """True for minifluid's own layers: every positional input must be a Tensor (a user's layer may
    take anything, as in fluid)."""
    _input_dtypes = ()
    """(argument name, allowed dtypes) per positional input, checked in static mode (as fluid 1.8 does)."""

    _param_mode = None
    """'dygraph' or 'static' once the layer holds a parameter made in that mode."""

    def __call__(self, *inputs, **kwargs):
        mode = self._param_mode
        if mode is not None and (mode == "static") is (dygraph_mode._tracer is not None):
            _wrong_mode(self, mode)
        if self._tensor_inputs:
            _check_tensor_inputs(self, inputs)
            if dygraph_mode._tracer is None:  # build time: fluid checks the dtypes in static mode only
                for x, (name, dtypes) in zip(inputs, self._input_dtypes):
                    check_variable_and_dtype(x, name, dtypes, type(self).__name__)
        d = self.__dict__
        if not (d.get("_forward_pre_hooks") or d.get("_forward_post_hooks")):
            return self.forward(*inputs, **kwargs)
        for hook in list(d["_forward_pre_hooks"].values()):
            result = hook(self, inputs)
            if result is not None:
                inputs = result if isinstance(result, tuple) else (result,)
        outputs = self.forward(*inputs, **kwargs)
        for hook in list(d["_forward_post_hooks"].values()):
            result = hook(self, inputs, outputs)
            if result is not None:
                outputs = result
        return outputs

    # --- forward hooks -------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook):
        """Call ``hook(layer, inputs)`` before each ``forward``; ``inputs`` is the tuple of positional
        inputs, and a result that is not None replaces it (a single value becomes a 1-tuple). Returns a
        handle whose ``remove()`` unregisters the hook."""
        return self._add_hook("_forward_pre_hooks", hook)

    def register_forward_post_hook(self, hook):
        """Call ``hook(layer, inputs, outputs)`` after each ``forward``; a result that is not None replaces
        the outputs. Returns a handle whose ``remove()`` unregisters the hook."""
        return self._add_hook("_forward_post_hooks", hook)

    def _add_hook(self, table, hook):
        self._require_init()
        if not callable(hook):
            raise TypeError(f"a forward hook must be callable, but got {type(hook).__name__}")
        hooks = self.__dict__.setdefault(table, collections.OrderedDict())
        handle = HookRemoveHelper(hooks)
        hooks[handle._hook_id] = hook
        return handle

    # --- parameters and sublayers ----------------------------------------------------------------
    def create_parameter(self, shape, attr=None, dtype=None, is_bias=False, default_initializer=None):
        """A parameter named ``<full_name>.w_<k>`` (``.b_<k>`` for biases), initialised like the static
        layers' (Xavier weights, zero biases unless ``attr``/``default_initializer`` say): in dygraph mode
        an eager parameter filled now, in static mode a Parameter of the default main program whose
        initialiser op goes to the default startup program."""
        if attr is False:
            return None
        helper = LayerHelper(type(self).__name__, name=self._full_name)
        dtype = dtype or self._dtype
        if dygraph_mode._tracer is None and _eager_by_default(self):
            attr, shape = helper._param_attr(attr, shape, is_bias, default_initializer)
            return default_tracer().create_parameter(attr, shape, dtype)
        return helper.create_parameter(attr, shape, dtype, is_bias, default_initializer)

    def create_variable(self, name=None, persistable=None, dtype=None, type=VarType.LOD_TENSOR):
        """A variable of the current block named ``<full_name>.<name>`` (or a generated name): in dygraph mode
        an empty eager tensor that an op run through ``self._helper.append_op`` fills."""
        name = f"{self._full_name}.{name}" if name is not None else unique_name.generate(
            self._full_name + "._generated_var")
        return default_main_program().current_block().create_var(name=name, persistable=bool(persistable),
                                                                  dtype=dtype, type=type)

    def add_parameter(self, name, parameter):
        self._require_init()
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"parameter assignment requires Parameter or None, but got "
                            f"'{type(parameter).__name__}'")
        self._parameters[name] = parameter
        if parameter is not None:
            self._note_mode(parameter)
        return parameter

    def _note_mode(self, param):
        self.__dict__["_param_mode"] = "dygraph" if isinstance(param, ParamBase) else "static"

    def add_sublayer(self, name, sublayer):
        self._require_init()
        self._sub_layers[name] = sublayer
        return sublayer

    def _require_init(self):
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"super({type(self).__name__}, self).__init__() should be called first")

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, Parameter):
            self._require_init()
            d.pop(name, None)
            d["_sub_layers"].pop(name, None)
            d["_parameters"][name] = value
            self._note_mode(value)
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
        elif "_sub_layers" in d and name in d["_sub_layers"]:
            if value is not None:
                raise TypeError(f"assignment to sublayer {name!r} should be of type Layer or None, but got "
                                f"{type(value).__name__!r}")
            d["_sub_layers"][name] = None
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

    def named_sublayers(self, prefix="", include_sublayers=True, include_self=False, layers_set=None):
        """(structured name, layer) for every sublayer, depth first (a layer before its own sublayers),
        each layer once; ``include_self`` puts ``(prefix, self)`` first. ``include_sublayers=False``
        stops at the direct sublayers (fluid 1.8 then gave none at all). ``layers_set`` holds the layers
        already given (their ids), to share between calls."""
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
            if include_sublayers:
                yield from layer.named_sublayers(name, True, False, layers_set)

    def sublayers(self, include_sublayers=True):
        return [layer for _, layer in self.named_sublayers(include_sublayers=include_sublayers)]

    def named_parameters(self, prefix="", include_sublayers=True):
        """(structured name, parameter) for this layer's parameters, then its sublayers', each once."""
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
        name when ``use_structured_name`` is False). A static layer's values go to the global scope,
        where its Program reads them (run the startup program first: it would overwrite them).

        Raises:
            AssertionError: a parameter is missing from ``stat_dict`` or has another shape.
        """
        for key, param in self.state_dict(include_sublayers=include_sublayers).items():
            key = key if use_structured_name else param.name
            assert key in stat_dict, f"Parameter not found, Can't not find [ {key} ] in stat_dict"
            value = np.asarray(stat_dict[key])
            assert list(value.shape) == list(param.shape), (
                f"Parameter shape not match, Dygraph Parameter [ {key} ] need tensor with shape {list(param.shape)} "
                f"but load tensor with shape {list(value.shape)}")
            if isinstance(param, ParamBase):
                param.set_value(value)
            else:
                global_scope().var(param.name).get_tensor().set(value.astype(param.dtype, copy=False))

    load_dict = set_dict
    set_state_dict = set_dict
