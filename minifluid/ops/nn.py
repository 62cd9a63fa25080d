"""Layers with train/test behaviour: dropout and batch_norm (``is_test`` flips both); lookup_table
(embedding)."""
import numpy as np

from .channels import ChannelView
from .im2col import scratch
from .registry import array_module, register_grad, register_op
from .selected_rows import is_selected_rows, positions
from .sequence import scatter_rows


# --- dropout ---------------------------------------------------------------------------------
def _dropout_scale(attrs):
    """Factor applied to kept units in training (upscale_in_train: 1/(1-p); 0 when p == 1)."""
    p = attrs["dropout_prob"]
    if attrs["dropout_implementation"] != "upscale_in_train":
        return 1.0
    return 1.0 / (1.0 - p) if p < 1.0 else 0.0


@register_op("dropout", inputs=("X", "Seed"), outputs=("Out", "Mask"), optional=("Seed",), no_grad_inputs=("Seed",),
             attrs={"dropout_prob": 0.5, "is_test": False, "fix_seed": False, "seed": 0,
                    "dropout_implementation": "downgrade_in_infer"},
             infer_shape=lambda attrs, x, seed: ((x.shape, x.dtype), (x.shape, "uint8")), share_lod={"Out": "X"})
def _dropout_forward(attrs, x, seed_t):
    p, upscale = attrs["dropout_prob"], attrs["dropout_implementation"] == "upscale_in_train"
    if attrs["is_test"]:  # downgrade_in_infer: x * (1 - p); upscale_in_train: x
        return (x.copy() if upscale else (x * (1.0 - p)).astype(x.dtype, copy=False)), None
    xp = array_module(x)
    if seed_t is not None or attrs["fix_seed"]:  # the same mask on every run, as in fluid
        seed = int(seed_t.reshape(-1)[0]) if seed_t is not None else attrs["seed"]
        uniform = xp.random.RandomState(seed).uniform(size=x.shape)
    else:
        uniform = xp.random.uniform(size=x.shape)
    mask = (uniform >= p).astype(np.uint8)
    return (x * mask * _dropout_scale(attrs)).astype(x.dtype, copy=False), mask


@register_grad("dropout", out_grads=("Out",))
def _dropout_backward(attrs, ins, outs, douts, need):
    dout, mask = douts[0], outs[1]
    if attrs["is_test"]:
        factor = 1.0 if attrs["dropout_implementation"] == "upscale_in_train" else 1.0 - attrs["dropout_prob"]
        return (dout * factor).astype(dout.dtype, copy=False), None
    return (dout * mask * _dropout_scale(attrs)).astype(dout.dtype, copy=False), None


@register_op("seed", inputs=(), outputs=("Out",), attrs={"seed": 0}, no_gradient=True,
             infer_shape=lambda attrs: ((1,), "int32"))
def _seed_forward(attrs):
    """A dropout's seed (backward_recompute.py): ``seed`` when set, else a new one each run."""
    return np.array([attrs["seed"] or np.random.randint(1, 2 ** 31 - 1)], dtype=np.int32)


# --- batch_norm ----------------------------------------------------------------------------------
# NOTE [ batch_norm passes ]
# Every per-channel operation goes through a ChannelView (NOTE [ Per-channel broadcasts on channels-last
# memory ] in channels.py): sums are column sums of the wide [rows, C * r] view, multiplies and adds run
# over long rows with the vector tiled, whatever the memory order (a conv's output is channels-last), and
# the in-place passes run block by block (NOTE [ Per-channel passes in blocks ]). The forward pass sums x
# for the mean, then per block writes x - mean into Y and sums its squares while the block is in cache
# (the variance of the centred copy: two-pass, no cancellation), then scales and shifts Y per block. The
# backward pass reads the batch statistics the forward pass saved (SavedMean and SavedVariance, which holds
# 1/sqrt(var + eps) as in fluid), sums dy and dy * x, and writes dx = k*dy - c1*x - c0 per block with
# per-channel k, c1, c0, never materialising x_hat:
# dscale = sum(dy * (x - mean)) * inv = (sum(dy * x) - mean * sum(dy)) * inv.
def _bn_c_axis(x, layout):
    """The channel axis of 2-D [N, C] or N-D NCHW/NHWC input."""
    return x.ndim - 1 if layout == "NHWC" or x.ndim == 2 else 1


def _batch_stats(attrs):
    """True when batch_norm normalises with the batch's statistics: in training, and at test time with
    ``trainable_statistics`` (fluid's test_mode is ``is_test and not trainable_statistics``); never with
    ``use_global_stats``."""
    return not (attrs["is_test"] and not attrs["trainable_statistics"] or attrs["use_global_stats"])


def _bn_infer(attrs, x, scale, bias, mean, variance, momentum):
    c = (x.shape[-1] if attrs["data_layout"] == "NHWC" or len(x.shape) == 2 else x.shape[1],)
    stat = (c, mean.dtype)
    return (x.shape, x.dtype), stat, stat, stat, stat, None


@register_op("batch_norm", inputs=("X", "Scale", "Bias", "Mean", "Variance", "MomentumTensor"),
             outputs=("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"),
             attrs={"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "data_layout": "NCHW", "use_mkldnn": False,
                    "fuse_with_relu": False, "use_global_stats": False, "trainable_statistics": False},
             optional=("MomentumTensor",), no_grad_inputs=("Mean", "Variance", "MomentumTensor"),
             infer_shape=_bn_infer)
def _batch_norm_forward(attrs, x, scale, bias, mean, variance, momentum_t):
    cv = ChannelView(x, _bn_c_axis(x, attrs["data_layout"]))
    xp, dt = cv.xp, x.dtype
    batch = _batch_stats(attrs)
    y = cv.empty(dt)
    xf, yf, m = cv.flat(x), cv.flat(y), x.size // cv.c
    mu = (cv.sum(x) / m).astype(dt, copy=False) if batch else mean.astype(dt, copy=False)
    mu_v = cv.vec(mu)

    def centre(rows):  # y = x - mean, and the block's sum of squares while it is in cache
        xp.subtract(xf[rows], mu_v, out=yf[rows])
        return cv.flat_sum(yf[rows], yf[rows]) if batch else None
    squares = cv.map_blocks(centre, dt.itemsize)
    var = (sum(squares) / m).astype(dt, copy=False) if batch else variance.astype(dt, copy=False)
    inv = (1.0 / xp.sqrt(var + attrs["epsilon"])).astype(dt, copy=False)
    k_v, bias_v = cv.vec((inv * scale).astype(dt, copy=False)), cv.vec(bias.astype(dt, copy=False))

    def scale_shift(rows):
        yf[rows] *= k_v
        yf[rows] += bias_v
    cv.map_blocks(scale_shift, dt.itemsize)
    if not batch:  # running statistics pass through unchanged
        return y, mean, variance, mu, inv, None
    mom = float(momentum_t.reshape(-1)[0]) if momentum_t is not None else attrs["momentum"]
    mean_out = (mean * mom + mu * (1.0 - mom)).astype(mean.dtype, copy=False)
    var_out = (variance * mom + var * (1.0 - mom)).astype(variance.dtype, copy=False)
    return y, mean_out, var_out, mu, inv, None


@register_grad("batch_norm", reads=("X", "Scale", "Bias", "Mean", "Variance", "SavedMean", "SavedVariance"),
               out_grads=("Y",))
def _batch_norm_backward(attrs, ins, outs, douts, need):
    x, scale = ins[0], ins[1]
    cv = ChannelView(x, _bn_c_axis(x, attrs["data_layout"]))
    xp, dt = cv.xp, x.dtype
    dy = douts[0]
    if not cv.like(dy):
        dy, given = cv.empty(dt), dy
        dy[...] = given
    batch = _batch_stats(attrs)
    mu, inv = outs[3], outs[4]
    if mu is None or inv is None:  # a grad op wired without the saved statistics: recompute them
        _, _, _, mu, inv, _ = _batch_norm_forward(attrs, x, scale, scale, ins[3], ins[4], None)
    mu, inv = mu.astype(dt, copy=False), inv.astype(dt, copy=False)
    dbias = cv.sum(dy)
    dscale = (cv.sum(dy, x) - mu * dbias) * inv
    k = (scale * inv).astype(dt, copy=False)
    dx = None
    if need[0]:
        dx = cv.empty(dt)
        dxf, dyf, xf, k_v = cv.flat(dx), cv.flat(dy), cv.flat(x), cv.vec(k)
        if batch:  # mean and variance depend on x: dx = k * (dy - dbias / m - x_hat * dscale / m)
            m = x.size // cv.c
            c1 = (k * inv * dscale / m).astype(dt, copy=False)
            c1_v, c0_v = cv.vec(c1), cv.vec((k * dbias / m - mu * c1).astype(dt, copy=False))

            def block(rows):  # dx = k*dy - c1*x - c0, the block's temporary in cache
                dxb, xc1 = dxf[rows], scratch("bn", dxf[rows].shape, dt, xp)
                xp.multiply(dyf[rows], k_v, out=dxb)
                xp.multiply(xf[rows], c1_v, out=xc1)
                dxb -= xc1
                dxb -= c0_v
        else:
            def block(rows):
                xp.multiply(dyf[rows], k_v, out=dxf[rows])
        cv.map_blocks(block, dt.itemsize)
    cast = lambda a: a.astype(dt, copy=False)  # noqa: E731
    return (dx, cast(dscale) if need[1] else None, cast(dbias) if need[2] else None, None, None, None)


# --- lookup_table (embedding) ------------------------------------------------------------------
def _lookup_rows(ids):
    """fluid 1.x's ids end in a dimension of 1 ([N, 1] -> N rows); the output drops it."""
    return ids[..., 0] if ids.ndim > 1 and ids.shape[-1] == 1 else ids


def _lookup_infer(attrs, w, ids):
    shape = tuple(ids.shape[:-1]) if len(ids.shape) > 1 and ids.shape[-1] == 1 else tuple(ids.shape)
    return (shape + (w.shape[1],), w.dtype)


def _lookup(attrs, w, rows, op_type):
    if is_selected_rows(w):  # a table of some rows: each id read from the value row holding it
        return _lookup(attrs, w.value, positions(w, rows, op_type), op_type)
    if rows.size and (rows.min() < 0 or rows.max() >= w.shape[0]):
        bad = rows[(rows < 0) | (rows >= w.shape[0])].reshape(-1)[0]
        raise ValueError(f"{op_type}: id {int(bad)} is out of range for a table of {w.shape[0]} rows "
                         f"(ids must be in [0, {w.shape[0] - 1}])")
    out = w[rows]
    padding = attrs["padding_idx"]
    if padding != -1:  # fluid: the padding id reads as zeros (and gets no gradient)
        out[rows == padding % w.shape[0]] = 0
    return out


def _lookup_grad(attrs, w, rows, dout):
    rows = rows.reshape(-1)
    dout = dout.reshape(rows.size, w.shape[1])
    padding = attrs["padding_idx"]
    if padding != -1:
        dout = dout * (rows != padding % w.shape[0])[:, None]
    xp = array_module(w)
    if xp is np:  # a dense gradient: fluid's is_sparse=True (SelectedRows) is not modelled
        return scatter_rows(rows, dout, w.shape[0]).astype(w.dtype, copy=False)
    dw = xp.zeros_like(w)
    xp.add.at(dw, rows, dout)
    return dw


_LOOKUP_ATTRS = {"padding_idx": -1, "is_sparse": False, "is_distributed": False, "remote_prefetch": False}


@register_op("lookup_table", inputs=("W", "Ids"), outputs=("Out",), no_grad_inputs=("Ids",), attrs=_LOOKUP_ATTRS,
             infer_shape=_lookup_infer, share_lod={"Out": "Ids"}, grad_share_lod={})
def _lookup_table_forward(attrs, w, ids):
    return _lookup(attrs, w, _lookup_rows(ids), "lookup_table")


@register_grad("lookup_table")
def _lookup_table_backward(attrs, ins, outs, douts, need):
    w, ids = ins
    return _lookup_grad(attrs, w, _lookup_rows(ids), douts[0]), None


@register_op("lookup_table_v2", inputs=("W", "Ids"), outputs=("Out",), no_grad_inputs=("Ids",), attrs=_LOOKUP_ATTRS,
             infer_shape=lambda attrs, w, ids: (tuple(ids.shape) + (w.shape[1],), w.dtype), share_lod={"Out": "Ids"},
             grad_share_lod={})
def _lookup_table_v2_forward(attrs, w, ids):
    """fluid.embedding's op: any ids shape, the output appends the width (no trailing 1 needed)."""
    return _lookup(attrs, w, ids, "lookup_table_v2")


@register_grad("lookup_table_v2")
def _lookup_table_v2_backward(attrs, ins, outs, douts, need):
    w, ids = ins
    return _lookup_grad(attrs, w, ids, douts[0]), None
