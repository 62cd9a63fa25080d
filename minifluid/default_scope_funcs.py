"""``fluid.default_scope_funcs``: a per-thread stack of Scopes for code that manages scopes by hand.

The top of the stack is the current scope (a new Scope at the bottom the first time a thread asks);
``enter_local_scope`` pushes a child of it, ``leave_local_scope`` pops it and drops the children of the
scope below; ``var`` / ``find_var`` make or find a variable in the current scope; ``scoped_function(fn)``
calls ``fn`` inside a local scope that is left whatever ``fn`` does.
"""
import threading

from .executor.scope import Scope

__all__ = ["enter_local_scope", "find_var", "get_cur_scope", "leave_local_scope", "scoped_function", "var"]

_local = threading.local()


def _stack():
    stack = getattr(_local, "scopes", None)
    if stack is None:
        stack = _local.scopes = []
    if not stack:
        stack.append(Scope())
    return stack


def get_cur_scope():
    """This thread's current scope."""
    return _stack()[-1]


def enter_local_scope():
    """Make a child of the current scope the current scope."""
    stack = _stack()
    stack.append(stack[-1].new_scope())


def leave_local_scope():
    """Leave the current local scope; the scope below drops its children."""
    stack = _stack()
    if len(stack) > 1:
        stack.pop()
    stack[-1].drop_kids()


def var(name):
    """Make (or get) variable ``name`` in the current scope."""
    return get_cur_scope().var(name)


def find_var(name):
    """Variable ``name`` in the current scope or its parents, else None."""
    return get_cur_scope().find_var(name)


def scoped_function(func):
    """Call ``func()`` inside a new local scope."""
    enter_local_scope()
    try:
        func()
    finally:
        leave_local_scope()
