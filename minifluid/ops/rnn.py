"""Recurrent units over LoD sequences: ``lstm``, ``lstmp`` and ``gru`` (the ops of fluid's dynamic_lstm,
dynamic_lstmp and dynamic_gru), kernel, shape inference and gradient per op.

NOTE [ Time-major batches ]
A LoD input holds its sequences one after another ([T, width] rows). The kernels regroup the rows by
time step (``Steps``): sequences sorted by length, longest first (stable), so the sequences still
running at step t are the first n_t of that order and step t's rows are one contiguous block of the
regrouped array. A step is one matrix product over its n_t rows plus a few in-place elementwise calls;
weight and bias gradients are one product over all rows after the backward loop. ``is_reverse`` runs
every sequence from its last row to its first. H0/C0 rows follow the sequences' LoD order and are
reordered alike. The regrouped intermediates are the op's Batch* outputs (as fluid's), so the backward
pass reuses the forward's activations instead of recomputing them.

Layouts (fluid's): lstm Input [T, 4D] holds the projected inputs of the gates in the order candidate,
input, forget, output; Weight [D, 4D] the hidden-to-gate weights in that order; Bias [1, 4D] the gate
biases, then (use_peepholes) the peephole weights W_ic, W_fc, W_oc: [1, 7D]. gru Input [T, 3D]: update,
reset, candidate; Weight [D, 3D] holds, in its memory order, the [D, 2D] update/reset weights followed
by the [D, D] candidate weights; Bias [1, 3D].
"""
import numpy as np

from .registry import register_grad, register_op


# --- activations, in place -------------------------------------------------------------------------------
# Through exp, not np.tanh: float32 exp is about 2.5x faster than tanh in numpy and these calls are most of
# a step's elementwise time. exp overflows to inf for large |x|, which gives the exact limits (0, 1, -1);
# the kernels run under np.errstate(over="ignore") for that.
def _sigmoid(x, out):
    np.negative(x, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)


def _tanh(x, out):
    np.multiply(x, -2, out=out)
    np.exp(out, out=out)
    out += 1
    np.divide(2, out, out=out)
    out -= 1


def _identity(x, out):
    if out is not x:
        out[...] = x


def _d_sigmoid(y, d):
    d *= y
    d -= d * y


def _d_tanh(y, d):
    d -= d * y * y


_ACTS = {"sigmoid": (_sigmoid, _d_sigmoid), "tanh": (_tanh, _d_tanh),
         "relu": (lambda x, out: np.maximum(x, 0, out=out), lambda y, d: np.multiply(d, y > 0, out=d)),
         "identity": (_identity, lambda y, d: None), "": (_identity, lambda y, d: None)}


def activation(op_type, attrs, name):
    """(forward, derivative) of the activation attribute ``name``: ``f(x, out)`` writes f(x) into out;
    ``df(y, d)`` multiplies d in place by f' expressed through the output y = f(x)."""
    act = attrs[name]
    if act not in _ACTS:
        raise ValueError(f"{op_type}: attribute {name} must be one of sigmoid, tanh, relu, identity, got {act!r}")
    return _ACTS[act]


# --- the time-major regrouping ------------------------------------------------------------------------------
class Steps:
    """Rows of a LoD input regrouped by time step (NOTE [ Time-major batches ]).

    ``index[k]``: the input row of regrouped row k; ``bounds``: (start, end) of each step's rows;
    ``order``: the sequences, longest first; ``prev[k]``: the row holding the previous state of row k's
    sequence in the numbering [initial states (one per sequence, in ``order``); regrouped rows]."""

    __slots__ = ("index", "bounds", "order", "prev", "n_seq")
    _cache = {}

    @classmethod
    def of(cls, lod, reverse, op_type, slot="Input"):
        if not lod:
            raise ValueError(f"{op_type}: Input({slot}) must be a LoDTensor holding sequences (LoD level 1), "
                             "got a tensor without LoD")
        key = (tuple(lod[-1]), bool(reverse))
        steps = cls._cache.get(key)
        if steps is None:
            if len(cls._cache) > 32:
                cls._cache.clear()
            steps = cls._cache[key] = cls(lod[-1], reverse)
        return steps

    def __init__(self, lengths, reverse):
        lengths = np.asarray(lengths, dtype=np.int64)
        n = self.n_seq = len(lengths)
        offsets = np.cumsum(lengths) - lengths
        order = self.order = np.argsort(-lengths, kind="stable")
        ordered = lengths[order]
        t = np.arange(int(ordered[0]) if n else 0)[:, None]
        active = t < ordered
        step = ordered - 1 - t if reverse else np.broadcast_to(t, active.shape)
        self.index = (offsets[order] + step)[active]
        counts = active.sum(axis=1)
        starts = np.concatenate(([0], np.cumsum(counts)))
        self.bounds = [(int(s), int(e)) for s, e in zip(starts[:-1], starts[1:])]
        base = np.concatenate(([0], n + starts[:-2])) if len(counts) else np.zeros(0, np.int64)
        self.prev = np.arange(len(self.index)) - np.repeat(starts[:-1], counts) + np.repeat(base, counts)

    def initial(self, value, width, dtype):
        """Initial states in ``order`` ([n_seq, width]; zeros where ``value`` is None)."""
        if value is None:
            return np.zeros((self.n_seq, width), dtype)
        if value.shape[0] != self.n_seq:
            raise ValueError(f"the initial state has {value.shape[0]} rows but the input holds {self.n_seq} "
                             "sequences (one row per sequence)")
        return value[self.order].astype(dtype, copy=False)

    def previous(self, init, batch):
        """The previous-step state of every regrouped row ([T, width])."""
        return np.concatenate((init, batch))[self.prev]

    def to_sequences(self, batch):
        out = np.empty_like(batch)
        out[self.index] = batch
        return out

    def unorder(self, init_grad):
        out = np.empty_like(init_grad)
        out[self.order] = init_grad
        return out


# --- the LSTM cell, shared by lstm and lstmp -------------------------------------------------------------------
class _Cell:
    """One LSTM cell's step forward and backward over regrouped arrays (fluid's gate layout)."""

    def __init__(self, op_type, attrs, bias, d, dtype):
        self.d = d
        self.gate, self.d_gate = activation(op_type, attrs, "gate_activation")
        self.cell, self.d_cell = activation(op_type, attrs, "cell_activation")
        self.cand, self.d_cand = activation(op_type, attrs, "candidate_activation")
        self.clip = float(attrs.get("cell_clip") or 0.0)
        self.peep = None
        if attrs["use_peepholes"] and bias is not None and bias.size >= 7 * d:
            b = bias.reshape(-1).astype(dtype, copy=False)
            self.peep = (b[4 * d:5 * d], b[5 * d:6 * d], b[6 * d:7 * d])

    def forward(self, g, c_prev, c, ca, h):
        """g: [n, 4D] gate inputs, activated in place; writes the cell c, act(c) ca and the hidden h."""
        d, peep = self.d, self.peep
        self.cand(g[:, :d], g[:, :d])
        if peep is None:
            self.gate(g[:, d:], g[:, d:])
        else:
            for k in (1, 2):
                gk = g[:, k * d:(k + 1) * d]
                gk += c_prev * peep[k - 1]
                self.gate(gk, gk)
        np.multiply(g[:, :d], g[:, d:2 * d], out=c)
        c += c_prev * g[:, 2 * d:3 * d]
        if self.clip > 0:
            np.clip(c, -self.clip, self.clip, out=c)
        if peep is not None:
            go = g[:, 3 * d:]
            go += c * peep[2]
            self.gate(go, go)
        self.cell(c, ca)
        np.multiply(g[:, 3 * d:], ca, out=h)

    def backward(self, g, c_prev, c, ca, dh, dc_in, dg):
        """Gradients of one step: ``dg`` [n, 4D] receives the gate pre-activation gradients; returns the
        gradient of c_prev. ``dc_in``: the cell gradient arriving from the next step and from outside."""
        d, peep = self.d, self.peep
        cand, ig, fg, og = g[:, :d], g[:, d:2 * d], g[:, 2 * d:3 * d], g[:, 3 * d:]
        dgc, dgi, dgf, dgo = dg[:, :d], dg[:, d:2 * d], dg[:, 2 * d:3 * d], dg[:, 3 * d:]
        np.multiply(dh, ca, out=dgo)
        self.d_gate(og, dgo)
        dc = dh * og
        self.d_cell(ca, dc)
        dc += dc_in
        if peep is not None:
            dc += dgo * peep[2]
        if self.clip > 0:
            dc[np.abs(c) >= self.clip] = 0
        np.multiply(dc, ig, out=dgc)
        self.d_cand(cand, dgc)
        np.multiply(dc, cand, out=dgi)
        self.d_gate(ig, dgi)
        np.multiply(dc, c_prev, out=dgf)
        self.d_gate(fg, dgf)
        dc *= fg
        if peep is not None:
            dc += dgi * peep[0] + dgf * peep[1]
        return dc

    def bias_grad(self, dg, c_prev_all, c_all):
        d = self.d
        parts = [dg.sum(axis=0)]
        if self.peep is not None:
            parts += [(dg[:, d:2 * d] * c_prev_all).sum(axis=0), (dg[:, 2 * d:3 * d] * c_prev_all).sum(axis=0),
                      (dg[:, 3 * d:] * c_all).sum(axis=0)]
        return np.concatenate(parts)[None, :]


def _lstm_forward(op_type, steps, x, weight, bias, r0, c0, attrs, proj=None, gate_bias=True):
    """The regrouped forward pass: returns (gates, cells, act(cells), hiddens, recurrent states). The
    recurrent state is the hidden state (lstm) or its projection (lstmp, ``proj`` = (weight, act, clip)).
    ``gate_bias=False``: ``x`` already holds the gate biases (the fused ops); ``bias`` gives the peepholes."""
    d = weight.shape[1] // 4
    dtype = x.dtype
    cell = _Cell(op_type, attrs, bias, d, dtype)
    g = x[steps.index]
    if bias is not None and gate_bias:
        g += bias.reshape(-1)[:4 * d].astype(dtype, copy=False)
    total = g.shape[0]
    c, ca, h = (np.empty((total, d), dtype) for _ in range(3))
    r = h if proj is None else np.empty((total, proj[0].shape[1]), dtype)
    r_prev, c_prev = steps.initial(r0, weight.shape[0], dtype), steps.initial(c0, d, dtype)
    with np.errstate(over="ignore"):
        for s, e in steps.bounds:
            n = e - s
            gs = g[s:e]
            gs += r_prev[:n] @ weight
            cell.forward(gs, c_prev[:n], c[s:e], ca[s:e], h[s:e])
            if proj is not None:
                rs = r[s:e]
                np.matmul(h[s:e], proj[0], out=rs)
                proj[1](rs, rs)
                if proj[2] > 0:
                    np.clip(rs, -proj[2], proj[2], out=rs)
            r_prev, c_prev = r[s:e], c[s:e]
    return g, c, ca, h, r


def _lstm_backward(op_type, steps, attrs, weight, bias, r0, c0, g, c, ca, h, r, dr_out, dc_out, need, proj=None):
    """Gradients (input, r0, c0, weight, bias[, proj weight]) of the regrouped pass, in sequence order."""
    d = weight.shape[1] // 4
    dtype = g.dtype
    cell = _Cell(op_type, attrs, bias, d, dtype)
    total, n_seq = g.shape[0], steps.n_seq
    r_init, c_init = steps.initial(r0, weight.shape[0], dtype), steps.initial(c0, d, dtype)
    dg = np.empty_like(g)
    dr_rec, dc_rec = np.zeros((n_seq, weight.shape[0]), dtype), np.zeros((n_seq, d), dtype)
    dr_all = np.zeros((total, weight.shape[0]), dtype) if dr_out is None else dr_out
    d_proj = None if proj is None else np.empty_like(r)
    w_t = weight.T
    for t in range(len(steps.bounds) - 1, -1, -1):
        s, e = steps.bounds[t]
        n = e - s
        ps = steps.bounds[t - 1][0] if t else None
        c_prev = c_init[:n] if t == 0 else c[ps:ps + n]
        dr = dr_all[s:e]
        dr += dr_rec[:n]
        if proj is None:
            dh = dr
        else:
            if proj[2] > 0:
                dr[np.abs(r[s:e]) >= proj[2]] = 0
            proj[3](r[s:e], dr)
            d_proj[s:e] = dr
            dh = dr @ proj[0].T
        dc_in = dc_rec[:n] if dc_out is None else dc_rec[:n] + dc_out[s:e]
        dc_rec[:n] = cell.backward(g[s:e], c_prev, c[s:e], ca[s:e], dh, dc_in, dg[s:e])
        np.matmul(dg[s:e], w_t, out=dr_rec[:n])
    grads = [steps.to_sequences(dg) if need[0] else None,
             steps.unorder(dr_rec) if need[1] else None, steps.unorder(dc_rec) if need[2] else None]
    grads.append(steps.previous(r_init, r).T @ dg if need[3] else None)
    grads.append(cell.bias_grad(dg, steps.previous(c_init, c), c).astype(dtype, copy=False)
                 if need[4] and bias is not None else None)
    if proj is not None:
        grads.append(h.T @ d_proj if need[5] else None)
    return tuple(grads)


def _batch_grads(steps, douts):
    """Output gradients in regrouped order (copies: the backward loop adds into them)."""
    return tuple(None if x is None else x[steps.index] for x in douts)


# --- lstm ------------------------------------------------------------------------------------------------
def shape_differs(shape, want):
    """A build-time shape is not ``want`` (an unknown dimension, -1, matches anything)."""
    return len(shape) != len(want) or any(s != w and s >= 0 and w >= 0 for s, w in zip(shape, want))


def _check_lstm(op_type, x, weight, bias, attrs, rows):
    d = weight.shape[1] // 4
    if len(x.shape) != 2:
        raise ValueError(f"{op_type}: Input(X)'s rank must be 2, but received {len(x.shape)}.")
    if shape_differs(x.shape, (-1, 4 * d)):
        raise ValueError(f"{op_type}: the second dimension of Input(Input) should be 4 * {d} (4 times the hidden "
                         f"size), but received {x.shape[1]}.")
    if shape_differs(weight.shape, (rows, 4 * d)):
        raise ValueError(f"{op_type}: the shape of Input(Weight) should be [{rows}, {4 * d}], but received "
                         f"{list(weight.shape)}.")
    if bias is not None:
        width = 7 * d if attrs["use_peepholes"] else 4 * d
        if shape_differs(bias.shape, (1, width)):
            raise ValueError(f"{op_type}: the shape of Input(Bias) should be [1, {width}] "
                             f"({'enable' if attrs['use_peepholes'] else 'disable'} peepholes connection), but "
                             f"received {list(bias.shape)}.")
    return d


_LSTM_ATTRS = {"use_peepholes": True, "is_reverse": False, "gate_activation": "sigmoid",
               "cell_activation": "tanh", "candidate_activation": "tanh"}


def _lstm_infer(attrs, x, h0, c0, weight, bias):
    d = _check_lstm("lstm", x, weight, bias, attrs, weight.shape[0])
    out = ((x.shape[0], d), x.dtype)
    return out, out, (tuple(x.shape), x.dtype), out


@register_op("lstm", inputs=("Input", "H0", "C0", "Weight", "Bias"),
             outputs=("Hidden", "Cell", "BatchGate", "BatchCellPreAct"), optional=("H0", "C0", "Bias"),
             attrs=_LSTM_ATTRS, infer_shape=_lstm_infer, context=True, share_lod={"Hidden": "Input", "Cell": "Input"})
def _lstm_kernel(ctx, attrs, x, h0, c0, weight, bias):
    steps = Steps.of(ctx.input_lod("Input"), attrs["is_reverse"], "lstm")
    g, c, ca, h, _ = _lstm_forward("lstm", steps, x, weight, bias, h0, c0, attrs)
    return steps.to_sequences(h), steps.to_sequences(c), g, ca


@register_grad("lstm")
def _lstm_grad(ctx, attrs, ins, outs, douts, need):
    x, h0, c0, weight, bias = ins
    hidden, cell, g, ca = outs
    steps = Steps.of(ctx.input_lod("Input"), attrs["is_reverse"], "lstm")
    h = hidden[steps.index]
    dh, dc = _batch_grads(steps, douts[:2])
    return _lstm_backward("lstm", steps, attrs, weight, bias, h0, c0, g, cell[steps.index], ca, h, h, dh, dc, need)


# --- lstmp -----------------------------------------------------------------------------------------------
def _proj(attrs, proj_weight):
    fwd, dfn = activation("lstmp", attrs, "proj_activation")
    return proj_weight, fwd, float(attrs.get("proj_clip") or 0.0), dfn


def _lstmp_infer(attrs, x, h0, c0, weight, proj_weight, bias):
    p = proj_weight.shape[1]
    d = _check_lstm("lstmp", x, weight, bias, attrs, p)
    if shape_differs(proj_weight.shape, (d, p)):
        raise ValueError(f"lstmp: the first dimension of Input(ProjWeight) should be {d}, but received "
                         f"{proj_weight.shape[0]}.")
    out = ((x.shape[0], d), x.dtype)
    return ((x.shape[0], p), x.dtype), out, out, (tuple(x.shape), x.dtype), out


@register_op("lstmp", inputs=("Input", "H0", "C0", "Weight", "ProjWeight", "Bias"),
             outputs=("Projection", "Cell", "BatchHidden", "BatchGate", "BatchCellPreAct"),
             optional=("H0", "C0", "Bias"), infer_shape=_lstmp_infer, context=True,
             attrs=dict(_LSTM_ATTRS, proj_activation="tanh", cell_clip=0.0, proj_clip=0.0),
             share_lod={"Projection": "Input", "Cell": "Input"})
def _lstmp_kernel(ctx, attrs, x, h0, c0, weight, proj_weight, bias):
    steps = Steps.of(ctx.input_lod("Input"), attrs["is_reverse"], "lstmp")
    g, c, ca, h, r = _lstm_forward("lstmp", steps, x, weight, bias, h0, c0, attrs, _proj(attrs, proj_weight))
    return steps.to_sequences(r), steps.to_sequences(c), h, g, ca


@register_grad("lstmp")
def _lstmp_grad(ctx, attrs, ins, outs, douts, need):
    x, h0, c0, weight, proj_weight, bias = ins
    projection, cell, h, g, ca = outs
    steps = Steps.of(ctx.input_lod("Input"), attrs["is_reverse"], "lstmp")
    dr, dc = _batch_grads(steps, douts[:2])
    grads = _lstm_backward("lstmp", steps, attrs, weight, bias, h0, c0, g, cell[steps.index], ca, h,
                           projection[steps.index], dr, dc, need[:4] + (need[5], need[4]), _proj(attrs, proj_weight))
    # _lstm_backward returns (input, h0, c0, weight, bias, proj weight); the op's slots put ProjWeight first
    return grads[:4] + (grads[5], grads[4])


# --- gru -------------------------------------------------------------------------------------------------
def _gru_weights(weight):
    """fluid's gru weight memory: [D, 2D] update/reset weights, then [D, D] candidate weights."""
    d = weight.shape[0]
    flat = weight.reshape(-1)
    return flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)


def _gru_infer(attrs, x, h0, weight, bias):
    d = weight.shape[1] // 3
    if shape_differs(weight.shape, (d, 3 * d)):
        raise ValueError(f"gru: the shape of Input(Weight) should be [{d}, {3 * d}], but received "
                         f"{list(weight.shape)}.")
    if shape_differs(x.shape, (-1, 3 * d)):
        raise ValueError(f"gru: the input width should be 3 * frame size ({3 * d}), but received "
                         f"{list(x.shape)} (Input(Input)).")
    if bias is not None and shape_differs(bias.shape, (1, 3 * d)):
        raise ValueError(f"gru: the shape of Input(Bias) should be [1, {3 * d}], but received {list(bias.shape)}.")
    out = ((x.shape[0], d), x.dtype)
    return out, (tuple(x.shape), x.dtype), out, out


def gru_step(g, h_prev, w_gate, w_state, acts, origin_mode, reset_out, h_out):
    """One GRU step over rows: g [n, 3D] (inputs + bias) is updated in place to the activated update,
    reset and candidate values; writes r * h_prev into ``reset_out`` and the new hidden into ``h_out``."""
    d = w_state.shape[0]
    (gate, _), (act, _) = acts
    ur = g[:, :2 * d]
    ur += h_prev @ w_gate
    gate(ur, ur)
    np.multiply(g[:, d:2 * d], h_prev, out=reset_out)
    cand = g[:, 2 * d:]
    cand += reset_out @ w_state
    act(cand, cand)
    u = g[:, :d]
    if origin_mode:  # u * h_prev + (1 - u) * c
        np.subtract(h_prev, cand, out=h_out)
        h_out *= u
        h_out += cand
    else:  # (1 - u) * h_prev + u * c
        np.subtract(cand, h_prev, out=h_out)
        h_out *= u
        h_out += h_prev


def gru_step_grad(g, h_prev, reset_prev, w_gate, w_state, acts, origin_mode, dh, dg):
    """Gradients of one GRU step: ``dg`` [n, 3D] receives the pre-activation gradients; returns the
    gradient of h_prev."""
    d = w_state.shape[0]
    (_, d_gate), (_, d_act) = acts
    u, r, cand = g[:, :d], g[:, d:2 * d], g[:, 2 * d:]
    du, dr, dcand = dg[:, :d], dg[:, d:2 * d], dg[:, 2 * d:]
    if origin_mode:
        np.subtract(h_prev, cand, out=du)
        dh_prev = dh * u
        np.multiply(dh, 1 - u, out=dcand)
    else:
        np.subtract(cand, h_prev, out=du)
        dh_prev = dh - dh * u
        np.multiply(dh, u, out=dcand)
    du *= dh
    d_act(cand, dcand)
    d_reset = dcand @ w_state.T
    np.multiply(d_reset, h_prev, out=dr)
    dh_prev += d_reset * r
    d_gate(u, du)
    d_gate(r, dr)
    dh_prev += dg[:, :2 * d] @ w_gate.T
    return dh_prev


def gru_acts(op_type, attrs, act_name):
    return activation(op_type, attrs, "gate_activation"), activation(op_type, attrs, act_name)


@register_op("gru", inputs=("Input", "H0", "Weight", "Bias"),
             outputs=("Hidden", "BatchGate", "BatchResetHiddenPrev", "BatchHidden"), optional=("H0", "Bias"),
             attrs={"activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False, "origin_mode": False},
             infer_shape=_gru_infer, context=True, share_lod={"Hidden": "Input"})
def _gru_kernel(ctx, attrs, x, h0, weight, bias):
    steps = Steps.of(ctx.input_lod("Input"), attrs["is_reverse"], "gru")
    g = x[steps.index]
    if bias is not None:
        g += bias.reshape(-1).astype(x.dtype, copy=False)
    reset, h = gru_forward(steps, g, h0, weight, gru_acts("gru", attrs, "activation"), attrs["origin_mode"])
    return steps.to_sequences(h), g, reset, h


def gru_forward(steps, g, h0, weight, acts, origin_mode):
    """The regrouped GRU pass over ``g`` (the regrouped gate inputs with their bias, activated in place):
    returns the regrouped r * h_prev and hidden rows."""
    d, dtype = weight.shape[0], g.dtype
    w_gate, w_state = _gru_weights(weight)
    reset, h = np.empty((g.shape[0], d), dtype), np.empty((g.shape[0], d), dtype)
    h_prev = steps.initial(h0, d, dtype)
    with np.errstate(over="ignore"):
        for s, e in steps.bounds:
            gru_step(g[s:e], h_prev[:e - s], w_gate, w_state, acts, origin_mode, reset[s:e], h[s:e])
            h_prev = h[s:e]
    return reset, h


@register_grad("gru")
def _gru_grad(ctx, attrs, ins, outs, douts, need):
    x, h0, weight, bias = ins
    _, g, reset, h = outs
    steps = Steps.of(ctx.input_lod("Input"), attrs["is_reverse"], "gru")
    d, dtype = weight.shape[0], g.dtype
    w_gate, w_state = _gru_weights(weight)
    acts = gru_acts("gru", attrs, "activation")
    h_init = steps.initial(h0, d, dtype)
    dh_all = np.zeros_like(h) if douts[0] is None else douts[0][steps.index]
    dg, dh_rec = np.empty_like(g), np.zeros((steps.n_seq, d), dtype)
    for t in range(len(steps.bounds) - 1, -1, -1):
        s, e = steps.bounds[t]
        n = e - s
        h_prev = h_init[:n] if t == 0 else h[steps.bounds[t - 1][0]:][:n]
        dh = dh_all[s:e]
        dh += dh_rec[:n]
        dh_rec[:n] = gru_step_grad(g[s:e], h_prev, reset[s:e], w_gate, w_state, acts, attrs["origin_mode"], dh,
                                   dg[s:e])
    dw = None
    if need[2]:
        dw = np.concatenate(((steps.previous(h_init, h).T @ dg[:, :2 * d]).reshape(-1),
                             (reset.T @ dg[:, 2 * d:]).reshape(-1))).reshape(d, 3 * d)
    return (steps.to_sequences(dg) if need[0] else None, steps.unorder(dh_rec) if need[1] else None, dw,
            dg.sum(axis=0, keepdims=True) if need[3] and bias is not None else None)
