"""The fused sequence ops of inference programs (ops/fused_seq.py) against per-sequence numpy references of
the ops they replace (loops over sequences are fine here), through a Program with LoD inputs, and their
errors."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.lod_tensor import LoDTensor
from minifluid.testing import check_op

rng = np.random.default_rng(1357)


def lod(array, lengths):
    return LoDTensor(np.asarray(array), [list(lengths)])


def split(x, lengths):
    return np.split(np.asarray(x), np.cumsum(lengths)[:-1])


_POOL = {"SUM": lambda s: s.sum(0), "AVERAGE": lambda s: s.mean(0), "SQRT": lambda s: s.sum(0) / np.sqrt(len(s))}


def _pooled(x, lengths, pool):
    return np.stack([_POOL[pool](s) if len(s) else np.zeros(x.shape[1]) for s in split(x, lengths)])


@pytest.mark.parametrize("pool", sorted(_POOL))
def test_seqpool_concat_pools_every_input_and_concats_them(pool):
    lengths = [[3, 0, 2, 1], [1, 4, 1, 1], [2, 2, 0, 3]]
    xs = [rng.standard_normal((sum(l), 5)) for l in lengths]
    check_op("fusion_seqpool_concat", inputs={"X": [lod(x, l) for x, l in zip(xs, lengths)]},
             attrs={"pooltype": pool}, output_lods={"Out": [[1, 1, 1, 1]]},
             reference=lambda X: np.concatenate([_pooled(x, l, pool) for x, l in zip(X, lengths)], axis=1))


@pytest.mark.parametrize("pool", sorted(_POOL))
def test_seqpool_cvm_concat_takes_logs_of_show_and_click(pool):
    lengths = [[2, 1, 3], [1, 1, 4]]
    xs = [rng.uniform(0.1, 2, (sum(l), 4)) for l in lengths]

    def cvm(block):
        out = block.copy()
        out[:, 0] = np.log(block[:, 0] + 1)
        out[:, 1] = np.log(block[:, 1] + 1) - out[:, 0]
        return out
    check_op("fusion_seqpool_cvm_concat", attrs={"pooltype": pool},
             inputs={"X": [lod(x, l) for x, l in zip(xs, lengths)], "CVM": np.array([[0.6, 0.4]])},
             reference=lambda X, CVM: np.concatenate([cvm(_pooled(x, l, pool)) for x, l in zip(X, lengths)], axis=1))


@pytest.mark.parametrize("act, with_bias", [("relu", True), ("identity", False), ("sigmoid", True), ("tanh", True)])
def test_seqexpand_concat_fc_expands_per_sequence_inputs(act, with_bias):
    lengths, widths, d = [3, 1, 4, 2], [4, 3, 2], 5
    x0 = rng.standard_normal((sum(lengths), widths[0]))
    rest = [rng.standard_normal((len(lengths), m)) for m in widths[1:]]
    w, b = rng.standard_normal((sum(widths), d)), rng.standard_normal((1, d))
    acts = {"relu": lambda v: np.maximum(v, 0), "identity": lambda v: v, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
            "tanh": np.tanh}

    def reference(X, FCWeight, FCBias=None):
        rows = [np.concatenate([s] + [np.repeat(r[i:i + 1], len(s), 0) for r in X[1:]], axis=1)
                for i, s in enumerate(split(X[0], lengths))]
        fc = np.concatenate(rows) @ FCWeight + (0 if FCBias is None else FCBias)
        return {"Out": acts[act](fc), "FCOut": np.stack([sum(r[i] @ FCWeight[sum(widths[:k + 1]):sum(widths[:k + 2])]
                                                             for k, r in enumerate(X[1:])) for i in range(len(lengths))])}
    inputs = {"X": [lod(x0, lengths)] + [lod(r, [1] * len(lengths)) for r in rest], "FCWeight": w}
    if with_bias:
        inputs["FCBias"] = b
    check_op("fusion_seqexpand_concat_fc", inputs=inputs, attrs={"fc_activation": act},
             output_lods={"Out": [lengths]}, reference=reference)


def _seqconv_reference(x, lengths, filt, bias, length, start):
    out = []
    for s in split(x, lengths):
        col = np.zeros((len(s), length * x.shape[1]))
        for r in range(len(s)):
            for k in range(length):
                if 0 <= r + start + k < len(s):
                    col[r, k * x.shape[1]:(k + 1) * x.shape[1]] = s[r + start + k]
        out.append(col)
    col = np.concatenate(out)
    return {"Out": np.maximum(col @ filt + bias, 0), "ColMat": col}


@pytest.mark.parametrize("length, start", [(3, 0), (3, -2), (4, -1), (5, -4), (2, 1)])
def test_seqconv_eltadd_relu_is_relu_of_sequence_conv_plus_bias(length, start):
    lengths, m, n = [4, 1, 2, 6, 1], 3, 4
    x = rng.standard_normal((sum(lengths), m))
    filt, bias = rng.standard_normal((length * m, n)), rng.standard_normal((1, n))
    check_op("fusion_seqconv_eltadd_relu", inputs={"X": lod(x, lengths), "Filter": filt, "Bias": bias},
             attrs={"contextLength": length, "contextStart": start}, output_lods={"Out": [lengths]},
             reference=lambda X, Filter, Bias: _seqconv_reference(X, lengths, Filter, Bias, length, start))


def _run_op(op_type, inputs, attrs, outputs):
    main = fluid.Program()
    block = main.global_block()
    feed, ins = {}, {}
    for slot, values in inputs.items():
        ins[slot] = []
        for i, v in enumerate(values if isinstance(values, list) else [values]):
            arr = np.asarray(v)
            name = f"{slot}_{i}"
            block.create_var(name=name, shape=arr.shape, dtype=str(arr.dtype),
                             lod_level=1 if isinstance(v, LoDTensor) else 0)
            feed[name] = v
            ins[slot].append(name)
    outs = {slot: [block.create_var(name=f"out_{slot}").name] for slot in outputs}
    block.append_op(type=op_type, inputs=ins, outputs=outs, attrs=attrs)
    return fluid.Executor().run(main, feed=feed, fetch_list=[outs[s][0] for s in outputs], scope=fluid.Scope())


def test_seqpool_concat_refuses_inputs_of_different_batch_or_width():
    x = rng.standard_normal((5, 3)).astype("float32")
    with pytest.raises(ValueError, match="batchsize of all inputs should be equal"):
        _run_op("fusion_seqpool_concat", {"X": [lod(x, [2, 3]), lod(x, [5])]}, {"pooltype": "SUM"}, ["Out"])
    with pytest.raises(ValueError, match="width of all inputs should be equal"):
        _run_op("fusion_seqpool_concat", {"X": [lod(x, [2, 3]), lod(x[:, :2], [2, 3])]}, {}, ["Out"])
    with pytest.raises(ValueError, match="pooltype must be one of"):
        _run_op("fusion_seqpool_concat", {"X": [lod(x, [2, 3])]}, {"pooltype": "MAX"}, ["Out"])
    with pytest.raises(ValueError, match="only supports concat axis=1"):
        _run_op("fusion_seqpool_concat", {"X": [lod(x, [2, 3])]}, {"axis": 0}, ["Out"])


def test_seqexpand_concat_fc_and_seqconv_refuse_mismatched_inputs():
    x0, x1 = rng.standard_normal((5, 2)).astype("float32"), rng.standard_normal((3, 2)).astype("float32")
    w = rng.standard_normal((4, 3)).astype("float32")
    with pytest.raises(ValueError, match="one row per sequence"):
        _run_op("fusion_seqexpand_concat_fc", {"X": [lod(x0, [2, 3]), lod(x1, [1, 1, 1])], "FCWeight": w}, {},
                ["Out", "FCOut"])
    with pytest.raises(ValueError, match="FC height should be sum of all inputs width"):
        _run_op("fusion_seqexpand_concat_fc", {"X": [lod(x0, [2, 3]), lod(x1[:2], [1, 1])], "FCWeight": w[:3]}, {},
                ["Out", "FCOut"])
    with pytest.raises(ValueError, match="contextStart size should be smaller than contextLength"):
        _run_op("fusion_seqconv_eltadd_relu", {"X": lod(x0, [2, 3]), "Filter": w[:, :2].T.copy(),
                                               "Bias": np.zeros((1, 4), "float32")},
                {"contextLength": 1, "contextStart": -1}, ["Out", "ColMat"])
