"""pool3d (max / avg, global, adaptive, ceil_mode, exclusive) on channels-last memory, through conv3d.py's Volume.

As fluid's CPU kernel, a window starts at ``o * stride - pad_front`` and reads [max(start, 0), min(start + k,
size)) along each axis: the padding never enters a window (the padded buffer holds -FLT_MAX for max, fluid's
initial value, and 0 for avg), and the exclusive divisor is that clipped volume (else kd * kh * kw). Global
pooling is one window of the whole volume. A max window routes its gradient to its first element (d, h, w order)
equal to its output, as fluid does; the kernels take one reduction over the strided window view, the gradients
one col2im of kd*kh*kw slice-adds. Adaptive output i of m along an axis of n reads [floor(i*n/m),
ceil((i+1)*n/m)) (NOTE [ Adaptive windows ] in pool.py): average is three [m, n] averaging matrices applied in
one einsum, max one gather of every window padded to the longest by repeating its last index.
"""
import numpy as np

from .conv3d import CHANNELS_LAST, Volume, from_ndhwc, ndhwc_shape, resolve_pads, to_ndhwc
from .im2col import POOL_SIZE_ERROR
from .pool import _adaptive_matrix, _adaptive_taps, global_adaptive
from .registry import array_module, register_grad, register_op

_MAX_POOL_INIT = float(np.finfo(np.float32).min)


def _volume(attrs, x5_shape):
    if len(x5_shape) != 5:
        raise ValueError(f"Pooling intput should be 4-D or 5-D tensor but received {len(x5_shape)}-D")
    dhw = x5_shape[1:4]
    if attrs["global_pooling"]:
        return Volume([0] * 6, dhw, dhw, (1, 1, 1), (1, 1, 1))
    k, s = attrs["ksize"], attrs["strides"]
    if len(k) != 3 or len(s) != 3:
        raise ValueError(f"Attr(ksize) and Attr(strides) of pool3d should have 3 values, but received ksize {k} and "
                         f"strides {s}")
    pads, _ = resolve_pads(attrs, dhw, k, s, (1, 1, 1))
    return Volume(pads, dhw, k, s, (1, 1, 1), attrs["ceil_mode"], POOL_SIZE_ERROR)


def _pool3d_infer(attrs, x):
    fmt = attrs["data_format"]
    n, d, h, w, c = ndhwc_shape(x.shape, fmt)
    attrs = global_adaptive(attrs, (d, h, w))
    out = tuple(attrs["ksize"]) if attrs["adaptive"] else _volume(attrs, (n, d, h, w, c)).out
    return ((n, c) + out if fmt not in CHANNELS_LAST else (n,) + out + (c,)), x.dtype


def _avg_divisor(vol, x5, attrs):
    """Per output voxel [OD, OH, OW, 1]: the window clipped to the input (exclusive) or kd * kh * kw."""
    if not attrs["exclusive"] or attrs["global_pooling"]:
        return float(np.prod(vol.k))
    xp, counts = array_module(x5), []
    for axis in range(3):
        start = xp.arange(vol.out[axis]) * vol.s[axis] - vol.pads[2 * axis]
        counts.append(xp.minimum(start + vol.k[axis], x5.shape[1 + axis]) - xp.maximum(start, 0))
    return (counts[0][:, None, None] * counts[1][None, :, None] * counts[2][None, None, :]).astype(x5.dtype)[..., None]


def _first_max(windows):
    """(max, index of its first occurrence) over the window axes 4, 5, 6 of [N, OD, OH, OW, kd, kh, kw, C]."""
    flat = windows.reshape(windows.shape[:4] + (-1, windows.shape[-1]))
    first = flat.argmax(axis=4)
    return array_module(flat).take_along_axis(flat, first[:, :, :, :, None], axis=4)[:, :, :, :, 0], first


# --- adaptive windows -----------------------------------------------------------------------------------------------
def _adaptive_gather(x5, out):
    """Every adaptive window [N, OD, OH, OW, taps, C] and the flat D*H*W position of each tap."""
    xp, (n, d, h, w, c) = array_module(x5), x5.shape
    rd, rh, rw = (_adaptive_taps(size, o, xp) for size, o in zip((d, h, w), out))
    pos = ((rd[:, None, None, :, None, None] * h + rh[None, :, None, None, :, None]) * w
           + rw[None, None, :, None, None, :]).reshape(tuple(out) + (-1,))
    return x5.reshape(n, d * h * w, c)[:, pos], pos


def _adaptive_forward(attrs, x5):
    xp, out = array_module(x5), tuple(attrs["ksize"])
    if attrs["pooling_type"] == "max":
        return _adaptive_gather(x5, out)[0].max(axis=4)
    pd, ph, pw = (_adaptive_matrix(size, o, x5.dtype, xp) for size, o in zip(x5.shape[1:4], out))
    return xp.einsum("id,jh,kw,ndhwc->nijkc", pd, ph, pw, x5, optimize=True).astype(x5.dtype, copy=False)


def _adaptive_backward(attrs, x5, d5):
    xp, out, (n, d, h, w, c) = array_module(x5), tuple(attrs["ksize"]), x5.shape
    if attrs["pooling_type"] != "max":
        pd, ph, pw = (_adaptive_matrix(size, o, x5.dtype, xp) for size, o in zip((d, h, w), out))
        return xp.einsum("id,jh,kw,nijkc->ndhwc", pd, ph, pw, d5, optimize=True).astype(x5.dtype, copy=False)
    windows, pos = _adaptive_gather(x5, out)
    first = windows.argmax(axis=4)  # [N, OD, OH, OW, C]
    where = xp.take_along_axis(pos[None, :, :, :, :, None], first[:, :, :, :, None], axis=4)[:, :, :, :, 0]
    target = (xp.arange(n)[:, None, None, None, None] * (d * h * w) + where) * c + xp.arange(c)
    dx = xp.bincount(target.reshape(-1), weights=d5.reshape(-1), minlength=x5.size)
    return dx.reshape(x5.shape).astype(x5.dtype, copy=False)


@register_op("pool3d", inputs=("X",), outputs=("Out",), infer_shape=_pool3d_infer,
             attrs={"pooling_type": "max", "ksize": [1, 1, 1], "global_pooling": False, "strides": [1, 1, 1],
                    "paddings": [0, 0, 0], "exclusive": True, "adaptive": False, "ceil_mode": False,
                    "use_cudnn": True, "use_mkldnn": False, "data_format": "NCDHW", "padding_algorithm": "EXPLICIT"})
def _pool3d_forward(attrs, x):
    fmt = attrs["data_format"]
    x5 = to_ndhwc(x, fmt)
    attrs = global_adaptive(attrs, x5.shape[1:4])
    if attrs["adaptive"]:
        return from_ndhwc(_adaptive_forward(attrs, x5), fmt)
    vol = _volume(attrs, x5.shape)
    is_max = attrs["pooling_type"] == "max"
    windows = vol.windows(vol.padded(x5, _MAX_POOL_INIT if is_max else 0.0))
    if is_max:
        return from_ndhwc(windows.max(axis=(4, 5, 6)), fmt)
    with np.errstate(divide="ignore", invalid="ignore"):  # a window of padding only: 0 / 0, as in fluid
        out = windows.sum(axis=(4, 5, 6)) / _avg_divisor(vol, x5, attrs)
    return from_ndhwc(out.astype(x5.dtype, copy=False), fmt)


@register_grad("pool3d", reads=("X",))
def _pool3d_backward(attrs, ins, outs, douts, need):
    fmt = attrs["data_format"]
    x5, d5 = to_ndhwc(ins[0], fmt), to_ndhwc(douts[0], fmt)
    xp = array_module(x5)
    attrs = global_adaptive(attrs, x5.shape[1:4])
    if attrs["adaptive"]:
        return (from_ndhwc(_adaptive_backward(attrs, x5, d5), fmt),)
    vol = _volume(attrs, x5.shape)
    if attrs["pooling_type"] != "max":
        with np.errstate(divide="ignore", invalid="ignore"):
            g = d5 / _avg_divisor(vol, x5, attrs)
        return (from_ndhwc(vol.col2im(lambda tap: g, x5.shape, x5.dtype, xp).astype(x5.dtype, copy=False), fmt),)
    _, first = _first_max(vol.windows(vol.padded(x5, _MAX_POOL_INIT)))
    taps = {tap: i for i, tap in enumerate(np.ndindex(*vol.k))}
    dx = vol.col2im(lambda tap: d5 * (first == taps[tap]), x5.shape, x5.dtype, xp)
    return (from_ndhwc(dx.astype(x5.dtype, copy=False), fmt),)


# --- max_pool3d_with_index: the max and its flat D*H*W position (Mask), NCDHW ------------------------------------------
def _resolve_global(attrs, dhw):
    """fluid's global_pooling: the window is the whole input and the paddings 0; ``adaptive`` then asks for an
    output of that size (windows of one voxel)."""
    if not attrs["global_pooling"]:
        return attrs
    return dict(attrs, global_pooling=False, ksize=list(dhw), paddings=[0] * len(dhw))


def _with_index_volume(attrs, x5_shape):
    pads = [p for p in attrs["paddings"] for _ in (0, 1)]
    return Volume(pads, x5_shape[1:4], attrs["ksize"], attrs["strides"], (1, 1, 1), message=POOL_SIZE_ERROR)


def _with_index_out(attrs, shape5):
    """The [N, C, OD, OH, OW] of max_pool3d_with_index's outputs for NCDHW ``shape5``."""
    attrs = _resolve_global(attrs, shape5[2:])
    return tuple(shape5[:2]) + (tuple(attrs["ksize"]) if attrs["adaptive"] else
                                _with_index_volume(attrs, ndhwc_shape(shape5, "NCDHW")).out)


def _with_index_infer(attrs, x):
    if len(x.shape) != 5:
        raise ValueError(f"Pooling intput should be 4-D or 5-D tensor but received {len(x.shape)}-D")
    out = _with_index_out(attrs, x.shape)
    return (out, x.dtype), (out, "int32")


def _max_with_position(attrs, x5):
    """(max [N, OD, OH, OW, C], the flat D*H*W position of its first occurrence)."""
    xp, d, h, w = array_module(x5), *x5.shape[1:4]
    attrs = _resolve_global(attrs, (d, h, w))
    if attrs["adaptive"]:
        windows, pos = _adaptive_gather(x5, tuple(attrs["ksize"]))
        first = windows.argmax(axis=4)
        where = xp.take_along_axis(pos[None, :, :, :, :, None], first[:, :, :, :, None], axis=4)[:, :, :, :, 0]
        return windows.max(axis=4), where
    vol = _with_index_volume(attrs, x5.shape)
    windows = vol.windows(vol.padded(x5, _MAX_POOL_INIT))
    flat = windows.reshape(windows.shape[:4] + (-1, windows.shape[-1]))
    first = flat.argmax(axis=4)  # [N, OD, OH, OW, C] tap index
    taps = xp.unravel_index(first, vol.k)
    grid = xp.meshgrid(*(xp.arange(o) * s - vol.pads[2 * i] for i, (o, s) in enumerate(zip(vol.out, vol.s))),
                       indexing="ij")
    coords = [g[None, :, :, :, None] + t for g, t in zip(grid, taps)]
    return xp.take_along_axis(flat, first[:, :, :, :, None], axis=4)[:, :, :, :, 0], (coords[0] * h + coords[1]) * w + \
        coords[2]


_WITH_INDEX_ATTRS = {"ksize": [1, 1, 1], "global_pooling": False, "adaptive": False, "strides": [1, 1, 1],
                     "paddings": [0, 0, 0]}


@register_op("max_pool3d_with_index", inputs=("X",), outputs=("Out", "Mask"), infer_shape=_with_index_infer,
             attrs=_WITH_INDEX_ATTRS)
def _max_pool3d_with_index_forward(attrs, x):
    out, where = _max_with_position(attrs, to_ndhwc(x, "NCDHW"))
    return from_ndhwc(out, "NCDHW"), from_ndhwc(where.astype(np.int32), "NCDHW")


def _max_pool_with_index_backward(attrs, ins, outs, douts, need):
    x, mask, d = ins[0], outs[1], douts[0]
    xp, (n, c) = array_module(x), x.shape[:2]
    volume = int(np.prod(x.shape[2:]))
    target = (xp.arange(n * c).reshape(n, c, 1) * volume + mask.reshape(n, c, -1)).reshape(-1)
    dx = xp.bincount(target, weights=d.reshape(-1), minlength=x.size)
    return (dx.reshape(x.shape).astype(x.dtype, copy=False),)


register_grad("max_pool3d_with_index", reads=("X", "Mask"))(_max_pool_with_index_backward)


# --- max_pool2d_with_index: the 3-D op over a depth of one (a window of depth 1; Mask is then h * W + w) ----------
def _as_depth_one(attrs, shape):
    """(the 3-D op's attrs, the NC1HW shape) for the 2-D op on NCHW ``shape``."""
    if len(shape) != 4:
        raise ValueError(f"Input(X) of Op(max_pool2d_with_index) should be a 4-D Tensor, but received: "
                         f"{len(shape)}-D Tensor, the shape is {list(shape)}")
    for name in ("ksize", "strides", "paddings"):
        if len(attrs[name]) != 2:
            raise ValueError(f"Attr({name}) of Op(max_pool2d_with_index) should have 2 values, but received "
                             f"{list(attrs[name])}")
    lifted = dict(attrs, ksize=[1] + list(attrs["ksize"]), strides=[1] + list(attrs["strides"]),
                  paddings=[0] + list(attrs["paddings"]))
    return lifted, tuple(shape[:2]) + (1,) + tuple(shape[2:])


def _with_index_2d_infer(attrs, x):
    out = _with_index_out(*_as_depth_one(attrs, x.shape))
    return (out[:2] + out[3:], x.dtype), (out[:2] + out[3:], "int32")


@register_op("max_pool2d_with_index", inputs=("X",), outputs=("Out", "Mask"), infer_shape=_with_index_2d_infer,
             attrs={**_WITH_INDEX_ATTRS, "ksize": [1, 1], "strides": [1, 1], "paddings": [0, 0]})
def _max_pool2d_with_index_forward(attrs, x):
    lifted, shape5 = _as_depth_one(attrs, x.shape)
    out, mask = _max_pool3d_with_index_forward(lifted, x.reshape(shape5))
    return out[:, :, 0], mask[:, :, 0]


register_grad("max_pool2d_with_index", reads=("X", "Mask"))(_max_pool_with_index_backward)
