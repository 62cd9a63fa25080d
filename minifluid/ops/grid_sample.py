"""Spatial transformer ops: affine_grid and grid_sampler (fluid 1.8's: bilinear, zero padding, corners aligned).

affine_grid maps every output pixel's normalised position (x, y, 1), x and y evenly spaced over [-1, 1]
from the first pixel's centre to the last's, through each sample's 2x3 ``Theta``: one batched matrix
product. grid_sampler reads the input at each grid point, (-1, -1) the top-left pixel and (1, 1) the
bottom-right one, as the bilinear mix of the four pixels around it; a neighbour outside the image reads
zero. The four neighbours are gathered with computed row indices over the whole batch (the input read
channels-last), and the input's gradient is one ``bincount`` over all of them.
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _known(d):
    return d >= 0


# --- affine_grid: Output[n, h, w] = Theta[n] @ (x_w, y_h, 1) ---------------------------------------------
def _ag_infer(attrs, theta, output_shape):
    ts, size = list(theta.shape), list(attrs["output_shape"])
    if len(ts) != 3:
        raise ValueError(f"The input Theta's dimensions size should be 3. But received Theta's demensions "
                         f"size=[{len(ts)}],  Theta's dimensions=[{ts}].")
    if not size and output_shape is None:
        raise ValueError("The input 'OutputShape' of AffineGridOp should not be null if 'output_shape' is not "
                         "configured.")
    if not size and len(output_shape.shape) != 1:
        raise ValueError(f"The dimesions size of input OutputShape in AffineGridOp should be 1. But received "
                         f"OutputShape's  dimesions size=[{len(output_shape.shape)}], OutputShape's  "
                         f"dimesions=[{list(output_shape.shape)}]")
    if size and len(size) != 4:
        raise ValueError(f"The size of attribute 'output_shape' in AffineGridOp should be 4. But received "
                         f"output_shape's size=[{len(size)}].")
    for axis, want, nth in ((1, 2, "second"), (2, 3, "third")):
        if _known(ts[axis]) and ts[axis] != want:
            raise ValueError(f"The {nth} dimesion of input 'theta' in AffineGridOp should be {want}. But received "
                             f"{nth} dimesion=[{ts[axis]}], dimesions=[{ts}]")
    hw = (size[2], size[3]) if size else (-1, -1)  # OutputShape's values are known only at run time
    return (ts[0],) + hw + (2,), theta.dtype


def _base_grid(h, w, dtype, xp):
    """[H * W, 3] rows (x, y, 1), x and y running over [-1, 1] (a single pixel sits at -1)."""
    ys, xs = xp.meshgrid(xp.linspace(-1, 1, h, dtype=dtype), xp.linspace(-1, 1, w, dtype=dtype), indexing="ij")
    return xp.stack([xs.reshape(-1), ys.reshape(-1), xp.ones(h * w, dtype=dtype)], axis=1)


def _ag_hw(attrs, output_shape):
    size = list(attrs["output_shape"]) or [int(v) for v in output_shape.reshape(-1)]
    return int(size[2]), int(size[3])


@register_op("affine_grid", inputs=("Theta", "OutputShape"), outputs=("Output",),
             attrs={"output_shape": [], "use_cudnn": True}, optional=("OutputShape",),
             no_grad_inputs=("OutputShape",), infer_shape=_ag_infer)
def _affine_grid_forward(attrs, theta, output_shape):
    _ag_infer(attrs, theta, output_shape)
    h, w = _ag_hw(attrs, output_shape)
    grid = _base_grid(h, w, theta.dtype, array_module(theta))
    return (grid @ theta.transpose(0, 2, 1)).reshape(theta.shape[0], h, w, 2)


@register_grad("affine_grid", reads=("OutputShape",))
def _affine_grid_backward(attrs, ins, outs, douts, need):
    d = douts[0]
    h, w = d.shape[1:3]
    grid = _base_grid(h, w, d.dtype, array_module(d))
    return d.reshape(d.shape[0], h * w, 2).transpose(0, 2, 1) @ grid, None


# --- grid_sampler: bilinear reads of X at Grid's (x, y) in [-1, 1], zero outside ---------------------------
def _gs_infer(attrs, x, grid):
    xs, gs = list(x.shape), list(grid.shape)
    if len(xs) != 4:
        raise ValueError(f"Input(X) of GridSampleOp should be 4-D Tensor, but received X dimension size({len(xs)})")
    if len(gs) != 4:
        raise ValueError(f"Input(Grid) of GridSampleOp should be 4-D Tensor, but received X dimension "
                         f"size({len(gs)})")
    if _known(gs[3]) and gs[3] != 2:
        raise ValueError(f"Input(Grid) dimension[3] should be 2, but received {gs[3]}")
    for gi, xi, text in ((0, 0, "Input(X) and Input(Grid) dimension[0] should be equal, but received X "
                                "dimension[0]({}) != Grid dimension[0]({})"),
                         (1, 2, "Input(X) dims[2] and Input(Grid) dims[1] should be equal, but received X "
                                "dimension[2]({}) != Grid dimension[1]({})"),
                         (2, 3, "Input(X) dims[3] and Input(Grid) dims[2] should be equal, but received X "
                                "dimension[3]({}) != Grid dimension[2]({})")):
        if _known(gs[gi]) and _known(xs[xi]) and gs[gi] != xs[xi]:
            raise ValueError(text.format(xs[xi], gs[gi]))
    return x.shape, x.dtype


def _corners(x, grid):
    """The four neighbours of every grid point: [(values [N, P, C], pixel row [N, P], in-image mask [N, P, 1])]
    in the order (x0, y0), (x1, y0), (x0, y1), (x1, y1), and the distances (dw, de, dn, ds) [N, P, 1] of the
    point to x0, x1, y0, y1. The input is read channels-last, so each neighbour is one gather of whole
    C-vectors (row ``n * H * W + y * W + x`` of the [N * H * W, C] matrix)."""
    xp = array_module(x)
    n, c, h, w = x.shape
    gx = (grid[..., 0].reshape(n, -1) + 1) * (0.5 * (w - 1))  # pixel coordinates, corners aligned
    gy = (grid[..., 1].reshape(n, -1) + 1) * (0.5 * (h - 1))
    x0, y0 = xp.floor(gx), xp.floor(gy)
    pixels = x.transpose(0, 2, 3, 1).reshape(n * h * w, c)
    first = xp.arange(n)[:, None] * (h * w)
    corners = []
    for cy in (y0, y0 + 1):
        for cx in (x0, x0 + 1):
            inside = ((cx >= 0) & (cx <= w - 1) & (cy >= 0) & (cy <= h - 1))[..., None]
            row = first + xp.where(inside[..., 0], cy * w + cx, 0).astype(np.int64)
            corners.append((pixels.take(row.reshape(-1), axis=0).reshape(row.shape + (c,)) * inside, row, inside))
    dist = [d[..., None] for d in (gx - x0, x0 + 1 - gx, gy - y0, y0 + 1 - gy)]
    return corners, dist


def _gs_weights(dist):
    dw, de, dn, ds = dist
    return de * ds, dw * ds, de * dn, dw * dn  # the corners' weights, in _corners' order


@register_op("grid_sampler", inputs=("X", "Grid"), outputs=("Output",), attrs={"use_cudnn": True},
             infer_shape=_gs_infer, share_lod={"Output": "X"})
def _grid_sampler_forward(attrs, x, grid):
    _gs_infer(attrs, x, grid)
    corners, dist = _corners(x, grid)
    out = sum(v * wt for (v, _, _), wt in zip(corners, _gs_weights(dist)))  # [N, P, C]
    return out.transpose(0, 2, 1).reshape(x.shape[:2] + grid.shape[1:3]).astype(x.dtype, copy=False)


@register_grad("grid_sampler", reads=("X", "Grid"))
def _grid_sampler_backward(attrs, ins, outs, douts, need):
    x, grid = ins
    xp = array_module(x)
    n, c, h, w = x.shape
    d = douts[0].reshape(n, c, -1).transpose(0, 2, 1)  # [N, P, C]
    corners, dist = _corners(x, grid)
    dx = dgrid = None
    if need[0]:  # every corner's share of dOut summed into its pixel, all corners in one bincount
        index = xp.concatenate([(r[..., None] * c + xp.arange(c)).reshape(-1) for _, r, _ in corners])
        shares = xp.concatenate([(d * wt * m).reshape(-1) for (_, _, m), wt in zip(corners, _gs_weights(dist))])
        dx = xp.bincount(index, weights=shares, minlength=n * h * w * c).reshape(n, h, w, c)
        dx = dx.transpose(0, 3, 1, 2).astype(x.dtype)
    if need[1]:
        (v_wn, _, _), (v_en, _, _), (v_ws, _, _), (v_es, _, _) = corners
        dw, de, dn, ds = dist
        gx = (((v_en - v_wn) * ds + (v_es - v_ws) * dn) * d).sum(axis=2) * (0.5 * (w - 1))
        gy = (((v_ws - v_wn) * de + (v_es - v_en) * dw) * d).sum(axis=2) * (0.5 * (h - 1))
        dgrid = xp.stack([gx, gy], axis=-1).reshape(grid.shape).astype(grid.dtype, copy=False)
    return dx, dgrid
