"""``fluid.dygraph.nn`` (1.8): GRUUnit, NCE, BilinearTensorProduct and TreeConv, with fluid 1.8's constructor
arguments, parameter shapes and outputs; each runs the op its static twin runs (``gru_unit``, ``nce``,
``bilinear_tensor_product``, ``tree_conv``; the ops are described in ops/rnn_unit.py, ops/sampled_loss.py,
ops/vision_misc.py and ops/tree_conv.py)."""
import numpy as np

from ..initializer import NumpyArrayInitializer
from ..layers.activation import check_variable_and_dtype
from ..layers.recurrent import _UNIT_ACTS
from ..layers.sampled_loss import _alias_table
from ..framework.variable import Variable
from ..param_attr import ParamAttr
from .emit import emitter
from .layer import Layer

__all__ = ["BilinearTensorProduct", "GRUUnit", "NCE", "TreeConv"]

_FLOATS = ("float32", "float64")


class GRUUnit(Layer):
    """One GRU step on ``input`` [N, size] (the projected input, size = 3 * D) and ``hidden`` [N, D]; returns
    ``(updated_hidden, reset_hidden_pre, gate)``. Weight [D, 3D] (update and reset gates, then candidate), bias
    [1, 3D]. ``origin_mode`` picks ``h = u * h_prev + (1 - u) * c`` instead of ``(1 - u) * h_prev + u * c``."""

    def __init__(self, size, param_attr=None, bias_attr=None, activation="tanh", gate_activation="sigmoid",
                 origin_mode=False, dtype="float32"):
        super().__init__(dtype=dtype)
        for label, act in (("activation", activation), ("gate_activation", gate_activation)):
            if act not in _UNIT_ACTS:
                raise ValueError(f"GRUUnit: {label} must be one of {', '.join(_UNIT_ACTS)}, got {act!r}")
        self.activation, self.gate_activation = _UNIT_ACTS[activation], _UNIT_ACTS[gate_activation]
        self._origin_mode = bool(origin_mode)
        d = size // 3
        self.weight = self.create_parameter([d, 3 * d], param_attr)
        self.bias = self.create_parameter([1, 3 * d], bias_attr, is_bias=True)

    def forward(self, input, hidden):
        check_variable_and_dtype(input, "input", _FLOATS, "GRUUnit")
        check_variable_and_dtype(hidden, "hidden", _FLOATS, "GRUUnit")
        gate, reset_hidden_pre, updated_hidden = emitter(self).run(
            "gru_unit", {"Input": input, "HiddenPrev": hidden, "Weight": self.weight, "Bias": self.bias},
            ("Gate", "ResetHiddenPrev", "Hidden"),
            {"activation": self.activation, "gate_activation": self.gate_activation,
             "origin_mode": self._origin_mode})
        return updated_hidden, reset_hidden_pre, gate


class NCE(Layer):
    """Noise-contrastive estimation loss [N, 1] of ``input`` [N, dim] for int64 ``label`` [N, num_true]: each true
    class against ``num_neg_samples`` (default 10) noise classes from ``sampler`` ('uniform', 'log_uniform' or
    'custom_dist' over the probabilities ``custom_dist``), divided by num_neg_samples + 1.

    Weight [num_total_classes, dim]. As in fluid 1.8's dygraph NCE, the bias [num_total_classes, 1] exists only
    when ``bias_attr`` is given (a ParamAttr or True). ``sample_weight`` (a [N, 1] tensor) weights the samples;
    ``forward``'s own ``sample_weight`` replaces it for that call.
    """

    def __init__(self, num_total_classes, dim, sample_weight=None, param_attr=None, bias_attr=None,
                 num_neg_samples=None, sampler="uniform", custom_dist=None, seed=0, is_sparse=False, dtype="float32"):
        super().__init__(dtype=dtype)
        samplers = ("uniform", "log_uniform", "custom_dist")
        if sampler not in samplers:
            raise ValueError(f"Unsupported sampler type {sampler!r}: NCE takes 'uniform', 'log_uniform' or "
                             "'custom_dist'")
        self._sample_weight = sample_weight
        self._tables = {}
        if sampler == "custom_dist":
            probs = None if custom_dist is None else np.asarray(custom_dist, dtype=np.float64).reshape(-1)
            if probs is None or probs.size != num_total_classes:
                raise ValueError(f"NCE: sampler 'custom_dist' needs custom_dist, one probability per class "
                                 f"({num_total_classes}), got {None if probs is None else probs.size}")
            alias, alias_probs = _alias_table(probs)
            for slot, value in (("CustomDistProbs", probs.astype(np.float32)), ("CustomDistAlias", alias),
                                ("CustomDistAliasProbs", alias_probs)):
                table = self.create_parameter(list(value.shape), ParamAttr(), dtype=str(value.dtype),
                                              default_initializer=NumpyArrayInitializer(value))
                table.stop_gradient = True
                self._tables[slot] = table
        self._num_neg_samples = 10 if num_neg_samples is None else int(num_neg_samples)
        self._attrs = {"num_total_classes": int(num_total_classes), "num_neg_samples": self._num_neg_samples,
                       "seed": int(seed), "sampler": samplers.index(sampler), "is_sparse": is_sparse,
                       "remote_prefetch": is_sparse}
        self.weight = self.create_parameter([num_total_classes, dim], param_attr)
        self.bias = (self.create_parameter([num_total_classes, 1], None if bias_attr is True else bias_attr,
                                           is_bias=True) if bias_attr else None)

    def forward(self, input, label, sample_weight=None):
        check_variable_and_dtype(input, "input", _FLOATS, "NCE")
        check_variable_and_dtype(label, "label", ("int64",), "NCE")
        weight = sample_weight if sample_weight is not None else self._sample_weight
        if weight is not None and not isinstance(weight, Variable):
            raise TypeError(f"The type of 'sample_weight' in NCE must be Variable or None, but received "
                            f"{type(weight).__name__}")
        inputs = {"Input": input, "Label": label, "Weight": self.weight, "Bias": self.bias, "SampleWeight": weight,
                  **self._tables}
        cost, _, _ = emitter(self).run("nce", inputs, ("Cost", "SampleLogits", "SampleLabels"), self._attrs,
                                       dtype="infer")
        return cost / float(self._num_neg_samples + 1)


class BilinearTensorProduct(Layer):
    """``act(x[n] W[k] y[n]^T + b[k])`` for [N, input1_dim] ``x`` and [N, input2_dim] ``y``: weight
    [output_dim, input1_dim, input2_dim], bias [1, output_dim] (none when ``bias_attr`` is False)."""

    def __init__(self, input1_dim, input2_dim, output_dim, name=None, act=None, param_attr=None, bias_attr=None,
                 dtype="float32"):
        super().__init__(dtype=dtype)
        self._act = act
        self.weight = self.create_parameter([output_dim, input1_dim, input2_dim], param_attr)
        self.bias = self.create_parameter([1, output_dim], bias_attr, is_bias=True)

    def forward(self, x, y):
        check_variable_and_dtype(x, "x", _FLOATS, "BilinearTensorProduct")
        check_variable_and_dtype(y, "y", _FLOATS, "BilinearTensorProduct")
        emit = emitter(self)
        out = emit.op("bilinear_tensor_product", {"X": x, "Y": y, "Weight": self.weight, "Bias": self.bias})
        return emit.act(out, self._act)


class TreeConv(Layer):
    """``act(tree_conv(nodes_vector, edge_set) + bias)`` over node features [B, max_nodes, feature_size] and
    int32 (parent, child) edges [B, max_edges, 2]; the output is [B, max_nodes, output_size, num_filters].
    Weight [feature_size, 3, output_size, num_filters]; as in fluid 1.8, a bias exists only when ``bias_attr``
    asks, of shape [num_filters], added along the last axis (fluid 1.8 adds it along axis 1, which only works
    when max_nodes equals num_filters)."""

    def __init__(self, feature_size, output_size, num_filters=1, max_depth=2, act="tanh", param_attr=None,
                 bias_attr=None, name=None, dtype="float32"):
        super().__init__(dtype=dtype)
        self._act, self._max_depth = act, int(max_depth)
        self.bias = (self.create_parameter([num_filters], None if bias_attr is True else bias_attr, is_bias=True)
                     if bias_attr else None)
        self.weight = self.create_parameter([feature_size, 3, output_size, num_filters], param_attr)

    def forward(self, nodes_vector, edge_set):
        emit = emitter(self)
        out = emit.op("tree_conv", {"NodesVector": nodes_vector, "EdgeSet": edge_set, "Filter": self.weight},
                      {"max_depth": self._max_depth})
        return emit.act(emit.bias(out, self.bias, -1), self._act)


for _layer in (BilinearTensorProduct, GRUUnit, NCE, TreeConv):
    _layer._tensor_inputs = True  # a numpy input is a clear TypeError (Layer._tensor_inputs)
