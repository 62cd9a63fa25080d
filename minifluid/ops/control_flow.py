"""Control-flow ops: while and conditional_block (each runs a sub-block through its ExecutionContext),
their gradients (while_grad, conditional_block_grad), and is_empty. The row routing of IfElse and cond
(split_lod_tensor, merge_lod_tensor, select_input, select_output) is in lod_routing.py.

NOTE [ Sub-block gradients ]
A ``while`` that trains (``is_test`` False) keeps the scope of every step in its StepScopes output;
a ``conditional_block`` keeps the scope of its one run (or none). Their gradient op runs the gradient
block (built by control_flow_backward.py, once, when append_backward meets the op) once per kept scope,
last step first. Each run gets a fresh scope over the kept step scope (``ExecutionContext.run_block``'s
``over``), so the gradient ops read the values that step computed. Gradients leave a step in two ways:
* a tensor array's gradient is written in place into the array of gradients of the enclosing run
  (ops/tensor_array.py), which carries it to the step that wrote the entry;
* the gradient of an outside tensor the block reads (a parameter, the loop's inputs) is a local of the
  gradient block (``x_grad_locals``); the op sums it over the steps into its own output.
The gradient of an outside tensor the block writes and does not read (``seeds``: IfElse's outputs,
a loop's last value) enters the last step run (the first gradient run); earlier steps get zeros.
Each kept scope also holds what its step left in the outside tensors it writes (``step_ends``: the
condition, the last values); a gradient run starts with those as its own values. Loop counters
(``counters``) are the exception: the gradient block steps them back in the enclosing scope, as
fluid's increment gradient does, so after the op they hold their value from before the loop again
and the gradient ops of the enclosing block read the index their forward op used.
"""
import numpy as np

from .registry import array_module, register_op
from .tensor_array import TensorArray

__all__ = ["truth"]


def truth(value, name):
    """The bool held by a one-element condition tensor."""
    arr = np.asarray(value.get() if hasattr(value, "get") and not isinstance(value, np.ndarray) else value)
    if arr.size != 1 or arr.dtype != np.bool_:
        raise ValueError(f"The condition {name!r} must be a bool tensor of one element (shape [1]), got dtype "
                         f"{arr.dtype} shape {list(arr.shape)}")
    return bool(arr.reshape(-1)[0])


@register_op("while", inputs=("X", "Condition"), outputs=("Out", "StepScopes"), duplicable=("X", "Out"),
             optional=("X",), attrs={"sub_block": None, "is_test": False}, context=True)
def _while_forward(ctx, attrs, xs, cond):
    """Run the sub-block while Condition (a bool [1] the block updates) holds."""
    name, block = ctx.op.inputs["Condition"][0], attrs["sub_block"]
    keep = not attrs["is_test"]
    scopes = []
    while truth(ctx.find_value(name), name):
        scope = ctx.run_block(block)
        if keep:
            scopes.append(_kept(ctx, scope))
    return None, scopes


def _kept(ctx, scope):
    """A step's scope, holding also what the step left in the outside tensors it writes (see the NOTE)."""
    scope.step_ends = {n: v for n in ctx.op.outputs.get("Out") or () if not isinstance(v := ctx.find_value(n), list)}
    return scope


@register_op("conditional_block", inputs=("Cond", "Input"), outputs=("Out", "Scope"),
             duplicable=("Cond", "Input", "Out"), optional=("Input",), no_grad_inputs=("Cond",),
             attrs={"sub_block": None, "is_scalar_condition": False}, context=True)
def _conditional_block_forward(ctx, attrs, conds, inputs):
    """Run the sub-block once when the scalar Cond holds (``is_scalar_condition``) or, else, when every
    Cond has elements. Not run: its outputs keep their values (None where they have none yet)."""
    if attrs["is_scalar_condition"]:
        run = truth(conds[0], ctx.op.inputs["Cond"][0])
    else:
        run = all(c.size for c in conds)
    if not run:  # the outputs keep what they hold (None: nothing yet)
        names = ctx.op.outputs.get("Out") or ()
        for name in names:
            ctx.out_lods[name] = ctx.value_lod(name)
        return [ctx.find_value(name) for name in names], []
    return None, [_kept(ctx, ctx.run_block(attrs["sub_block"]))]


def _sub_block_grad(ctx, attrs, xs, out_grads, scopes):
    """while_grad / conditional_block_grad: see the NOTE."""
    grad_block, fwd_block = attrs["sub_block"], attrs["forward_block"]
    locals_, seeds, counters = attrs["x_grad_locals"], attrs["seeds"], attrs["counters"]
    sums = [None] * len(locals_)
    for k, step in enumerate(reversed(scopes or ())):
        scope = type(step)(step)
        scope._vars.update((n, v) for n, v in step.step_ends.items() if n not in counters)
        for seed, g in zip(seeds, out_grads or ()):
            if g is not None:
                scope._vars[seed] = g if k == 0 else array_module(g).zeros_like(g)
        ctx.run_block(grad_block, scope, over=(step, fwd_block))
        for j, local in enumerate(locals_):
            g = scope._vars.get(local) if local else None
            if g is not None:
                sums[j] = g if sums[j] is None else sums[j] + g
    names = ctx.op.outputs.get("X@GRAD") or ()
    result = []
    for j, name in enumerate(names):
        if locals_[j]:
            x = xs[j]
            result.append(sums[j] if sums[j] is not None else array_module(x).zeros_like(x))
        else:  # an array of gradients, filled in place (or no gradient wanted: @EMPTY@)
            result.append(ctx.find_value(name))
    return result


_GRAD_ATTRS = {"sub_block": None, "forward_block": None, "x_grad_locals": [], "seeds": [], "counters": []}
for _type, _scopes in (("while_grad", "StepScopes"), ("conditional_block_grad", "Scope")):
    register_op(_type, inputs=("X", "Out@GRAD", _scopes), outputs=("X@GRAD",),
                duplicable=("X", "Out@GRAD", "X@GRAD"), optional=("X", "Out@GRAD"), attrs=dict(_GRAD_ATTRS),
                context=True, no_gradient=True)(_sub_block_grad)


@register_op("is_empty", inputs=("X",), outputs=("Out",), no_gradient=True,
             infer_shape=lambda attrs, x: ((1,), "bool"))
def _is_empty_forward(attrs, x):
    return np.array([len(x) == 0 if isinstance(x, TensorArray) else x.size == 0])
