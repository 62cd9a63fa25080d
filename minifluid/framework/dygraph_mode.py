"""The dygraph (imperative) mode flag: the current tracer, or None in static mode.

Layers, the optimizer and the data loaders ask ``in_dygraph_mode()`` / ``current_tracer()`` here,
so none of them imports ``minifluid.dygraph`` (which sits above them). The tracer object is
installed by ``fluid.dygraph.guard()`` / ``enable_dygraph()``; it offers ``trace_op(type, inputs,
outputs, attrs)`` (run an op now, record it for backward), ``eager_tensor(array)`` (wrap data as an
eager tensor on the tracer's place) and ``expected_place``.
"""
__all__ = ["in_dygraph_mode", "current_tracer", "switch_tracer"]

_tracer = None
"""The installed tracer (dygraph mode) or None (static mode). Read directly on hot paths."""


def in_dygraph_mode():
    """True inside ``fluid.dygraph.guard()`` or after ``fluid.enable_dygraph()``."""
    return _tracer is not None


def current_tracer():
    """The tracer running ops eagerly, or None in static mode."""
    return _tracer


def switch_tracer(tracer):
    """Install ``tracer`` (None: static mode) and return the previous one."""
    global _tracer
    old, _tracer = _tracer, tracer
    return old
