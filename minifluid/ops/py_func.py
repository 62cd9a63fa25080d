"""py_func: an op that runs a Python callable, and its gradient (another py_func running the backward callable).

NOTE [ py_func's callables ]
An op keeps attrs, not Python objects, so the callables live in a process-wide list and the op holds
their index (``forward_callable_id``; ``backward_callable_id`` is -1 without a backward function). A
Program clone, a ``clone(for_test=True)`` or a round trip through a ProgramDesc copies the index, not
the callable, so copies share one registration; each ``py_func`` layer call registers its callables
once and the list only grows with layer calls, as in fluid. An index the list lacks (a program saved by
another process) fails when the op runs, naming the index.

The callable gets one LoDTensor per input (None for an absent one: a gradient nobody computed), its
LoD included; ``np.array(x)`` gives its values. It returns one value per output (a LoDTensor, an
array or anything ``np.array`` takes), a tuple or list of them, or None when there are no outputs.
Each returned value must have the dtype and the known dimensions of the variable declared for it.
An exception it raises reaches ``Executor.run``'s caller as it is, traceback included.

The gradient op is a py_func too: its inputs are the forward inputs and outputs not named in
``backward_skip_vars``, then the gradients of the outputs (None for one without a gradient), its
outputs the gradients of the forward inputs; the backward callable returns one per forward input
(None for one that needs none).
"""
import inspect

import numpy as np

from ..dtypes import to_numpy_dtype
from .registry import EMPTY_VAR_NAME, register_grad, register_op

__all__ = ["register_callable", "registered_func", "registered_func_num"]

_CALLABLES = []  # (callable, whether it is called without arguments), by index


def register_callable(func):
    """Keep ``func`` for py_func ops; returns the index an op names it by (see the NOTE)."""
    if func is None or not callable(func):
        raise TypeError(f"func must be a Python function (a callable), got {type(func).__name__}")
    _CALLABLES.append((func, _takes_no_arguments(func)))  # the signature read once, not each run
    return len(_CALLABLES) - 1


def registered_func(idx):
    """The callable registered under index ``idx``."""
    return _CALLABLES[idx][0]


def registered_func_num():
    """How many callables py_func layers have registered in this process."""
    return len(_CALLABLES)


def _takes_no_arguments(func):
    """fluid calls a callable without parameters with no arguments, whatever its op's inputs."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return not any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL, p.VAR_KEYWORD)
                   for p in params)


def _callable(idx):
    if not 0 <= idx < len(_CALLABLES):
        raise ValueError(f"py_func: invalid Python callable id {idx}, which should be less than "
                         f"{len(_CALLABLES)} (callables live in the process whose py_func layer registered them)")
    return _CALLABLES[idx]


def _check_output(ctx, name, value, i):
    """``value`` (a returned output) as an array or LoDTensor matching the variable ``name`` declares."""
    if not isinstance(value, ctx.LoDTensor):
        value = np.array(value)
    var = ctx.op.block._find_var_recursive(name)
    if var is None:
        return value
    arr = value._array if isinstance(value, ctx.LoDTensor) else value
    if arr is None:
        raise ValueError(f"py_func: output {i} ({name!r}) is a LoDTensor holding no data")
    want = var.shape
    if want is not None and (len(want) != arr.ndim or any(0 <= w != d for w, d in zip(want, arr.shape))):
        raise ValueError(f"py_func: output {i} ({name!r}) is declared with shape {list(want)}, but the function "
                         f"returned shape {list(arr.shape)}")
    if var.dtype is not None and arr.dtype != to_numpy_dtype(var.dtype):
        raise TypeError(f"py_func: output {i} ({name!r}) is declared with dtype {var.dtype}, but the function "
                        f"returned {arr.dtype}; cast it (np.asarray(result, dtype={str(var.dtype)!r}))")
    return value


@register_op("py_func", inputs=("X",), outputs=("Out",), duplicable=("X", "Out"), optional=("X", "Out"),
             attrs={"forward_callable_id": 0, "backward_callable_id": -1, "backward_skip_vars": []}, context=True)
def _py_func_forward(ctx, attrs, xs):
    """Call the callable on the inputs as LoDTensors; check and return what it returns (see the NOTE)."""
    func, no_arguments = _callable(attrs["forward_callable_id"])
    args = [None if x is None else ctx.LoDTensor(x, ctx.input_lod("X", i)) for i, x in enumerate(xs or ())]
    result = func() if no_arguments else func(*args)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    names = ctx.op.outputs.get("Out") or []
    if len(results) != len(names) and not (not names and results == [None]):
        raise ValueError(f"py_func: the function {getattr(func, '__name__', func)!r} returned {len(results)} "
                         f"value(s), but the op has {len(names)} output(s) {names}")
    outs = []
    for i, (name, value) in enumerate(zip(names, results)):
        if name == EMPTY_VAR_NAME:  # a gradient nobody wants: whatever came is dropped
            outs.append(None)
        elif value is None:
            raise ValueError(f"py_func: the function {getattr(func, '__name__', func)!r} returned None for "
                             f"output {i} ({name!r})")
        else:
            outs.append(_check_output(ctx, name, value, i))
    return outs


@register_grad("py_func", builder=True, when=lambda op: op.attrs.get("backward_callable_id", -1) >= 0)
def _py_func_grad(op, grads):
    skip = set(op.attrs.get("backward_skip_vars") or ())
    ins = [n for n in (op.inputs.get("X") or []) + (op.outputs.get("Out") or []) if n not in skip]
    ins += [g or EMPTY_VAR_NAME for g in grads.output("Out")]
    attrs = {"forward_callable_id": op.attrs["backward_callable_id"], "backward_callable_id": -1,
             "backward_skip_vars": []}
    return [("py_func", {"X": ins}, {"Out": grads.input("X")}, attrs)]
