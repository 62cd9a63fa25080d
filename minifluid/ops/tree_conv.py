"""tree_conv: the tree-based convolution of TBCNN (fluid.contrib.layers.tree_conv, fluid.dygraph.TreeConv).

Each sample is a tree: ``EdgeSet`` [B, E, 2] holds (parent, child) pairs of 1-based node ids, read up to the
first pair holding a 0 (fluid's padding); node ``i`` has the features ``NodesVector[b, i - 1]``. The patch of
node ``u`` is ``u`` with its descendants less than ``max_depth`` levels below it; a member ``v`` at depth ``d``,
the ``index``-th of its parent's ``pclen`` children, weighs its features by fluid's three coefficients

    eta_t = (max_depth - d) / max_depth
    eta_l = (1 - eta_t) * ((index - 1) / (pclen - 1), or 0.5 for an only child)
    eta_r = (1 - eta_t) * (1 - eta_l)

and ``Out[b, u - 1] = sum over members v, k in (l, r, t) of eta_k(v) * x_v @ Filter[:, k]`` ([output_size,
num_filters] per node). Rows of nodes past the tree's node count (edges + 1) stay zero. The coefficients are
three dense [B, n, n] matrices built for the whole batch at once, walking ancestors ``max_depth - 1`` times
through a parent table; the output and both gradients are then batched matrix products.
"""
import numpy as np

from .registry import register_grad, register_op


def _coefficients(edges, n, max_depth, dtype):
    """C [3, B, n, n]: ``C[k, b, u, v]`` is the weight (eta_l, eta_r, eta_t) of node v + 1 in node u + 1's patch."""
    b_size, e_size = edges.shape[:2]
    parent_id, child_id = edges[..., 0].astype(np.int64), edges[..., 1].astype(np.int64)
    nonzero = (parent_id != 0) & (child_id != 0)
    if (edges < 0).any() or (edges > n).any():
        raise ValueError(f"tree_conv: node ids in Input(EdgeSet) must be in [0, {n}] (the nodes of Input(NodesVector)), "
                         f"got {int(edges[(edges < 0) | (edges > n)][0])}")
    valid = np.cumprod(nonzero, axis=1).astype(bool)  # children are read up to the first pair with a 0
    node_count = nonzero.sum(axis=1) + 1
    siblings = (parent_id[:, :, None] == parent_id[:, None, :]) & valid[:, :, None] & valid[:, None, :]
    index = (siblings & np.tri(e_size, k=-1, dtype=bool)).sum(axis=2) + 1  # 1-based among the parent's children
    pclen = siblings.sum(axis=2)
    share = np.where(pclen == 1, 0.5, (index - 1.0) / np.maximum(pclen - 1.0, 1.0))
    rows = np.broadcast_to(np.arange(b_size)[:, None], (b_size, e_size))[valid]
    parent = np.zeros((b_size, n + 1), np.int64)  # node id -> its parent's id (0: none)
    parent[rows, child_id[valid]] = parent_id[valid]
    node_share = np.zeros((b_size, n + 1))
    node_share[rows, child_id[valid]] = share[valid]
    coef = np.zeros((3, b_size, n + 1, n + 1), dtype=dtype)
    ids = np.arange(n + 1)
    roots = (ids[None, :] >= 1) & (ids[None, :] <= node_count[:, None])
    root_b, root_u = np.nonzero(roots)
    coef[2, root_b, root_u, root_u] = 1.0  # a root: eta_t = 1
    ancestor = np.broadcast_to(ids, (b_size, n + 1))
    batch = np.arange(b_size)[:, None]
    for depth in range(1, max_depth):  # members ``depth`` levels below their patch's root
        ancestor = parent[batch, ancestor]
        bs, vs = np.nonzero(ancestor)
        us = ancestor[bs, vs]
        kept = us <= node_count[bs]  # only nodes up to the tree's node count have a patch
        bs, vs, us = bs[kept], vs[kept], us[kept]
        eta_t = (max_depth - depth) / max_depth
        eta_l = (1.0 - eta_t) * node_share[bs, vs]
        np.add.at(coef, (0, bs, us, vs), eta_l)
        np.add.at(coef, (1, bs, us, vs), (1.0 - eta_t) * (1.0 - eta_l))
        np.add.at(coef, (2, bs, us, vs), eta_t)
    return coef[:, :, 1:, 1:]


def _check(x, edges, w):
    if len(edges.shape) != 3:
        raise ValueError(f"The dimension of EdgeSet Tensor should be 3. But received the dimension of EdgeSet Tensor "
                         f"is {len(edges.shape)}.")
    if edges.shape[2] not in (-1, 2):
        raise ValueError(f"Input(EdgeSet) dim[2] should be 2. But received Input(EdgeSet) dim[2] is {edges.shape[2]}.")
    if len(x.shape) != 3:
        raise ValueError(f"The dimension of NodesVector Tensor should be 3. But received the dimension of NodesVector "
                         f"Tensor is {len(x.shape)}.")
    if len(w.shape) != 4:
        raise ValueError(f"The dimension of Filter Tensor should be 4. But received the dimension of Filter Tensor is "
                         f"{len(w.shape)}.")
    if w.shape[1] not in (-1, 3):
        raise ValueError(f"Input(Filter) dim[1] should be 3. But received Input(Filter) dim[1] is {w.shape[1]}.")
    if -1 not in (w.shape[0], x.shape[2]) and w.shape[0] != x.shape[2]:
        raise ValueError(f"Input(Filter) dim[0] must equal to Input(NodesVector) dim[2]. But received Input(Filter) "
                         f"dim[0] = {w.shape[0]}, Input(NodesVector) dim[2] = {x.shape[2]}.")


def _tree_conv_infer(attrs, x, edges, w):
    _check(x, edges, w)
    return (x.shape[0], x.shape[1], w.shape[2], w.shape[3]), x.dtype


def _filters(w):
    """Filter [F, 3, O, NF] as [F, 3, O * NF]."""
    return w.reshape(w.shape[0], 3, -1)


@register_op("tree_conv", inputs=("NodesVector", "EdgeSet", "Filter"), outputs=("Out",), attrs={"max_depth": 2},
             no_grad_inputs=("EdgeSet",), infer_shape=_tree_conv_infer)
def _tree_conv_forward(attrs, x, edges, w):
    _check(x, edges, w)
    coef = _coefficients(edges, x.shape[1], attrs["max_depth"], x.dtype)
    patches = np.einsum("kbuv,bvf->kbuf", coef, x)
    out = np.einsum("kbuf,fkq->buq", patches, _filters(w))
    return out.reshape(x.shape[0], x.shape[1], w.shape[2], w.shape[3]).astype(x.dtype, copy=False)


@register_grad("tree_conv", reads=("NodesVector", "EdgeSet", "Filter"))
def _tree_conv_backward(attrs, ins, outs, douts, need):
    x, edges, w = ins
    coef = _coefficients(edges, x.shape[1], attrs["max_depth"], x.dtype)
    g = douts[0].reshape(x.shape[0], x.shape[1], -1)
    dx = dw = None
    if need[0]:
        dx = np.einsum("kbuv,kbuf->bvf", coef, np.einsum("buq,fkq->kbuf", g, _filters(w))).astype(x.dtype)
    if need[2]:
        patches = np.einsum("kbuv,bvf->kbuf", coef, x)
        dw = np.einsum("kbuf,buq->fkq", patches, g).reshape(w.shape).astype(w.dtype)
    return dx, None, dw
