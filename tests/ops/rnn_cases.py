"""check_op cases of the recurrent and CRF ops (lstm, lstmp, gru, gru_unit, lstm_unit, linear_chain_crf, cos_sim)
on uneven LoD inputs with an empty sequence, each against a straightforward per-sequence numpy reference;
tests/ops/test_op_gradients.py runs them with its own cases."""
import itertools

import numpy as np
import pytest

from minifluid.lod_tensor import LoDTensor

rng = np.random.default_rng(2024)
CASES = []
LENGTHS = [3, 0, 1, 4]  # uneven, with an empty sequence; not sorted (the kernels reorder by length)


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def normal(*shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def lod(value, lengths=LENGTHS):
    return LoDTensor(value, [list(lengths)])


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


_ACT = {"sigmoid": sigmoid, "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0), "identity": lambda x: x}


def sequences(x, lengths):
    """The rows of each sequence, in LoD order."""
    offsets = np.cumsum([0] + list(lengths))
    return [x[offsets[i]:offsets[i + 1]] for i in range(len(lengths))]


# --- per-sequence references (one sequence at a time, one row at a time) ------------------------------------
def lstm_reference(x, weight, bias, lengths, h0=None, c0=None, peepholes=True, reverse=False, gate="sigmoid",
                   cell="tanh", cand="tanh", proj=None, proj_act="tanh", cell_clip=0.0, proj_clip=0.0):
    """fluid's LSTM over each sequence: gates [candidate, input, forget, output]; optional projection."""
    d = weight.shape[1] // 4
    b = bias.reshape(-1)
    hs, cs = [], []
    for i, seq in enumerate(sequences(x, lengths)):
        r = np.zeros(weight.shape[0]) if h0 is None else h0[i]
        c = np.zeros(d) if c0 is None else c0[i]
        out_h, out_c = [], []
        for row in (seq[::-1] if reverse else seq):
            g = row + r @ weight + b[:4 * d]
            ci, ii, fi, oi = g[:d], g[d:2 * d], g[2 * d:3 * d], g[3 * d:]
            if peepholes:
                ii, fi = ii + c * b[4 * d:5 * d], fi + c * b[5 * d:6 * d]
            c = _ACT[cand](ci) * _ACT[gate](ii) + c * _ACT[gate](fi)
            if cell_clip > 0:
                c = np.clip(c, -cell_clip, cell_clip)
            if peepholes:
                oi = oi + c * b[6 * d:]
            h = _ACT[gate](oi) * _ACT[cell](c)
            r = h if proj is None else _ACT[proj_act](h @ proj)
            if proj is not None and proj_clip > 0:
                r = np.clip(r, -proj_clip, proj_clip)
            out_h.append(r)
            out_c.append(c)
        if reverse:
            out_h, out_c = out_h[::-1], out_c[::-1]
        hs += out_h
        cs += out_c
    width = weight.shape[0]
    return np.array(hs).reshape(-1, width), np.array(cs).reshape(-1, d)


def gru_step_reference(row, h, weight, b, origin_mode, gate="sigmoid", act="tanh"):
    """One GRU row; weight memory holds the [D, 2D] update/reset weights, then the [D, D] candidate ones."""
    d = h.shape[0]
    w_gate, w_cand = weight.reshape(-1)[:2 * d * d].reshape(d, 2 * d), weight.reshape(-1)[2 * d * d:].reshape(d, d)
    g = row + b
    u = _ACT[gate](g[:d] + h @ w_gate[:, :d])
    r = _ACT[gate](g[d:2 * d] + h @ w_gate[:, d:])
    c = _ACT[act](g[2 * d:] + (r * h) @ w_cand)
    new = u * h + (1 - u) * c if origin_mode else (1 - u) * h + u * c
    return new, r * h, np.concatenate([u, r, c])


def gru_reference(x, weight, bias, lengths, h0=None, origin_mode=False, reverse=False):
    d = weight.shape[0]
    b = np.zeros(3 * d) if bias is None else bias.reshape(-1)
    out = []
    for i, seq in enumerate(sequences(x, lengths)):
        h = np.zeros(d) if h0 is None else h0[i]
        hs = []
        for row in (seq[::-1] if reverse else seq):
            h = gru_step_reference(row, h, weight, b, origin_mode)[0]
            hs.append(h)
        out += hs[::-1] if reverse else hs
    return np.array(out).reshape(-1, d)


def crf_nll_reference(emission, transition, labels, lengths):
    """log Z - score(label) per sequence by enumerating every tag path (tiny sequences only)."""
    tags = emission.shape[1]
    out = []
    for em, lab in zip(sequences(emission, lengths), sequences(labels.reshape(-1), lengths)):
        if len(em) == 0:
            out.append(0.0)
            continue

        def score(path):
            moves = sum(transition[2 + a, b] for a, b in zip(path[:-1], path[1:]))
            return transition[0, path[0]] + transition[1, path[-1]] + em[np.arange(len(em)), list(path)].sum() + moves
        scores = np.array([score(p) for p in itertools.product(range(tags), repeat=len(em))])
        top = scores.max()
        out.append(top + np.log(np.exp(scores - top).sum()) - score(tuple(lab)))
    return np.array(out)[:, None]


# --- cases ------------------------------------------------------------------------------------------------
D, P, N, T = 3, 2, len(LENGTHS), sum(LENGTHS)
HIDDEN_LOD = {"Hidden": [LENGTHS], "Cell": [LENGTHS]}


def lstm_case(name, peepholes=True, reverse=False, initial=False, acts=("sigmoid", "tanh", "tanh")):
    x, w, b = normal(T, 4 * D), normal(D, 4 * D, scale=0.5), normal(1, (7 if peepholes else 4) * D, scale=0.5)
    h0, c0 = (normal(N, D), normal(N, D)) if initial else (None, None)
    inputs = {"Input": lod(x), "Weight": w, "Bias": b}
    if initial:
        inputs.update(H0=h0, C0=c0)
    attrs = {"use_peepholes": peepholes, "is_reverse": reverse, "gate_activation": acts[0],
             "cell_activation": acts[1], "candidate_activation": acts[2]}
    case("lstm", name, inputs=inputs, attrs=attrs, outputs=["Hidden", "Cell"], output_lods=HIDDEN_LOD,
         reference=lambda **_: lstm_reference(x, w, b, LENGTHS, h0, c0, peepholes, reverse, *acts))


lstm_case("peepholes")
lstm_case("no-peepholes-reverse", peepholes=False, reverse=True)
lstm_case("h0-c0-reverse", reverse=True, initial=True)
lstm_case("activations", initial=True, acts=("sigmoid", "identity", "relu"))


def lstmp_case(name, reverse=False, initial=False, clips=(0.0, 0.0), proj_act="tanh"):
    x, w, pw = normal(T, 4 * D), normal(P, 4 * D, scale=0.5), normal(D, P)
    b = normal(1, 7 * D, scale=0.5)
    h0, c0 = (normal(N, P), normal(N, D)) if initial else (None, None)
    inputs = {"Input": lod(x), "Weight": w, "ProjWeight": pw, "Bias": b}
    if initial:
        inputs.update(H0=h0, C0=c0)
    attrs = {"is_reverse": reverse, "cell_clip": clips[0], "proj_clip": clips[1], "proj_activation": proj_act}
    case("lstmp", name, inputs=inputs, attrs=attrs, outputs=["Projection", "Cell"],
         output_lods={"Projection": [LENGTHS], "Cell": [LENGTHS]},
         reference=lambda **_: lstm_reference(x, w, b, LENGTHS, h0, c0, True, reverse, proj=pw, proj_act=proj_act,
                                              cell_clip=clips[0], proj_clip=clips[1]))


lstmp_case("plain")
lstmp_case("h0-c0-reverse", reverse=True, initial=True)
lstmp_case("clipped", initial=True, clips=(0.7, 0.4), proj_act="identity")  # clips bind on some rows


def gru_case(name, origin_mode=False, reverse=False, initial=False, bias=True):
    x, w = normal(T, 3 * D), normal(D, 3 * D, scale=0.5)
    b = normal(1, 3 * D) if bias else None
    h0 = normal(N, D) if initial else None
    inputs = {"Input": lod(x), "Weight": w}
    if bias:
        inputs["Bias"] = b
    if initial:
        inputs["H0"] = h0
    case("gru", name, inputs=inputs, attrs={"origin_mode": origin_mode, "is_reverse": reverse},
         outputs=["Hidden"], output_lods={"Hidden": [LENGTHS]},
         reference=lambda **_: gru_reference(x, w, b, LENGTHS, h0, origin_mode, reverse))


gru_case("default")
gru_case("origin-mode-h0", origin_mode=True, initial=True)
gru_case("reverse-no-bias", reverse=True, bias=False, initial=True)


def gru_unit_reference(Input, HiddenPrev, Weight, Bias, origin_mode=False):
    rows = [gru_step_reference(x, h, Weight, Bias.reshape(-1), origin_mode) for x, h in zip(Input, HiddenPrev)]
    return np.array([r[2] for r in rows]), np.array([r[1] for r in rows]), np.array([r[0] for r in rows])


for _origin in (False, True):
    case("gru_unit", f"origin-{_origin}",
         inputs={"Input": normal(4, 3 * D), "HiddenPrev": normal(4, D), "Weight": normal(D, 3 * D, scale=0.5),
                 "Bias": normal(1, 3 * D)}, attrs={"origin_mode": _origin}, grad_outputs=["Hidden"],
         reference=lambda origin=_origin, **kw: gru_unit_reference(**kw, origin_mode=origin))


def lstm_unit_reference(X, C_prev, forget_bias):
    d = C_prev.shape[1]
    i, f, o = sigmoid(X[:, :d]), sigmoid(X[:, d:2 * d] + forget_bias), sigmoid(X[:, 2 * d:3 * d])
    c = f * C_prev + i * np.tanh(X[:, 3 * d:])
    return c, o * np.tanh(c)


case("lstm_unit", inputs={"X": normal(4, 4 * D), "C_prev": normal(4, D)}, attrs={"forget_bias": 0.5},
     reference=lambda X, C_prev: lstm_unit_reference(X, C_prev, 0.5))

_EM, _TRANS = normal(T, D), normal(D + 2, D)
_LABELS = rng.integers(0, D, (T, 1))
case("linear_chain_crf", "lod", inputs={"Emission": lod(_EM), "Transition": _TRANS, "Label": lod(_LABELS)},
     outputs=["LogLikelihood"], reference=lambda **_: crf_nll_reference(_EM, _TRANS, _LABELS, LENGTHS))


def padded(rows, lengths, width):
    out = np.zeros((len(lengths), width) + rows.shape[1:], rows.dtype)
    for i, seq in enumerate(sequences(rows, lengths)):
        out[i, :len(seq)] = seq
    return out


_PAD_EM, _PAD_LABEL = padded(_EM, LENGTHS, 5), padded(_LABELS[:, 0], LENGTHS, 5)
case("linear_chain_crf", "padded-length",
     inputs={"Emission": _PAD_EM, "Transition": _TRANS, "Label": _PAD_LABEL, "Length": np.array(LENGTHS)},
     outputs=["LogLikelihood"], reference=lambda **_: crf_nll_reference(_EM, _TRANS, _LABELS, LENGTHS))


def cos_sim_reference(X, Y):
    out = (X * Y).sum(1, keepdims=True) / np.linalg.norm(X, axis=1, keepdims=True) / np.linalg.norm(Y, axis=1,
                                                                                                    keepdims=True)
    return out, np.linalg.norm(X, axis=1, keepdims=True), np.linalg.norm(Y, axis=1, keepdims=True)


case("cos_sim", inputs={"X": normal(4, 5), "Y": normal(4, 5)}, grad_outputs=["Out"], reference=cos_sim_reference)
case("cos_sim", "broadcast-y", inputs={"X": normal(4, 5), "Y": normal(1, 5)}, grad_outputs=["Out"],
     reference=cos_sim_reference)


def cudnn_lstm_reference(Input, InitH, InitC, W, hidden, layers, bidirec):
    """fluid.layers.lstm's op one sample, one step and one gate at a time: per layer and direction the
    flat weight holds W_ih [4H, in], W_hh [4H, H], b_ih, b_hh (gates i, f, c, o)."""
    dirs, h = 2 if bidirec else 1, hidden
    steps, n, _ = Input.shape
    offset, seq = 0, Input
    last_h, last_c = np.zeros_like(InitH), np.zeros_like(InitC)

    def take(size, shape):
        nonlocal offset
        offset += size
        return W[offset - size:offset].reshape(shape)
    for layer in range(layers):
        width = seq.shape[2]
        outs = np.zeros((steps, n, h * dirs))
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh = take(4 * h * width, (4 * h, width)), take(4 * h * h, (4 * h, h))
            b = take(4 * h, (4 * h,)) + take(4 * h, (4 * h,))
            for s in range(n):
                hs, cs = InitH[k, s], InitC[k, s]
                for t in (reversed(range(steps)) if d else range(steps)):
                    g = w_ih @ seq[t, s] + w_hh @ hs + b
                    i, f, c_hat, o = sigmoid(g[:h]), sigmoid(g[h:2 * h]), np.tanh(g[2 * h:3 * h]), sigmoid(g[3 * h:])
                    cs = f * cs + i * c_hat
                    hs = o * np.tanh(cs)
                    outs[t, s, d * h:(d + 1) * h] = hs
                last_h[k, s], last_c[k, s] = hs, cs
        seq = outs
    return seq, last_h, last_c


for _layers, _bidirec, _in in ((1, False, 3), (2, True, 3), (2, False, 4)):
    from minifluid.ops.cudnn_lstm import weight_size
    _dirs, _h = 2 if _bidirec else 1, 2
    _x, _h0, _c0 = normal(3, 2, _in), normal(_layers * _dirs, 2, _h), normal(_layers * _dirs, 2, _h)
    _w = normal(weight_size(_in, _h, _layers, _bidirec), scale=0.5)
    case("cudnn_lstm", f"layers{_layers}-{'bi' if _bidirec else 'uni'}",
         inputs={"Input": _x, "InitH": _h0, "InitC": _c0, "W": _w},
         attrs={"hidden_size": _h, "num_layers": _layers, "is_bidirec": _bidirec, "max_len": 3, "input_size": _in},
         reference=lambda Input, InitH, InitC, W, _a=(_h, _layers, _bidirec): cudnn_lstm_reference(
             Input, InitH, InitC, W, *_a))
