"""``name_scope`` and ``device_guard``: context managers whose state each new Operator records in its
``op_namescope`` ("/s1/s2/") and ``op_device`` ("cpu" / "gpu") attributes, as fluid's do.

Both are labels: the Executor runs every op on the Program's place (device_guard("gpu") on a CPU place
runs on the CPU, as fluid does when no GPU is there). In dygraph mode name_scope does nothing (fluid's
neither).
"""
import contextlib

from . import dygraph_mode

__all__ = ["current_device", "current_name_scope", "device_guard", "name_scope"]


class _NameScope:
    """One level of the scope tree; a prefix used again under the same parent becomes prefix_1, prefix_2 ..."""

    def __init__(self, name="", parent=None):
        self.name, self.parent, self.children = name, parent, {}

    def child(self, prefix):
        siblings = self.children.setdefault(prefix, [])
        node = _NameScope(prefix if not siblings else f"{prefix}_{len(siblings)}", self)
        siblings.append(node)
        return node


_scope = _NameScope()
_device = None


def current_name_scope():
    """The full scope of ops built now: "/" at the top, "/s1/s2/" inside name_scope("s1") / ("s2")."""
    parts, node = [], _scope
    while node is not None:
        parts.append(node.name)
        node = node.parent
    return "/".join(reversed(parts)) + "/"


def current_device():
    """The device_guard in force ("cpu", "gpu"), or None."""
    return _device


@contextlib.contextmanager
def name_scope(prefix=None):
    """Ops built inside carry ``op_namescope`` = the enclosing scopes' names ("/s1/s2/")."""
    global _scope
    if dygraph_mode.in_dygraph_mode():
        yield
        return
    if not prefix:
        raise ValueError("namescope prefix can not be empty.")
    parent = _scope
    _scope = parent.child(str(prefix))
    try:
        yield
    finally:
        _scope = parent


@contextlib.contextmanager
def device_guard(device=None):
    """Ops built inside carry ``op_device`` = ``device`` ("cpu" or "gpu"; None or "" for no choice)."""
    global _device
    if device not in ("cpu", "gpu", "", None):
        raise ValueError("The Attr(device) should be 'cpu' or 'gpu', and it can also be empty string or None "
                         f"when there is no need to specify device. But received {device}")
    previous, _device = _device, device or None
    try:
        yield
    finally:
        _device = previous
