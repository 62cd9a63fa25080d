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


# --- nce: the noise classes fixed by custom_neg_classes, so the gradient is checkable -------------------------
def nce_ref(x, label, w, negs, noise_prob, bias=None, sample_weight=None):
    """Sample by sample, class by class: -log(o / (o + k q)) for a true class, -log(k q / (o + k q)) for noise."""
    k = len(negs)
    cost, outs, samples = [], [], []
    for i in range(len(x)):
        row = list(label[i]) + list(negs)
        o = [1 / (1 + np.exp(-(w[c] @ x[i] + (0 if bias is None else bias[c, 0])))) for c in row]
        total = 0.0
        for j, (c, oj) in enumerate(zip(row, o)):
            b = noise_prob(c) * k
            total += -np.log(oj / (oj + b)) if j < label.shape[1] else -np.log(b / (oj + b))
        cost.append([total * (1 if sample_weight is None else sample_weight[i, 0])])
        outs.append(o)
        samples.append(row)
    return np.array(cost), np.array(outs), np.array(samples)


C, NEGS = 7, [0, 3, 6]
case("nce", "uniform-bias-weights", inputs={"Input": X, "Label": LABELS, "Weight": normal(C, D), "Bias": normal(C, 1),
                                            "SampleWeight": rng.uniform(0.5, 2, (N, 1))},
     attrs={"num_total_classes": C, "num_neg_samples": 3, "custom_neg_classes": NEGS}, grad_outputs=["Cost"],
     reference=lambda Input, Label, Weight, Bias, SampleWeight: nce_ref(Input, Label, Weight, NEGS, lambda c: 1 / C,
                                                                          Bias, SampleWeight))
TWO_TRUE = np.stack([LABELS[:, 0], (LABELS[:, 0] + 2) % C], axis=1)
case("nce", "log-uniform-two-true", inputs={"Input": X, "Label": TWO_TRUE, "Weight": normal(C, D)},
     attrs={"num_total_classes": C, "num_neg_samples": 3, "custom_neg_classes": NEGS, "sampler": 1},
     grad_outputs=["Cost"],
     reference=lambda Input, Label, Weight: nce_ref(Input, Label, Weight, NEGS,
                                                    lambda c: np.log((c + 2) / (c + 1)) / np.log(C)))
DIST = np.array([0.05, 0.1, 0.2, 0.05, 0.3, 0.1, 0.2])
case("nce", "custom-dist", inputs={"Input": X, "Label": LABELS, "Weight": normal(C, D), "CustomDistProbs": DIST,
                                   "CustomDistAlias": np.zeros(C, "int32"), "CustomDistAliasProbs": np.ones(C)},
     attrs={"num_total_classes": C, "num_neg_samples": 3, "custom_neg_classes": NEGS, "sampler": 2},
     grad_outputs=["Cost"],
     reference=lambda Input, Label, Weight, **dist: nce_ref(Input, Label, Weight, NEGS, lambda c: DIST[c]))


# --- sample_logits: customized samples (the sampled ones are checked through the layer) ----------------------------
def sample_logits_ref(logits, labels, samples, probs, remove_hits):
    out = np.empty(samples.shape)
    for i in range(len(samples)):
        for j, c in enumerate(samples[i]):
            hit = remove_hits and j >= labels.shape[1] and c in labels[i]
            out[i, j] = logits[i, c] - (1e20 if hit else 0) - np.log(probs[i, j])
    return out, np.tile(np.arange(labels.shape[1]), (len(samples), 1))


SAMPLES = np.concatenate([LABELS, np.tile([1, 4, 5], (N, 1))], axis=1)
SAMPLES[0, 2] = SAMPLES[0, 0]  # a sampled class that is the row's label: an accidental hit
PROBS = rng.uniform(0.1, 0.9, SAMPLES.shape)
case("sample_logits", "customized", inputs={"Logits": normal(N, C), "Labels": LABELS, "CustomizedSamples": SAMPLES,
                                            "CustomizedProbabilities": PROBS},
     attrs={"use_customized_samples": True, "remove_accidental_hits": False, "num_samples": 3},
     outputs=["SampledLogits", "SampledLabels"], grad_outputs=["SampledLogits"],
     reference=lambda Logits, Labels, CustomizedSamples, CustomizedProbabilities: sample_logits_ref(
         Logits, Labels, CustomizedSamples, CustomizedProbabilities, False))
case("sample_logits", "accidental-hit", inputs={"Logits": normal(N, C), "Labels": LABELS, "CustomizedSamples": SAMPLES,
                                                "CustomizedProbabilities": PROBS},
     attrs={"use_customized_samples": True, "num_samples": 3}, outputs=["SampledLogits", "SampledLabels"],
     grad_inputs=(),  # x - 1e20 leaves no room for a central difference
     reference=lambda Logits, Labels, CustomizedSamples, CustomizedProbabilities: sample_logits_ref(
         Logits, Labels, CustomizedSamples, CustomizedProbabilities, True))
