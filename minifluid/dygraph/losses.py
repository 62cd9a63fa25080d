"""``fluid.dygraph.nn`` (1.8) losses: MSELoss, L1Loss, BCELoss, NLLLoss, with fluid 1.8's arguments (NLLLoss:
``weight, reduction, ignore_index``, in that order) and reductions: ``'mean'`` and ``'sum'`` give a [1] tensor,
``'none'`` the per-element loss. They are ``fluid.layers`` compositions, so they also build static graphs."""
from .. import layers
from ..framework.variable import Variable
from ..layers.activation import check_variable_and_dtype
from ..layers.helper import LayerHelper
from .layer import Layer

__all__ = ["BCELoss", "L1Loss", "MSELoss", "NLLLoss"]

_FLOATS = ("float32", "float64")


def _check_reduction(reduction, what):
    if reduction not in ("sum", "mean", "none"):
        raise ValueError(f"The value of 'reduction' in {what} should be 'sum', 'mean' or 'none', but received "
                         f"{reduction}, which is not allowed.")
    return reduction


def _reduce(loss, reduction):
    if reduction == "sum":
        return layers.reduce_sum(loss)
    return layers.reduce_mean(loss) if reduction == "mean" else loss


class MSELoss(Layer):
    """``(input - label) ** 2``, reduced."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = _check_reduction(reduction, "MSELoss")

    def forward(self, input, label):
        return _reduce(layers.square(layers.elementwise_sub(input, label)), self.reduction)


class L1Loss(Layer):
    """``|input - label|``, reduced."""

    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = _check_reduction(reduction, "L1Loss")

    def forward(self, input, label):
        kinds = _FLOATS + ("int32", "int64")
        check_variable_and_dtype(input, "input", kinds, "l1_loss")
        check_variable_and_dtype(label, "label", kinds, "l1_loss")
        return _reduce(layers.abs(layers.elementwise_sub(input, label)), self.reduction)


class BCELoss(Layer):
    """``-(label * log(input) + (1 - label) * log(1 - input))`` of probabilities ``input`` (each log at least
    -100), times ``weight`` (a tensor broadcast over the trailing axes) when given, reduced."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__()
        self.reduction = _check_reduction(reduction, "bce_loss")
        self.weight = weight

    def forward(self, input, label):
        check_variable_and_dtype(input, "input", _FLOATS, "bce_loss")
        check_variable_and_dtype(label, "label", _FLOATS, "bce_loss")
        helper = LayerHelper("bce_loss")
        loss = helper.create_variable_for_type_inference(input.dtype)
        helper.append_op(type="bce_loss", inputs={"X": [input], "Label": [label]}, outputs={"Out": [loss]})
        if self.weight is not None:
            if not isinstance(self.weight, Variable):
                raise ValueError("The weight is not a Variable, please convert to Variable.")
            loss = layers.elementwise_mul(loss, self.weight, axis=-1)
        return _reduce(loss, self.reduction)


class NLLLoss(Layer):
    """``-weight[c] * input[n, c]`` with ``c = label[n]`` for log-probabilities ``input`` [N, C] or
    [N, C, d1, ...] and int64 ``label`` [N] or [N, d1, ...]; labels equal to ``ignore_index`` count nothing.
    ``'mean'`` divides by the summed weights of the labels counted (one nll_loss op, ops/loss.py)."""

    def __init__(self, weight=None, reduction="mean", ignore_index=-100):
        super().__init__()
        self.weight, self.reduction, self.ignore_index = weight, reduction, ignore_index

    def forward(self, input, label):
        check_variable_and_dtype(input, "input", _FLOATS, "nll_loss")
        check_variable_and_dtype(label, "label", ("int64",), "nll_loss")
        _check_reduction(self.reduction, "nll_loss")
        shape = list(input.shape)
        if len(shape) < 2:
            raise ValueError(f"Expected 2 or more dimensions (got {len(shape)})")
        if len(shape) not in (2, 4):  # the op takes [N, C] or [N, C, H, W]
            input = layers.reshape(input, [shape[0], shape[1], 1, -1])
            label = layers.reshape(label, [shape[0], 1, -1])
        inputs = {"X": [input], "Label": [label]}
        if isinstance(self.weight, Variable):
            inputs["Weight"] = [self.weight]
        helper = LayerHelper("nll_loss")
        out, total = (helper.create_variable_for_type_inference(input.dtype) for _ in range(2))
        helper.append_op(type="nll_loss", inputs=inputs, outputs={"Out": [out], "Total_weight": [total]},
                         attrs={"reduction": self.reduction, "ignore_index": self.ignore_index})
        if len(shape) not in (2, 4) and self.reduction == "none":
            out = layers.reshape(out, [shape[0]] + shape[2:])
        return out


for _layer in (BCELoss, L1Loss, MSELoss, NLLLoss):
    _layer._tensor_inputs = True  # a numpy input is a clear TypeError (Layer._tensor_inputs)
