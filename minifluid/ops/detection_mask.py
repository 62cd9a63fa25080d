"""Mask R-CNN's mask targets: generate_mask_labels gives every foreground RoI the polygons of the ground truth
whose box overlaps it most, rasterised into a ``resolution`` x ``resolution`` grid over the RoI and written into
the ``resolution ** 2`` columns of its class (-1 in the other classes' columns).

Rasterisation (``polygons_to_masks``) is the COCO API's polygon-to-RLE scan, run on every (RoI, polygon) pair
at once: the vertices are snapped to a grid 5 times finer, every edge is walked one step at a time (all edges of
all polygons together, by repeat / cumulative offsets), the steps that cross a pixel column give that column's
boundary rows, and a pixel is inside when an odd number of boundaries lie at or before it in column-major
order (one bincount and cumulative sum per polygon row). The per-image bookkeeping (which ground truth has a
mask, which RoIs are foreground) depends on each image's own lengths, so the op walks the images for it and
rasterises all of them in one call. It has no gradient (fluid's has none).
"""
import numpy as np

from .detection_target import pixel_overlaps
from .registry import register_op
from .sequence import lod_offsets, row_segments

_FINE = 5.0  # the sub-pixel grid of the scan


def _c_round(x):
    """C's ``(int)(x + .5)``: truncation toward zero."""
    return np.trunc(x + 0.5).astype(np.int64)


def polygons_to_masks(points, vertex_counts, size):
    """Masks [P, size, size] (uint8) of P polygons given as ``points`` [V, 2] (x, y in mask pixels, float) with
    ``vertex_counts`` [P] vertices each."""
    p = len(vertex_counts)
    counts = np.asarray(vertex_counts, np.int64)
    if not p:
        return np.zeros((0, size, size), np.uint8)
    poly, pos, offsets = row_segments(counts)
    x = _c_round(_FINE * points[:, 0].astype(np.float64))
    y = _c_round(_FINE * points[:, 1].astype(np.float64))
    nxt = np.where(pos + 1 < counts[poly], np.arange(len(x)) + 1, offsets[poly])  # each edge's end: the next vertex
    xs, ys, xe, ye = x, y, x[nxt], y[nxt]
    dx, dy = np.abs(xe - xs), np.abs(ys - ye)
    along_x = dx >= dy
    flip = (along_x & (xs > xe)) | (~along_x & (ys > ye))
    xs, xe = np.where(flip, xe, xs), np.where(flip, xs, xe)
    ys, ye = np.where(flip, ye, ys), np.where(flip, ys, ye)
    steps = np.maximum(dx, dy) + 1
    edge, d, _ = row_segments(steps)  # every step of every edge, in order
    span = np.maximum(dx, dy)[edge]
    t = np.where(flip[edge], span - d, d)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(along_x, np.where(dx == 0, 0.0, (ye - ys) / np.maximum(dx, 1)),
                         np.where(dy == 0, 0.0, (xe - xs) / np.maximum(dy, 1)))[edge]
    u = np.where(along_x[edge], t + xs[edge], _c_round(xs[edge] + slope * t))
    v = np.where(along_x[edge], _c_round(ys[edge] + slope * t), t + ys[edge])
    owner = poly[edge]
    # boundary points: consecutive steps of one polygon that change column
    prev = np.arange(len(u)) - 1
    pair = (prev >= 0) & (owner == owner[np.maximum(prev, 0)]) & (u != u[np.maximum(prev, 0)])
    j = np.flatnonzero(pair)
    uj, up, vj, vp = u[j], u[j - 1], v[j], v[j - 1]
    xd = (np.where(uj < up, uj, uj - 1) + 0.5) / _FINE - 0.5
    ok = (np.floor(xd) == xd) & (xd >= 0) & (xd <= size - 1)
    yd = np.ceil(np.clip((np.minimum(vj, vp) + 0.5) / _FINE - 0.5, 0, size))
    flat = xd[ok].astype(np.int64) * size + yd[ok].astype(np.int64)  # column-major position
    hits = np.bincount(owner[j][ok] * (size * size + 1) + flat, minlength=p * (size * size + 1))
    inside = np.cumsum(hits.reshape(p, size * size + 1)[:, :size * size], axis=1) % 2
    return inside.reshape(p, size, size).transpose(0, 2, 1).astype(np.uint8)


def _boxes_of(points, starts, ends):
    """The box [G, 4] around each run ``points[starts[g]:ends[g]]`` of (x, y) points (zeros for an empty run)."""
    if not len(starts):
        return np.zeros((0, 4), points.dtype)
    ext = np.concatenate([points, points[:1]])  # so that an end at len(points) is a valid reduceat index
    bounds = np.stack([starts, ends], 1).ravel()  # reduce [start, end), skip [end, next start)
    lo, hi = np.minimum.reduceat(ext, bounds, axis=0)[::2], np.maximum.reduceat(ext, bounds, axis=0)[::2]
    return np.where((ends > starts)[:, None], np.concatenate([lo, hi], 1), 0).astype(points.dtype)


def _mask_infer(attrs, im_info, gt_classes, is_crowd, gt_segms, rois, labels):
    for slot, v, rank in (("ImInfo", im_info, 2), ("GtSegms", gt_segms, 2), ("Rois", rois, 2)):
        if len(v.shape) != rank:
            raise ValueError(f"generate_mask_labels: The rank of Input({slot}) must be {rank}, but received shape "
                             f"{list(v.shape)}.")
    if gt_segms.shape[1] not in (2, -1):
        raise ValueError(f"generate_mask_labels: Input(GtSegms) holds (x, y) points [P, 2], but received shape "
                         f"{list(gt_segms.shape)}.")
    width = attrs["num_classes"] * attrs["resolution"] ** 2
    return ((-1, 4), rois.dtype), ((-1, 1), "int32"), ((-1, width), "int32")


def _lod(ctx, slot, levels):
    lod = ctx.input_lod(slot)
    if len(lod) != levels:
        raise ValueError(f"generate_mask_labels: Input({slot}) needs {levels} level{'s' if levels > 1 else ''} of "
                         f"LoD, but received {len(lod)}, LoD {lod}.")
    return lod


@register_op("generate_mask_labels", inputs=("ImInfo", "GtClasses", "IsCrowd", "GtSegms", "Rois", "LabelsInt32"),
             outputs=("MaskRois", "RoiHasMaskInt32", "MaskInt32"), attrs={"num_classes": 0, "resolution": 0},
             infer_shape=_mask_infer, context=True, no_gradient=True)
def _generate_mask_labels(ctx, attrs, im_info, gt_classes, is_crowd, gt_segms, rois, labels):
    _mask_infer(attrs, im_info, gt_classes, is_crowd, gt_segms, rois, labels)
    cls_off = lod_offsets(_lod(ctx, "GtClasses", 1)[0])
    crowd_off = lod_offsets(_lod(ctx, "IsCrowd", 1)[0])
    label_off = lod_offsets(_lod(ctx, "LabelsInt32", 1)[0])
    roi_off = lod_offsets(_lod(ctx, "Rois", 1)[0])
    segm_lod = _lod(ctx, "GtSegms", 3)
    n = len(cls_off) - 1
    if len(segm_lod[0]) != n:
        raise ValueError(f"generate_mask_labels: Input(GtSegms) holds {len(segm_lod[0])} images but "
                         f"Input(GtClasses) {n}.")
    gt_polys = lod_offsets(segm_lod[1])  # ground truth g's polygons: gt_polys[g]:gt_polys[g + 1]
    poly_pts = lod_offsets(segm_lod[2])  # polygon q's points: poly_pts[q]:poly_pts[q + 1]
    gt_start = lod_offsets(segm_lod[0])
    res, classes_n = attrs["resolution"], attrs["num_classes"]
    dtype = rois.dtype.type
    points, vertex_counts, poly_roi = [], [], []  # the (RoI, polygon) pairs to rasterise
    out_rois, has_mask, roi_class, counts = [], [], [], []
    for i in range(n):  # per image bookkeeping (module docstring)
        lo, hi = roi_off[i], roi_off[i + 1]
        if lo == hi:
            counts.append(0)
            continue
        scale = im_info[i, 2]
        classes = gt_classes[cls_off[i]:cls_off[i + 1]].reshape(-1)
        crowd = is_crowd[crowd_off[i]:crowd_off[i + 1]].reshape(-1)
        label = labels[label_off[i]:label_off[i + 1]].reshape(-1)
        gts = np.flatnonzero((classes > 0) & (crowd == 0)) + gt_start[i]  # global ground-truth ids with a mask
        fg = np.flatnonzero(label > 0)
        if not len(fg):  # fluid's placeholder: the first RoI, class 0 (an all -1 target)
            bg = np.flatnonzero(label == 0)[:1]
            out_rois.append(rois[lo:lo + 1] / scale * scale)
            has_mask.append(bg)
            roi_class.append(np.zeros(1, np.int64))
            counts.append(1)
            continue
        box_of = _boxes_of(gt_segms, poly_pts[gt_polys[gts]], poly_pts[gt_polys[gts + 1]]).astype(dtype)
        fg_rois = (rois[lo:hi][fg] / scale).astype(dtype, copy=False)
        ov = pixel_overlaps(fg_rois, box_of) if len(gts) else np.zeros((len(fg), 0), dtype)
        if len(gts):  # each RoI's ground truth: the first best overlap (the first one when none overlaps)
            g = gts[ov.argmax(axis=1)]
            n_poly = gt_polys[g + 1] - gt_polys[g]
            roi_of_poly, within, _ = row_segments(n_poly)
            poly = gt_polys[g][roi_of_poly] + within
            n_pts = poly_pts[poly + 1] - poly_pts[poly]
            poly_of_pt, at, _ = row_segments(n_pts)
            pts = gt_segms[poly_pts[poly][poly_of_pt] + at].astype(dtype, copy=False)
            r = roi_of_poly[poly_of_pt]
            size = np.stack([np.maximum(fg_rois[:, 2] - fg_rois[:, 0], dtype(1)),
                             np.maximum(fg_rois[:, 3] - fg_rois[:, 1], dtype(1))], 1)
            points.append((pts - fg_rois[r, :2]) * dtype(res) / size[r])  # in the RoI's mask pixels
            vertex_counts.append(n_pts)
            poly_roi.append(sum(counts) + roi_of_poly)
        out_rois.append(fg_rois * scale)
        has_mask.append(fg)
        roi_class.append(label[fg].astype(np.int64))
        counts.append(len(fg))
    total = sum(counts)
    masks = np.zeros((total, res, res), np.uint8)
    if vertex_counts:
        drawn = polygons_to_masks(np.concatenate(points), np.concatenate(vertex_counts), res)
        np.maximum.at(masks, np.concatenate(poly_roi), drawn)  # a RoI's polygons are unioned
    cls = np.concatenate(roi_class) if roi_class else np.zeros(0, np.int64)
    target = np.full((total, classes_n, res * res), -1, np.int32)
    fg_rows = np.flatnonzero(cls > 0)
    target[fg_rows, cls[fg_rows]] = masks[fg_rows].reshape(len(fg_rows), res * res)
    for slot in ("MaskRois", "RoiHasMaskInt32", "MaskInt32"):
        ctx.set_output_lod(slot, [counts])
    return (np.concatenate(out_rois).astype(dtype, copy=False) if out_rois else np.zeros((0, 4), dtype),
            (np.concatenate(has_mask) if has_mask else np.zeros(0, np.int64)).astype(np.int32).reshape(-1, 1),
            target.reshape(total, classes_n * res * res))
