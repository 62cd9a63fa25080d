"""fluid's backward-analysis helpers (``fluid.backward._find_op_path_`` and its kin), for code that
inspects which ops and variables a backward pass involves; ``append_backward`` (backward.py) does its own
walk. Only global-block targets are analysed (no sub-block output tracing)."""
from .framework.variable import Variable
from .ops.registry import GRAD_SUFFIX, get_op_spec, grad_var_name

__all__ = ["_append_grad_suffix_", "_find_no_grad_vars", "_find_op_path_", "_get_no_grad_set_name",
           "_get_stop_gradients_", "_strip_grad_suffix_"]


def _append_grad_suffix_(name):
    """``name@GRAD``."""
    return grad_var_name(name)


def _strip_grad_suffix_(name):
    """The forward name of a gradient name: ``x@GRAD`` and ``x@GRAD@RENAME@0`` give ``x``."""
    pos = name.find(GRAD_SUFFIX)
    return name[:pos] if pos != -1 else name


def _get_stop_gradients_(program):
    """{block index: {``name@GRAD`` of each stop_gradient variable of that block}}."""
    return {block.idx: {grad_var_name(name) for name, var in block.vars.items() if var.stop_gradient}
            for block in program.blocks}


def _get_no_grad_set_name(no_grad_set):
    """The names of a no_grad_set (set, list or tuple of Variables or names), with fluid's TypeErrors."""
    names = set()
    if no_grad_set is None:
        return names
    if not isinstance(no_grad_set, (set, frozenset, list, tuple)):
        raise TypeError(f"The type of no_grad_set should be set or list or tuple, but received {type(no_grad_set)}")
    for item in no_grad_set:
        if isinstance(item, Variable):
            names.add(item.name)
        elif isinstance(item, str):
            names.add(item)
        else:
            raise TypeError("The type of no_grad_set's member must be paddle.fluid.Variable or str, but received "
                            f"{type(item)}.")
    return names


def _has_grad(op):
    return get_op_spec(op.type).differentiates(op)


def _find_op_path_(block, outputs, inputs, no_grad_set):
    """The ops of ``block`` (in order) on a path from ``inputs`` (all of the block's when empty) to
    ``outputs`` through ops that have a gradient, not passing through ``no_grad_set``; with ``inputs``,
    the stop_gradient variables the path reads from outside them are added to ``no_grad_set``."""
    input_names = {v.name for v in inputs}
    output_names = {v.name for v in outputs}
    relevant = [True] * len(block.ops)
    if inputs:
        for i, op in enumerate(block.ops):
            if input_names.intersection(op.input_arg_names) and _has_grad(op):
                input_names.update(n for n in op.output_arg_names if n not in no_grad_set)
            else:
                relevant[i] = False
    for i in reversed(range(len(block.ops))):
        op = block.ops[i]
        if output_names.intersection(op.output_arg_names) and _has_grad(op):
            output_names.update(n for n in op.input_arg_names if n not in no_grad_set)
        else:
            relevant[i] = False
    path = [op for op, keep in zip(block.ops, relevant) if keep]
    if inputs:
        for op in path:
            no_grad_set.update(n for n in op.input_arg_names
                               if n not in input_names and block._var_recursive(n).stop_gradient)
    return path


def _find_no_grad_vars(block, op_path, targets, no_grad_set):
    """Outputs of ``op_path``'s ops that no later op of the path (nor a target) reads: their gradients
    stay empty."""
    output_names = {v.name for v in targets}
    unused = set()
    for op in reversed(op_path):
        if not any(k == "sub_block" for k in op.attrs):
            unused.update(n for n in op.output_arg_names if n not in output_names and n not in op.input_arg_names
                          and not block._var_recursive(n).stop_gradient)
        output_names.update(n for n in op.input_arg_names if n not in no_grad_set)
    return unused
