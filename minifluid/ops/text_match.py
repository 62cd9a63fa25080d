"""Text-matching ops of fluid.contrib.layers over LoD batches: match_matrix_tensor, sequence_topk_avg_pooling and
var_conv_2d.

Each sample is a small matrix or image of its own size (its sizes from LoD lengths). The kernels pad the batch to
its largest sample, compute on the padded block with batched matmuls / sorts, and read the valid entries back
with one boolean mask (numpy's boolean indexing keeps C order, which is fluid's order of the entries); gradients
scatter through the same mask. No loop over samples.
"""
import numpy as np

from .registry import register_grad, register_op
from .sequence import lod_of, row_segments


def _lengths(ctx, slot, op_type):
    return np.asarray(lod_of(ctx, slot, op_type, max_levels=1)[-1], np.int64)


def _pad_rows(x, lengths, width=None):
    """Rows of each sequence in [batch, longest, ...] (zeros after a sequence's end)."""
    seq, pos, _ = row_segments(lengths)
    out = np.zeros((len(lengths), width if width is not None else int(lengths.max(initial=0))) + x.shape[1:], x.dtype)
    out[seq, pos] = x[:len(seq)]
    return out, (seq, pos)


def _grid_mask(*limits):
    """[batch, n0, n1, ...]: True where index k < limits[k][b] (an int limit: the whole axis, in every sample)."""
    b = len(next(lim for lim in limits if not np.isscalar(lim)))
    sizes = [int(lim) if np.isscalar(lim) else int(np.max(lim, initial=0)) for lim in limits]
    mask = np.ones([b] + sizes, bool)
    for k, lim in enumerate(limits):
        if not np.isscalar(lim):
            index = np.arange(sizes[k]).reshape([1] * (k + 1) + [sizes[k]] + [1] * (len(sizes) - k - 1))
            mask &= index < np.asarray(lim).reshape([b] + [1] * len(sizes))
    return mask


# --- match_matrix_tensor --------------------------------------------------------------------------------------------
@register_op("match_matrix_tensor", inputs=("X", "Y", "W"), outputs=("Out", "Tmp"), attrs={"dim_t": 1}, context=True,
             share_lod={"Out": "X"},  # Out's lod_level while building; the kernel sets its LoD
             infer_shape=lambda attrs, x, y, w: (((-1, 1), x.dtype), ((-1, 1), x.dtype)))
def _match_matrix_forward(ctx, attrs, x, y, w):
    """Out, per pair of sequences (x_b, y_b): [dim_t, len x_b, len y_b] = x_b W_t y_b^T, flattened; Tmp: x W
    ([rows of x, dim_t, h]) flattened to one column, as fluid keeps it."""
    lx, ly = _lengths(ctx, "X", "MatchMatrixTensorOp"), _lengths(ctx, "Y", "MatchMatrixTensorOp")
    if len(lx) != len(ly) or w.shape[0] != x.shape[1] or w.shape[2] != y.shape[1]:
        raise ValueError(f"match_matrix_tensor: X ({len(lx)} sequences, width {x.shape[1]}), Y ({len(ly)} sequences, "
                         f"width {y.shape[1]}) and W {w.shape} do not match")
    dim_t = w.shape[1]
    tmp = x @ w.reshape(w.shape[0], -1)  # [rows of x, dim_t * h]
    full = np.einsum("bith,bjh->btij", _pad_rows(tmp.reshape(-1, dim_t, w.shape[2]), lx)[0], _pad_rows(y, ly)[0])
    ctx.set_output_lod("Out", [(dim_t * lx * ly).tolist()])
    return full[_grid_mask(dim_t, lx, ly)].reshape(-1, 1), tmp.reshape(-1, 1)


@register_grad("match_matrix_tensor")
def _match_matrix_backward(ctx, attrs, ins, outs, douts, need):
    (x, y, w), (_, tmp), dout = ins, outs, douts[0]
    lx, ly = np.asarray(ctx.input_lod("X")[-1], np.int64), np.asarray(ctx.input_lod("Y")[-1], np.int64)
    dim_t, h = w.shape[1], w.shape[2]
    mask = _grid_mask(dim_t, lx, ly)
    dfull = np.zeros(mask.shape, dout.dtype)
    dfull[mask] = dout.reshape(-1)
    tmp_pad, (sx, px) = _pad_rows(tmp.reshape(-1, dim_t, h), lx)
    y_pad, (sy, py) = _pad_rows(y, ly)
    dtmp = np.einsum("btij,bjh->bith", dfull, y_pad)[sx, px].reshape(x.shape[0], -1)
    dy = np.einsum("btij,bith->bjh", dfull, tmp_pad)[sy, py] if need[1] else None
    w2 = w.reshape(w.shape[0], -1)
    return (dtmp @ w2.T if need[0] else None, dy, (x.T @ dtmp).reshape(w.shape) if need[2] else None)


# --- sequence_topk_avg_pooling -----------------------------------------------------------------------------------
def _topk_grid(ctx, attrs, x):
    rows, cols = _lengths(ctx, "ROW", "SequenceTopkAvgPoolingOp"), _lengths(ctx, "COLUMN", "SequenceTopkAvgPoolingOp")
    channels, lx = attrs["channel_num"], _lengths(ctx, "X", "SequenceTopkAvgPoolingOp")
    if len(rows) != len(lx) or len(cols) != len(lx) or np.any(lx != channels * rows * cols):
        raise ValueError(f"sequence_topk_avg_pooling: each sequence of X must hold channel_num * rows * columns "
                         f"values; got X lengths {lx.tolist()}, ROW {rows.tolist()}, COLUMN {cols.tolist()}, "
                         f"channel_num {channels}")
    return rows, cols, _grid_mask(channels, rows, cols)


def _topk_infer(attrs, x, row, col):
    return ((-1, len(attrs["topks"]) * attrs["channel_num"]), x.dtype), ((-1,), "int32")


@register_op("sequence_topk_avg_pooling", inputs=("X", "ROW", "COLUMN"), outputs=("Out", "pos"), context=True,
             attrs={"topks": [], "channel_num": 1}, no_grad_inputs=("ROW", "COLUMN"), infer_shape=_topk_infer,
             share_lod={"Out": "ROW"})
def _topk_avg_forward(ctx, attrs, x, row, col):
    """Out, per row of each channel: the averages of its top-k values (k in ``topks``, zeros past the row's
    width), laid out [rows, channel, len(topks)]; pos: the column of each of the row's max(topks) largest (-1)."""
    topks = list(attrs["topks"])
    if not topks or any(k < 1 for k in topks) or topks != sorted(topks):
        raise ValueError(f"sequence_topk_avg_pooling: topks must be increasing positive ints, got {topks}")
    rows, cols, mask = _topk_grid(ctx, attrs, x)
    grid = np.full(mask.shape, -np.inf, x.dtype)
    grid[mask] = x.reshape(-1)
    k_max = topks[-1]
    order = np.argsort(-grid, axis=-1, kind="stable")[..., :k_max]  # [b, c, r, <= k_max]
    values = np.take_along_axis(grid, order, axis=-1)
    valid = np.isfinite(values)
    order = np.pad(np.where(valid, order, -1), [(0, 0)] * 3 + [(0, k_max - order.shape[-1])], constant_values=-1)
    sums = np.concatenate([np.zeros(values.shape[:-1] + (1,), x.dtype), np.where(valid, values, 0).cumsum(-1)], -1)
    taken = [min(k, sums.shape[-1] - 1) for k in topks]  # fewer values than k: zeros make up the rest
    avg = sums[..., taken] / np.asarray(topks, x.dtype)  # [b, c, r, len(topks)]
    keep = np.arange(mask.shape[2])[None, :] < rows[:, None]
    ctx.set_output_lod("Out", [rows.tolist()])
    out = avg.transpose(0, 2, 1, 3)[keep].reshape(-1, len(topks) * attrs["channel_num"])
    return out.astype(x.dtype, copy=False), order.transpose(0, 2, 1, 3)[keep].reshape(-1).astype(np.int32)


@register_grad("sequence_topk_avg_pooling")
def _topk_avg_backward(ctx, attrs, ins, outs, douts, need):
    (x, _, _), (_, pos), dout = ins, outs, douts[0]
    topks, channels = list(attrs["topks"]), attrs["channel_num"]
    rows, cols, mask = _topk_grid(ctx, attrs, x)
    keep = np.arange(mask.shape[2])[None, :] < rows[:, None]
    k_max = topks[-1]
    # the rank-m value of a row takes 1/k of the gradient of every average over k > m values
    weights = (np.arange(k_max)[None, :] < np.asarray(topks)[:, None]) / np.asarray(topks, x.dtype)[:, None]
    per_rank = dout.reshape(-1, channels, len(topks)) @ weights  # [kept rows, channel, k_max]
    b, r = np.nonzero(keep)
    where = pos.reshape(-1, channels, k_max)
    hit = where >= 0
    grid = np.zeros(mask.shape, x.dtype)
    bb, cc, mm = np.nonzero(hit)
    grid[b[bb], cc, r[bb], where[bb, cc, mm]] = per_rank[bb, cc, mm]
    return grid[mask].reshape(x.shape), None, None


# --- var_conv_2d -----------------------------------------------------------------------------------------------
def _conv_geometry(ctx, attrs, x):
    rows, cols = _lengths(ctx, "ROW", "VarConv2dOp"), _lengths(ctx, "COLUMN", "VarConv2dOp")
    c_in, lx = attrs["InputChannel"], _lengths(ctx, "X", "VarConv2dOp")
    if len(rows) != len(lx) or len(cols) != len(lx) or np.any(lx != c_in * rows * cols):
        raise ValueError(f"var_conv_2d: each sequence of X must hold InputChannel * rows * columns values; got X "
                         f"lengths {lx.tolist()}, ROW {rows.tolist()}, COLUMN {cols.tolist()}, InputChannel {c_in}")
    sh, sw = attrs["StrideH"], attrs["StrideW"]
    top_h, top_w = np.where(rows > 0, (rows - 1) // sh + 1, 0), np.where(cols > 0, (cols - 1) // sw + 1, 0)
    return rows, cols, top_h, top_w


def _windows(img, attrs, th, tw):
    """[b, c, kh, kw, th, tw]: each output position's kernel window, zero outside the image ("same" padding)."""
    kh, kw, sh, sw = attrs["KernelH"], attrs["KernelW"], attrs["StrideH"], attrs["StrideW"]
    padded = np.pad(img, [(0, 0), (0, 0), (kh // 2, kh - 1 - kh // 2 + sh * th), (kw // 2, kw - 1 - kw // 2 + sw * tw)])
    view = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))
    return view[:, :, :sh * th:sh, :sw * tw:sw].transpose(0, 1, 4, 5, 2, 3)


def _var_conv_infer(attrs, x, row, col, w):
    return ((-1, 1), x.dtype), ((-1, 1), x.dtype)


@register_op("var_conv_2d", inputs=("X", "ROW", "COLUMN", "W"), outputs=("Out", "Col"), context=True,
             attrs={"InputChannel": 1, "OutputChannel": 1, "KernelH": 1, "KernelW": 1, "StrideH": 1, "StrideW": 1},
             no_grad_inputs=("ROW", "COLUMN"), infer_shape=_var_conv_infer, share_lod={"Out": "X", "Col": "X"})
def _var_conv_forward(ctx, attrs, x, row, col, w):
    """Each sample an InputChannel x rows x columns image; Out: W [OutputChannel, InputChannel * KH * KW] times its
    windows, [OutputChannel, top_h, top_w] flattened; Col: the windows, [InputChannel * KH * KW, top_h * top_w]."""
    rows, cols, top_h, top_w = _conv_geometry(ctx, attrs, x)
    c_in, c_out = attrs["InputChannel"], attrs["OutputChannel"]
    if w.shape != (c_out, c_in * attrs["KernelH"] * attrs["KernelW"]):
        raise ValueError(f"var_conv_2d: W must be [OutputChannel, InputChannel * KernelH * KernelW] = "
                         f"{[c_out, c_in * attrs['KernelH'] * attrs['KernelW']]}, got {list(w.shape)}")
    img_mask = _grid_mask(c_in, rows, cols)
    img = np.zeros(img_mask.shape, x.dtype)
    img[img_mask] = x.reshape(-1)
    th, tw = int(top_h.max(initial=0)), int(top_w.max(initial=0))
    windows = _windows(img, attrs, th, tw).reshape(len(rows), -1, th, tw)
    out = np.einsum("ok,bkhw->bohw", w, windows)
    ctx.set_output_lod("Out", [(c_out * top_h * top_w).tolist()])
    ctx.set_output_lod("Col", [(w.shape[1] * top_h * top_w).tolist()])
    return (out[_grid_mask(c_out, top_h, top_w)].reshape(-1, 1),
            windows[_grid_mask(w.shape[1], top_h, top_w)].reshape(-1, 1))


@register_grad("var_conv_2d")
def _var_conv_backward(ctx, attrs, ins, outs, douts, need):
    (x, _, _, w), (_, col), dout = ins, outs, douts[0]
    rows, cols, top_h, top_w = _conv_geometry(ctx, attrs, x)
    kh, kw, sh, sw = attrs["KernelH"], attrs["KernelW"], attrs["StrideH"], attrs["StrideW"]
    c_in, c_out, b = attrs["InputChannel"], attrs["OutputChannel"], len(rows)
    out_mask, col_mask = _grid_mask(c_out, top_h, top_w), _grid_mask(w.shape[1], top_h, top_w)
    dfull = np.zeros(out_mask.shape, x.dtype)
    dfull[out_mask] = dout.reshape(-1)
    windows = np.zeros(col_mask.shape, x.dtype)
    windows[col_mask] = col.reshape(-1)
    dw = np.einsum("bohw,bkhw->ok", dfull, windows) if need[3] else None
    dx = None
    if need[0]:
        th, tw = out_mask.shape[2:]
        dwin = np.einsum("ok,bohw->bkhw", w, dfull).reshape(b, c_in, kh, kw, th, tw)
        img_mask = _grid_mask(c_in, rows, cols)
        dpad = np.zeros((b, c_in, img_mask.shape[2] + kh - 1 + sh * th, img_mask.shape[3] + kw - 1 + sw * tw), x.dtype)
        for ky in range(kh):  # col2im: one strided add per kernel offset
            for kx in range(kw):
                dpad[:, :, ky:ky + sh * th:sh, kx:kx + sw * tw:sw] += dwin[:, :, ky, kx]
        dimg = dpad[:, :, kh // 2:kh // 2 + img_mask.shape[2], kw // 2:kw // 2 + img_mask.shape[3]]
        dx = dimg[img_mask].reshape(x.shape)
    return dx, None, None, dw
