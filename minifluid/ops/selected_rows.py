"""Kernels over SelectedRows values (minifluid/selected_rows.py): merging repeated rows, densifying, the ops
merge_selected_rows and get_tensor_from_selected_rows, and the SelectedRows cases of scale, sum and
clip_by_norm (their kernels in math.py hand them here) and of the optimizer updates (optimizer.py).

The value type lives above the ops (it holds a LoDTensor), so kernels know it by what it offers, never by
import: ``is_selected_rows(x)`` (its class says ``is_selected_rows = True``), ``row_ids()``, ``height()``,
``value`` and its constructor ``type(x)(rows, height, value)`` for results.

NOTE [ Merging rows ]
A SelectedRows may name a row more than once (an id looked up twice in a batch); each copy adds to that row.
``merged`` sums them with a few calls over all rows, never a loop over ids: the ids sorted (stable), the
start of each run of equal ids found with one comparison, np.add.reduceat summing each run's values. The
ids come out unique and ascending, as fluid's MergeAdd gives them, so a fancy-indexed ``+=`` with them is
exact. The optimizer updates follow fluid's sparse kernels: sgd and adagrad (and adam with ``lazy_mode``)
touch only the gradient's rows; momentum, rmsprop, lamb and adam update every row, a missing one with a
zero gradient (``to_dense``).
"""
import math

import numpy as np

from .registry import register_op

__all__ = ["add_into", "check_rows", "clip_by_norm", "is_selected_rows", "merged", "positions", "scale", "sum_of",
           "to_dense"]


def is_selected_rows(x):
    """True for a SelectedRows value (cheap for arrays, which kernels mostly see)."""
    return type(x) is not np.ndarray and getattr(type(x), "is_selected_rows", False)


def _value(sr, who):
    value = sr.value
    if value is None:
        raise ValueError(f"{who}: the SelectedRows has no value tensor (get_tensor().set(...) fills it)")
    count = len(sr.row_ids())
    if value.shape[0] != count:
        raise ValueError(f"{who}: the SelectedRows has {count} row ids but a value of {value.shape[0]} rows")
    return value


def merged(sr, who="SelectedRows"):
    """(unique ascending row ids, their summed value rows) of ``sr`` (NOTE [ Merging rows ])."""
    value, ids = _value(sr, who), sr.row_ids()
    if ids.size == 0:
        return ids, value[:0]
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    if starts.size == ids.size:
        return ids, value[order]
    return ids[starts], np.add.reduceat(value[order], starts, axis=0)


def check_rows(ids, height, who):
    """Refuse a row id (ascending ``ids``) outside [0, height), naming it."""
    if ids.size and (ids[0] < 0 or ids[-1] >= height):
        bad = ids[0] if ids[0] < 0 else ids[-1]
        raise ValueError(f"{who}: row id {int(bad)} is out of range for a tensor of {height} rows")


def to_dense(sr, height=None, who="SelectedRows"):
    """The dense [height, ...] tensor ``sr`` stands for (rows it does not name are zero)."""
    ids, value = merged(sr, who)
    height = sr.height() if height is None else height
    check_rows(ids, height, who)
    dense = np.zeros((height,) + value.shape[1:], dtype=value.dtype)
    dense[ids] = value
    return dense


def add_into(dense, sr, who="SelectedRows"):
    """``dense[rows] += value`` for every row ``sr`` names (repeated rows summed); returns ``dense``."""
    ids, value = merged(sr, who)
    check_rows(ids, dense.shape[0], who)
    dense[ids] += value
    return dense


def positions(sr, ids, who="SelectedRows"):
    """The value rows of ``sr`` that hold row ids ``ids`` (an int array of any shape): one sort of the held
    ids and a binary search for all of them; an id it does not hold is an error naming it."""
    held = sr.row_ids()
    order = np.argsort(held, kind="stable")
    ordered = held[order]
    at = np.searchsorted(ordered, ids)
    found = at < held.size
    found[found] = ordered[at[found]] == ids[found]
    if not found.all():
        raise ValueError(f"{who}: the SelectedRows holds no row {int(ids[~found].reshape(-1)[0])} (its rows: "
                         f"{sr.rows()})")
    return order[at]


def scale(sr, fn):
    """``fn`` applied to the value of ``sr``, rows and height kept (scale's SelectedRows case)."""
    return type(sr)(sr.rows(), sr.height(), fn(_value(sr, "scale")))


def sum_of(xs):
    """sum's SelectedRows cases: all SelectedRows -> their rows merged into one SelectedRows (inputs with no
    rows skipped, as fluid's MergeAdd does); any dense input -> a dense sum with each SelectedRows added in."""
    sparse = [x for x in xs if is_selected_rows(x)]
    dense = [x for x in xs if not is_selected_rows(x)]
    if not dense:
        cls, filled = type(sparse[0]), [x for x in sparse if len(x.row_ids())]
        if not filled:
            return cls([], sparse[0].height())
        rows = np.concatenate([x.row_ids() for x in filled])
        value = np.concatenate([_value(x, "sum") for x in filled])
        ids, value = merged(cls(rows, 0, value), "sum")
        return cls(ids, filled[0].height(), value)
    out = dense[0].copy()
    for x in dense[1:]:
        out += x
    for x in sparse:
        add_into(out, x, "sum")
    return out


def clip_by_norm(sr, max_norm):
    """clip_by_norm's SelectedRows case: the rows merged, then scaled down to ``max_norm`` when longer."""
    ids, value = merged(sr, "clip_by_norm")
    norm = math.sqrt(float((value * value).sum()))
    if norm > max_norm:
        value = value * (max_norm / norm)
    return type(sr)(ids, sr.height(), value)


def _selected(x, op_type):
    if not is_selected_rows(x):
        raise TypeError(f"{op_type}: Input(X) must hold SelectedRows, got {type(x).__name__}")
    return x


@register_op("merge_selected_rows", inputs=("X",), outputs=("Out",), no_gradient=True)
def _merge_selected_rows(attrs, x):
    ids, value = merged(_selected(x, "merge_selected_rows"), "merge_selected_rows")
    return type(x)(ids, x.height(), value)


@register_op("get_tensor_from_selected_rows", inputs=("X",), outputs=("Out",), no_gradient=True)
def _get_tensor_from_selected_rows(attrs, x):
    return _value(_selected(x, "get_tensor_from_selected_rows"), "get_tensor_from_selected_rows").copy()
