"""SelectedRows: some rows of a tall [height, ...] tensor, as fluid keeps sparse gradients (an embedding's
gradient touches only the rows its ids looked up).

``rows()`` are the row ids (they may repeat: each id's row of the value adds to that row), ``height()``
the row count of the dense tensor they index, ``get_tensor()`` the value tensor, one row per id. A scope
variable holds one through ``scope.var(name).get_selected_rows()``. The ops that read and write them are in
``ops/selected_rows.py`` (merging, densifying, the sparse optimizer updates).
"""
import numpy as np

from .lod_tensor import LoDTensor

__all__ = ["SelectedRows"]


class SelectedRows:
    """``SelectedRows(rows=[], height=0)``; the value tensor is filled through ``get_tensor().set(...)``."""

    __slots__ = ("_rows", "_height", "_tensor")
    is_selected_rows = True  # how the kernels know it (ops/selected_rows.py)

    def __init__(self, rows=(), height=0, value=None):
        self._rows = _ids(rows)
        self._height = int(height)
        self._tensor = LoDTensor(value)

    def rows(self):
        return list(self._rows)

    def set_rows(self, rows):
        self._rows = _ids(rows)

    def height(self):
        return self._height

    def set_height(self, height):
        self._height = int(height)

    def get_tensor(self):
        """The value tensor (one row per id), the object this SelectedRows holds: ``set`` on it fills it."""
        return self._tensor

    def sync_index(self):
        """fluid rebuilds its id -> row index here; ops look ids up when they need to, so nothing to do."""

    @property
    def value(self):
        """The value array (None before it is set)."""
        return self._tensor._array

    def row_ids(self):
        """The row ids as an int64 array."""
        return np.asarray(self._rows, dtype=np.int64)

    def copy(self):
        """A SelectedRows with the same rows and height and a copy of the value."""
        value = self.value
        return SelectedRows(self._rows, self._height, None if value is None else value.copy())

    def assign(self, other):
        """Take ``other``'s rows, height and value (an op's result written into a variable that holds this)."""
        self._rows, self._height = list(other._rows), other._height
        self._tensor._array = other._tensor._array

    def __repr__(self):
        shape = None if self.value is None else list(self.value.shape)
        return f"SelectedRows(rows={self._rows}, height={self._height}, value shape={shape})"


def _ids(rows):
    return [int(r) for r in (rows.tolist() if isinstance(rows, np.ndarray) else rows)]
