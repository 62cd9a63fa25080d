"""Deformable convolution (deformable_conv v2 with Mask, deformable_conv_v1) and deformable_psroi_pooling.

deformable_conv: tap (i, j) of the kernel at output (ho, wo) reads the input at (ho * stride - pad + i *
dilation + dy, wo * stride - pad + j * dilation + dx), (dy, dx) its learned offset (Offset [N, 2 *
deformable_groups * kh * kw, Ho, Wo], y before x per tap), by bilinear interpolation with zeros outside the
image (a sample at or beyond -1 / H reads 0); v2 multiplies it by Mask [N, deformable_groups * kh * kw, Ho, Wo].
Each deformable group of input channels has its own offsets and mask. The sampled columns [N, C * kh * kw,
Ho * Wo] meet the filter in one batched GEMM per conv group, as conv2d's im2col does; ``im2col_step`` images
are sampled at a time. All samples of a step are one gather of four corner rows per sample from the input
read channels-last (a zero row for corners outside). Gradients: the filter's from the columns, the mask's
and the offsets' from the same corner rows (the offsets' from the slope of the interpolation), the input's
by gathering every pixel's corner shares (ops/roi.py's gather_transpose, no scatter-add).

deformable_psroi_pooling: every bin of every ROI (rounded corners, times spatial_scale, minus half a pixel)
moves by its part's offset (Trans [R, 2 * classes, part_h, part_w] times trans_std and the ROI's size) and
averages its sample_per_part^2 bilinear samples that fall inside [-0.5, size - 0.5] (clamped to the image);
output channel c of bin (ph, pw) reads input channel (c * group_h + gh) * group_w + gw, (gh, gw) the bin's
group. TopCount counts the samples. All samples of a chunk of ROIs are computed at once as element gathers,
and the gradients of Input and Trans are ``bincount``s over element indices (one value per sample and
corner: no rows to gather).
"""
import numpy as np

from .registry import register_grad, register_op
from .roi import gather_transpose, roi_images

_BLOCK = 1 << 21  # samples x output channels per chunk of ROIs (deformable_psroi_pooling)


def _attrs(attrs):
    return [attrs[k] for k in ("strides", "paddings", "dilations")] + [max(1, attrs["groups"] or 1),
                                                                        max(1, attrs["deformable_groups"] or 1)]


def _out_size(size, k, stride, pad, dilation):
    return (size + 2 * pad - (dilation * (k - 1) + 1)) // stride + 1 if size >= 0 else -1


def _infer(op, attrs, x, filt, offset, mask):
    (sh, sw), (ph, pw), (dh, dw), groups, dgroups = _attrs(attrs)
    if len(x.shape) != 4 or len(filt.shape) != 4:
        raise ValueError(f"{op}: Input(Input) and Input(Filter) should be 4-D tensors, but received Input "
                         f"{list(x.shape)} and Filter {list(filt.shape)}")
    m, cg, kh, kw = filt.shape
    if x.shape[1] >= 0 and x.shape[1] != cg * groups:
        raise ValueError(f"{op}: The number of input channels should be equal to filter channels * groups. The "
                         f"difference is [{x.shape[1]}]: [{cg * groups}] (Input {list(x.shape)}, Filter "
                         f"{list(filt.shape)}, groups {groups})")
    if (m >= 0 and (m % groups or m % dgroups)) or (x.shape[1] >= 0 and x.shape[1] % dgroups):
        raise ValueError(f"{op}: the output channels ({m}) must divide by groups ({groups}) and deformable_groups "
                         f"({dgroups}), and the input channels ({x.shape[1]}) by deformable_groups")
    out = (x.shape[0], m, _out_size(x.shape[2], kh, sh, ph, dh), _out_size(x.shape[3], kw, sw, pw, dw))
    for name, value, per in (("Offset", offset, 2), ("Mask", mask, 1)):
        if value is None:
            continue
        want = [out[0], per * dgroups * kh * kw, out[2], out[3]]
        if len(value.shape) != 4 or any(a >= 0 and b >= 0 and a != b for a, b in zip(value.shape, want)):
            raise ValueError(f"{op}: Input({name}) should be {want} ({per} x deformable_groups x kh x kw channels "
                             f"over the output's height and width), but received {list(value.shape)}")
    return out, x.dtype


class _Sampler:
    """The bilinear samples of one step of images: corner rows, weights and fractions per sample, samples in
    (image, deformable group, tap, ho, wo) order."""

    def __init__(self, attrs, x, offset, kh, kw):
        (sh, sw), (ph, pw), (dh, dw), _, dg = _attrs(attrs)
        n, c, h, w = x.shape
        ho, wo = offset.shape[2:]
        off = offset.reshape(n, dg, kh * kw, 2, ho, wo)
        tap_i, tap_j = np.divmod(np.arange(kh * kw), kw)
        py = (np.arange(ho) * sh - ph)[:, None] + (tap_i * dh)[:, None, None] + off[:, :, :, 0]
        px = np.arange(wo) * sw - pw + (tap_j * dw)[:, None, None] + off[:, :, :, 1]
        self.valid = ((py > -1) & (px > -1) & (py < h) & (px < w)).reshape(-1)
        y0, x0 = np.floor(py), np.floor(px)
        self.ly, self.lx = (py - y0).reshape(-1), (px - x0).reshape(-1)
        plane = (np.arange(n)[:, None] * dg + np.arange(dg)).reshape(n, dg, 1, 1, 1)
        self.rows = []
        for cy, cx in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
            inside = (cy >= 0) & (cy <= h - 1) & (cx >= 0) & (cx <= w - 1)
            self.rows.append(np.where(inside, (plane * h + cy) * w + cx, n * dg * h * w).astype(np.int64).reshape(-1))
        ly, lx = self.ly, self.lx
        self.weights = [(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx]
        self.mat = np.concatenate([x.reshape(n, dg, c // dg, h, w).transpose(0, 1, 3, 4, 2).reshape(-1, c // dg),
                                   np.zeros((1, c // dg), x.dtype)])  # channels-last rows; the last reads zero
        self.shape = (n, dg, kh * kw, ho * wo, c // dg)

    def corners(self):
        return [self.mat[r] for r in self.rows]

    def values(self, corners):
        """[samples, channels of the group]: the interpolated input (0 for a sample outside)."""
        return sum(v * (wt * self.valid)[:, None] for v, wt in zip(corners, self.weights))

    def to_columns(self, vals):
        """[samples, Cg] -> im2col columns [N, C * kh * kw, Ho * Wo] (channel-major, then tap)."""
        n, dg, k, length, cg = self.shape
        return vals.reshape(self.shape).transpose(0, 1, 4, 2, 3).reshape(n, dg * cg * k, length)

    def from_columns(self, cols):
        n, dg, k, length, cg = self.shape
        return cols.reshape(n, dg, cg, k, length).transpose(0, 1, 3, 4, 2).reshape(-1, cg)


def _steps(attrs, n):
    step = min(max(1, attrs["im2col_step"]), n) or 1
    if n % step:
        raise ValueError(f"Input batchsize must be smaller than or divide im2col_step. But received Input "
                         f"batchsize:[{n}], im2col_step:[{attrs['im2col_step']}]")
    return [slice(i, i + step) for i in range(0, n, step)]


def _mask_of(mask, sampler):
    return np.ones(sampler.valid.size) if mask is None else mask.reshape(-1)


def _forward(attrs, x, offset, mask, filt):
    groups = _attrs(attrs)[3]
    m, cg, kh, kw = filt.shape
    out = np.empty(_infer("deformable_conv", attrs, x, filt, offset, mask)[0], x.dtype)
    w = filt.reshape(groups, m // groups, -1)
    for s in _steps(attrs, x.shape[0]):
        sampler = _Sampler(attrs, x[s], offset[s], kh, kw)
        vals = sampler.values(sampler.corners()) * _mask_of(None if mask is None else mask[s], sampler)[:, None]
        cols = sampler.to_columns(vals.astype(x.dtype, copy=False))
        out[s] = np.matmul(w, cols.reshape(cols.shape[0], groups, -1, cols.shape[2])).reshape(out[s].shape)
    return out


def _backward(attrs, x, offset, mask, filt, dout, need):
    """Gradients of Input, Offset, Mask (None without a mask) and Filter."""
    groups = _attrs(attrs)[3]
    n, c, h, wd = x.shape
    m, cg, kh, kw = filt.shape
    w = filt.reshape(groups, m // groups, -1)
    dx, doff = np.zeros_like(x), np.zeros_like(offset)
    dmask = None if mask is None else np.zeros_like(mask)
    dfilt = np.zeros(w.shape, np.result_type(filt, np.float64))
    for s in _steps(attrs, n):
        sampler = _Sampler(attrs, x[s], offset[s], kh, kw)
        msk = _mask_of(None if mask is None else mask[s], sampler)
        d = dout[s].reshape(dout[s].shape[0], groups, m // groups, -1)
        dcols = np.matmul(w.transpose(0, 2, 1), d).reshape(d.shape[0], c * kh * kw, -1)
        dvals = sampler.from_columns(dcols)  # [samples, Cg]
        corners = sampler.corners()
        vals = sampler.values(corners)
        if need[3]:
            cols = sampler.to_columns(vals * msk[:, None]).reshape(d.shape[0], groups, -1, d.shape[3])
            dfilt += np.matmul(d, cols.transpose(0, 1, 3, 2)).sum(axis=0)
        if dmask is not None and need[2]:
            dmask[s] = (dvals * vals).sum(axis=1).reshape(dmask[s].shape)
        if need[1]:
            ly, lx = sampler.ly[:, None], sampler.lx[:, None]
            v00, v01, v10, v11 = corners
            slope_y = (1 - lx) * (v10 - v00) + lx * (v11 - v01)
            slope_x = (1 - ly) * (v01 - v00) + ly * (v11 - v10)
            share = dvals * (msk * sampler.valid)[:, None]
            doff[s] = _offset_grad(sampler, share, slope_y, slope_x, doff[s].shape)
        if need[0]:
            scale = msk * sampler.valid
            rows = np.concatenate(sampler.rows)
            src = np.tile(np.arange(sampler.valid.size), 4)
            wts = np.concatenate([wt * scale for wt in sampler.weights])
            rows_n = sampler.mat.shape[0] - 1
            keep = rows < rows_n
            grid = gather_transpose(rows[keep], src[keep], wts[keep], dvals, rows_n)
            nb, dg = d.shape[0], sampler.shape[1]
            dx[s] = grid.reshape(nb, dg, h, wd, -1).transpose(0, 1, 4, 2, 3).reshape(nb, c, h, wd)
    return dx, doff, dmask, dfilt.reshape(filt.shape).astype(filt.dtype)


def _offset_grad(sampler, share, slope_y, slope_x, shape):
    n, dg, k = sampler.shape[:3]
    dy = (share * slope_y).sum(axis=1).reshape(n, dg, k, 1, shape[2], shape[3])
    dxx = (share * slope_x).sum(axis=1).reshape(n, dg, k, 1, shape[2], shape[3])
    return np.concatenate([dy, dxx], axis=3).reshape(shape)


_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "deformable_groups": 1,
          "im2col_step": 64}


@register_op("deformable_conv", inputs=("Input", "Offset", "Mask", "Filter"), outputs=("Output",), attrs=_ATTRS,
             infer_shape=lambda attrs, x, offset, mask, filt: _infer("deformable_conv", attrs, x, filt, offset, mask))
def _deformable_conv_forward(attrs, x, offset, mask, filt):
    return _forward(attrs, x, offset, mask, filt)


@register_grad("deformable_conv", reads=("Input", "Offset", "Mask", "Filter"))
def _deformable_conv_backward(attrs, ins, outs, douts, need):
    x, offset, mask, filt = ins
    return _backward(attrs, x, offset, mask, filt, douts[0], need)


@register_op("deformable_conv_v1", inputs=("Input", "Offset", "Filter"), outputs=("Output",), attrs=_ATTRS,
             infer_shape=lambda attrs, x, offset, filt: _infer("deformable_conv_v1", attrs, x, filt, offset, None))
def _deformable_conv_v1_forward(attrs, x, offset, filt):
    return _forward(attrs, x, offset, None, filt)


@register_grad("deformable_conv_v1", reads=("Input", "Offset", "Filter"))
def _deformable_conv_v1_backward(attrs, ins, outs, douts, need):
    x, offset, filt = ins
    dx, doff, _, dfilt = _backward(attrs, x, offset, None, filt, douts[0], (need[0], need[1], False, need[2]))
    return dx, doff, dfilt


# --- deformable_psroi_pooling: ROI bins shifted by learned offsets, sample_per_part^2 bilinear samples each ---
def _dps_infer(attrs, x, rois, trans):
    if len(x.shape) != 4:
        raise ValueError(f"Input(Input) of DeformablePSROIPooling should be a 4-D tensor, but received shape "
                         f"{list(x.shape)}")
    if len(rois.shape) != 2 or (rois.shape[1] >= 0 and rois.shape[1] != 4):
        raise ValueError(f"Input(ROIs) should be a 2-D LoDTensor of shape (num_rois, 4) given as [[ x1, y1, x2, y2], "
                         f"...]. But received ROIs shape is:{list(rois.shape)}.")
    if len(trans.shape) != 4:
        raise ValueError(f"The rank of Input(Trans) should be 4 and the shape of Trans should be (N, 2, H, W), but "
                         f"received Trans shape is:{list(trans.shape)}.")
    dim, (gh, gw), (ph_, pw_) = attrs["output_dim"], attrs["group_size"], attrs["part_size"]
    if x.shape[1] >= 0 and x.shape[1] < dim * gh * gw:
        raise ValueError(f"The channel of Input(Input) ({x.shape[1]}) should not be lower than output_dim * "
                         f"group_height * group_width ({dim} * {gh} * {gw})")
    for name in ("pooled_height", "pooled_width", "sample_per_part", "spatial_scale"):
        if not attrs[name] > 0:
            raise ValueError(f"Input({name}) should be greater than 0, but received {name} is:{attrs[name]}.")
    if min(gh, gw, ph_, pw_) <= 0 or (not attrs["no_trans"] and (
            (trans.shape[2] >= 0 and ph_ > trans.shape[2]) or (trans.shape[3] >= 0 and pw_ > trans.shape[3]))):
        raise ValueError(f"group_size {[gh, gw]} and part_size {[ph_, pw_]} should be positive, part_size within "
                         f"Input(Trans)'s height and width {list(trans.shape[2:])}")
    shape = (rois.shape[0], dim, attrs["pooled_height"], attrs["pooled_width"])
    return (shape, x.dtype), (shape, x.dtype)


class _PSSamples:
    """The samples of ROIs ``chunk``: per (roi, output channel, ph, pw, sample), its four corner indices into
    the flat input, their weights, whether it counts, and what its trans gradient needs."""

    def __init__(self, attrs, x, rois, trans, images, chunk):
        n_rois = rois.shape[0]
        dim, (gh, gw), (part_h, part_w) = attrs["output_dim"], attrs["group_size"], attrs["part_size"]
        ph, pw, s = attrs["pooled_height"], attrs["pooled_width"], attrs["sample_per_part"]
        c, h, w = x.shape[1:]
        classes = 1 if attrs["no_trans"] else trans.shape[1] // 2
        per_class = dim // classes
        scale = attrs["spatial_scale"]
        r = np.arange(n_rois)[chunk]
        box = np.sign(rois[chunk]) * np.floor(np.abs(rois[chunk]) + 0.5)
        x0, y0 = box[:, 0] * scale - 0.5, box[:, 1] * scale - 0.5
        rw = np.maximum((box[:, 2] + 1) * scale - 0.5 - x0, 0.1)
        rh = np.maximum((box[:, 3] + 1) * scale - 0.5 - y0, 0.1)
        ph_i, pw_i = np.arange(ph), np.arange(pw)
        part_y, part_x = np.floor(ph_i / ph * part_h).astype(np.int64), np.floor(pw_i / pw * part_w).astype(np.int64)
        cls = np.arange(dim) // per_class  # [dim]
        if attrs["no_trans"]:
            tx = ty = np.zeros((len(r), dim, ph, pw))
        else:
            t = trans[r] * attrs["trans_std"]
            tx = t[:, 2 * cls][:, :, part_y][:, :, :, part_x]
            ty = t[:, 2 * cls + 1][:, :, part_y][:, :, :, part_x]
        k = np.arange(s)
        # [R, dim, PH, PW, S(h), S(w)]
        hs = (ph_i * (rh / ph)[:, None] + y0[:, None])[:, None, :, None] + ty * rh[:, None, None, None]
        ws = (pw_i * (rw / pw)[:, None] + x0[:, None])[:, None, None, :] + tx * rw[:, None, None, None]
        hh = hs[..., None, None] + (k * (rh / ph / s)[:, None])[:, None, None, None, :, None]
        ww = ws[..., None, None] + (k * (rw / pw / s)[:, None])[:, None, None, None, None, :]
        self.valid = (ww >= -0.5) & (ww <= w - 0.5) & (hh >= -0.5) & (hh <= h - 0.5)
        hh, ww = np.clip(hh, 0, h - 1), np.clip(ww, 0, w - 1)
        ylo, xlo = np.floor(hh), np.floor(ww)
        yhi, xhi = np.ceil(hh), np.ceil(ww)
        self.dy, self.dx = hh - ylo, ww - xlo
        g_h = np.clip(np.floor(ph_i * gh / ph), 0, gh - 1).astype(np.int64)
        g_w = np.clip(np.floor(pw_i * gw / pw), 0, gw - 1).astype(np.int64)
        cin = (np.arange(dim)[:, None, None] * gh + g_h[:, None]) * gw + g_w  # [dim, PH, PW]
        base = ((images[r][:, None, None, None] * c + cin) * (h * w))[..., None, None]
        yl, yh, xl, xh = (a.astype(np.int64) for a in (ylo, yhi, xlo, xhi))
        self.index = [base + yl * w + xl, base + yh * w + xl, base + yl * w + xh, base + yh * w + xh]
        self.count = self.valid.sum(axis=(-1, -2))
        self.roi_size = (rw, rh)
        self.part = (cls, part_y, part_x, classes)
        self.r = r

    def weights(self):
        dy, dx = self.dy, self.dx
        return [(1 - dx) * (1 - dy), (1 - dx) * dy, dx * (1 - dy), dx * dy]


def _dps_chunks(attrs, rois):
    per = attrs["output_dim"] * attrs["pooled_height"] * attrs["pooled_width"] * attrs["sample_per_part"] ** 2
    step = max(1, _BLOCK // max(per, 1))
    return [slice(i, i + step) for i in range(0, rois.shape[0], step)]


@register_op("deformable_psroi_pooling", inputs=("Input", "ROIs", "Trans"), outputs=("Output", "TopCount"),
             no_grad_inputs=("ROIs",), context=True, infer_shape=_dps_infer,
             attrs={"no_trans": False, "spatial_scale": 1.0, "output_dim": 1, "group_size": [1, 1],
                    "pooled_height": 1, "pooled_width": 1, "part_size": [1, 1], "sample_per_part": 1,
                    "trans_std": 0.1})
def _deformable_psroi_forward(ctx, attrs, x, rois, trans):
    shape = _dps_infer(attrs, x, rois, trans)[0][0]
    images = roi_images(ctx, "DeformablePSROIPooling", x, rois)
    out, count = np.zeros(shape, x.dtype), np.zeros(shape, x.dtype)
    flat = x.reshape(-1)
    for chunk in _dps_chunks(attrs, rois):
        sm = _PSSamples(attrs, x, rois, trans, images, chunk)
        total = sum(wt * flat[i] for wt, i in zip(sm.weights(), sm.index))
        count[chunk] = sm.count
        out[chunk] = np.where(sm.count > 0, (total * sm.valid).sum(axis=(-1, -2)) / np.maximum(sm.count, 1), 0)
    return out, count


@register_grad("deformable_psroi_pooling", reads=("Input", "ROIs", "Trans"))
def _deformable_psroi_backward(ctx, attrs, ins, outs, douts, need):
    (x, rois, trans), dout = ins, douts[0]
    images = roi_images(ctx, "DeformablePSROIPooling", x, rois)
    flat = x.reshape(-1)
    dx, dtrans = np.zeros(x.size), np.zeros(trans.size)
    for chunk in _dps_chunks(attrs, rois):
        sm = _PSSamples(attrs, x, rois, trans, images, chunk)
        share = np.where(sm.count > 0, dout[chunk] / np.maximum(sm.count, 1), 0)[..., None, None] * sm.valid
        if need[0]:
            for wt, i in zip(sm.weights(), sm.index):
                dx += np.bincount(i.reshape(-1), weights=(wt * share).reshape(-1), minlength=x.size)
        if need[2] and not attrs["no_trans"]:
            u00, u01, u10, u11 = (flat[i] for i in sm.index)
            slope_x = (u11 - u01) * sm.dy + (u10 - u00) * (1 - sm.dy)
            slope_y = (u11 - u10) * sm.dx + (u01 - u00) * (1 - sm.dx)
            rw, rh = sm.roi_size
            cls, part_y, part_x, classes = sm.part
            gx = (slope_x * share).sum(axis=(-1, -2)) * (attrs["trans_std"] * rw[:, None, None, None])
            gy = (slope_y * share).sum(axis=(-1, -2)) * (attrs["trans_std"] * rh[:, None, None, None])
            th, tw = trans.shape[2:]
            at = ((sm.r[:, None, None, None] * trans.shape[1] + 2 * cls[:, None, None]) * th + part_y[:, None]) * tw \
                + part_x
            dtrans += np.bincount(at.reshape(-1), weights=gx.reshape(-1), minlength=trans.size)
            dtrans += np.bincount((at + th * tw).reshape(-1), weights=gy.reshape(-1), minlength=trans.size)
    return (dx.reshape(x.shape).astype(x.dtype) if need[0] else None, None,
            dtrans.reshape(trans.shape).astype(trans.dtype) if need[2] else None)
