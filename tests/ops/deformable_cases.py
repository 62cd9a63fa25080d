"""check_op cases of deformable_conv (v2, with Mask) and deformable_conv_v1 (ops/deformable.py): forward against a
reference that samples every tap of every output by hand, gradients of Input, Offset, Mask and Filter against
float64 central differences, over strides, padding, dilation, groups, deformable groups and im2col steps;
tests/ops/test_op_gradients.py runs them."""
import math

import numpy as np
import pytest

from minifluid.lod_tensor import LoDTensor

rng = np.random.default_rng(1357)
CASES = []


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def bilinear(plane, y, x):
    """The input at (y, x), bilinear, zero outside the image; a sample at or beyond -1 / H reads 0."""
    h, w = plane.shape
    if y <= -1 or x <= -1 or y >= h or x >= w:
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    return sum(wy * wx * plane[yy, xx] for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0))
               for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)) if 0 <= yy < h and 0 <= xx < w)


def deformable_ref(x, offset, mask, filt, stride, pad, dilation, groups, dgroups):
    n, c, h, w = x.shape
    m, cg, kh, kw = filt.shape
    ho, wo = offset.shape[2:]
    out = np.zeros((n, m, ho, wo))
    for b in range(n):
        for oc in range(m):
            g = oc // (m // groups)
            for i in range(ho):
                for j in range(wo):
                    total = 0.0
                    for ci in range(cg):
                        cin = g * cg + ci
                        d = cin // (c // dgroups)
                        for a in range(kh):
                            for e in range(kw):
                                k = a * kw + e
                                y = i * stride[0] - pad[0] + a * dilation[0] + offset[b, d * 2 * kh * kw + 2 * k, i, j]
                                xx = j * stride[1] - pad[1] + e * dilation[1] + offset[b, d * 2 * kh * kw + 2 * k + 1,
                                                                                          i, j]
                                scale = 1.0 if mask is None else mask[b, d * kh * kw + k, i, j]
                                total += filt[oc, ci, a, e] * bilinear(x[b, cin], y, xx) * scale
                    out[b, oc, i, j] = total
    return out


def attrs(stride=(1, 1), pad=(0, 0), dilation=(1, 1), groups=1, dgroups=1, step=64):
    return {"strides": list(stride), "paddings": list(pad), "dilations": list(dilation), "groups": groups,
            "deformable_groups": dgroups, "im2col_step": step}


X = rng.standard_normal((2, 4, 5, 6))
F = rng.standard_normal((4, 2, 3, 3))
OFF = rng.uniform(-1.7, 1.7, (2, 2 * 2 * 9, 5, 3))  # offsets reaching past the borders
MASK = rng.uniform(0, 1, (2, 2 * 9, 5, 3))
case("deformable_conv", "groups-dgroups-stride-pad-step1",
     inputs={"Input": X, "Offset": OFF, "Mask": MASK, "Filter": F},
     attrs=attrs((1, 2), (1, 1), groups=2, dgroups=2, step=1),
     reference=lambda Input, Offset, Mask, Filter: deformable_ref(Input, Offset, Mask, Filter, (1, 2), (1, 1), (1, 1),
                                                                  2, 2))
OFF1 = rng.uniform(-1.2, 1.2, (2, 2 * 4, 3, 4))
case("deformable_conv_v1", "dilation",
     inputs={"Input": X, "Offset": OFF1, "Filter": rng.standard_normal((3, 4, 2, 2))},
     attrs=attrs(dilation=(2, 2)),
     reference=lambda Input, Offset, Filter: deformable_ref(Input, Offset, None, Filter, (1, 1), (0, 0), (2, 2), 1, 1))


# --- deformable_psroi_pooling -----------------------------------------------------------------------------
def c_round(v):
    return math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)


def deformable_psroi_ref(x, rois, images, trans, attrs):
    """Every ROI, output channel, bin and sample by hand (fluid's sampling: see ops/deformable.py)."""
    n, c, h, w = x.shape
    dim, (gh, gw), ph, pw = attrs["output_dim"], attrs["group_size"], attrs["pooled_height"], attrs["pooled_width"]
    (part_h, part_w), s, scale, std = attrs["part_size"], attrs["sample_per_part"], attrs["spatial_scale"], \
        attrs["trans_std"]
    classes = 1 if attrs["no_trans"] else trans.shape[1] // 2
    out, count = np.zeros((len(rois), dim, ph, pw)), np.zeros((len(rois), dim, ph, pw))
    for r, roi in enumerate(rois):
        x0, y0 = c_round(roi[0]) * scale - 0.5, c_round(roi[1]) * scale - 0.5
        rw = max((c_round(roi[2]) + 1) * scale - 0.5 - x0, 0.1)
        rh = max((c_round(roi[3]) + 1) * scale - 0.5 - y0, 0.1)
        for ct in range(dim):
            cls = ct // (dim // classes)
            for i in range(ph):
                for j in range(pw):
                    py, px = math.floor(i / ph * part_h), math.floor(j / pw * part_w)
                    tx = 0.0 if attrs["no_trans"] else trans[r, 2 * cls, py, px] * std
                    ty = 0.0 if attrs["no_trans"] else trans[r, 2 * cls + 1, py, px] * std
                    cin = (ct * gh + min(i * gh // ph, gh - 1)) * gw + min(j * gw // pw, gw - 1)
                    values = []
                    for a in range(s):
                        for b in range(s):
                            yy = i * rh / ph + y0 + ty * rh + a * rh / ph / s
                            xx = j * rw / pw + x0 + tx * rw + b * rw / pw / s
                            if -0.5 <= xx <= w - 0.5 and -0.5 <= yy <= h - 0.5:
                                values.append(bilinear(x[images[r], cin], min(max(yy, 0), h - 1),
                                                       min(max(xx, 0), w - 1)))
                    out[r, ct, i, j] = np.mean(values) if values else 0.0
                    count[r, ct, i, j] = len(values)
    return out, count


PS_ROIS = np.array([[0.3, 0.2, 4.1, 3.3], [1.4, 2.2, 6.6, 5.3], [-2.3, -1.6, 8.7, 7.2]])
PS_X = rng.standard_normal((2, 8, 6, 7))
for name, ps_attrs, trans_shape in (
        ("position-sensitive", {"no_trans": False, "spatial_scale": 0.9, "output_dim": 2, "group_size": [2, 2],
                                "pooled_height": 2, "pooled_width": 2, "part_size": [2, 2], "sample_per_part": 3,
                                "trans_std": 0.1}, (3, 4, 2, 2)),
        ("two-classes", {"no_trans": False, "spatial_scale": 1.0, "output_dim": 8, "group_size": [1, 1],
                         "pooled_height": 3, "pooled_width": 2, "part_size": [3, 2], "sample_per_part": 2,
                         "trans_std": 0.2}, (3, 4, 3, 2)),
        ("no_trans", {"no_trans": True, "spatial_scale": 1.0, "output_dim": 8, "group_size": [1, 1],
                      "pooled_height": 2, "pooled_width": 3, "part_size": [2, 3], "sample_per_part": 2,
                      "trans_std": 0.1}, (3, 2, 2, 3))):
    case("deformable_psroi_pooling", name,
         inputs={"Input": PS_X, "ROIs": LoDTensor(PS_ROIS, [[2, 1]]), "Trans": rng.uniform(-1, 1, trans_shape)},
         attrs=ps_attrs, outputs=["Output", "TopCount"], grad_outputs=["Output"],
         grad_inputs=["Input"] if ps_attrs["no_trans"] else None,
         reference=lambda Input, ROIs, Trans, a=ps_attrs: deformable_psroi_ref(Input, PS_ROIS, [0, 0, 1], Trans, a))
