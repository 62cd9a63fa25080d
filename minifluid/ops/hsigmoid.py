"""hierarchical_sigmoid: the loss of a label as the binary decisions on its path through a tree of classes.

NOTE [ hsigmoid's paths ]
Each sample's label names a leaf; the path from the root to it visits non-leaf nodes (rows of W and
Bias) and goes left or right at each (the code bit). The default tree is the complete binary tree of
``num_classes`` leaves: leaf c is node ``c + num_classes`` (the root is node 1), the j-th step up from it
is node ``(c + num_classes) >> (j + 1)``, whose weight row is that minus 1, and its bit is bit j of
``c + num_classes``; the path has ``bit_length(c + num_classes) - 1`` steps and W has ``num_classes - 1``
rows. A custom tree gives each sample's rows (PathTable) and bits (PathCode), [N, L] with -1 after the
path's end. Every sample's path is padded to the longest, L (``bit_length(num_classes - 1)`` by default),
and a mask marks the real steps, so the whole batch is one gather of W's rows and one contraction.

With z = W[row] . x + b[row] clipped to [-40, 40] on each real step and 0 on padding, the loss is
``sum_j softplus(z_j) - sum_j bit_j z_j``; padding adds log 2 per step, as fluid's kernel does. PreOut
keeps softplus(z); the gradient (from it) is ``sigmoid(z_j) - bit_j`` on the real steps, the clipping
ignored, as in fluid.
"""
import numpy as np

from .registry import register_grad, register_op


def _paths(attrs, x, w, label, table, code):
    """(rows, bits, mask), each [N, L]: the weight row, the code bit and whether step j is on the path.

    Sample i's label is the i-th element of Label read flat (a [N, k] Label gives its first N values), as
    in fluid."""
    label = label.reshape(-1).astype(np.int64, copy=False)
    if label.size < x.shape[0]:
        raise ValueError(f"hierarchical_sigmoid: Input(Label) has {label.size} values, fewer than the "
                         f"{x.shape[0]} rows of Input(X)")
    label = label[:x.shape[0]]
    if table is None:
        n_class = attrs["num_classes"]
        bad = (label < 0) | (label >= n_class)
        if bad.any():
            raise ValueError(f"hierarchical_sigmoid: Input(Label) holds {int(label[bad][0])}, out of range "
                             f"[0, num_classes={n_class})")
        node = label + n_class
        steps = np.arange(int(n_class - 1).bit_length(), dtype=np.int64)
        rows = (node[:, None] >> (steps + 1)) - 1
        bits = (node[:, None] >> steps) & 1
        length = np.floor(np.log2(node)).astype(np.int64)  # bit_length(node) - 1
        mask = steps < length[:, None]
    else:
        if table.shape != code.shape or table.shape[0] != label.shape[0]:
            raise ValueError(f"hierarchical_sigmoid: Input(PathTable) {list(table.shape)} and Input(PathCode) "
                             f"{list(code.shape)} must both be [N, L] with N = {label.shape[0]} labels")
        mask = np.cumprod(table >= 0, axis=1).astype(bool)
        rows, bits = table.astype(np.int64), code.astype(np.int64)
        if (rows[mask] >= w.shape[0]).any():
            raise ValueError(f"hierarchical_sigmoid: Input(PathTable) names row {int(rows[mask].max())}, but "
                             f"Input(W) has {w.shape[0]} rows")
    return np.where(mask, rows, 0), bits * mask, mask


def _hsigmoid_infer(attrs, x, w, label, table, code, bias):
    length = table.shape[1] if table is not None else int(attrs["num_classes"] - 1).bit_length()
    return ((x.shape[0], 1), x.dtype), ((x.shape[0], length), x.dtype), (w.shape, w.dtype)


@register_op("hierarchical_sigmoid", inputs=("X", "W", "Label", "PathTable", "PathCode", "Bias"),
             outputs=("Out", "PreOut", "W_Out"), optional=("PathTable", "PathCode", "Bias"),
             no_grad_inputs=("Label", "PathTable", "PathCode"), infer_shape=_hsigmoid_infer,
             attrs={"num_classes": 2, "remote_prefetch": False, "trainer_id": 0, "height_sections": [], "epmap": [],
                    "table_names": [], "is_sparse": False}, share_lod={"Out": "X"})
def _hsigmoid_forward(attrs, x, w, label, table, code, bias):
    """Out [N, 1] and PreOut [N, L] (see the NOTE); W_Out is W itself, left as it is."""
    if x.ndim != 2 or w.ndim != 2 or w.shape[1] != x.shape[1]:
        raise ValueError(f"hierarchical_sigmoid: Input(X) must be [N, D] and Input(W) [K, D], got "
                         f"{list(x.shape)} and {list(w.shape)}")
    rows, bits, mask = _paths(attrs, x, w, label, table, code)
    z = np.einsum("nld,nd->nl", w[rows], x)
    if bias is not None:
        z += bias.reshape(-1)[rows]
    z = np.clip(np.where(mask, z, 0), -40.0, 40.0)
    pre_out = np.logaddexp(0, z).astype(x.dtype, copy=False)
    out = pre_out.sum(axis=1, keepdims=True) - (bits * z).sum(axis=1, keepdims=True)
    return out.astype(x.dtype, copy=False), pre_out, None


@register_grad("hierarchical_sigmoid", reads=("X", "W", "Label", "PathTable", "PathCode", "Bias", "PreOut"))
def _hsigmoid_backward(attrs, ins, outs, douts, need):
    x, w, label, table, code, bias = ins
    rows, bits, mask = _paths(attrs, x, w, label, table, code)
    g = np.where(mask, -np.expm1(-outs[1]) - bits, 0) * douts[0].reshape(-1, 1)  # sigmoid(z) - bit
    g = g.astype(x.dtype, copy=False)
    dx = np.einsum("nl,nld->nd", g, w[rows]) if need[0] else None
    dw = db = None
    if need[1] or (bias is not None and need[5]):
        hit, weight = rows[mask], g[mask]
        if need[1]:
            dw = np.zeros_like(w)
            np.add.at(dw, hit, weight[:, None] * x[np.nonzero(mask)[0]])
        if bias is not None and need[5]:
            db = np.bincount(hit, weights=weight, minlength=bias.size).reshape(bias.shape).astype(bias.dtype)
    return dx, dw, None, None, None, db
