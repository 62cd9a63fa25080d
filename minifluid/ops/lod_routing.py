"""Row routing ops of fluid 1.8's control flow: split_lod_tensor and merge_lod_tensor (IfElse: the rows, or
the sequences at a LoD level, a bool mask sends to each branch, and back), select_input and select_output
(cond: one of several variables by an int32 index), with their gradients.

NOTE [ Routing sequences ]
Without LoD the mask has one entry per row. With LoD it has one per unit of LoD ``level`` (a sequence, or a
sequence of sequences), and a branch gets its units whole, with their nested LoD from that level down
(lod_rank.descend). Merging lays the two branches' units (top-level sequences of their LoD, or rows when
they have none) end to end and takes them in mask order, so a branch may have changed its units' lengths
(pooled each sequence to a row, say); the result has X's LoD above ``level`` on top of the merged ones.
"""
import numpy as np

from .lod_rank import descend
from .registry import array_module, register_grad, register_op

__all__ = []


def _mask(mask, units, op_type):
    m = np.asarray(mask.get() if hasattr(mask, "get") and not isinstance(mask, np.ndarray) else mask)
    m = m.reshape(-1).astype(bool)
    if m.size != units:
        raise ValueError(f"{op_type}: the mask has {m.size} entries but X has {units} "
                         f"{'sequences at the split level' if units is not None else 'rows'}")
    return m


def _split_plan(lod, level, mask, num_rows, op_type="split_lod_tensor"):
    """(rows, nested LoD) of the true units and of the false ones (see the NOTE)."""
    if not lod:
        m = _mask(mask, num_rows, op_type)
        return (np.flatnonzero(m), []), (np.flatnonzero(~m), [])
    if level >= len(lod):
        raise ValueError(f"{op_type}: level {level} is out of X's {len(lod)} LoD level(s)")
    m = _mask(mask, len(lod[level]), op_type)
    parts = []
    for units in (np.flatnonzero(m), np.flatnonzero(~m)):
        sub, rows = descend(lod[level:], units)
        parts.append((rows, [s.tolist() for s in sub]))
    return parts


@register_op("split_lod_tensor", inputs=("X", "Mask"), outputs=("OutTrue", "OutFalse"), attrs={"level": 0},
             no_grad_inputs=("Mask",), context=True)
def _split_lod_tensor_forward(ctx, attrs, x, mask):
    """The units (rows, or sequences at ``level``) of X where Mask is true, and those where it is false."""
    (t_rows, t_lod), (f_rows, f_lod) = _split_plan(ctx.input_lod("X"), attrs["level"], mask, len(x))
    ctx.set_output_lod("OutTrue", t_lod)
    ctx.set_output_lod("OutFalse", f_lod)
    return x[t_rows], x[f_rows]


@register_grad("split_lod_tensor")
def _split_lod_tensor_backward(ctx, attrs, ins, outs, douts, need):
    (x, mask), (d_true, d_false) = ins, douts
    lod = ctx.input_lod("X")
    (t_rows, _), (f_rows, _) = _split_plan(lod, attrs["level"], mask, len(x))
    dx = array_module(x).zeros_like(x)
    for rows, d in ((t_rows, d_true), (f_rows, d_false)):
        if d is not None:
            dx[rows] = d
    ctx.set_output_lod("X@GRAD", lod)
    return dx, None


def _units(part, lod):
    return 0 if part is None else len(lod[0]) if lod else len(part)


def _merge_plan(ctx, level, mask, in_true, in_false, x, op_type="merge_lod_tensor"):
    """(the branches laid end to end, rows of that in output order, output LoD); see the NOTE."""
    x_lod = ctx.input_lod("X")
    lods = [ctx.input_lod(slot) if part is not None else [] for slot, part in (("InTrue", in_true),
                                                                             ("InFalse", in_false))]
    m = _mask(mask, len(x_lod[level]) if x_lod else len(x), op_type)
    want = (int(m.sum()), int((~m).sum()))
    ref = in_true if in_true is not None else in_false if in_false is not None else x
    xp = array_module(ref)
    parts = []
    for slot, part, lod, n in zip(("InTrue", "InFalse"), (in_true, in_false), lods, want):
        if part is None and n:  # a branch that never ran: zeros, one row per unit
            part = xp.zeros((n,) + tuple(ref.shape[1:]), ref.dtype)
        if _units(part, lod) != n:
            raise ValueError(f"{op_type}: {slot} has {_units(part, lod)} {'sequences' if lod else 'rows'} but "
                             f"the mask selects {n}")
        parts.append(part if part is not None else ref[:0])
    order = np.empty(m.size, np.int64)
    order[m], order[~m] = np.arange(want[0]), want[0] + np.arange(want[1])
    depth = {len(lod) for lod, n in zip(lods, want) if n}
    if len(depth) > 1:
        raise ValueError(f"{op_type}: InTrue and InFalse have LoDs of different depths {sorted(depth)}")
    if depth and depth.pop():
        levels = [np.concatenate([np.asarray(lod[k], np.int64) for lod, n in zip(lods, want) if n])
                  for k in range(len(next(lod for lod, n in zip(lods, want) if n)))]
        sub, rows = descend(levels, order)
        out_lod = [list(v) for v in x_lod[:level]] + [s.tolist() for s in sub]
    else:
        rows, out_lod = order, [list(v) for v in x_lod[:level]]
    return xp.concatenate(parts), rows, out_lod


def _merge_lod_tensor_forward(ctx, attrs, x, mask, in_true, in_false):
    """InTrue's units where Mask is true and InFalse's elsewhere, in Mask's order (see the NOTE)."""
    stacked, rows, lod = _merge_plan(ctx, attrs["level"], mask, in_true, in_false, x)
    ctx.set_output_lod("Out", lod)
    return stacked[rows]


for _type, _no_gradient in (("merge_lod_tensor", False), ("merge_lod_tensor_infer", True)):
    register_op(_type, inputs=("X", "Mask", "InTrue", "InFalse"), outputs=("Out",), attrs={"level": 0},
                optional=("InTrue", "InFalse"), no_grad_inputs=("X", "Mask"), context=True,
                no_gradient=_no_gradient)(_merge_lod_tensor_forward)


@register_grad("merge_lod_tensor")
def _merge_lod_tensor_backward(ctx, attrs, ins, outs, douts, need):
    (x, mask, in_true, in_false), dout = ins, douts[0]
    stacked, rows, _ = _merge_plan(ctx, attrs["level"], mask, in_true, in_false, x)
    d = array_module(dout).zeros((len(stacked),) + tuple(dout.shape[1:]), dout.dtype)
    d[rows] = dout
    n_true = 0 if in_true is None else len(in_true)
    return None, None, d[:n_true] if need[2] else None, d[n_true:] if need[3] else None


def _index(mask, n, op_type):
    k = int(np.asarray(mask.get() if hasattr(mask, "get") and not isinstance(mask, np.ndarray) else mask).reshape(-1)[0])
    if not 0 <= k < n:
        raise ValueError(f"{op_type}: Mask selects {k}, out of the {n} variables")
    return k


@register_op("select_input", inputs=("X", "Mask"), outputs=("Out",), duplicable=("X",), no_grad_inputs=("Mask",))
def _select_input_forward(attrs, xs, mask):
    """``X[Mask]``: the branch output cond picked (Mask: an int32 [1] index)."""
    k = _index(mask, len(xs), "select_input")
    if xs[k] is None:
        raise ValueError(f"select_input: Mask selects input {k} of {len(xs)}, which has no value")
    return xs[k]


@register_grad("select_input")
def _select_input_backward(attrs, ins, outs, douts, need):
    k = _index(ins[1], len(ins[0]), "select_input")  # zeros for the branch not taken (None: it never ran)
    return [douts[0] if j == k else None if x is None else array_module(x).zeros_like(x)
            for j, x in enumerate(ins[0])], None


@register_op("select_output", inputs=("X", "Mask"), outputs=("Out",), duplicable=("Out",), no_grad_inputs=("Mask",),
             context=True)
def _select_output_forward(ctx, attrs, x, mask):
    """``Out[Mask] = X``; the other outputs keep what they hold."""
    names = ctx.op.outputs["Out"]
    k = _index(mask, len(names), "select_output")
    ctx.set_output_lod("Out", ctx.input_lod("X"), k)
    return [x if j == k else ctx.find_value(name) for j, name in enumerate(names)]


@register_grad("select_output")
def _select_output_backward(ctx, attrs, ins, outs, douts, need):
    x, mask = ins
    d = douts[0][_index(mask, len(douts[0]), "select_output")]
    return (d if d is not None else array_module(x).zeros_like(x)), None
