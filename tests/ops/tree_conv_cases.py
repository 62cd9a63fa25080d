"""check_op cases of ops/tree_conv.py: the forward against a node-by-node reference that builds each patch by a
depth-first walk (as fluid's tree2col does), the gradients against float64 central differences; they join
vision_cases.CASES, which tests/ops/test_op_gradients.py runs."""
import numpy as np

from .vision_cases import case

rng = np.random.default_rng(77)  # its own generator: the other case files' values do not depend on import order


def tree_conv_ref(x, edges, w, max_depth):
    b_size, n, _ = x.shape
    out = np.zeros((b_size, n) + w.shape[2:])
    for b in range(b_size):
        children, count = {}, 1
        for u, v in edges[b]:
            if u == 0 or v == 0:
                break
            children.setdefault(int(u), []).append(int(v))
            count += 1
        for root in range(1, count + 1):
            stack = [(root, 1, 1, 0)]  # (node, 1-based index among siblings, siblings, depth)
            while stack:
                node, index, pclen, depth = stack.pop()
                eta_t = (max_depth - depth) / max_depth
                eta_l = (1 - eta_t) * (0.5 if pclen == 1 else (index - 1) / (pclen - 1))
                eta_r = (1 - eta_t) * (1 - eta_l)
                for k, eta in enumerate((eta_l, eta_r, eta_t)):
                    out[b, root - 1] += eta * np.einsum("f,foc->oc", x[b, node - 1], w[:, k])
                kids = children.get(node, [])
                if depth + 1 < max_depth:
                    stack += [(kid, i + 1, len(kids), depth + 1) for i, kid in enumerate(kids)]
    return out


# two trees in one batch: 1 -> (2, 3), 2 -> (4, 5, 6) and 1 -> 2 -> 3 (then padding); 7 nodes per sample
_EDGES = np.array([[[1, 2], [1, 3], [2, 4], [2, 5], [2, 6], [0, 0]],
                   [[1, 2], [2, 3], [0, 0], [0, 0], [0, 0], [0, 0]]], dtype=np.int32)
for _depth in (2, 3):
    case("tree_conv", f"depth{_depth}", inputs={"NodesVector": rng.standard_normal((2, 7, 4)), "EdgeSet": _EDGES,
                                                "Filter": rng.standard_normal((4, 3, 5, 2))},
         attrs={"max_depth": _depth},
         reference=lambda NodesVector, EdgeSet, Filter, d=_depth: tree_conv_ref(NodesVector, EdgeSet, Filter, d))
