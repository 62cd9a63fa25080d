"""Scope: name -> value store that Executors read and write; global_scope and scope_guard.

Values are raw arrays (numpy or CuPy) or runtime objects (reader queues); LoD travels
beside them in ``_lods`` so kernels only ever see plain arrays.
"""
import contextlib

import numpy as np

from ..lod_tensor import LoDTensor, LoDTensorArray
from ..selected_rows import SelectedRows

__all__ = ["Scope", "global_scope", "scope_guard"]


class _ScopeTensor(LoDTensor):
    """The tensor of one scope entry, live as fluid's is: it reads the entry's current value and LoD (an op
    run after ``get_tensor()`` is seen through it), and ``set`` / ``set_lod`` write through to the scope."""

    __slots__ = ("_scope", "_name")

    def __init__(self, scope, name):  # noqa: super().__init__ would write the scope's own values back
        self._scope, self._name, self._placement = scope, name, None

    @property
    def _array(self):
        return self._scope._vars.get(self._name)

    @_array.setter
    def _array(self, value):
        self._scope._vars[self._name] = value

    @property
    def _lod(self):
        return self._scope._lods.get(self._name) or []

    @_lod.setter
    def _lod(self, value):
        if value:
            self._scope._lods[self._name] = value
        else:
            self._scope._lods.pop(self._name, None)

    def set(self, array, place=None):
        """Copies, as fluid does: optimizer kernels update scope values in place, which must never
        write into an array the user still holds."""
        super().set(array, place)
        held = self._array
        if held is array or getattr(held, "base", None) is not None:
            self._array = held.copy()


class _ScopeVar:
    """What ``scope.var(name)`` / ``find_var(name)`` return (fluid's core.Variable)."""

    __slots__ = ("_scope", "_name")

    def __init__(self, scope, name):
        self._scope, self._name = scope, name

    def get_tensor(self):
        return _ScopeTensor(self._scope, self._name)

    def get_lod_tensor_array(self):
        """The tensor array this variable holds, as fluid's LoDTensorArray (one LoDTensor per entry)."""
        value = self._scope._vars.get(self._name)
        if value is None:  # a new variable: the array is the scope's, so appending to it fills the variable
            value = self._scope._vars[self._name] = LoDTensorArray()
        if isinstance(value, LoDTensorArray):
            return value
        if not isinstance(value, list):
            raise TypeError(f"Variable {self._name!r} holds {type(value).__name__}, not a tensor array "
                            "(fluid.layers.create_array)")
        return LoDTensorArray(LoDTensor(*entry) if entry is not None else LoDTensor() for entry in value)

    def get_selected_rows(self):
        """The SelectedRows this variable holds (a new, empty one for a new variable, kept in the scope)."""
        value = self._scope._vars.get(self._name)
        if value is None:
            value = self._scope._vars[self._name] = SelectedRows()
        if not isinstance(value, SelectedRows):
            raise TypeError(f"Variable {self._name!r} holds {type(value).__name__}, not SelectedRows")
        return value

    def get_lod_rank_table(self):
        """The rank table this variable holds (``items()``: [(index, length)], longest first)."""
        return self._scope._vars.get(self._name)

    def get_reader(self):
        return self._scope._vars.get(self._name)

    def is_initialized(self):
        return self._scope._vars.get(self._name) is not None

    def set_value(self, value):
        self._scope._vars[self._name] = value

    def set_float(self, value):
        """fluid's scalar variables: stored as a one-element float32 tensor, as kernels read them."""
        self._scope._vars[self._name] = np.array([value], dtype="float32")

    def set_int(self, value):
        self._scope._vars[self._name] = np.array([value], dtype="int32")

    def value(self):
        return self._scope._vars.get(self._name)

    def is_int(self):
        value = self._scope._vars.get(self._name)
        return getattr(value, "dtype", None) == np.int32 and value.size == 1

    def get_int(self):
        if not self.is_int():
            raise TypeError(f"Variable {self._name!r} holds no int")
        return int(self._scope._vars[self._name].reshape(-1)[0])


class Scope:
    """A table of values; ``find_var`` also looks in parent scopes."""

    def __init__(self, parent=None):
        self._vars = {}
        self._lods = {}
        self._parent = parent
        self._kids = []

    def var(self, name):
        self._vars.setdefault(name, None)
        return _ScopeVar(self, name)

    def find_var(self, name):
        scope = self
        while scope is not None:
            if name in scope._vars:
                return _ScopeVar(scope, name)
            scope = scope._parent
        return None

    def find_value(self, name):
        scope = self
        while scope is not None:
            if name in scope._vars:
                return scope._vars[name]
            scope = scope._parent
        return None

    def _remove_from_pool(self):
        """Release the scope's values (fluid deletes the scope); a second removal is an error, as in fluid."""
        if self.__dict__.get("_removed"):
            raise RuntimeError("Deleting a nonexistent scope is not allowed")
        self._vars.clear()
        self._lods.clear()
        self._kids.clear()
        self._removed = True

    def new_scope(self):
        kid = Scope(self)
        self._kids.append(kid)
        return kid

    def drop_kids(self):
        self._kids.clear()

    def local_var_names(self):
        return list(self._vars)

    def erase(self, names):
        for n in names:
            self._vars.pop(n, None)
            self._lods.pop(n, None)


_global_scope = Scope()


def global_scope():
    return _global_scope


@contextlib.contextmanager
def scope_guard(scope):
    """Make ``scope`` the global scope inside the block."""
    global _global_scope
    old, _global_scope = _global_scope, scope
    try:
        yield
    finally:
        _global_scope = old
