"""cudnn_lstm: fluid.layers.lstm's multi-layer, optionally bidirectional LSTM over a time-major padded
batch (the op fluid runs on cuDNN), with its gradient, on the CPU.

Layouts (cuDNN's, as fluid's layer sizes them): Input [T, N, I]; InitH / InitC [layers * dirs, N, H];
the flat weight W holds, per layer and per direction (forward first), the input weights [4H, in]
(gates i, f, c, o stacked by rows), the recurrent weights [4H, H], then the input biases [4H] and the
recurrent biases [4H]; ``in`` is I for the first layer and H * dirs after. Out [T, N, H * dirs] is the
last layer's hidden states (the directions side by side); last_h / last_c each direction's final state.
Between layers (never after the last) the output goes through dropout (``dropout_prob``, scaled by
1 / (1 - p) in training, as cuDNN's); the masks are kept in ``ReserveSpace`` for the gradient.

A step is one [N, H] x [H, 4H] product (the input products of a whole layer are one product before
the time loop); the gradient recomputes the forward activations from the inputs and the kept masks,
then runs back through time with one product per step and one per layer for the weight gradients.
"""
import numpy as np

from .registry import register_grad, register_op

__all__ = ["weight_size"]


def weight_size(input_size, hidden_size, num_layers, is_bidirec):
    """The flat weight's length."""
    dirs = 2 if is_bidirec else 1
    total = 0
    for layer in range(num_layers):
        width = input_size if layer == 0 else hidden_size * dirs
        total += dirs * (4 * hidden_size * (width + hidden_size) + 8 * hidden_size)
    return total


def _unpack(w, input_size, h, layers, dirs):
    """[(w_ih [4H, in], w_hh [4H, H], bias [4H]) per layer and direction] as views of ``w``; plus the
    offsets of each piece, for writing gradients back."""
    pieces, offset = [], 0
    for layer in range(layers):
        width = input_size if layer == 0 else h * dirs
        for _ in range(dirs):
            spans = []
            for size in (4 * h * width, 4 * h * h, 4 * h, 4 * h):
                spans.append((offset, offset + size))
                offset += size
            (a, b), (c, d), (e, f), (g, k) = spans
            pieces.append((w[a:b].reshape(4 * h, width), w[c:d].reshape(4 * h, h), w[e:f] + w[g:k], spans))
    return pieces


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _check(attrs, x, w, init_h, init_c):
    h, layers = int(attrs["hidden_size"]), int(attrs["num_layers"])
    dirs = 2 if attrs["is_bidirec"] else 1
    if x.ndim != 3:
        raise ValueError(f"cudnn_lstm: Input(X)'s rank must be 3 ([seq_len, batch_size, input_size]), got shape "
                         f"{list(x.shape)}")
    if x.shape[0] > int(attrs["max_len"]):
        raise ValueError(f"cudnn_lstm: the input has {x.shape[0]} time steps, more than max_len "
                         f"({attrs['max_len']})")
    want = (layers * dirs, x.shape[1], h)
    for name, v in (("InitH", init_h), ("InitC", init_c)):
        if tuple(v.shape) != want:
            raise ValueError(f"cudnn_lstm: Input({name}) must be [num_layers * dirs, batch_size, hidden_size] = "
                             f"{list(want)}, got {list(v.shape)}")
    size = weight_size(x.shape[2], h, layers, dirs == 2)
    if w.size != size:
        raise ValueError(f"cudnn_lstm: Input(W) must hold {size} weights for input_size {x.shape[2]}, hidden_size "
                         f"{h}, num_layers {layers}{', bidirectional' if dirs == 2 else ''}; got {w.size}")
    return h, layers, dirs


def _run(attrs, x, w, init_h, init_c, masks=None):
    """The forward pass. Returns (out, last_h, last_c, masks, record); record[p] = (layer input, gates,
    cells, tanh(cells), hiddens) of pseudo-layer p (layer * dirs + direction), for the gradient."""
    h, layers, dirs = _check(attrs, x, w, init_h, init_c)
    pieces = _unpack(w.reshape(-1), x.shape[2], h, layers, dirs)
    steps, n = x.shape[:2]
    p, train = float(attrs["dropout_prob"]), not attrs["is_test"]
    make_masks = masks is None
    if make_masks:
        masks = np.ones((layers - 1, steps, n, h * dirs), x.dtype) if p > 0 and train else np.ones(0, x.dtype)
    last_h, last_c, record, inp = np.empty_like(init_h), np.empty_like(init_c), [], x
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh, bias, _ = pieces[k]
            gates = (inp.reshape(steps * n, -1) @ w_ih.T + bias).reshape(steps, n, 4 * h)
            cells, tanh_c, hid = (np.empty((steps, n, h), x.dtype) for _ in range(3))
            hp, cp = init_h[k], init_c[k]
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                g = gates[t]
                g += hp @ w_hh.T
                g[:, :2 * h] = _sigmoid(g[:, :2 * h])
                g[:, 2 * h:3 * h] = np.tanh(g[:, 2 * h:3 * h])
                g[:, 3 * h:] = _sigmoid(g[:, 3 * h:])
                cp = cells[t] = g[:, h:2 * h] * cp + g[:, :h] * g[:, 2 * h:3 * h]
                tanh_c[t] = np.tanh(cp)
                hp = hid[t] = g[:, 3 * h:] * tanh_c[t]
            last_h[k], last_c[k] = hp, cp
            record.append((inp, gates, cells, tanh_c, hid))
            outs.append(hid)
        out = np.concatenate(outs, axis=2) if dirs == 2 else outs[0]
        if layer < layers - 1 and p > 0 and train:
            if make_masks:
                rng = np.random.RandomState(attrs["seed"]) if attrs["seed"] != -1 else np.random
                masks[layer] = (rng.uniform(size=out.shape) >= p) / (1.0 - p)
            out = out * masks[layer]
        inp = out
    return inp.astype(x.dtype, copy=False), last_h, last_c, masks, record


def _infer(attrs, x, init_h, init_c, w, cache):
    dirs = 2 if attrs["is_bidirec"] else 1
    if x.shape is not None and len(x.shape) != 3:
        raise ValueError(f"cudnn_lstm: Input(X)'s rank must be 3, got shape {list(x.shape)}")
    out = None if x.shape is None else tuple(x.shape[:2]) + (int(attrs["hidden_size"]) * dirs,)
    return (out, x.dtype), (init_h.shape, init_h.dtype), (init_c.shape, init_c.dtype), None


@register_op("cudnn_lstm", inputs=("Input", "InitH", "InitC", "W", "Cache"),
             outputs=("Out", "last_h", "last_c", "ReserveSpace"), optional=("Cache",), no_grad_inputs=("Cache",),
             attrs={"max_len": 20, "is_bidirec": False, "input_size": 10, "hidden_size": 100, "num_layers": 1,
                    "is_test": False, "dropout_prob": 0.0, "seed": -1},
             infer_shape=_infer)
def _cudnn_lstm_forward(attrs, x, init_h, init_c, w, cache):
    out, last_h, last_c, masks, _ = _run(attrs, x, w, init_h, init_c)
    return out, last_h, last_c, masks


@register_grad("cudnn_lstm")
def _cudnn_lstm_backward(attrs, ins, outs, douts, need):
    x, init_h, init_c, w, _ = ins
    masks = outs[3]
    h, layers, dirs = _check(attrs, x, w, init_h, init_c)
    *_, record = _run(attrs, x, w, init_h, init_c, masks)
    pieces = _unpack(w.reshape(-1), x.shape[2], h, layers, dirs)
    steps, n = x.shape[:2]
    d_out, d_last_h, d_last_c = (np.zeros(o.shape, x.dtype) if g is None else g for o, g in zip(outs[:3], douts[:3]))
    dw, dh0, dc0 = np.zeros(w.size, x.dtype), np.zeros_like(init_h), np.zeros_like(init_c)
    dx = None
    for layer in range(layers - 1, -1, -1):
        if layer < layers - 1 and masks.size:
            d_out = d_out * masks[layer]
        d_in = None
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh, _, spans = pieces[k]
            inp, gates, cells, tanh_c, hid = record[k]
            dy = d_out[..., d * h:(d + 1) * h]
            dg = np.empty_like(gates)
            dh, dc = d_last_h[k].copy(), d_last_c[k].copy()
            for t in (range(steps) if d else range(steps - 1, -1, -1)):
                g = gates[t]
                i, f, c_hat, o = g[:, :h], g[:, h:2 * h], g[:, 2 * h:3 * h], g[:, 3 * h:]
                prev = t + 1 if d else t - 1
                c_prev = init_c[k] if prev in (-1, steps) else cells[prev]
                dh = dh + dy[t]
                dc = dc + dh * o * (1 - tanh_c[t] ** 2)
                dgt = dg[t]
                dgt[:, :h] = dc * c_hat * i * (1 - i)
                dgt[:, h:2 * h] = dc * c_prev * f * (1 - f)
                dgt[:, 2 * h:3 * h] = dc * i * (1 - c_hat ** 2)
                dgt[:, 3 * h:] = dh * tanh_c[t] * o * (1 - o)
                dc = dc * f
                dh = dgt @ w_hh
            dh0[k], dc0[k] = dh, dc
            flat_g = dg.reshape(steps * n, 4 * h)
            h_prev = np.concatenate((init_h[k][None], hid[:-1]) if not d else (hid[1:], init_h[k][None]))
            (a, b), (c, e), (f_, g_), (p, q) = spans
            dw[a:b] = (flat_g.T @ inp.reshape(steps * n, -1)).reshape(-1)
            dw[c:e] = (flat_g.T @ h_prev.reshape(steps * n, h)).reshape(-1)
            dw[f_:g_] = dw[p:q] = flat_g.sum(axis=0)
            part = (flat_g @ w_ih).reshape(inp.shape)
            d_in = part if d_in is None else d_in + part
        d_out = d_in
    dx = d_out
    return (dx.astype(x.dtype, copy=False) if need[0] else None, dh0 if need[1] else None,
            dc0 if need[2] else None, dw.reshape(w.shape) if need[3] else None, None)
