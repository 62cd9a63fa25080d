"""Region-of-interest pooling: roi_pool, roi_align, psroi_pool and prroi_pool (fluid 1.8's kernels).

Each ROI [x1, y1, x2, y2] (``ROIs`` [R, 4]) belongs to the image its LoD (or ``RoisLod`` offsets, or
``BatchRoINums`` counts) puts it in, and is cut into pooled_height x pooled_width bins of the [N, C, H, W]
input.

NOTE [ ROI pooling as windows ]
Every op reduces each bin over a rectangle of pixels, its *window*. Bins are grouped by window size (within
a factor two), and each group is one gather of its windows' pixel rows from the input read channels-last
([B, K, C], padded entries reading an extra zero or -max row) and one batched matmul with the weights (or
one max). No ``reduceat`` and no scatter-add: both measured 10-20x slower than a reduction over a padded
axis (``np.add.reduceat`` over [50k, 256] float32 rows 0.16 s against 0.008 s; ``np.bincount`` over flat
indices 0.23 s and ``np.add.at`` 0.56 s for the same scatter). The gradient of a linear op is the
transposed gather: the (pixel, bin, weight) entries sorted by pixel, pixels grouped by how many bins read
them. The linear ops' weights are separable, a bin's weight of pixel (h, w) being
``Ay[roi, ph, h] * Ax[roi, pw, w]`` (dense per-axis tables whose non-zero run is the window):

* roi_align: the mean of ``sampling_ratio``^2 (or, adaptive, ceil(roi size / bins) per axis) bilinear
  samples; a sample outside [-1, H] x [-1, W] reads zero, as fluid's kernel;
* prroi_pool: the exact integral of the bilinear interpolation over the bin, divided by its area: per axis
  the integral of each pixel's hat function (so also differentiable in the ROI's coordinates);
* psroi_pool: the mean over the bin's integer pixel range, bin (ph, pw) of output channel c reading input
  channel (c * pooled_height + ph) * pooled_width + pw;
* roi_pool: the maximum over the bin's integer pixel range (fluid's float32 bin arithmetic), with
  ``Argmax`` the pixel index h * W + w it came from (-1 for an empty bin), which its gradient adds to.
Blocks are cut so a gathered block stays under ``_BLOCK`` elements.
"""
import numpy as np

from .registry import register_grad, register_op
from .sequence import row_segments

_BLOCK = 1 << 22  # elements of one gathered [entries, channels] block


# --- shapes, attributes and the image of every ROI ---------------------------------------------------------
def _check(op, attrs, x, rois, positive=("pooled_height", "pooled_width", "spatial_scale")):
    if len(x.shape) != 4:
        raise ValueError(f"The format of Input(X) in {op} is NCHW. And the rank of input must be 4. But received "
                         f"rank = {len(x.shape)} (shape {list(x.shape)})")
    if len(rois.shape) != 2 or (rois.shape[1] >= 0 and rois.shape[1] != 4):
        raise ValueError(f"Input(ROIs) of {op} should be a 2-D LoDTensor of shape (num_rois, 4) given as "
                         f"[[x1, y1, x2, y2], ...]. But received shape {list(rois.shape)}")
    for name in positive:
        if not attrs[name] > 0:
            raise ValueError(f"The '{name}' attribute in {op} is invalid. It must be greater than 0. But "
                             f"received '{name}' = {attrs[name]}")


def _out_shape(attrs, x, rois, channels=None):
    return (rois.shape[0], x.shape[1] if channels is None else channels, attrs["pooled_height"],
            attrs["pooled_width"])


def roi_images(ctx, op, x, rois, rois_lod=None, batch_roi_nums=None):
    """The image index of every ROI: from BatchRoINums (counts per image), RoisLod (offsets) or ROIs' LoD."""
    n, r = x.shape[0], rois.shape[0]
    if batch_roi_nums is not None:
        lengths, what = batch_roi_nums.reshape(-1).astype(np.int64), "Input(BatchRoINums)"
    elif rois_lod is not None:
        offsets = rois_lod.reshape(-1).astype(np.int64)
        lengths, what = np.diff(offsets), "Input(RoisLod)"
        if offsets.size == 0 or offsets[0] != 0 or (lengths < 0).any():
            raise ValueError(f"Input(RoisLod) of {op} should be the offsets [0, n1, n1 + n2, ...] of the ROIs of "
                             f"every image, but received {offsets.tolist()}")
    else:
        lod = ctx.input_lod("ROIs")
        if not lod:
            raise ValueError(f"Input(ROIs) Tensor of {op} does not contain LoD information (feed a LoDTensor, "
                             f"or give rois_lod)")
        lengths, what = np.asarray(lod[-1], np.int64), "the LoD of Input(ROIs)"
    if len(lengths) != n:
        raise ValueError(f"The rois_batch_size and imgs batch_size of {op} must be the same. But received "
                         f"rois_batch_size = {len(lengths)} (from {what}), batch_size = {n}")
    if int(lengths.sum()) != r:
        raise ValueError(f"The actual number of rois and the number of rois provided from {what} in {op} must be "
                         f"the same. But received actual number of rois is {r}, and the number of rois from "
                         f"{what} is {int(lengths.sum())}")
    return np.repeat(np.arange(n), lengths)


# --- windows: every pixel of every bin, as entries -----------------------------------------------------------
def _ragged_groups(counts, channels):
    """Items with ``counts[i]`` entries each, in groups of similar counts (within a factor two) small enough
    that a gathered [items, most entries, channels] block stays under ``_BLOCK`` elements: yields (items [B],
    entry positions k [B, K] (0 where past the item's count), valid [B, K])."""
    size_class = np.ceil(np.log2(np.maximum(counts, 1))).astype(np.int64)
    for cls in np.unique(size_class[counts > 0]):
        members = np.flatnonzero((size_class == cls) & (counts > 0))
        k = np.arange(int(counts[members].max()))
        per = max(1, _BLOCK // (k.size * max(channels, 1)))
        for start in range(0, members.size, per):
            items = members[start:start + per]
            valid = k < counts[items, None]
            yield items, np.where(valid, k, 0), valid


def gather_transpose(rows, src, weights, values, n_rows):
    """[n_rows, C]: row r is the sum of ``weights[e] * values[src[e]]`` over the entries e with ``rows[e] == r``.
    Entries are sorted by row and each row gathers its entries, rows grouped by how many they have (NOTE
    [ ROI pooling as windows ]: no scatter-add)."""
    order = np.argsort(rows, kind="stable")
    rows, src, weights = rows[order], src[order], weights[order].astype(values.dtype)
    targets, first, counts = np.unique(rows, return_index=True, return_counts=True)
    out = np.zeros((n_rows, values.shape[1]), values.dtype)
    for items, k, valid in _ragged_groups(counts, values.shape[1]):
        at = first[items, None] + k
        out[targets[items]] = np.matmul((weights[at] * valid)[:, None, :], values[src[at]])[:, 0]
    return out


class _Windows:
    """Every bin (r, ph, pw) of every ROI with its window: rows sy..sy+ly (sy, ly [R, PH]) by columns sx..sx+lx
    (sx, lx [R, PW]) of input plane ``planes`` [R, PH, PW] (NOTE [ ROI pooling as windows ])."""

    def __init__(self, sy, ly, sx, lx, planes, height, width):
        self.height, self.width = height, width
        r, p, q = (a.reshape(-1) for a in np.indices(planes.shape))
        self.r, self.p, self.q, self.plane = r, p, q, planes.reshape(-1)
        self.sy, self.ly, self.sx, self.lx = sy[r, p], ly[r, p], sx[r, q], lx[r, q]

    def blocks(self, channels, end):
        """(bins [B], rows [B, K] into the channels-last input of ``end`` rows (``end`` where not valid), y, x)."""
        for bins, k, valid in _ragged_groups(self.ly * self.lx, channels):
            ky, kx = np.divmod(k, self.lx[bins, None])
            y, x = self.sy[bins, None] + ky, self.sx[bins, None] + kx
            yield bins, np.where(valid, (self.plane[bins, None] * self.height + y) * self.width + x, end), y, x

    def sum(self, mat, weight):
        """[bins, C]: each bin's sum of its pixels' rows of ``mat`` times ``weight(bins, y, x)``."""
        out = np.zeros((self.r.size, mat.shape[1]), mat.dtype)
        mat = np.concatenate([mat, np.zeros((1, mat.shape[1]), mat.dtype)])  # the row past the end reads zero
        for bins, rows, y, x in self.blocks(mat.shape[1], len(mat) - 1):
            out[bins] = np.matmul(weight(bins, y, x).astype(mat.dtype)[:, None, :], mat[rows])[:, 0]
        return out

    def scatter(self, dbins, weight, n_rows):
        """The transpose of ``sum``: [n_rows, C], each pixel row's weighted share of its bins' ``dbins``. The
        entries are sorted by pixel row and each row gathers its bins as ``sum`` does (no scatter-add)."""
        parts = [(rows, np.broadcast_to(bins[:, None], rows.shape), weight(bins, y, x))
                 for bins, rows, y, x in self.blocks(1, n_rows)]
        rows, bins, wts = (np.concatenate([p[i].reshape(-1) for p in parts]) if parts else np.zeros(0, np.int64)
                           for i in range(3))
        keep = rows < n_rows
        return gather_transpose(rows[keep], bins[keep], wts[keep], dbins, n_rows)

    def max(self, mat):
        """([bins, C] maximum of each bin's pixels (0 for an empty bin), [bins, C] int64 index y * W + x of the
        first pixel (row-major) holding it, -1 for an empty bin)."""
        out = np.zeros((self.r.size, mat.shape[1]), mat.dtype)
        arg = np.full(out.shape, -1, np.int64)
        low = np.finfo(mat.dtype).min if mat.dtype.kind == "f" else np.iinfo(mat.dtype).min
        mat = np.concatenate([mat, np.full((1, mat.shape[1]), low, mat.dtype)])  # past the end: never the max
        for bins, rows, y, x in self.blocks(mat.shape[1], len(mat) - 1):
            g = mat[rows]
            top = out[bins] = g.max(axis=1)
            k = np.arange(g.shape[1], dtype=np.min_scalar_type(g.shape[1]))[:, None]
            best = np.where(g == top[:, None], k, g.shape[1]).min(axis=1)  # the first holder (argmax is slower)
            arg[bins] = np.take_along_axis(y * self.width + x, best, axis=1)
        return out, arg


def _support(table):
    """Start and length of the non-zero run of every row of ``table`` [R, P, L] (length 0: all zero)."""
    nz = table != 0
    size = table.shape[-1]
    first, last = nz.argmax(-1), size - 1 - nz[..., ::-1].argmax(-1)
    return first, np.where(nz.any(-1), last - first + 1, 0)


def _channels_last(x):
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(-1, x.shape[1])


def _bins_to_nchw(bins, r, ph, pw, dtype):
    return bins.reshape(r, ph, pw, -1).transpose(0, 3, 1, 2).astype(dtype, copy=False)


def _nchw_to_bins(d):
    return d.transpose(0, 2, 3, 1).reshape(-1, d.shape[1])


class _Separable:
    """A linear ROI pooling with per-axis weight tables ``ay`` [R, PH, H] and ``ax`` [R, PW, W]."""

    def __init__(self, ay, ax, images):
        self.ay, self.ax = ay, ax
        planes = np.broadcast_to(images[:, None, None], (ay.shape[0], ay.shape[1], ax.shape[1]))
        self.win = _Windows(*_support(ay), *_support(ax), planes, ay.shape[2], ax.shape[2])

    def weight(self, bins, y, x):
        w = self.win
        return self.ay[w.r[bins, None], w.p[bins, None], y] * self.ax[w.r[bins, None], w.q[bins, None], x]

    def forward(self, x):
        r, ph, pw = self.ay.shape[0], self.ay.shape[1], self.ax.shape[1]
        return _bins_to_nchw(self.win.sum(_channels_last(x), self.weight), r, ph, pw, x.dtype)

    def backward(self, x, dout):
        n, c, h, w = x.shape
        d = self.win.scatter(_nchw_to_bins(dout), self.weight, n * h * w)
        return d.reshape(n, h, w, c).transpose(0, 3, 1, 2).astype(x.dtype)


def _corners(rois, attrs, dtype=np.float64):
    return [rois[:, i].astype(dtype) * attrs["spatial_scale"] for i in range(4)]


# --- roi_align: the mean of a grid of bilinear samples per bin ----------------------------------------------
def _align_axis(lo, size, bins, grid, extent):
    """[R, bins, extent]: each pixel row's weight in each bin, averaged over the bin's ``grid`` samples."""
    r = lo.shape[0]
    roi, local, _ = row_segments(bins * grid)
    b, i = np.divmod(local, grid[roi])
    step = size[roi] / bins
    pos = lo[roi] + b * step + (i + 0.5) * step / grid[roi]
    scale = ((pos >= -1) & (pos <= extent)) / grid[roi]
    pos = np.maximum(pos, 0)
    low = np.minimum(np.floor(pos), extent - 1).astype(np.int64)
    frac = np.where(low >= extent - 1, 0, pos - low)
    base = (roi * bins + b) * extent
    table = np.bincount(np.concatenate([base + low, base + np.minimum(low + 1, extent - 1)]),
                        weights=np.concatenate([(1 - frac) * scale, frac * scale]), minlength=r * bins * extent)
    return table.reshape(r, bins, extent)


def _align(ctx, attrs, x, rois, rois_lod):
    images = roi_images(ctx, "RoIAlign", x, rois, rois_lod)
    x1, y1, x2, y2 = _corners(rois, attrs)
    ph, pw, ratio = attrs["pooled_height"], attrs["pooled_width"], attrs["sampling_ratio"]
    height, width = np.maximum(y2 - y1, 1.0), np.maximum(x2 - x1, 1.0)
    gh = np.full(len(rois), ratio) if ratio > 0 else np.ceil(height / ph).astype(np.int64)
    gw = np.full(len(rois), ratio) if ratio > 0 else np.ceil(width / pw).astype(np.int64)
    return _Separable(_align_axis(y1, height, ph, gh, x.shape[2]), _align_axis(x1, width, pw, gw, x.shape[3]), images)


def _align_infer(attrs, x, rois, rois_lod):
    _check("RoIAlignOp", attrs, x, rois)
    return _out_shape(attrs, x, rois), x.dtype


@register_op("roi_align", inputs=("X", "ROIs", "RoisLod"), outputs=("Out",), optional=("RoisLod",),
             no_grad_inputs=("ROIs", "RoisLod"), context=True, infer_shape=_align_infer,
             attrs={"spatial_scale": 1.0, "pooled_height": 1, "pooled_width": 1, "sampling_ratio": -1})
def _roi_align_forward(ctx, attrs, x, rois, rois_lod):
    _align_infer(attrs, x, rois, rois_lod)
    return _align(ctx, attrs, x, rois, rois_lod).forward(x)


@register_grad("roi_align", reads=("X", "ROIs", "RoisLod"))
def _roi_align_backward(ctx, attrs, ins, outs, douts, need):
    x, rois, rois_lod = ins
    return _align(ctx, attrs, x, rois, rois_lod).backward(x, douts[0]), None, None


# --- prroi_pool: the integral of the bilinear interpolation over each bin, over its area ------------------------
def _hat_integral(t):
    """The integral of max(0, 1 - |u|) for u from -inf to t."""
    t = np.clip(t, -1.0, 1.0)
    return np.where(t <= 0, 0.5 * (1 + t) ** 2, 1 - 0.5 * (1 - t) ** 2)


def _hat(t):
    return np.maximum(0.0, 1 - np.abs(t))


def _prroi_edges(lo, hi, bins):
    """Per ROI and bin: window start and end [R, bins], and the bin size [R]."""
    step = np.maximum(hi - lo, 0.0) / bins
    start = lo[:, None] + np.arange(bins) * step[:, None]
    return start, start + step[:, None], step


def _prroi(ctx, attrs, x, rois, nums):
    """(image of every ROI, window edges (ys, ye, xs, xe) [R, bins], 1 / bin area [R] (0 for an empty bin),
    the weight tables ky (with 1 / area) and kx)."""
    images = roi_images(ctx, "PRROIPoolOp", x, rois, batch_roi_nums=nums)
    x1, y1, x2, y2 = _corners(rois, attrs)
    pix_y, pix_x = np.arange(x.shape[2]), np.arange(x.shape[3])
    ys, ye, bh = _prroi_edges(y1, y2, attrs["pooled_height"])
    xs, xe, bw = _prroi_edges(x1, x2, attrs["pooled_width"])
    area = bh * bw
    inv = np.divide(1.0, area, out=np.zeros_like(area), where=area > 0)[:, None, None]
    ky = (_hat_integral(ye[..., None] - pix_y) - _hat_integral(ys[..., None] - pix_y)) * inv
    kx = _hat_integral(xe[..., None] - pix_x) - _hat_integral(xs[..., None] - pix_x)
    return images, (ys, ye, xs, xe), inv, ky, kx


def _prroi_infer(attrs, x, rois, nums):
    _check("PRROIPoolOp", attrs, x, rois)
    if nums is not None and x.shape[0] >= 0 and nums.shape[0] >= 0 and nums.shape[0] != x.shape[0]:
        raise ValueError(f"The length of BatchRoINums ({nums.shape[0]}) should equal to first dim of inputs(X) "
                         f"({x.shape[0]})")
    return _out_shape(attrs, x, rois), x.dtype


@register_op("prroi_pool", inputs=("X", "ROIs", "BatchRoINums"), outputs=("Out",), optional=("BatchRoINums",),
             no_grad_inputs=("BatchRoINums",), context=True, infer_shape=_prroi_infer,
             attrs={"spatial_scale": 1.0, "pooled_height": 1, "pooled_width": 1})
def _prroi_pool_forward(ctx, attrs, x, rois, nums):
    _prroi_infer(attrs, x, rois, nums)
    images, _, _, ky, kx = _prroi(ctx, attrs, x, rois, nums)
    return _Separable(ky, kx, images).forward(x)


@register_grad("prroi_pool", reads=("X", "ROIs", "BatchRoINums", "Out"))
def _prroi_pool_backward(ctx, attrs, ins, outs, douts, need):
    (x, rois, nums), out, dout = ins, outs[0], douts[0]
    images, (ys, ye, xs, xe), inv, ky, kx = _prroi(ctx, attrs, x, rois, nums)
    dx = _Separable(ky, kx, images).backward(x, dout) if need[0] else None
    drois = None
    if need[1]:  # moving a window edge adds (or takes away) the line integral of the interpolation along it
        pix_y, pix_x = np.arange(x.shape[2]), np.arange(x.shape[3])

        def along(ay, ax):  # dOut . (the pooled line integral), summed over channels: [R, PH, PW]
            return (_Separable(ay, ax, images).forward(x.astype(np.float64)) * dout).sum(axis=1)
        mean = (dout * out).sum(axis=1)
        per_h, per_w = mean * inv * (xe - xs)[:, None, :], mean * inv * (ye - ys)[:, :, None]  # out / bin height, width
        d_ys = per_h - along(_hat(ys[..., None] - pix_y) * inv, kx)
        d_ye = along(_hat(ye[..., None] - pix_y) * inv, kx) - per_h
        d_xs = per_w - along(ky, _hat(xs[..., None] - pix_x))
        d_xe = along(ky, _hat(xe[..., None] - pix_x)) - per_w
        ph, pw = attrs["pooled_height"], attrs["pooled_width"]
        fy, fx = np.arange(ph)[None, :, None] / ph, np.arange(pw)[None, None, :] / pw  # bin starts, in ROI sizes
        drois = np.stack([(d_xs * (1 - fx) + d_xe * (1 - fx - 1 / pw)).sum(axis=(1, 2)),
                          (d_ys * (1 - fy) + d_ye * (1 - fy - 1 / ph)).sum(axis=(1, 2)),
                          (d_xs * fx + d_xe * (fx + 1 / pw)).sum(axis=(1, 2)),
                          (d_ys * fy + d_ye * (fy + 1 / ph)).sum(axis=(1, 2))], axis=1)
        drois = (drois * attrs["spatial_scale"]).astype(rois.dtype)
    return dx, drois, None


# --- psroi_pool: position-sensitive mean over each bin's pixel range ----------------------------------------------
def _c_round(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _int_bins(lo, size, bins, extent, dtype):
    """Integer pixel ranges [start, start + length) of every bin, clipped to the image: [R, bins] each."""
    step = (size / dtype(bins)).astype(dtype)[:, None]
    k = np.arange(bins, dtype=dtype)
    start = np.clip(np.floor(k * step + lo[:, None]), 0, extent).astype(np.int64)
    end = np.clip(np.ceil((k + 1) * step + lo[:, None]), 0, extent).astype(np.int64)
    return start, np.maximum(end - start, 0)


def _psroi(ctx, attrs, x, rois):
    images = roi_images(ctx, "PSROIPoolOp", x, rois)
    dtype, scale = x.dtype.type, x.dtype.type(attrs["spatial_scale"])
    x1, y1, x2, y2 = (_c_round(rois[:, i].astype(x.dtype)) for i in range(4))
    ys, xs = y1 * scale, x1 * scale
    hgt, wid = np.maximum((y2 + 1) * scale - ys, dtype(0.1)), np.maximum((x2 + 1) * scale - xs, dtype(0.1))
    ph, pw = attrs["pooled_height"], attrs["pooled_width"]
    sy, ly = _int_bins(ys, hgt, ph, x.shape[2], dtype)
    sx, lx = _int_bins(xs, wid, pw, x.shape[3], dtype)
    planes = images[:, None, None] * (ph * pw) + np.arange(ph * pw).reshape(ph, pw)
    win = _Windows(sy, ly, sx, lx, planes, x.shape[2], x.shape[3])
    return win, lambda bins, y, x: np.broadcast_to(1.0 / (win.ly[bins] * win.lx[bins])[:, None], y.shape)


def _ps_matrix(x, attrs):
    """The input as rows per (image, bin position, y, x) of its output_channels values."""
    n, _, h, w = x.shape
    parts = attrs["pooled_height"] * attrs["pooled_width"]
    return np.ascontiguousarray(x.reshape(n, -1, parts, h, w).transpose(0, 2, 3, 4, 1)).reshape(-1, x.shape[1] // parts)


def _psroi_infer(attrs, x, rois):
    _check("PSROIPoolOp", attrs, x, rois)
    oc, ph, pw = attrs["output_channels"], attrs["pooled_height"], attrs["pooled_width"]
    if x.shape[1] >= 0 and x.shape[1] != oc * ph * pw:
        raise ValueError(f"the channel of X({x.shape[1]}) should be equal to the product of output_channels({oc}), "
                         f"pooled_height({ph}) and pooled_width({pw})")
    if not oc > 1:
        raise ValueError(f"The pooled output channels must greater than 1, but received output_channels = {oc}")
    return _out_shape(attrs, x, rois, oc), x.dtype


@register_op("psroi_pool", inputs=("X", "ROIs"), outputs=("Out",), no_grad_inputs=("ROIs",), context=True,
             infer_shape=_psroi_infer,
             attrs={"output_channels": 1, "spatial_scale": 1.0, "pooled_height": 1, "pooled_width": 1})
def _psroi_pool_forward(ctx, attrs, x, rois):
    _psroi_infer(attrs, x, rois)
    win, weights = _psroi(ctx, attrs, x, rois)
    bins = win.sum(_ps_matrix(x, attrs), weights)
    return _bins_to_nchw(bins, len(rois), attrs["pooled_height"], attrs["pooled_width"], x.dtype)


@register_grad("psroi_pool", reads=("X", "ROIs"))
def _psroi_pool_backward(ctx, attrs, ins, outs, douts, need):
    (x, rois), dout = ins, douts[0]
    n, c, h, w = x.shape
    parts = attrs["pooled_height"] * attrs["pooled_width"]
    win, weights = _psroi(ctx, attrs, x, rois)
    d = win.scatter(_nchw_to_bins(dout), weights, n * parts * h * w)
    return d.reshape(n, parts, h, w, c // parts).transpose(0, 4, 1, 2, 3).reshape(x.shape).astype(x.dtype), None


# --- roi_pool: the maximum over each bin's pixel range ---------------------------------------------------------
def _roi_pool_windows(ctx, attrs, x, rois, rois_lod):
    images = roi_images(ctx, "ROIPoolOp", x, rois, rois_lod)
    x1, y1, x2, y2 = (_c_round(v).astype(np.int64) for v in _corners(rois, attrs, rois.dtype))
    f32 = np.float32
    sy, ly = _int_bins(y1.astype(f32), np.maximum(y2 - y1 + 1, 1).astype(f32), attrs["pooled_height"], x.shape[2],
                       f32)
    sx, lx = _int_bins(x1.astype(f32), np.maximum(x2 - x1 + 1, 1).astype(f32), attrs["pooled_width"], x.shape[3],
                       f32)
    planes = np.broadcast_to(images[:, None, None], sy.shape + (sx.shape[1],))
    return images, _Windows(sy, ly, sx, lx, planes, x.shape[2], x.shape[3])


def _roi_pool_infer(attrs, x, rois, rois_lod):
    _check("ROIPoolOp", attrs, x, rois)
    shape = _out_shape(attrs, x, rois)
    return (shape, x.dtype), (shape, "int64")


@register_op("roi_pool", inputs=("X", "ROIs", "RoisLod"), outputs=("Out", "Argmax"), optional=("RoisLod",),
             no_grad_inputs=("ROIs", "RoisLod"), context=True, infer_shape=_roi_pool_infer,
             attrs={"spatial_scale": 1.0, "pooled_height": 1, "pooled_width": 1})
def _roi_pool_forward(ctx, attrs, x, rois, rois_lod):
    _roi_pool_infer(attrs, x, rois, rois_lod)
    _, win = _roi_pool_windows(ctx, attrs, x, rois, rois_lod)
    out, arg = win.max(_channels_last(x))
    r, ph, pw = len(rois), attrs["pooled_height"], attrs["pooled_width"]
    return _bins_to_nchw(out, r, ph, pw, x.dtype), _bins_to_nchw(arg, r, ph, pw, np.int64)


@register_grad("roi_pool", reads=("X", "ROIs", "RoisLod", "Argmax"))
def _roi_pool_backward(ctx, attrs, ins, outs, douts, need):
    (x, rois, rois_lod), arg, dout = ins, outs[1], douts[0]
    n, c, h, w = x.shape
    images = roi_images(ctx, "ROIPoolOp", x, rois, rois_lod)
    plane = images[:, None, None, None] * c + np.arange(c)[:, None, None]
    hit = arg >= 0
    index = (np.broadcast_to(plane, arg.shape)[hit] * (h * w) + arg[hit])
    dx = np.bincount(index, weights=dout[hit], minlength=x.size).reshape(x.shape)
    return dx.astype(x.dtype), None, None

