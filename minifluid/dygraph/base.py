"""Entering and leaving dygraph mode; data into eager tensors; ``no_grad``.

``guard(place)`` does what fluid's does: inside it the default main/startup programs are fresh and
``unique_name`` starts over, and a new tracer is installed, so ``fluid.layers.*`` run their ops at
once (layers/helper.py asks ``framework.dygraph_mode``). ``enable_dygraph()`` enters the same guard
until ``disable_dygraph()``. The place defaults to CPUPlace (a CUDAPlace must be asked for).
"""
import contextlib
import functools
import sys

import numpy as np

from ..framework import dygraph_mode, unique_name
from ..framework.program import Program, program_guard
from ..framework.variable import Variable
from ..lod_tensor import LoDTensor
from ..places import CPUPlace
from .autograd import grad  # noqa: F401  (fluid.dygraph.base.grad)
from .tensor import Tensor, default_tracer
from .tracer import Tracer

__all__ = ["BackwardStrategy", "disable_dygraph", "disable_imperative", "disable_static", "eager_api", "enable_dygraph",
           "enable_imperative", "enable_static", "enabled", "grad", "guard", "in_dygraph_mode", "no_grad", "to_variable"]

in_dygraph_mode = dygraph_mode.in_dygraph_mode
enabled = dygraph_mode.in_dygraph_mode


@contextlib.contextmanager
def guard(place=None):
    """Run the ``with`` block in dygraph mode on ``place`` (default CPUPlace)."""
    tracer = Tracer(place if place is not None else CPUPlace())
    with program_guard(Program(), Program()), unique_name.guard():
        old = dygraph_mode.switch_tracer(tracer)
        try:
            yield
        finally:
            dygraph_mode.switch_tracer(old)


_functional_guard = None


def enable_dygraph(place=None):
    """Turn dygraph mode on until ``disable_dygraph()`` (a no-op when it is already on this way)."""
    global _functional_guard
    if _functional_guard is None:
        _functional_guard = guard(place)
        _functional_guard.__enter__()


def disable_dygraph():
    """Leave the dygraph mode ``enable_dygraph()`` entered."""
    global _functional_guard
    if _functional_guard is not None:
        _functional_guard.__exit__(*sys.exc_info())
        _functional_guard = None


enable_imperative = enable_dygraph  # fluid 1.8's older names
disable_imperative = disable_dygraph

_static_requested = False
"""Set by paddle 2.x ``enable_static()``: paddle.io.DataLoader then yields arrays, not eager tensors."""


def enable_static():
    """paddle 2.x ``paddle.enable_static()``: static mode from here on (leaves enable_dygraph's mode)."""
    global _static_requested
    _static_requested = True
    disable_dygraph()


def disable_static(place=None):
    """paddle 2.x ``paddle.disable_static()``: dygraph mode from here on (``enable_dygraph``)."""
    global _static_requested
    _static_requested = False
    enable_dygraph(place)


def to_variable(value, name=None, zero_copy=None, dtype=None):
    """An eager tensor (``stop_gradient=True``) holding ``value`` (ndarray, LoDTensor or Tensor). A Variable
    comes back as it is, in either mode: a layer's forward may call ``to_variable`` on its input in static mode.
    On the CPU the tensor shares an ndarray's memory unless ``zero_copy=False`` (None means share, as fluid);
    on a GPU it is always a copy.

    Raises:
        AssertionError: data outside dygraph mode, or ``zero_copy=True`` on a GPU place (as fluid).
        TypeError: for other value types.
    """
    if isinstance(value, Tensor):
        return value if dtype is None else value.astype(dtype)
    if isinstance(value, Variable):
        from ..layers import cast  # here: layers/ imports this package
        return value if dtype is None else cast(value, dtype)
    tracer = dygraph_mode._tracer
    assert tracer is not None, "to_variable could only be called in dygraph mode"
    if not isinstance(value, (np.ndarray, LoDTensor)) and not hasattr(value, "__cuda_array_interface__"):
        raise TypeError("The type of 'value' in fluid.dygraph.to_variable must be (numpy.ndarray, core.VarBase, "
                        f"framework.Variable, core.Tensor, core.LoDTensor), but received {type(value)}")
    t = tracer.from_numpy(value, name, zero_copy)
    return t if dtype is None else t.astype(dtype)


class BackwardStrategy:
    """fluid 1.8's ``fluid.dygraph.BackwardStrategy``, taken by ``loss.backward(strategy)``. ``sort_sum_gradient``
    asks that a tensor's gradients from several uses be summed in a fixed order; minifluid's backward always sums
    them in the tape's (deterministic) order, so the flag changes nothing."""

    def __init__(self):
        self.sort_sum_gradient = False


class no_grad:
    """Record nothing for backward: ``with no_grad():``, ``@no_grad`` or ``@no_grad()``."""

    def __new__(cls, fn=None):
        self = super().__new__(cls)
        self._saved = []
        return self if fn is None else self(fn)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper

    def __enter__(self):
        tracer = default_tracer()
        self._saved.append((tracer, tracer._has_grad))
        tracer._has_grad = False
        return self

    def __exit__(self, *exc):
        tracer, has_grad = self._saved.pop()
        tracer._has_grad = has_grad


def eager_api(fn):
    """paddle 2.x entry points run eagerly (2.x defaults to dynamic mode) unless ``paddle.enable_static()``
    asked for static mode: then they build graph ops, as fluid's layers do."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if dygraph_mode._tracer is not None or _static_requested:
            return fn(*args, **kwargs)
        old = dygraph_mode.switch_tracer(default_tracer())
        try:
            return fn(*args, **kwargs)
        finally:
            dygraph_mode.switch_tracer(old)
    wrapper.eager_api = True  # dygraph/layer.py: such layers make eager parameters by default
    return wrapper
