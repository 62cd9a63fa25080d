"""LayerHelper: what every layer builder needs (parameters, temporaries, ops, bias, activation).

Parameters are created twice, as fluid does: in the startup program's global block, followed by
their initializer's op, and in the main program's global block, where the network reads them.
Names come from ``unique_name``: a layer ``fc`` gets the name ``fc_<n>``, its weights
``fc_<n>.w_<k>``, its biases ``fc_<n>.b_<k>`` and its temporaries ``fc_<n>.tmp_<k>``, so two
programs built under ``unique_name.guard()`` name (and therefore share) the same parameters.

In dygraph mode (``framework.dygraph_mode``) the same builders run eagerly: ``append_op`` hands the
op to the tracer, which runs it now, temporaries are empty eager tensors the op fills, and
parameters are eager parameters filled by their initializer's op, run at once. Static mode pays
one module-attribute read per call for this.
"""
import copy

import numpy as np

from ..dtypes import to_numpy_dtype
from ..framework import dygraph_mode, unique_name
from ..framework.program import default_main_program, default_startup_program
from ..framework.variable import Variable
from ..initializer import Constant, Xavier
from ..ops.registry import get_op_spec
from ..param_attr import ParamAttr, WeightNormParamAttr
from .weight_norm import weight_normalized

__all__ = ["LayerHelper", "check_variable_and_dtype", "known_attrs"]


def check_variable_and_dtype(x, name, dtypes, op_name):
    """fluid's argument check: ``x`` must be a Variable whose dtype is one of ``dtypes`` (TypeError otherwise)."""
    if not isinstance(x, Variable):
        raise TypeError(f"The type of '{name}' in {op_name} must be Variable, but received {type(x).__name__}. ")
    if x.dtype not in dtypes:
        raise TypeError(f"The data type of '{name}' in {op_name} must be {list(dtypes)}, but received {x.dtype}. ")


def known_attrs(op_type, **attrs):
    """The subset of fluid's optional attributes that this minifluid op models (others are dropped)."""
    spec_attrs = get_op_spec(op_type).attrs
    return {k: v for k, v in attrs.items() if k in spec_attrs}


class LayerHelper:
    """Builds one layer: ``LayerHelper("fc", input=x, param_attr=..., act="relu", name=None)``."""

    def __init__(self, layer_type, **kwargs):
        self.kwargs = kwargs
        self.layer_type = layer_type
        name = kwargs.get("name")
        self.name = name if name is not None else unique_name.generate(layer_type)

    @property
    def main_program(self):
        return default_main_program()

    @property
    def startup_program(self):
        return default_startup_program()

    def append_op(self, *args, **kwargs):
        tracer = dygraph_mode._tracer
        if tracer is not None:
            return tracer.trace_op(*args, **kwargs)
        return self.main_program.current_block().append_op(*args, **kwargs)

    def to_variable(self, value, name=None):
        """fluid's ``LayerHelper.to_variable``: an ndarray as an eager tensor (a copy; dygraph mode only), a
        Variable as it is."""
        if isinstance(value, np.ndarray):
            assert dygraph_mode._tracer is not None, "to_variable could only be called in dygraph mode"
            return dygraph_mode._tracer.from_numpy(value, name, zero_copy=False)
        if isinstance(value, Variable):
            return value
        raise TypeError("The type of input value is invalid, expected type is 'ndarray' or 'Variable', but "
                        f"received {type(value)}")

    # --- inputs and attributes -----------------------------------------------------------------
    def multiple_input(self, input_param_name="input"):
        inputs = self.kwargs.get(input_param_name, [])
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        for x in inputs:
            if not isinstance(x, Variable):
                raise TypeError(f"{self.layer_type}: '{input_param_name}' must be a Variable or a list of "
                                f"Variables, got {type(x).__name__}")
        if not inputs:
            raise ValueError(f"{self.layer_type} layer needs at least one input")
        return inputs

    def input(self, input_param_name="input"):
        inputs = self.multiple_input(input_param_name)
        if len(inputs) != 1:
            raise ValueError(f"{self.layer_type} layer only takes one input")
        return inputs[0]

    @property
    def param_attr(self):
        return ParamAttr._to_attr(self.kwargs.get("param_attr"))

    @property
    def bias_attr(self):
        return ParamAttr._to_attr(self.kwargs.get("bias_attr"))

    def multiple_param_attr(self, length):
        attr = self.param_attr
        if isinstance(attr, ParamAttr):
            attr = [attr]
        if len(attr) != 1 and len(attr) != length:
            raise ValueError(f"{self.layer_type}: got {len(attr)} param_attr for {length} inputs")
        if len(attr) == 1 and length != 1:
            attr = [copy.deepcopy(attr[0]) for _ in range(length)]
        return attr

    def iter_inputs_and_params(self, input_param_name="input"):
        inputs = self.multiple_input(input_param_name)
        return zip(inputs, self.multiple_param_attr(len(inputs)))

    def input_dtype(self, input_param_name="input"):
        dtypes = {x.dtype for x in self.multiple_input(input_param_name)}
        if len(dtypes) != 1:
            raise ValueError(f"{self.layer_type}: inputs must share one dtype, got {sorted(dtypes)}")
        return dtypes.pop()

    # --- variables ---------------------------------------------------------------------------------
    def _param_attr(self, attr, shape, is_bias=False, default_initializer=None):
        """(attr, shape) of a new parameter: a private ParamAttr with its initializer and name set."""
        attr = copy.deepcopy(ParamAttr._to_attr(attr))
        shape = [int(d) for d in shape]
        if any(d <= 0 for d in shape):
            raise ValueError(f"{self.layer_type}: parameter shape {shape} must be fully known and positive "
                             "(check the input's shape)")
        if default_initializer is not None:
            attr._set_default_initializer(default_initializer)
        else:
            attr._set_default_initializer(Constant(0.0) if is_bias else Xavier())
        if attr.name is None:
            attr.name = unique_name.generate(".".join([self.name, "b" if is_bias else "w"]))
        return attr, shape

    def create_parameter(self, attr, shape, dtype, is_bias=False, default_initializer=None, stop_gradient=False):
        """A Parameter in both programs; its init op goes to the startup program. None if attr is False.
        In dygraph mode: an eager parameter, initialised now."""
        if attr is False:
            return None
        attr, shape = self._param_attr(attr, shape, is_bias, default_initializer)
        tracer = dygraph_mode._tracer
        if isinstance(attr, WeightNormParamAttr):
            if tracer is not None:
                raise NotImplementedError("WeightNormParamAttr builds its weight in the static graph; in dygraph "
                                          "mode use a plain ParamAttr")
            w = weight_normalized(self, attr, shape, dtype)
            WeightNormParamAttr.params_with_weight_norm.append(w)
            return w
        if tracer is not None:
            param = tracer.create_parameter(attr, shape, dtype)
            param.stop_gradient = param.stop_gradient or stop_gradient
            return param
        kwargs = attr._to_kwargs()
        del kwargs["name"]
        startup = self.startup_program.global_block()
        if not startup.has_var(attr.name):
            attr.initializer(startup.create_parameter(attr.name, shape, dtype, **kwargs), startup)
        main = self.main_program.global_block()
        if main.has_var(attr.name):
            return main.var(attr.name)
        param = main.create_parameter(attr.name, shape, dtype, **kwargs)
        param.stop_gradient = param.stop_gradient or stop_gradient
        return param

    def create_variable_for_type_inference(self, dtype, stop_gradient=False):
        """A temporary ``<layer>_<n>.tmp_<k>``; its shape is filled by the op that writes it."""
        tracer = dygraph_mode._tracer
        if tracer is not None:
            return tracer.tensor_type(None, dtype=dtype, stop_gradient=stop_gradient)
        return self.main_program.current_block().create_var(
            name=unique_name.generate(".".join([self.name, "tmp"])), dtype=dtype, persistable=False,
            stop_gradient=stop_gradient)

    def create_variable(self, **kwargs):
        tracer = dygraph_mode._tracer
        if tracer is not None:
            return tracer.tensor_type(None, name=kwargs.get("name"), dtype=kwargs.get("dtype", "float32"),
                                      stop_gradient=kwargs.get("stop_gradient", False))
        return self.main_program.current_block().create_var(**kwargs)

    def create_global_variable(self, persistable=False, **kwargs):
        kwargs.setdefault("name", unique_name.generate(".".join([self.name, "tmp"])))
        tracer = dygraph_mode._tracer
        if tracer is not None:  # zeros of the shape, until set_variable_initializer fills it
            var = tracer.eager_tensor(np.zeros(kwargs["shape"], to_numpy_dtype(kwargs.get("dtype", "float32"))))
            var.name, var.persistable = kwargs["name"], persistable
            return var
        return self.main_program.global_block().create_var(persistable=persistable, **kwargs)

    def set_variable_initializer(self, var, initializer):
        """Create ``var`` in the startup program and append ``initializer``'s op for it there
        (in dygraph mode: run that op into ``var`` now)."""
        tracer = dygraph_mode._tracer
        if tracer is not None:
            op_type, attrs = initializer._op(var, self.startup_program.global_block())
            tracer.trace_op(op_type, None, {"Out": var}, dict(attrs, shape=var.shape, dtype=var.dtype))
            return var
        startup = self.startup_program.global_block()
        target = startup.create_var(name=var.name, shape=var.shape, dtype=var.dtype, persistable=True)
        initializer(target, startup)
        return var

    # --- common tails of layers --------------------------------------------------------------------
    def append_bias_op(self, input_var, dim_start=1, dim_end=None):
        """``input + b`` with ``b`` of shape ``input.shape[dim_start:dim_end]`` (no-op without bias)."""
        bias_attr = self.bias_attr
        if not bias_attr:
            return input_var
        size = list(input_var.shape[dim_start:dim_end])
        b = self.create_parameter(attr=bias_attr, shape=size, dtype=input_var.dtype, is_bias=True)
        out = self.create_variable_for_type_inference(dtype=input_var.dtype)
        self.append_op(type="elementwise_add", inputs={"X": [input_var], "Y": [b]}, outputs={"Out": [out]},
                       attrs={"axis": dim_start})
        return out

    def append_activation(self, input_var, act=None, use_cudnn=None, use_mkl_dnn=None):
        """Apply ``act`` (a name, or a dict with ``type`` plus attributes; default: the layer's kwargs' ``act``,
        as a dygraph layer's ``self._helper`` takes it)."""
        act = self.kwargs.get("act") if act is None else act
        if act is None:
            return input_var
        attrs = {"type": act} if isinstance(act, str) else dict(act)
        act_type = attrs.pop("type")
        out = self.create_variable_for_type_inference(dtype=input_var.dtype)
        self.append_op(type=act_type, inputs={"X": [input_var]}, outputs={"Out": [out]}, attrs=attrs)
        return out
