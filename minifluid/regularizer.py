"""Weight decay: L2Decay / L1Decay append ops that add a decay term to a parameter's gradient.

For each (param, grad) the regularizer appends ``scale`` (L2: coeff * param) or ``sign`` +
``scale`` (L1: coeff * sign(param)), then a ``sum`` op writes ``grad + decay`` back into the
gradient variable, as fluid does, so the optimizer op reads the regularized gradient under the
same name. A parameter's own ``ParamAttr(regularizer=...)`` wins over the optimizer's
``regularization``. The ops carry ``op_role = OpRole.Optimize``, as in fluid (its
``_optimized_guard``): they belong to the update, so ``clone(for_test=True)`` drops them and
data-parallel execution runs them once, on the averaged gradient, right before the update ops.
"""
from .ops.registry import OpRole

__all__ = ["L1Decay", "L1DecayRegularizer", "L2Decay", "L2DecayRegularizer", "WeightDecayRegularizer",
           "append_regularization_ops"]

_ROLE = {"op_role": OpRole.Optimize}


class WeightDecayRegularizer:
    """Base class: ``reg(param, grad, block)`` appends ops and returns the decay variable."""

    def __init__(self, regularization_coeff=0.0):
        if not isinstance(regularization_coeff, (int, float)):
            raise TypeError(f"regularization_coeff must be a number, got {type(regularization_coeff).__name__}")
        self._regularization_coeff = float(regularization_coeff)

    def _new_var(self, param, block):
        return block.create_var(dtype=param.dtype, shape=param.shape, lod_level=param.lod_level)

    def __call__(self, param, grad, block):
        raise NotImplementedError

    def __str__(self):
        return f"{type(self).__name__[:7]}, regularization_coeff={self._regularization_coeff:f}"


class L2DecayRegularizer(WeightDecayRegularizer):
    """Adds ``coeff * param`` to the gradient (the gradient of 0.5 * coeff * ||param||^2)."""

    def __call__(self, param, grad, block):
        decay = self._new_var(param, block)
        block.append_op(type="scale", inputs={"X": [param]}, outputs={"Out": [decay]},
                        attrs={"scale": self._regularization_coeff, **_ROLE})
        return decay


class L1DecayRegularizer(WeightDecayRegularizer):
    """Adds ``coeff * sign(param)`` to the gradient (the gradient of coeff * ||param||_1)."""

    def __call__(self, param, grad, block):
        sign = self._new_var(param, block)
        decay = self._new_var(param, block)
        block.append_op(type="sign", inputs={"X": [param]}, outputs={"Out": [sign]}, attrs=dict(_ROLE))
        block.append_op(type="scale", inputs={"X": [sign]}, outputs={"Out": [decay]},
                        attrs={"scale": self._regularization_coeff, **_ROLE})
        return decay


def append_regularization_ops(parameters_and_grads, regularization=None):
    """Add each parameter's decay term to its gradient (in place, keeping the gradient's name)."""
    out = []
    for param, grad in parameters_and_grads:
        reg = getattr(param, "regularizer", None) or regularization
        if grad is None or reg is None:
            out.append((param, grad))
            continue
        block = grad.block
        decay = reg(param, grad, block)
        block.append_op(type="sum", inputs={"X": [grad, decay]}, outputs={"Out": [grad]}, attrs=dict(_ROLE))
        out.append((param, grad))
    return out


L1Decay = L1DecayRegularizer
L2Decay = L2DecayRegularizer
