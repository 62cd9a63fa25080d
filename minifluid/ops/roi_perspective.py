"""roi_perspective_transform: each quadrilateral ROI warped onto a transformed_height x transformed_width grid.

A ROI is four corners (x0, y0) .. (x3, y3) (``ROIs`` [R, 8], clockwise from the top left, times spatial_scale).
Its perspective matrix maps output (w, h, 1) to input (u, v, z), sampled at (u / z, v / z); the grid's width
is normalised to the quad's aspect ratio (at most transformed_width), so output points past it fall outside
the quad. A point inside the quad (edges included, 1e-4 tolerance) and inside (-0.5, size - 0.5) reads the
input by bilinear interpolation (clamped at the borders) and has ``Mask`` 1; any other reads 0 with Mask 0.
All ROIs and grid points are computed at once; channels are gathered as rows of the input read channels-last,
and the input's gradient is the transposed gather (ops/roi.py's gather_transpose). Out2InIdx and Out2InWeights
(which fluid's CPU kernel leaves unset) hold, per grid point [R * th * tw, 4], the four corner pixels (y * W + x
in the ROI's image, -1 outside the mask) and their weights.
"""
import numpy as np

from .registry import register_grad, register_op
from .roi import gather_transpose, roi_images

_EPS = 1e-4


def _ge(a, b):
    return (a > b) | (np.abs(a - b) < _EPS)


def _matrices(quads, th, tw):
    """[R, 9] perspective matrices of the ROIs' quads ([R, 4] x and y each)."""
    x, y = quads
    side = [np.hypot(x[:, i] - x[:, (i + 1) % 4], y[:, i] - y[:, (i + 1) % 4]) for i in range(4)]
    est_h, est_w = (side[1] + side[3]) / 2, (side[0] + side[2]) / 2
    norm_h = max(2, th)
    norm_w = np.clip(np.floor(est_w * (norm_h - 1) / est_h + 0.5) + 1, 2, max(2, tw))
    dx1, dx2, dx3 = x[:, 1] - x[:, 2], x[:, 3] - x[:, 2], x[:, 0] - x[:, 1] + x[:, 2] - x[:, 3]
    dy1, dy2, dy3 = y[:, 1] - y[:, 2], y[:, 3] - y[:, 2], y[:, 0] - y[:, 1] + y[:, 2] - y[:, 3]
    det = dx1 * dy2 - dx2 * dy1 + 1e-5
    m6 = (dx3 * dy2 - dx2 * dy3) / det / (norm_w - 1)
    m7 = (dx1 * dy3 - dx3 * dy1) / det / (norm_h - 1)
    m3 = (y[:, 1] - y[:, 0] + m6 * (norm_w - 1) * y[:, 1]) / (norm_w - 1)
    m4 = (y[:, 3] - y[:, 0] + m7 * (norm_h - 1) * y[:, 3]) / (norm_h - 1)
    m0 = (x[:, 1] - x[:, 0] + m6 * (norm_w - 1) * x[:, 1]) / (norm_w - 1)
    m1 = (x[:, 3] - x[:, 0] + m7 * (norm_h - 1) * x[:, 3]) / (norm_h - 1)
    return np.stack([m0, m1, x[:, 0], m3, m4, y[:, 0], m6, m7, np.ones(len(x))], axis=1)


def _in_quad(px, py, quads):
    """[R, th, tw] bool: the point is on an edge of its ROI's quad or inside it (crossing count)."""
    qx, qy = (q[:, :, None, None] for q in quads)
    on_edge, crossings = np.zeros(px.shape, bool), np.zeros(px.shape, np.int64)
    for i in range(4):
        xs, ys, xe, ye = qx[:, i], qy[:, i], qx[:, (i + 1) % 4], qy[:, (i + 1) % 4]
        flat = np.abs(ys - ye) < _EPS
        with np.errstate(divide="ignore", invalid="ignore"):
            cross_x = (py - ys) * (xe - xs) / (ye - ys) + xs
        within_y = _ge(py, np.minimum(ys, ye)) & _ge(np.maximum(ys, ye), py)
        on_edge |= np.where(flat, (np.abs(py - ys) < _EPS) & (np.abs(py - ye) < _EPS) & _ge(px, np.minimum(xs, xe))
                            & _ge(np.maximum(xs, xe), px), (np.abs(cross_x - px) < _EPS) & within_y)
        counted = ~flat & ~_ge(np.minimum(ys, ye), py) & ~((py - np.maximum(ys, ye)) > _EPS)
        crossings += counted & ((cross_x - px) > _EPS)
    return on_edge | (crossings % 2 == 1)


class _Warp:
    """The grid points of every ROI: source coordinates, Mask, and the four bilinear corners (rows of the
    channels-last input, weights zero where the mask is)."""

    def __init__(self, attrs, x, rois, images):
        n, c, h, w = x.shape
        th, tw, scale = attrs["transformed_height"], attrs["transformed_width"], attrs["spatial_scale"]
        quads = (rois[:, 0::2].astype(np.float64) * scale, rois[:, 1::2].astype(np.float64) * scale)
        self.matrix = _matrices(quads, th, tw)
        m = self.matrix[:, :, None, None]
        ow, oh = np.arange(tw), np.arange(th)[:, None]
        z = m[:, 6] * ow + m[:, 7] * oh + m[:, 8]
        px, py = (m[:, 0] * ow + m[:, 1] * oh + m[:, 2]) / z, (m[:, 3] * ow + m[:, 4] * oh + m[:, 5]) / z
        self.mask = _in_quad(px, py, quads) & ~(_ge(-0.5, px) | _ge(px, w - 0.5) | _ge(-0.5, py) | _ge(py, h - 0.5))
        px, py = np.where(_ge(0, px), 0.0, px), np.where(_ge(0, py), 0.0, py)
        x0, y0 = np.floor(px), np.floor(py)
        right, bottom = _ge(x0, w - 1), _ge(y0, h - 1)
        x0, y0 = np.where(right, w - 1, x0), np.where(bottom, h - 1, y0)
        x1, y1 = np.where(right, x0, x0 + 1), np.where(bottom, y0, y0 + 1)
        fx, fy = np.where(right, 0.0, px - x0), np.where(bottom, 0.0, py - y0)
        base = images[:, None, None] * h
        corners = [(y0, x0, (1 - fx) * (1 - fy)), (y1, x0, (1 - fx) * fy), (y1, x1, fx * fy), (y0, x1, fx * (1 - fy))]
        ok = self.mask.reshape(-1, 1)
        self.rows = np.stack([np.where(self.mask, (base + cy) * w + cx, 0).reshape(-1) for cy, cx, _ in corners],
                             axis=1).astype(np.int64)
        self.weights = np.stack([wt.reshape(-1) for _, _, wt in corners], axis=1) * ok


def _infer(attrs, x, rois):
    if len(x.shape) != 4:
        raise ValueError(f"The format of input tensor must be NCHW. But received Input(X) dims is {len(x.shape)} "
                         f"(shape {list(x.shape)}).")
    if len(rois.shape) != 2 or (rois.shape[1] >= 0 and rois.shape[1] != 8):
        raise ValueError(f"Input(ROIs) should be a 2-D LoDTensor of shape (num_rois, 8) given as [[x0, y0, x1, y1, "
                         f"x2, y2, x3, y3], ...]. But received shape {list(rois.shape)}")
    for name in ("transformed_height", "transformed_width", "spatial_scale"):
        if not attrs[name] > 0:
            raise ValueError(f"The {name} of roi_perspective_transform must be greater than 0. But received "
                             f"{attrs[name]}.")
    r, th, tw = rois.shape[0], attrs["transformed_height"], attrs["transformed_width"]
    points = -1 if r < 0 else r * th * tw
    return ((r, x.shape[1], th, tw), x.dtype), ((points, 4), "int32"), ((points, 4), x.dtype), \
        ((r, 1, th, tw), "int32"), ((r, 9), x.dtype)


@register_op("roi_perspective_transform", inputs=("X", "ROIs"),
             outputs=("Out", "Out2InIdx", "Out2InWeights", "Mask", "TransformMatrix"), no_grad_inputs=("ROIs",),
             context=True, infer_shape=_infer, share_lod={"Out": "ROIs"}, grad_share_lod={"X@GRAD": "X"},
             attrs={"transformed_height": 1, "transformed_width": 1, "spatial_scale": 1.0})
def _roi_perspective_forward(ctx, attrs, x, rois):
    _infer(attrs, x, rois)
    n, c, h, w = x.shape
    warp = _Warp(attrs, x, rois, roi_images(ctx, "RoIPerspectiveTransform", x, rois))
    rows = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(-1, c)
    out = np.matmul(warp.weights.astype(x.dtype)[:, None, :], rows[warp.rows])[:, 0]  # [R * th * tw, C]
    r, th, tw = len(rois), attrs["transformed_height"], attrs["transformed_width"]
    out = out.reshape(r, th, tw, c).transpose(0, 3, 1, 2)
    pixel = np.where(warp.mask.reshape(-1, 1), warp.rows % (h * w), -1)
    return (np.ascontiguousarray(out), pixel.astype(np.int32), warp.weights.astype(x.dtype),
            warp.mask.reshape(r, 1, th, tw).astype(np.int32), warp.matrix.astype(x.dtype))


@register_grad("roi_perspective_transform", reads=("X", "ROIs"))
def _roi_perspective_backward(ctx, attrs, ins, outs, douts, need):
    (x, rois), dout = ins, douts[0]
    n, c, h, w = x.shape
    warp = _Warp(attrs, x, rois, roi_images(ctx, "RoIPerspectiveTransform", x, rois))
    dpoints = dout.transpose(0, 2, 3, 1).reshape(-1, c)
    keep = warp.weights.reshape(-1) != 0
    src = np.repeat(np.arange(len(dpoints)), 4)
    grid = gather_transpose(warp.rows.reshape(-1)[keep], src[keep], warp.weights.reshape(-1)[keep], dpoints, n * h * w)
    return grid.reshape(n, h, w, c).transpose(0, 3, 1, 2).astype(x.dtype), None
