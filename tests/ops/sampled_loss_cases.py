"""check_op cases of hierarchical_sigmoid, nce and sample_logits, added to dense_cases.CASES, which
tests/ops/test_op_gradients.py runs: forward against per-sample numpy references (loops are fine here),
gradients against float64 central differences where the sampling is fixed."""
import numpy as np

from .dense_cases import case

OPS = ("hierarchical_sigmoid", "nce", "sample_logits")
rng = np.random.default_rng(2468)  # its own: the order test modules import this one in changes no other case


def normal(*shape):
    return rng.standard_normal(shape)


# --- hierarchical_sigmoid ------------------------------------------------------------------------------
def hsigmoid_ref(x, w, label, num_classes, bias=None, table=None, code=None):
    """Sample by sample, walking the path step by step (the kernel gathers the whole batch at once)."""
    width = table.shape[1] if table is not None else (num_classes - 1).bit_length()
    out, pre = [], []
    for i in range(len(x)):
        if table is None:  # the complete binary tree: leaf c is node c + num_classes, the root node 1
            node, path = int(label[i, 0]) + num_classes, []
            while node > 1:
                path.append((node // 2 - 1, node % 2))  # the parent's weight row, left (0) or right (1)
                node //= 2
        else:
            path = [(table[i, j], code[i, j]) for j in range(width) if (table[i, :j + 1] >= 0).all()]
        z = np.zeros(width)
        for j, (row, _) in enumerate(path):
            z[j] = np.clip(w[row] @ x[i] + (0 if bias is None else bias[row, 0]), -40, 40)
        softplus = np.log1p(np.exp(z))
        pre.append(softplus)
        out.append([softplus.sum() - sum(bit * z[j] for j, (_, bit) in enumerate(path))])
    return np.array(out), np.array(pre)


N, D = 6, 4
X, LABELS = normal(N, D), rng.integers(0, 7, (N, 1))
case("hierarchical_sigmoid", "default-tree-bias", inputs={"X": X, "W": normal(6, D), "Label": LABELS,
                                                          "Bias": normal(6, 1)},
     attrs={"num_classes": 7}, outputs=["Out", "PreOut"], grad_outputs=["Out"],
     reference=lambda X, W, Label, Bias: hsigmoid_ref(X, W, Label, 7, Bias))
case("hierarchical_sigmoid", "default-tree-power-of-two", inputs={"X": X, "W": normal(7, D), "Label": LABELS % 8},
     attrs={"num_classes": 8}, outputs=["Out", "PreOut"], grad_outputs=["Out"],
     reference=lambda X, W, Label: hsigmoid_ref(X, W, Label, 8))
TABLE = np.array([[0, 2, -1], [1, 3, 4], [0, -1, -1], [2, 1, 0], [4, 3, -1], [3, -1, 2]])  # a -1 ends a path
case("hierarchical_sigmoid", "custom-tree", inputs={"X": X, "W": normal(5, D), "Label": LABELS, "PathTable": TABLE,
                                                    "PathCode": rng.integers(0, 2, TABLE.shape), "Bias": normal(5, 1)},
     attrs={"num_classes": 5}, outputs=["Out", "PreOut"], grad_outputs=["Out"],
     reference=lambda X, W, Label, PathTable, PathCode, Bias: hsigmoid_ref(X, W, Label, 5, Bias, PathTable, PathCode))
