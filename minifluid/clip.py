"""Gradient clipping: by value, by per-tensor norm, and by the global norm of a group of gradients.

A clip object maps a list of (param, grad) pairs to new pairs whose gradients are clipped
copies (``<grad>@CLIP``). The ops it appends sit between the backward ops and the update ops and
carry ``op_role = OpRole.Optimize`` as in fluid, so data-parallel execution clips the averaged
gradient once (the global norm is the norm of the averaged gradients). Pass one as
``Optimizer(grad_clip=...)`` (fluid 1.8), or attach it to parameters with ``set_gradient_clip`` /
``ParamAttr(gradient_clip=...)`` (fluid 1.x). Global-norm clipping scales every gradient of the group by
``clip_norm / max(global_norm, clip_norm)`` with ``global_norm = sqrt(sum_i ||g_i||^2)``.
"""
from .framework import unique_name
from .framework.program import default_main_program
from .ops.registry import OpRole

__all__ = ["ErrorClipByValue", "GradientClipBase", "GradientClipByGlobalNorm", "GradientClipByNorm",
           "GradientClipByValue", "append_gradient_clip_ops", "error_clip_callback", "set_gradient_clip"]

_ROLE = {"op_role": OpRole.Optimize}


def _clipped_var(grad):
    return grad.block.create_var(name=grad.name + "@CLIP", shape=grad.shape, dtype=grad.dtype)


def _tmp(block, dtype, shape=(1,)):
    return block.create_var(name=unique_name.generate("gradient_clip.tmp"), shape=shape, dtype=dtype)


class GradientClipBase:
    """Base class: ``clip(params_grads)`` returns the pairs that have a gradient, clipped where
    ``need_clip(param)`` (a callable; None: every parameter) says so and unchanged elsewhere."""

    def __init__(self, need_clip=None):
        if need_clip is not None and not callable(need_clip):
            raise TypeError(
                "The type of need_clip must be funciton, and it can filter out parameter that does't need gradient "
                "clip. This function must return True or False, and True means that clipping is required. Please "
                "refer to API documention of GradientClipByGlobalNorm / GradientClipByNorm /GradientClipByValue.")
        self._need_clip_func = need_clip

    def __call__(self, params_grads):
        return self._static_clip(params_grads)

    def _needs_clip(self, param):
        return self._need_clip_func is None or bool(self._need_clip_func(param))

    def _static_clip(self, params_grads):
        raise NotImplementedError

    def _group_key(self):
        return (type(self), id(self))



def _clip_each(clip, params_grads, op_type, attrs):
    """One ``op_type`` op per gradient ``clip`` needs clipped, as optimizer-role ops; pairs without a
    gradient are left out."""
    out = []
    for p, g in params_grads:
        if g is None:
            continue
        if not clip._needs_clip(p):
            out.append((p, g))
            continue
        new = _clipped_var(g)
        g.block.append_op(type=op_type, inputs={"X": [g]}, outputs={"Out": [new]}, attrs={**attrs, **_ROLE})
        out.append((p, new))
    return out


class GradientClipByValue(GradientClipBase):
    """Clip every gradient element into [min, max] (``min`` defaults to ``-max``)."""

    def __init__(self, max, min=None, need_clip=None):
        super().__init__(need_clip)
        max = float(max)
        min = -max if min is None else float(min)
        if min > max:
            raise ValueError(f"GradientClipByValue: min ({min}) must not exceed max ({max})")
        self.max, self.min = max, min

    def __str__(self):
        return f"Gradient Clip By Value, min = {self.min:f}, max={self.max:f}"

    def _static_clip(self, params_grads):
        return _clip_each(self, params_grads, "clip", {"min": self.min, "max": self.max})


class GradientClipByNorm(GradientClipBase):
    """Rescale each gradient whose L2 norm exceeds ``clip_norm`` down to that norm."""

    def __init__(self, clip_norm, need_clip=None):
        super().__init__(need_clip)
        self.clip_norm = float(clip_norm)

    def __str__(self):
        return f"Gradient Clip By Norm, clip_norm={self.clip_norm:f}"

    def _static_clip(self, params_grads):
        return _clip_each(self, params_grads, "clip_by_norm", {"max_norm": self.clip_norm})


class GradientClipByGlobalNorm(GradientClipBase):
    """Scale all gradients by ``clip_norm / max(global_norm, clip_norm)``."""

    def __init__(self, clip_norm, group_name="default_group", need_clip=None):
        super().__init__(need_clip)
        self.clip_norm = float(clip_norm)
        self.group_name = group_name

    def __str__(self):
        return f"Gradient Clip By GlobalNorm, global_norm={self.clip_norm:f}"

    def _group_key(self):
        return (type(self), self.group_name)

    def _static_clip(self, params_grads):
        params_grads = [(p, g) for p, g in params_grads if g is not None]
        live = [(p, g) for p, g in params_grads if self._needs_clip(p)]  # the global norm is theirs
        if not live:
            return params_grads
        block, dtype = live[0][1].block, live[0][1].dtype
        squares = []
        for _, g in live:
            sq = _tmp(block, g.dtype)
            block.append_op(type="squared_l2_norm", inputs={"X": [g]}, outputs={"Out": [sq]}, attrs=dict(_ROLE))
            squares.append(sq)
        total, half, max_norm = _tmp(block, dtype), _tmp(block, dtype), _tmp(block, dtype)
        norm, denom, scale = _tmp(block, dtype), _tmp(block, dtype), _tmp(block, dtype)
        block.append_op(type="sum", inputs={"X": squares}, outputs={"Out": [total]}, attrs=dict(_ROLE))
        for var, value in ((half, 0.5), (max_norm, self.clip_norm)):
            block.append_op(type="fill_constant", outputs={"Out": [var]},
                            attrs={"shape": [1], "dtype": dtype, "value": value, **_ROLE})
        block.append_op(type="elementwise_pow", inputs={"X": [total], "Y": [half]}, outputs={"Out": [norm]},
                        attrs=dict(_ROLE))
        block.append_op(type="elementwise_max", inputs={"X": [max_norm], "Y": [norm]}, outputs={"Out": [denom]},
                        attrs=dict(_ROLE))
        block.append_op(type="elementwise_div", inputs={"X": [max_norm], "Y": [denom]}, outputs={"Out": [scale]},
                        attrs=dict(_ROLE))
        clipped = {}
        for p, g in live:
            new = _clipped_var(g)
            block.append_op(type="elementwise_mul", inputs={"X": [g], "Y": [scale]}, outputs={"Out": [new]},
                            attrs=dict(_ROLE))
            clipped[p.name] = new
        return [(p, clipped.get(p.name, g) if self._needs_clip(p) else g) for p, g in params_grads]


def set_gradient_clip(clip, param_list=None, program=None):
    """fluid 1.x: attach ``clip`` to parameters (default: every parameter of ``program``)."""
    if not isinstance(clip, GradientClipBase):
        raise TypeError("'clip' should be an instance of GradientClipBase's derived class")
    program = program if program is not None else default_main_program()
    if param_list is None:
        params = program.global_block().all_parameters()
    else:
        params = [program.global_block().var(p) if isinstance(p, str) else p for p in param_list]
    for p in params:
        p.gradient_clip_attr = clip


def append_gradient_clip_ops(params_grads):
    """Clip with each parameter's own ``gradient_clip_attr``; global-norm groups clip together."""
    groups = {}
    for p, g in params_grads:
        clip = getattr(p, "gradient_clip_attr", None)
        if clip is not None and g is not None:
            groups.setdefault(clip._group_key(), (clip, []))[1].append((p, g))
    if not groups:
        return list(params_grads)
    clipped = {}
    for clip, pairs in groups.values():
        clipped.update((p.name, g) for p, g in clip(pairs))
    return [(p, clipped.get(p.name, g)) for p, g in params_grads]


# --- error clipping: the gradient of one variable, clipped where the backward pass makes it ----------------
class BaseErrorClipAttr:
    def _append_clip_op(self, block, grad_name):
        raise NotImplementedError


class ErrorClipByValue(BaseErrorClipAttr):
    """Clip a variable's gradient to [min, max] (min defaults to -max) as soon as the backward op that makes
    it runs, so ops further back see the clipped value: set ``var.error_clip`` and pass
    ``callbacks=[fluid.clip.error_clip_callback]`` to ``append_backward``."""

    def __init__(self, max, min=None):
        self.max = float(max)
        self.min = -self.max if min is None else float(min)

    def __str__(self):
        return f"ByValue, min={self.min:f}, max={self.max:f}"

    def _append_clip_op(self, block, grad_name):
        block.append_op(type="clip", inputs={"X": [grad_name]}, outputs={"Out": [grad_name]},
                        attrs={"min": self.min, "max": self.max, "op_role": OpRole.Backward})


def error_clip_callback(block, context):
    """append_backward callback: after each backward op, clip the gradients it wrote of variables that have
    an ``error_clip`` (``context`` maps gradient names to their variables' names)."""
    op = block.ops[-1]
    if op.type == "clip":  # the clip ops this callback appends
        return
    for grad_name in [n for n in op.output_arg_names if n in context]:
        error_clip = getattr(block._var_recursive(context[grad_name]), "error_clip", None)
        if error_clip is None:
            continue
        if not isinstance(error_clip, BaseErrorClipAttr):
            raise TypeError("Variable's error_clip should be an instance of BaseErrorClipAttr or None.")
        error_clip._append_clip_op(block, grad_name)
