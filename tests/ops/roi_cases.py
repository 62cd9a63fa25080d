"""check_op cases of the ROI pooling ops (ops/roi.py): forward against references that walk every ROI, bin
and pixel (or sample) with plain loops, gradients against float64 central differences, with ROIs given by
their LoD (an image without ROIs included), by RoisLod offsets or by BatchRoINums counts;
tests/ops/test_op_gradients.py runs them."""
import math

import numpy as np
import pytest

from minifluid.lod_tensor import LoDTensor

rng = np.random.default_rng(4321)
CASES = []


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def distinct(*shape):
    """Values with gaps >> eps (no ties for max)."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1 - 1.0


def images_of(lengths):
    return [i for i, k in enumerate(lengths) for _ in range(k)]


def c_round(v):
    return math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)


# ROIs of every kind: inside, overhanging the border, tiny, wider than the map, on fractional coordinates
ROIS = np.array([[0.0, 0.0, 4.0, 3.0], [1.4, 2.2, 6.6, 5.3], [2.0, 1.0, 2.4, 1.6], [-2.0, -1.5, 9.0, 7.0],
                 [3.3, 0.7, 5.2, 4.9]])
LENGTHS = [3, 0, 2]  # the middle image has no ROI


# --- roi_align ----------------------------------------------------------------------------------------------
def bilinear(plane, y, x):
    """One sample of fluid's RoIAlign interpolation: zero beyond [-1, H] x [-1, W], borders clamped."""
    h, w = plane.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= h - 1:
        y0 = y1 = h - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= w - 1:
        x0 = x1 = w - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * plane[y0, x0] + (1 - ly) * lx * plane[y0, x1] + ly * (1 - lx) * plane[y1, x0]
            + ly * lx * plane[y1, x1])


def roi_align_ref(x, rois, images, ph, pw, scale, ratio):
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    for r, roi in enumerate(rois):
        x1, y1, x2, y2 = (v * scale for v in roi)
        rw, rh = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        for c in range(x.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    total = 0.0
                    for iy in range(gh):
                        for ix in range(gw):
                            total += bilinear(x[images[r], c], y1 + i * bh + (iy + 0.5) * bh / gh,
                                              x1 + j * bw + (ix + 0.5) * bw / gw)
                    out[r, c, i, j] = total / (gh * gw)
    return out


X_ALIGN = rng.standard_normal((3, 2, 6, 7))
case("roi_align", "adaptive-lod", inputs={"X": X_ALIGN, "ROIs": LoDTensor(ROIS, [LENGTHS])},
     attrs={"pooled_height": 2, "pooled_width": 3}, output_lods={"Out": []},
     reference=lambda X, ROIs: roi_align_ref(X, ROIS, images_of(LENGTHS), 2, 3, 1.0, -1))
case("roi_align", "ratio2-scale-roislod",
     inputs={"X": X_ALIGN, "ROIs": ROIS * 2, "RoisLod": np.array([0, 3, 3, 5], np.int64)},
     attrs={"pooled_height": 3, "pooled_width": 2, "spatial_scale": 0.5, "sampling_ratio": 2},
     reference=lambda X, ROIs, RoisLod: roi_align_ref(X, ROIS, images_of(LENGTHS), 3, 2, 1.0, 2))


# --- roi_pool -----------------------------------------------------------------------------------------------
def roi_pool_ref(x, rois, images, ph, pw, scale):
    """fluid's bins: integer ROI corners, float32 bin sizes; first maximum in row-major order."""
    n, c, h, w = x.shape
    out, arg = np.zeros((len(rois), c, ph, pw)), np.full((len(rois), c, ph, pw), -1, np.int64)
    f = np.float32
    for r, roi in enumerate(rois):
        sx, sy, ex, ey = (c_round(float(f(v) * f(scale))) for v in roi)
        bh, bw = f(max(ey - sy + 1, 1)) / f(ph), f(max(ex - sx + 1, 1)) / f(pw)
        for i in range(ph):
            for j in range(pw):
                hs = min(max(int(math.floor(f(i) * bh)) + sy, 0), h)
                he = min(max(int(math.ceil(f(i + 1) * bh)) + sy, 0), h)
                ws = min(max(int(math.floor(f(j) * bw)) + sx, 0), w)
                we = min(max(int(math.ceil(f(j + 1) * bw)) + sx, 0), w)
                for k in range(c):
                    best = None
                    for yy in range(hs, he):
                        for xx in range(ws, we):
                            if best is None or x[images[r], k, yy, xx] > best:
                                best, arg[r, k, i, j] = x[images[r], k, yy, xx], yy * w + xx
                    out[r, k, i, j] = 0.0 if best is None else best
    return out, arg


X_POOL = distinct(3, 2, 6, 7)
case("roi_pool", "lod", inputs={"X": X_POOL, "ROIs": LoDTensor(ROIS, [LENGTHS])},
     attrs={"pooled_height": 2, "pooled_width": 3}, outputs=["Out", "Argmax"], grad_outputs=["Out"],
     reference=lambda X, ROIs: roi_pool_ref(X, ROIS, images_of(LENGTHS), 2, 3, 1.0))
case("roi_pool", "scale-roislod-empty-bins",
     inputs={"X": X_POOL, "ROIs": ROIS * 4, "RoisLod": np.array([0, 3, 3, 5], np.int64)},
     attrs={"pooled_height": 4, "pooled_width": 3, "spatial_scale": 0.25}, outputs=["Out", "Argmax"],
     grad_outputs=["Out"], reference=lambda X, ROIs, RoisLod: roi_pool_ref(X, ROIS * 4, images_of(LENGTHS), 4, 3, 0.25))


# --- psroi_pool ---------------------------------------------------------------------------------------------
def psroi_ref(x, rois, images, oc, ph, pw, scale):
    h, w = x.shape[2:]
    out = np.zeros((len(rois), oc, ph, pw))
    for r, (x1, y1, x2, y2) in enumerate(rois):
        sw, sh = c_round(x1) * scale, c_round(y1) * scale
        bh = max((c_round(y2) + 1) * scale - sh, 0.1) / ph
        bw = max((c_round(x2) + 1) * scale - sw, 0.1) / pw
        for k in range(oc):
            for i in range(ph):
                for j in range(pw):
                    hs, he = min(max(math.floor(i * bh + sh), 0), h), min(max(math.ceil((i + 1) * bh + sh), 0), h)
                    ws, we = min(max(math.floor(j * bw + sw), 0), w), min(max(math.ceil((j + 1) * bw + sw), 0), w)
                    if he > hs and we > ws:
                        out[r, k, i, j] = x[images[r], (k * ph + i) * pw + j, hs:he, ws:we].mean()
    return out


case("psroi_pool", inputs={"X": rng.standard_normal((3, 12, 6, 7)), "ROIs": LoDTensor(ROIS, [LENGTHS])},
     attrs={"output_channels": 2, "pooled_height": 2, "pooled_width": 3, "spatial_scale": 0.8},
     reference=lambda X, ROIs: psroi_ref(X, ROIS, images_of(LENGTHS), 2, 2, 3, 0.8))


# --- prroi_pool ---------------------------------------------------------------------------------------------
def hat(t):
    return max(0.0, 1.0 - abs(t))


def interpolated(plane, y, x):
    """The bilinear interpolation of ``plane`` at (y, x), zero beyond its pixels."""
    return sum(plane[i, j] * hat(y - i) * hat(x - j) for i in range(plane.shape[0]) for j in range(plane.shape[1])
               if abs(y - i) < 1 and abs(x - j) < 1)


def cell_integral(plane, y0, y1, x0, x1):
    """Exact integral over a rectangle inside one unit cell (the interpolation is bilinear there): 2-point
    Gauss-Legendre per axis."""
    g = (0.5 - 0.5 / math.sqrt(3), 0.5 + 0.5 / math.sqrt(3))
    return (y1 - y0) * (x1 - x0) / 4 * sum(interpolated(plane, y0 + a * (y1 - y0), x0 + b * (x1 - x0))
                                           for a in g for b in g)


def prroi_ref(x, rois, images, ph, pw, scale):
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    for r, roi in enumerate(rois):
        x1, y1, x2, y2 = (v * scale for v in roi)
        bh, bw = max(y2 - y1, 0.0) / ph, max(x2 - x1, 0.0) / pw
        for c in range(x.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    ys, xs = y1 + i * bh, x1 + j * bw
                    if bh * bw <= 0:
                        continue
                    cuts_y = sorted({ys, ys + bh, *range(math.ceil(ys), math.floor(ys + bh) + 1)})
                    cuts_x = sorted({xs, xs + bw, *range(math.ceil(xs), math.floor(xs + bw) + 1)})
                    total = sum(cell_integral(x[images[r], c], a, b, e, f)
                                for a, b in zip(cuts_y, cuts_y[1:]) for e, f in zip(cuts_x, cuts_x[1:]))
                    out[r, c, i, j] = total / (bh * bw)
    return out


# corners kept off integer coordinates (the integral's kinks); one ROI upside down (an empty window)
PR_ROIS = np.array([[0.3, 0.2, 4.1, 3.3], [1.4, 2.2, 6.6, 5.3], [2.1, 1.2, 2.6, 1.7], [-2.3, -1.6, 8.7, 7.2],
                    [5.2, 4.9, 3.3, 0.7]])
X_PR = rng.standard_normal((3, 2, 5, 6))
case("prroi_pool", "lod-grad-rois", inputs={"X": X_PR, "ROIs": LoDTensor(PR_ROIS, [LENGTHS])},
     attrs={"pooled_height": 2, "pooled_width": 2}, atol=1e-5,
     reference=lambda X, ROIs: prroi_ref(X, PR_ROIS, images_of(LENGTHS), 2, 2, 1.0))
case("prroi_pool", "batch_roi_nums-scale",
     inputs={"X": X_PR, "ROIs": PR_ROIS * 2, "BatchRoINums": np.array(LENGTHS, np.int64)},
     attrs={"pooled_height": 3, "pooled_width": 2, "spatial_scale": 0.5}, atol=1e-5,
     reference=lambda X, ROIs, BatchRoINums: prroi_ref(X, PR_ROIS, images_of(LENGTHS), 3, 2, 1.0))


# --- roi_perspective_transform ------------------------------------------------------------------------------
def perspective_ref(x, rois, images, th, tw, scale):
    """Point by point: the quad's perspective matrix, the source point, inside-quad and inside-image tests
    with fluid's 1e-4 tolerance, and the clamped bilinear read."""
    n, c, h, w = x.shape
    eps = 1e-4
    out, mask, mats = np.zeros((len(rois), c, th, tw)), np.zeros((len(rois), 1, th, tw), np.int32), []
    for r, roi in enumerate(rois):
        qx, qy = [v * scale for v in roi[0::2]], [v * scale for v in roi[1::2]]
        side = [math.hypot(qx[i] - qx[(i + 1) % 4], qy[i] - qy[(i + 1) % 4]) for i in range(4)]
        nh = max(2, th)
        nw = max(2, min(math.floor((side[0] + side[2]) / 2 * (nh - 1) / ((side[1] + side[3]) / 2) + 0.5) + 1, tw))
        dx1, dx2, dx3 = qx[1] - qx[2], qx[3] - qx[2], qx[0] - qx[1] + qx[2] - qx[3]
        dy1, dy2, dy3 = qy[1] - qy[2], qy[3] - qy[2], qy[0] - qy[1] + qy[2] - qy[3]
        a31 = (dx3 * dy2 - dx2 * dy3) / (dx1 * dy2 - dx2 * dy1 + 1e-5) / (nw - 1)
        a32 = (dx1 * dy3 - dx3 * dy1) / (dx1 * dy2 - dx2 * dy1 + 1e-5) / (nh - 1)
        m = [(qx[1] - qx[0] + a31 * (nw - 1) * qx[1]) / (nw - 1), (qx[3] - qx[0] + a32 * (nh - 1) * qx[3]) / (nh - 1),
             qx[0], (qy[1] - qy[0] + a31 * (nw - 1) * qy[1]) / (nw - 1),
             (qy[3] - qy[0] + a32 * (nh - 1) * qy[3]) / (nh - 1), qy[0], a31, a32, 1.0]
        mats.append(m)
        for oh in range(th):
            for ow in range(tw):
                z = m[6] * ow + m[7] * oh + m[8]
                px, py = (m[0] * ow + m[1] * oh + m[2]) / z, (m[3] * ow + m[4] * oh + m[5]) / z
                inside, crossings = False, 0
                for i in range(4):
                    xs, ys, xe, ye = qx[i], qy[i], qx[(i + 1) % 4], qy[(i + 1) % 4]
                    if abs(ys - ye) < eps:
                        inside |= (abs(py - ys) < eps and min(xs, xe) - eps < px < max(xs, xe) + eps)
                        continue
                    cx = (py - ys) * (xe - xs) / (ye - ys) + xs
                    inside |= abs(cx - px) < eps and min(ys, ye) - eps < py < max(ys, ye) + eps
                    if min(ys, ye) + eps <= py <= max(ys, ye) + eps and cx - px > eps:
                        crossings += 1
                inside |= crossings % 2 == 1
                if not inside or px <= -0.5 + eps or px >= w - 0.5 - eps or py <= -0.5 + eps or py >= h - 0.5 - eps:
                    continue
                mask[r, 0, oh, ow] = 1
                px, py = (0.0 if px < eps else px), (0.0 if py < eps else py)
                x0, y0 = math.floor(px), math.floor(py)
                x1, y1 = min(x0 + 1, w - 1), min(y0 + 1, h - 1)
                fx, fy = (0.0 if x0 >= w - 1 else px - x0), (0.0 if y0 >= h - 1 else py - y0)
                plane = x[images[r]]
                out[r, :, oh, ow] = ((1 - fx) * (1 - fy) * plane[:, y0, x0] + (1 - fx) * fy * plane[:, y1, x0]
                                     + fx * fy * plane[:, y1, x1] + fx * (1 - fy) * plane[:, y0, x1])
    return {"Out": out, "Mask": mask, "TransformMatrix": np.array(mats)}


QUADS = np.array([[1, 1, 6, 1.5, 7, 6, 0.5, 5.5], [2, 2, 5, 2, 5, 5, 2, 5], [-1, 0, 8, -1, 9, 9, 0, 8],
                  [4, 1, 7.5, 3, 5, 7, 1.5, 4]])
X_QUAD = rng.standard_normal((2, 3, 8, 9))
case("roi_perspective_transform", inputs={"X": X_QUAD, "ROIs": LoDTensor(QUADS, [[3, 1]])},
     attrs={"transformed_height": 4, "transformed_width": 5}, outputs=["Out", "Mask", "TransformMatrix"],
     output_lods={"Out": [[3, 1]]}, grad_outputs=["Out"], grad_inputs=["X"],
     reference=lambda X, ROIs: perspective_ref(X, QUADS, [0, 0, 0, 1], 4, 5, 1.0))
case("roi_perspective_transform", "scale", inputs={"X": X_QUAD, "ROIs": LoDTensor(QUADS * 2, [[1, 3]])},
     attrs={"transformed_height": 3, "transformed_width": 6, "spatial_scale": 0.5},
     outputs=["Out", "Mask", "TransformMatrix"], grad_outputs=["Out"], grad_inputs=["X"],
     reference=lambda X, ROIs: perspective_ref(X, QUADS, [0, 1, 1, 1], 3, 6, 1.0))
