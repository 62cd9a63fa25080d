"""fluid 1.8's functional control flow on top of While and cond (layers/control_flow.py): while_loop,
case and switch_case. In dygraph mode they run the Python functions directly, as fluid does."""
import functools

from ..dtypes import convert_dtype
from ..framework import dygraph_mode
from . import nest
from .activation import check_variable_and_dtype
from .compare import equal
from .control_flow import While, _check_type, cond
from .tensor import assign, cast, fill_constant

__all__ = ["case", "switch_case", "while_loop"]


def _numel(shape):
    return functools.reduce(lambda a, b: a * b, shape, 1)


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """``while cond(*loop_vars): loop_vars = body(*loop_vars)`` in the graph; returns ``loop_vars``
    (the variables the loop updated)."""
    if not callable(cond):
        raise TypeError("cond in while_loop should be callable")
    if not callable(body):
        raise TypeError("body in while_loop should be callable")
    _check_type(loop_vars, "loop_vars", (list, tuple), "fluid.layers.while_loop")
    if len(loop_vars) == 0:
        raise ValueError("loop_vars in while_loop should not be empty")
    pre_cond = cond(*loop_vars)
    check_variable_and_dtype(pre_cond, "var of cond returned", ("bool",), "fluid.layers.while_loop")
    if pre_cond.shape is not None and _numel(pre_cond.shape) != 1:
        raise TypeError(f"the shape of the variable returned by cond should be [1], but given shape as "
                        f"{list(pre_cond.shape)}.")
    if dygraph_mode._tracer is not None:
        while bool(pre_cond.numpy().reshape(-1)[0]):
            loop_vars = _body_outputs(body(*loop_vars), loop_vars)
            pre_cond = cond(*loop_vars)
        return loop_vars
    loop = While(pre_cond, is_test, name)
    with loop.block():
        # the body gets fresh lists and dicts: what it changes in them must not change loop_vars
        outputs = _body_outputs(body(*nest.pack_sequence_as(loop_vars, nest.flatten(loop_vars))), loop_vars)
        now_cond = cond(*outputs)
        for new, old in zip(nest.flatten(outputs), nest.flatten(loop_vars)):
            if new is not old:
                assign(new, old)
        assign(now_cond, pre_cond)
    return loop_vars


def _body_outputs(outputs, loop_vars):
    """The body's results as a list, checked to have loop_vars' structure (a ValueError, as in fluid)."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    try:
        nest.assert_same_structure(outputs, list(loop_vars), "loop_vars and body's results")
    except ValueError as e:
        raise ValueError(f"body in while_loop should return the same arity (length and structure) as "
                         f"loop_vars: {e}") from None
    return outputs


def _chain(pred_fn_pairs, default):
    """``cond(p1, f1, cond(p2, f2, ... default))`` built from the last pair outwards, then called."""
    false_fn = default
    for pred, true_fn in reversed(pred_fn_pairs):
        false_fn = functools.partial(cond, pred=pred, true_fn=true_fn, false_fn=false_fn)
    return false_fn()


def case(pred_fn_pairs, default=None, name=None):
    """The result of the function of the first (bool [1] pred, fn) pair whose pred holds, else of
    ``default`` (by default the last pair's function)."""
    _check_type(pred_fn_pairs, "pred_fn_pairs", (list, tuple), "case")
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple):
            raise TypeError(f"The elements' type of 'pred_fn_pairs' in Op(case) must be tuple, but received "
                            f"{type(pair)}.")
        if len(pair) != 2:
            raise TypeError(f"The tuple's size of 'pred_fn_pairs' in Op(case) must be 2, but received "
                            f"{len(pair)}-tuple.")
        pred, fn = pair
        check_variable_and_dtype(pred, "pred", ("bool",), "case")
        if not callable(fn):
            raise TypeError(f"The fn for {pred.name} of pred_fn_pairs in Op(case) must be callable.")
    if default is None:
        pred_fn_pairs, default = pred_fn_pairs[:-1], pred_fn_pairs[-1][1]
    elif not callable(default):
        raise TypeError("The default in Op(case) must be callable.")
    return _chain(list(pred_fn_pairs), default)


def switch_case(branch_index, branch_fns, default=None, name=None):
    """The result of the function whose key equals ``branch_index`` (an integer [1] tensor), else of
    ``default`` (by default the function of the largest key). ``branch_fns``: a list of functions (keys
    0, 1, ...), of (key, fn) pairs, or a dict."""
    check_variable_and_dtype(branch_index, "branch_index", ("uint8", "int32", "int64"), "switch_case")
    if convert_dtype(branch_index.dtype) != "int64":
        branch_index = cast(branch_index, "int64")
    _check_type(branch_fns, "branch_fns", (list, tuple, dict), "switch_case")
    branch_fns = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if all(callable(fn) for fn in branch_fns):
        branch_fns = list(enumerate(branch_fns))
    keys = []
    for pair in branch_fns:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"The elements of 'branch_fns' in Op(switch_case) must be (int, callable) pairs, but "
                            f"received {pair!r}.")
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError(f"The key's type of 'branch_fns' in Op(switch_case) must be int, but received "
                            f"{type(key)}.")
        if key in keys:
            raise ValueError(f"The key in 'branch_fns' must be unique, but '{key}' appears more than once.")
        keys.append(key)
        if not callable(fn):
            raise TypeError(f"The type of function for key {key} in 'branch_fns' must be callable, but received "
                            f"{type(fn)}")
    ordered = sorted(branch_fns, key=lambda pair: pair[0])
    if default is None:
        ordered, default = ordered[:-1], ordered[-1][1]
    elif not callable(default):
        raise TypeError("The default in Op(case) must be callable.")
    pairs = [(equal(branch_index, fill_constant([1], "int64", key)), fn) for key, fn in ordered]
    return _chain(pairs, default)

