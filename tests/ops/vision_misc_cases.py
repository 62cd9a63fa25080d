"""check_op cases of ops/vision_misc.py (mish, unfold, temporal_shift, fsp): forward against element-by-element
numpy references, gradients against float64 central differences; they join vision_cases.CASES, which
tests/ops/test_op_gradients.py runs."""
import math

import numpy as np

from .vision_cases import case, normal, rng


# --- mish ------------------------------------------------------------------------------------------------
def mish_ref(x, threshold=20.0):
    def one(v):
        sp = v if v > threshold else math.exp(v) if v < -threshold else math.log1p(math.exp(v))
        return v * math.tanh(sp)
    return np.vectorize(one)(x)


case("mish", inputs={"X": normal(3, 4, 5) * 3}, reference=lambda X: mish_ref(X))
# a low threshold puts values on both cut-offs: the forward follows them and so does the gradient
case("mish", "threshold-cutoffs", inputs={"X": np.array([[-3.1, -1.7, -0.4, 0.3], [1.2, 1.6, 2.4, 5.0]])},
     attrs={"threshold": 1.5}, reference=lambda X: mish_ref(X, 1.5))


# --- unfold ----------------------------------------------------------------------------------------------
def unfold_ref(x, k, s, p, d):
    """Window by window: p = [top, left, bottom, right]; column (c, i, j) and row oh * OW + ow."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    oh = (h + p[0] + p[2] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
    ow = (w + p[1] + p[3] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ch in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                for r in range(oh):
                    for q in range(ow):
                        out[:, (ch * k[0] + i) * k[1] + j, r * ow + q] = xp[:, ch, r * s[0] + i * d[0],
                                                                            q * s[1] + j * d[1]]
    return out


for _name, _k, _s, _p, _d, _shape in (("3x3", [3, 3], [1, 1], [0, 0, 0, 0], [1, 1], (2, 3, 5, 4)),
                                      ("strided-padded-uneven", [2, 3], [2, 1], [1, 0, 2, 1], [1, 1], (2, 2, 5, 6)),
                                      ("dilated", [2, 2], [1, 2], [1, 1, 1, 1], [2, 2], (1, 3, 4, 5))):
    case("unfold", _name, inputs={"X": normal(*_shape)},
         attrs={"kernel_sizes": _k, "strides": _s, "paddings": _p, "dilations": _d},
         reference=lambda X, k=_k, s=_s, p=_p, d=_d: unfold_ref(X, k, s, p, d))


# --- temporal_shift --------------------------------------------------------------------------------------
def temporal_shift_ref(x, t, ratio):
    nt, c = x.shape[:2]
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    out = np.zeros_like(x)
    for n in range(nt // t):
        for it in range(t):
            for ch in range(c):
                src = it - 1 if ch < c1 else it + 1 if ch < c2 else it
                if 0 <= src < t:
                    out[n * t + it, ch] = x[n * t + src, ch]
    return out


case("temporal_shift", inputs={"X": normal(6, 4, 2, 3)}, attrs={"seg_num": 3},
     reference=lambda X: temporal_shift_ref(X, 3, 0.25))
case("temporal_shift", "ratio-0.2-uneven", inputs={"X": normal(4, 7, 2, 2)}, attrs={"seg_num": 2, "shift_ratio": 0.2},
     reference=lambda X: temporal_shift_ref(X, 2, 0.2))


# --- fsp -------------------------------------------------------------------------------------------------
def fsp_ref(x, y):
    n, c1, h, w = x.shape
    out = np.zeros((n, c1, y.shape[1]))
    for i in range(n):
        for a in range(c1):
            for b in range(y.shape[1]):
                out[i, a, b] = (x[i, a] * y[i, b]).sum() / (h * w)
    return out


case("fsp", inputs={"X": normal(2, 3, 4, 5), "Y": normal(2, 2, 4, 5)}, reference=lambda X, Y: fsp_ref(X, Y))


# --- bilinear_tensor_product -----------------------------------------------------------------------------
def btp_ref(x, y, w, b=None):
    out = np.zeros((x.shape[0], w.shape[0]))
    for n in range(x.shape[0]):
        for k in range(w.shape[0]):
            out[n, k] = x[n] @ w[k] @ y[n] + (0 if b is None else b[0, k])
    return out


case("bilinear_tensor_product", inputs={"X": normal(4, 3), "Y": normal(4, 5), "Weight": normal(2, 3, 5),
                                        "Bias": normal(1, 2)},
     reference=lambda X, Y, Weight, Bias: btp_ref(X, Y, Weight, Bias))
case("bilinear_tensor_product", "no-bias", inputs={"X": normal(3, 2), "Y": normal(3, 4), "Weight": normal(3, 2, 4)},
     reference=lambda X, Y, Weight: btp_ref(X, Y, Weight))


# --- sigmoid_focal_loss ----------------------------------------------------------------------------------
def focal_ref(x, label, fg_num, gamma=2.0, alpha=0.25):
    """Element by element: class d is positive when label == d + 1, negative unless label == -1."""
    fg = max(int(fg_num[0]), 1)
    out = np.zeros_like(x)
    for a in range(x.shape[0]):
        for d in range(x.shape[1]):
            g, p = int(label[a, 0]), 1 / (1 + math.exp(-x[a, d]))
            if g == d + 1:
                out[a, d] = -alpha / fg * (1 - p) ** gamma * math.log(p)
            elif g != -1:
                out[a, d] = -(1 - alpha) / fg * p ** gamma * math.log(1 - p)
    return out


_LABELS = np.array([[1], [0], [3], [-1], [2], [3]], dtype=np.int32)
case("sigmoid_focal_loss", inputs={"X": normal(6, 3) * 2, "Label": _LABELS, "FgNum": np.array([4], dtype=np.int32)},
     reference=lambda X, Label, FgNum: focal_ref(X, Label, FgNum))
case("sigmoid_focal_loss", "gamma-alpha-fg0", inputs={"X": normal(6, 3), "Label": _LABELS,
                                                      "FgNum": np.array([0], dtype=np.int32)},
     attrs={"gamma": 1.5, "alpha": 0.6}, reference=lambda X, Label, FgNum: focal_ref(X, Label, FgNum, 1.5, 0.6))


# --- affine_grid / grid_sampler --------------------------------------------------------------------------
def affine_grid_ref(theta, h, w):
    """Pixel by pixel: (x, y) evenly from -1 to 1 across the width / height, times each sample's theta."""
    out = np.zeros((theta.shape[0], h, w, 2))
    for k in range(theta.shape[0]):
        for i in range(h):
            for j in range(w):
                out[k, i, j] = theta[k] @ np.array([-1 + 2 * j / (w - 1), -1 + 2 * i / (h - 1), 1.0])
    return out


case("affine_grid", inputs={"Theta": normal(2, 2, 3)}, attrs={"output_shape": [2, 3, 4, 5]},
     reference=lambda Theta: affine_grid_ref(Theta, 4, 5))
case("affine_grid", "shape-tensor", inputs={"Theta": normal(3, 2, 3), "OutputShape": np.array([3, 1, 3, 2], np.int32)},
     reference=lambda Theta, OutputShape: affine_grid_ref(Theta, 3, 2))


def grid_sampler_ref(x, grid):
    """Point by point: the grid's (x, y) in [-1, 1] scaled to pixel coordinates [0, W - 1] x [0, H - 1], each of
    the four surrounding pixels inside the image weighted by its closeness, the others zero."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for k in range(n):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                px, py = (grid[k, i, j, 0] + 1) * (w - 1) / 2, (grid[k, i, j, 1] + 1) * (h - 1) / 2
                x0, y0 = math.floor(px), math.floor(py)
                for cy in (y0, y0 + 1):
                    for cx in (x0, x0 + 1):
                        if 0 <= cx <= w - 1 and 0 <= cy <= h - 1:
                            out[k, :, i, j] += x[k, :, cy, cx] * (1 - abs(px - cx)) * (1 - abs(py - cy))
    return out


# points past the borders (zero padding) included; the grid's gradient is checked too
case("grid_sampler", inputs={"X": normal(2, 3, 4, 5), "Grid": rng.uniform(-1.3, 1.3, (2, 4, 5, 2))},
     reference=lambda X, Grid: grid_sampler_ref(X, Grid))
# the identity grid reads every pixel back exactly (the corners are aligned with the border pixels' centres)
_IDENTITY = affine_grid_ref(np.tile(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]), (2, 1, 1)), 3, 4)
case("grid_sampler", "identity", inputs={"X": normal(2, 2, 3, 4), "Grid": _IDENTITY}, grad_inputs=("X",),
     reference=lambda X, Grid: X)


# --- trilinear_interp (ops/image.py) ---------------------------------------------------------------------
def trilinear_ref(x, out, align_corners=True, align_mode=1):
    """Voxel by voxel from fluid's per-axis formulas (float32 source positions), the 8 corners weighted."""
    n, c = x.shape[:2]
    half = align_mode == 0 and not align_corners

    def taps(i, o, k):
        r = np.float32(0) if o <= 1 else (np.float32((i - 1) / (o - 1)) if align_corners else
                                          np.float32(i) / np.float32(o))
        src = r * np.float32(k + 0.5) - np.float32(0.5) if half else r * np.float32(k)
        lo = max(int(src), 0)
        return lo, min(lo + 1, i - 1), float(max(src, 0) - lo)
    res = np.zeros((n, c) + tuple(out))
    for a in range(out[0]):
        for b in range(out[1]):
            for e in range(out[2]):
                (d0, d1, wd), (h0, h1, wh), (w0, w1, ww) = (taps(i, o, k) for i, o, k in
                                                            zip(x.shape[2:], out, (a, b, e)))
                for dd, fd in ((d0, 1 - wd), (d1, wd)):
                    for hh, fh in ((h0, 1 - wh), (h1, wh)):
                        for w_, fw in ((w0, 1 - ww), (w1, ww)):
                            res[:, :, a, b, e] += x[:, :, dd, hh, w_] * fd * fh * fw
    return res


case("trilinear_interp", "up-align_corners", inputs={"X": normal(2, 2, 2, 3, 4)},
     attrs={"out_d": 3, "out_h": 5, "out_w": 6}, reference=lambda X: trilinear_ref(X, (3, 5, 6)))
case("trilinear_interp", "down-align_mode0", inputs={"X": normal(1, 2, 4, 5, 3)},
     attrs={"out_d": 3, "out_h": 2, "out_w": 2, "align_corners": False, "align_mode": 0},
     reference=lambda X: trilinear_ref(X, (3, 2, 2), False, 0))
case("trilinear_interp", "scale-align_mode1", inputs={"X": normal(1, 1, 2, 3, 2)},
     attrs={"scale": 1.5, "align_corners": False}, reference=lambda X: trilinear_ref(X, (3, 4, 3), False, 1))
case("trilinear_interp", "NDHWC-OutSize", inputs={"X": normal(1, 2, 3, 2, 3), "OutSize": np.array([3, 4, 2], np.int32)},
     attrs={"data_layout": "NHWC", "out_d": 3, "out_h": 4, "out_w": 2},
     reference=lambda X, OutSize: trilinear_ref(X.transpose(0, 4, 1, 2, 3), (3, 4, 2)).transpose(0, 2, 3, 4, 1))


# --- bicubic_interp (ops/image.py) -----------------------------------------------------------------------
def bicubic_ref(x, oh, ow, align_corners=True):
    """Pixel by pixel: 4 x 4 neighbours (clamped to the image) weighted by the cubic convolution, a = -0.75."""
    a = -0.75
    n, c, h, w = x.shape

    def coeffs(t):
        near = lambda v: ((a + 2) * v - (a + 3)) * v * v + 1  # noqa: E731  (|v| <= 1)
        far = lambda v: ((a * v - 5 * a) * v + 8 * a) * v - 4 * a  # noqa: E731  (1 < |v| < 2)
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    def source(i, o, k):
        r = np.float32(0) if o <= 1 else (np.float32((i - 1) / (o - 1)) if align_corners else
                                          np.float32(i) / np.float32(o))
        s = r * np.float32(k) if align_corners else r * np.float32(k + 0.5) - np.float32(0.5)
        return int(math.floor(s)), float(s - math.floor(s))
    out = np.zeros((n, c, oh, ow))
    for k in range(oh):
        y, ty = source(h, oh, k)
        for m in range(ow):
            xx, tx = source(w, ow, m)
            for i, cy in enumerate(coeffs(ty)):
                for j, cx in enumerate(coeffs(tx)):
                    out[:, :, k, m] += (x[:, :, min(max(y - 1 + i, 0), h - 1), min(max(xx - 1 + j, 0), w - 1)] *
                                        cy * cx)
    return out


case("bicubic_interp", "up-align_corners", inputs={"X": normal(2, 2, 3, 4)}, attrs={"out_h": 5, "out_w": 7},
     reference=lambda X: bicubic_ref(X, 5, 7))
case("bicubic_interp", "down-no-align", inputs={"X": normal(1, 2, 6, 5)},
     attrs={"out_h": 4, "out_w": 3, "align_corners": False}, reference=lambda X: bicubic_ref(X, 4, 3, False))
case("bicubic_interp", "NHWC-scale", inputs={"X": normal(1, 3, 3, 2)}, attrs={"scale": 1.5, "data_layout": "NHWC"},
     reference=lambda X: bicubic_ref(X.transpose(0, 3, 1, 2), 4, 4).transpose(0, 2, 3, 1))
