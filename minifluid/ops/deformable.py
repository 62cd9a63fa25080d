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
    """The bilinear samples of one step of images, in (image, deformable group, tap, ho, wo) order: ``rows``
    [P, 4], the corners (y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1) in the channels-last input ``mat``
    (its last row reads zero), their ``weights`` [P, 4] (0 for a sample outside) and the fractions ly, lx."""

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
        ly, lx = (py - y0).reshape(-1, 1), (px - x0).reshape(-1, 1)
        plane = (np.arange(n)[:, None] * dg + np.arange(dg)).reshape(n, dg, 1, 1, 1)
        rows = []
        for cy, cx in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
            inside = (cy >= 0) & (cy <= h - 1) & (cx >= 0) & (cx <= w - 1)
            rows.append(np.where(inside, (plane * h + cy) * w + cx, n * dg * h * w).astype(np.int64).reshape(-1))
        self.rows = np.stack(rows, axis=1)
        self.weights = (np.concatenate([(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx], axis=1)
                        * self.valid[:, None]).astype(x.dtype)
        self.ly, self.lx = ly, lx
        self.mat = np.concatenate([x.reshape(n, dg, c // dg, h, w).transpose(0, 1, 3, 4, 2).reshape(-1, c // dg),
                                   np.zeros((1, c // dg), x.dtype)])
        self.shape = (n, dg, kh * kw, ho * wo, c // dg)

    def corners(self):
        """[P, 4, Cg]: the four corner rows of every sample."""
        return self.mat[self.rows]

    def values(self, corners):
        """[P, Cg]: the interpolated input (0 for a sample outside)."""
        return np.matmul(self.weights[:, None, :], corners)[:, 0]

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
        msk = _mask_of(None if mask is None else mask[s], sampler).astype(x.dtype)
        d = dout[s].reshape(dout[s].shape[0], groups, m // groups, -1)
        dvals = sampler.from_columns(np.matmul(w.transpose(0, 2, 1), d))  # [samples, Cg]
        corners = sampler.corners()
        if need[3]:
            cols = sampler.to_columns(sampler.values(corners) * msk[:, None]).reshape(d.shape[0], groups, -1, d.shape[3])
            dfilt += np.matmul(d, cols.transpose(0, 1, 3, 2)).sum(axis=0)
        along = np.matmul(corners, dvals[:, :, None])[:, :, 0]  # [P, 4]: dVals . each corner's row
        if dmask is not None and need[2]:
            dmask[s] = (sampler.weights * along).sum(axis=1).reshape(dmask[s].shape)
        if need[1]:  # the interpolation's slope in y and x: corner coefficients
            ly, lx = sampler.ly, sampler.lx
            scale = msk * sampler.valid
            dy = ((np.concatenate([lx - 1, -lx, 1 - lx, lx], axis=1) * along).sum(axis=1) * scale)
            dxx = ((np.concatenate([ly - 1, 1 - ly, -ly, ly], axis=1) * along).sum(axis=1) * scale)
            nb, dg, k = sampler.shape[:3]
            doff[s] = np.stack([dy, dxx], axis=1).reshape(nb, dg, k, -1, 2).transpose(0, 1, 2, 4, 3).reshape(
                doff[s].shape)
        if need[0]:
            rows, rows_n = sampler.rows.reshape(-1), sampler.mat.shape[0] - 1
            keep = rows < rows_n
            src = np.repeat(np.arange(len(sampler.rows)), 4)
            grid = gather_transpose(rows[keep], src[keep], (sampler.weights * msk[:, None]).reshape(-1)[keep], dvals,
                                    rows_n)
            nb, dg = d.shape[0], sampler.shape[1]
            dx[s] = grid.reshape(nb, dg, h, wd, -1).transpose(0, 1, 4, 2, 3).reshape(nb, c, h, wd)
    return dx, doff, dmask, dfilt.reshape(filt.shape).astype(filt.dtype)


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
    """The samples of ROIs ``chunk`` per (roi, class, ph, pw): the four corner rows of each of the
    sample_per_part^2 samples in the stacked input ``_ps_matrix`` (rows of the class's output channels), their
    weights divided by the bin's sample count (0 for a sample outside), the counts, and the trans slots."""

    def __init__(self, attrs, x, rois, trans, images, chunk):
        n, _, h, w = x.shape
        (gh, gw), (part_h, part_w) = attrs["group_size"], attrs["part_size"]
        ph, pw, s, scale = attrs["pooled_height"], attrs["pooled_width"], attrs["sample_per_part"], attrs["spatial_scale"]
        classes = _ps_classes(attrs, trans)
        r = np.arange(rois.shape[0])[chunk]
        box = np.sign(rois[chunk]) * np.floor(np.abs(rois[chunk]) + 0.5)
        x0, y0 = box[:, 0] * scale - 0.5, box[:, 1] * scale - 0.5
        rw = np.maximum((box[:, 2] + 1) * scale - 0.5 - x0, 0.1)
        rh = np.maximum((box[:, 3] + 1) * scale - 0.5 - y0, 0.1)
        bins_y, bins_x = np.arange(ph), np.arange(pw)
        self.part_y = np.floor(bins_y / ph * part_h).astype(np.int64)
        self.part_x = np.floor(bins_x / pw * part_w).astype(np.int64)
        if attrs["no_trans"]:
            tx = ty = np.zeros((len(r), classes, ph, pw))
        else:
            t = trans[r] * attrs["trans_std"]
            tx = t[:, 0::2][:, :, self.part_y][:, :, :, self.part_x]
            ty = t[:, 1::2][:, :, self.part_y][:, :, :, self.part_x]
        k = np.arange(s)  # [R, classes, PH, PW, S (rows), S (columns)]
        hh = ((bins_y * (rh / ph)[:, None] + y0[:, None])[:, None, :, None] + ty * rh[:, None, None, None])[
            ..., None, None] + (k * (rh / ph / s)[:, None])[:, None, None, None, :, None]
        ww = ((bins_x * (rw / pw)[:, None] + x0[:, None])[:, None, None, :] + tx * rw[:, None, None, None])[
            ..., None, None] + (k * (rw / pw / s)[:, None])[:, None, None, None, None, :]
        valid = (ww >= -0.5) & (ww <= w - 0.5) & (hh >= -0.5) & (hh <= h - 0.5)
        hh, ww = np.clip(np.broadcast_to(hh, valid.shape), 0, h - 1), np.clip(np.broadcast_to(ww, valid.shape), 0, w - 1)
        ylo, xlo, yhi, xhi = (v.astype(np.int64) for v in (np.floor(hh), np.floor(ww), np.ceil(hh), np.ceil(ww)))
        dy, dx = hh - ylo, ww - xlo
        group = (np.clip(bins_y * gh // ph, 0, gh - 1)[:, None] * gw + np.clip(bins_x * gw // pw, 0, gw - 1))
        plane = ((group * classes + np.arange(classes)[:, None, None]) * n + images[r][:, None, None, None])
        base = (plane * (h * w))[..., None, None]
        self.count = valid.sum(axis=(-1, -2))  # [R, classes, PH, PW]
        scale_ = np.where(valid, 1.0 / np.maximum(self.count, 1)[..., None, None], 0.0)
        corners = [(ylo, xlo, (1 - dx) * (1 - dy)), (yhi, xlo, (1 - dx) * dy), (ylo, xhi, dx * (1 - dy)),
                   (yhi, xhi, dx * dy)]
        shape = self.count.shape + (-1,)
        self.rows = np.stack([(base + yy * w + xx).reshape(shape) for yy, xx, _ in corners], axis=-1).reshape(shape)
        self.weights = np.stack([(wt * scale_).reshape(shape) for _, _, wt in corners], axis=-1).reshape(shape)
        self.dy, self.dx, self.scale = dy.reshape(shape), dx.reshape(shape), scale_.reshape(shape)
        self.size, self.r, self.classes = (rw, rh), r, classes


def _ps_classes(attrs, trans):
    return 1 if attrs["no_trans"] else trans.shape[1] // 2


def _ps_matrix(attrs, x, classes):
    """The input's first output_dim * group_h * group_w channels as rows (group, class, image, y, x) of the
    class's output channels."""
    n, _, h, w = x.shape
    (gh, gw), dim = attrs["group_size"], attrs["output_dim"]
    used = x[:, :dim * gh * gw].reshape(n, classes, dim // classes, gh, gw, h, w)
    return np.ascontiguousarray(used.transpose(3, 4, 1, 0, 5, 6, 2)).reshape(-1, dim // classes)


def _dps_chunks(attrs, rois):
    per = attrs["output_dim"] * attrs["pooled_height"] * attrs["pooled_width"] * attrs["sample_per_part"] ** 2 * 4
    step = max(1, _BLOCK // max(per, 1))
    return [slice(i, i + step) for i in range(0, rois.shape[0], step)]


def _dps_to_nchw(bins, attrs):
    """[R, classes, PH, PW, per class] -> [R, output_dim, PH, PW]."""
    r, k, ph, pw, per = bins.shape
    return bins.transpose(0, 1, 4, 2, 3).reshape(r, k * per, ph, pw)


@register_op("deformable_psroi_pooling", inputs=("Input", "ROIs", "Trans"), outputs=("Output", "TopCount"),
             no_grad_inputs=("ROIs",), context=True, infer_shape=_dps_infer,
             attrs={"no_trans": False, "spatial_scale": 1.0, "output_dim": 1, "group_size": [1, 1],
                    "pooled_height": 1, "pooled_width": 1, "part_size": [1, 1], "sample_per_part": 1,
                    "trans_std": 0.1})
def _deformable_psroi_forward(ctx, attrs, x, rois, trans):
    shape = _dps_infer(attrs, x, rois, trans)[0][0]
    images = roi_images(ctx, "DeformablePSROIPooling", x, rois)
    classes = _ps_classes(attrs, trans)
    mat = _ps_matrix(attrs, x, classes)
    out, count = np.zeros(shape, x.dtype), np.zeros(shape, x.dtype)
    for chunk in _dps_chunks(attrs, rois):
        sm = _PSSamples(attrs, x, rois, trans, images, chunk)
        bins = np.matmul(sm.weights.astype(x.dtype)[..., None, :], mat[sm.rows])[..., 0, :]
        out[chunk] = _dps_to_nchw(bins, attrs)
        count[chunk] = np.repeat(sm.count, shape[1] // classes, axis=1)
    return out, count


@register_grad("deformable_psroi_pooling", reads=("Input", "ROIs", "Trans"))
def _deformable_psroi_backward(ctx, attrs, ins, outs, douts, need):
    (x, rois, trans), dout = ins, douts[0]
    images = roi_images(ctx, "DeformablePSROIPooling", x, rois)
    classes = _ps_classes(attrs, trans)
    mat = _ps_matrix(attrs, x, classes)
    dmat, dtrans = np.zeros(mat.shape), np.zeros(trans.size)
    for chunk in _dps_chunks(attrs, rois):
        sm = _PSSamples(attrs, x, rois, trans, images, chunk)
        r, ph, pw = len(sm.r), attrs["pooled_height"], attrs["pooled_width"]
        dbins = dout[chunk].reshape(r, classes, -1, ph, pw).transpose(0, 1, 3, 4, 2)  # [R, classes, PH, PW, per]
        if need[0]:
            src = np.broadcast_to(np.arange(dbins[..., 0].size).reshape(sm.count.shape + (1,)), sm.rows.shape)
            dmat += gather_transpose(sm.rows.reshape(-1), src.reshape(-1), sm.weights.reshape(-1),
                                     dbins.reshape(-1, dbins.shape[-1]), mat.shape[0])
        if need[2] and not attrs["no_trans"]:
            v = np.einsum("...sc,...c->...s", mat[sm.rows], dbins).reshape(sm.rows.shape[:-1] + (-1, 4))
            u00, u01, u10, u11 = (v[..., i] for i in range(4))  # corners (y, x): lo-lo, hi-lo, lo-hi, hi-hi
            dy, dx = sm.dy.reshape(u00.shape), sm.dx.reshape(u00.shape)
            scale = sm.scale.reshape(u00.shape)
            gx = (((u11 - u01) * dy + (u10 - u00) * (1 - dy)) * scale).sum(-1) * sm.size[0][:, None, None, None]
            gy = (((u11 - u10) * dx + (u01 - u00) * (1 - dx)) * scale).sum(-1) * sm.size[1][:, None, None, None]
            th, tw = trans.shape[2:]
            at = ((sm.r[:, None, None, None] * trans.shape[1] + 2 * np.arange(classes)[:, None, None]) * th
                  + sm.part_y[:, None]) * tw + sm.part_x
            dtrans += np.bincount(at.reshape(-1), weights=gx.reshape(-1) * attrs["trans_std"], minlength=trans.size)
            dtrans += np.bincount((at + th * tw).reshape(-1), weights=gy.reshape(-1) * attrs["trans_std"],
                                  minlength=trans.size)
    dx = None
    if need[0]:
        (gh, gw), dim = attrs["group_size"], attrs["output_dim"]
        n, _, h, w = x.shape
        dx = np.zeros(x.shape, x.dtype)
        dx[:, :dim * gh * gw] = dmat.reshape(gh, gw, classes, n, h, w, -1).transpose(3, 2, 6, 0, 1, 4, 5).reshape(
            n, dim * gh * gw, h, w)
    return dx, None, dtrans.reshape(trans.shape).astype(trans.dtype) if need[2] else None
