"""check_op cases of ops/conv3d.py and ops/pool3d.py: forwards against direct loops over output voxels written here
(pads, strides, dilations, groups, both layouts, SAME / VALID, ceil_mode, exclusive, adaptive and global
pooling), gradients against float64 central differences; they join vision_cases.CASES, which
tests/ops/test_op_gradients.py runs."""
import math

import numpy as np

from .vision_cases import case, normal, rng


def pads6(paddings):
    return [p for p in paddings for _ in (0, 1)] if len(paddings) == 3 else list(paddings)


def same_pads(size, k, s):
    total = max((math.ceil(size / s) - 1) * s + k - size, 0)
    return [total // 2, total - total // 2]


def conv3d_ref(x, w, strides, pads, dil, groups):
    """NCDHW, pads [front, back, top, bottom, left, right]: one output voxel at a time."""
    n, c, *size = x.shape
    f, cg, *k = w.shape
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[2 * i], pads[2 * i + 1]) for i in range(3)])
    out = [(size[i] + pads[2 * i] + pads[2 * i + 1] - dil[i] * (k[i] - 1) - 1) // strides[i] + 1 for i in range(3)]
    y = np.zeros([n, f] + out)
    fg = f // groups
    for o in np.ndindex(*out):
        window = xp[:, :, o[0] * strides[0]:o[0] * strides[0] + dil[0] * (k[0] - 1) + 1:dil[0],
                    o[1] * strides[1]:o[1] * strides[1] + dil[1] * (k[1] - 1) + 1:dil[1],
                    o[2] * strides[2]:o[2] * strides[2] + dil[2] * (k[2] - 1) + 1:dil[2]]
        for g in range(groups):
            y[(slice(None), slice(g * fg, (g + 1) * fg)) + o] = np.einsum(
                "ncdhw,fcdhw->nf", window[:, g * cg:(g + 1) * cg], w[g * fg:(g + 1) * fg])
    return y


def conv3d_transpose_ref(x, w, strides, pads, dil, groups, out_size=None):
    """Scatter each input voxel's contribution w * x into the padded output, then crop the padding."""
    n, c, *size = x.shape
    _, fg, *k = w.shape
    full = [(size[i] - 1) * strides[i] + dil[i] * (k[i] - 1) + 1 for i in range(3)]
    out = out_size or [full[i] - pads[2 * i] - pads[2 * i + 1] for i in range(3)]
    big = np.zeros([n, fg * groups] + [max(full[i], out[i] + pads[2 * i] + pads[2 * i + 1]) for i in range(3)])
    cg = c // groups
    for v in np.ndindex(*size):
        for g in range(groups):
            contrib = np.einsum("nc,cfdhw->nfdhw", x[(slice(None), slice(g * cg, (g + 1) * cg)) + v],
                                w[g * cg:(g + 1) * cg])
            big[:, g * fg:(g + 1) * fg, v[0] * strides[0]:v[0] * strides[0] + dil[0] * (k[0] - 1) + 1:dil[0],
                v[1] * strides[1]:v[1] * strides[1] + dil[1] * (k[1] - 1) + 1:dil[1],
                v[2] * strides[2]:v[2] * strides[2] + dil[2] * (k[2] - 1) + 1:dil[2]] += contrib
    return big[:, :, pads[0]:pads[0] + out[0], pads[2]:pads[2] + out[1], pads[4]:pads[4] + out[2]]


def ndhwc(fn):
    """A reference on NDHWC arrays from an NCDHW one."""
    return lambda x, *a, **kw: np.moveaxis(fn(np.moveaxis(x, 4, 1), *a, **kw), 1, 4)


# --- conv3d --------------------------------------------------------------------------------------------------------
for _name, _xs, _ws, _attrs in (
        ("3x3x3-pad1", (2, 3, 4, 4, 4), (4, 3, 3, 3, 3), {"paddings": [1, 1, 1]}),
        ("strided-dilated-asymmetric", (1, 2, 5, 6, 5), (3, 2, 2, 3, 2),
         {"strides": [2, 1, 2], "dilations": [1, 2, 1], "paddings": [1, 0, 0, 2, 1, 1]}),
        ("groups", (2, 4, 3, 4, 3), (6, 2, 2, 2, 2), {"groups": 2, "paddings": [0, 1, 0]}),
        ("VALID", (1, 2, 4, 5, 4), (2, 2, 3, 2, 2), {"padding_algorithm": "VALID", "paddings": [7, 7, 7]})):
    _x, _w = normal(*_xs), normal(*_ws)
    _p = [0] * 6 if _attrs.get("padding_algorithm") == "VALID" else pads6(_attrs.get("paddings", [0, 0, 0]))
    case("conv3d", _name, inputs={"Input": _x, "Filter": _w}, attrs=_attrs,
         reference=lambda Input, Filter, a=_attrs, p=_p: conv3d_ref(Input, Filter, a.get("strides", [1] * 3), p,
                                                                     a.get("dilations", [1] * 3), a.get("groups", 1)))
_x, _w = normal(2, 5, 4, 3, 3), normal(3, 3, 2, 2, 2)  # NDHWC [N, D, H, W, C]; SAME at stride 2
_same = same_pads(5, 2, 2) + same_pads(4, 2, 2) + same_pads(3, 2, 2)
case("conv3d", "NDHWC-SAME", inputs={"Input": _x, "Filter": _w},
     attrs={"data_format": "NDHWC", "padding_algorithm": "SAME", "strides": [2, 2, 2], "dilations": [2, 2, 2]},
     reference=lambda Input, Filter: ndhwc(conv3d_ref)(Input, Filter, [2, 2, 2], _same, [1, 1, 1], 1))


# --- conv3d_transpose ----------------------------------------------------------------------------------------------
for _name, _xs, _ws, _attrs in (
        ("stride2", (2, 3, 2, 3, 2), (3, 2, 3, 3, 2), {"strides": [2, 2, 2], "paddings": [1, 1, 0]}),
        ("groups-dilated-asymmetric", (1, 4, 3, 2, 3), (4, 1, 2, 2, 2),
         {"groups": 2, "dilations": [2, 1, 1], "paddings": [0, 1, 1, 0, 0, 0]}),
        ("output_size", (1, 2, 3, 3, 2), (2, 2, 3, 2, 2), {"strides": [2, 3, 2], "output_size": [8, 9, 4]})):
    _x, _w = normal(*_xs), normal(*_ws)
    case("conv3d_transpose", _name, inputs={"Input": _x, "Filter": _w}, attrs=_attrs,
         reference=lambda Input, Filter, a=_attrs: conv3d_transpose_ref(
             Input, Filter, a.get("strides", [1] * 3), pads6(a.get("paddings", [0, 0, 0])), a.get("dilations", [1] * 3),
             a.get("groups", 1), a.get("output_size")))
case("conv3d_transpose", "NDHWC", inputs={"Input": normal(1, 2, 3, 2, 3), "Filter": normal(3, 2, 2, 2, 2)},
     attrs={"data_format": "NDHWC", "strides": [1, 2, 1]},
     reference=lambda Input, Filter: ndhwc(conv3d_transpose_ref)(Input, Filter, [1, 2, 1], [0] * 6, [1] * 3, 1))


# --- pool3d --------------------------------------------------------------------------------------------------------
def pool3d_ref(x, kind, k, strides, pads, ceil=False, exclusive=True):
    """fluid's windows: start o * s - pad_front, clipped to the input; -FLT_MAX for a max of nothing."""
    n, c, *size = x.shape
    out = [((size[i] + pads[2 * i] + pads[2 * i + 1] - k[i] + (strides[i] - 1 if ceil else 0)) // strides[i]) + 1
           for i in range(3)]
    y = np.zeros([n, c] + out)
    for o in np.ndindex(*out):
        lo = [max(o[i] * strides[i] - pads[2 * i], 0) for i in range(3)]
        hi = [min(o[i] * strides[i] - pads[2 * i] + k[i], size[i]) for i in range(3)]
        window = x[:, :, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].reshape(n, c, -1)
        if kind == "max":
            y[(slice(None), slice(None)) + o] = window.max(-1) if window.size else np.finfo(np.float32).min
        else:
            y[(slice(None), slice(None)) + o] = window.sum(-1) / (window.shape[-1] if exclusive else np.prod(k))
    return y


def adaptive_ref(x, kind, out):
    n, c, *size = x.shape
    y = np.zeros([n, c] + list(out))
    for o in np.ndindex(*out):
        lo = [o[i] * size[i] // out[i] for i in range(3)]
        hi = [-(-(o[i] + 1) * size[i] // out[i]) for i in range(3)]
        window = x[:, :, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].reshape(n, c, -1)
        y[(slice(None), slice(None)) + o] = window.max(-1) if kind == "max" else window.mean(-1)
    return y


def distinct(*shape):
    """Values apart by far more than eps: no ties for the max, so central differences see one winner."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1 - 2.0


for _name, _kind, _attrs in (
        ("max-padded-strided", "max", {"ksize": [2, 3, 2], "strides": [2, 1, 2], "paddings": [1, 1, 0]}),
        ("avg-exclusive", "avg", {"ksize": [3, 2, 2], "strides": [2, 2, 1], "paddings": [1, 0, 1]}),
        ("avg-inclusive", "avg", {"ksize": [3, 2, 2], "strides": [2, 2, 1], "paddings": [1, 0, 1],
                                  "exclusive": False}),
        ("max-ceil-asymmetric", "max", {"ksize": [2, 2, 3], "strides": [2, 2, 2], "paddings": [0, 1, 1, 0, 1, 1],
                                        "ceil_mode": True}),
        ("avg-ceil", "avg", {"ksize": [2, 2, 2], "strides": [2, 2, 2], "ceil_mode": True})):
    _p = pads6(_attrs.get("paddings", [0, 0, 0]))
    case("pool3d", _name, inputs={"X": distinct(2, 2, 5, 4, 5)}, attrs={"pooling_type": _kind, **_attrs},
         reference=lambda X, kd=_kind, a=_attrs, p=_p: pool3d_ref(X, kd, a["ksize"], a["strides"], p,
                                                                 a.get("ceil_mode", False), a.get("exclusive", True)))
for _kind in ("max", "avg"):
    case("pool3d", f"adaptive-uneven-{_kind}", inputs={"X": distinct(2, 3, 5, 4, 7)},
         attrs={"pooling_type": _kind, "ksize": [3, 3, 2], "adaptive": True},
         reference=lambda X, kd=_kind: adaptive_ref(X, kd, (3, 3, 2)))
    case("pool3d", f"global-{_kind}-NDHWC", inputs={"X": distinct(2, 3, 4, 2, 3)},
         attrs={"pooling_type": _kind, "global_pooling": True, "data_format": "NDHWC"},
         reference=lambda X, kd=_kind: ndhwc(adaptive_ref)(X, kd, (1, 1, 1)))
case("pool3d", "SAME-max-NDHWC", inputs={"X": distinct(1, 5, 4, 3, 2)},
     attrs={"pooling_type": "max", "ksize": [2, 3, 2], "strides": [2, 2, 2], "padding_algorithm": "SAME",
            "data_format": "NDHWC"},
     reference=lambda X: ndhwc(pool3d_ref)(X, "max", [2, 3, 2], [2, 2, 2],
                                           same_pads(5, 2, 2) + same_pads(4, 3, 2) + same_pads(3, 2, 2)))


# --- max_pool3d_with_index: Out and the flat D*H*W position of the first max (Mask) ----------------------------------
def with_index_ref(x, windows_of):
    """``windows_of(o)``: the (lo, hi) ranges of output voxel o; the first max by a strict > scan, as fluid."""
    n, c, *size = x.shape
    out_shape, ranges = windows_of(size)
    out, mask = np.zeros([n, c] + out_shape), np.zeros([n, c] + out_shape, np.int32)
    for o in np.ndindex(*out_shape):
        (d0, d1), (h0, h1), (w0, w1) = ranges(o)
        for b, ch in np.ndindex(n, c):
            best, where = -np.inf, -1
            for d, h, w in np.ndindex(d1 - d0, h1 - h0, w1 - w0):
                if x[b, ch, d0 + d, h0 + h, w0 + w] > best:
                    best, where = x[b, ch, d0 + d, h0 + h, w0 + w], ((d0 + d) * size[1] + h0 + h) * size[2] + w0 + w
            out[(b, ch) + o], mask[(b, ch) + o] = best, where
    return {"Out": out, "Mask": mask}


def strided_windows(k, s, p):
    def windows_of(size):
        out = [(size[i] + 2 * p[i] - k[i]) // s[i] + 1 for i in range(3)]
        return out, lambda o: [(max(o[i] * s[i] - p[i], 0), min(o[i] * s[i] - p[i] + k[i], size[i])) for i in range(3)]
    return windows_of


def adaptive_windows(out):
    return lambda size: (list(out), lambda o: [(o[i] * size[i] // out[i], -(-(o[i] + 1) * size[i] // out[i]))
                                               for i in range(3)])


case("max_pool3d_with_index", "strided-padded", inputs={"X": distinct(2, 2, 5, 4, 5)},
     attrs={"ksize": [2, 3, 2], "strides": [2, 1, 2], "paddings": [1, 1, 0]}, grad_outputs=("Out",),
     reference=lambda X: with_index_ref(X, strided_windows([2, 3, 2], [2, 1, 2], [1, 1, 0])))
case("max_pool3d_with_index", "adaptive", inputs={"X": distinct(2, 2, 5, 4, 7)},
     attrs={"ksize": [3, 3, 2], "adaptive": True}, grad_outputs=("Out",),
     reference=lambda X: with_index_ref(X, adaptive_windows((3, 3, 2))))


def depth_one_ref(x, windows_of):
    """max_pool2d_with_index's reference: the 3-D one on [N, C, 1, H, W] (a depth of one keeps Mask h * W + w)."""
    return {k: v[:, :, 0] for k, v in with_index_ref(x[:, :, None], windows_of).items()}


case("max_pool2d_with_index", "strided-padded", inputs={"X": distinct(2, 2, 5, 6)},
     attrs={"ksize": [3, 2], "strides": [2, 2], "paddings": [1, 0]}, grad_outputs=("Out",),
     reference=lambda X: depth_one_ref(X, strided_windows([1, 3, 2], [1, 2, 2], [0, 1, 0])))
case("max_pool2d_with_index", "adaptive", inputs={"X": distinct(2, 2, 5, 7)},
     attrs={"ksize": [3, 2], "adaptive": True}, grad_outputs=("Out",),
     reference=lambda X: depth_one_ref(X, adaptive_windows((1, 3, 2))))
