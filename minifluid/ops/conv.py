"""conv2d / depthwise_conv2d and pool2d on NCHW (NHWC is transposed in and out).

NOTE [ im2col with strides ]
``_Geometry.windows`` is a zero-copy strided view [N, C, OH, OW, kh, kw] of the padded input: output
pixel (oh, ow) and kernel tap (i, j) read padded[oh*sh + i*dh, ow*sw + j*dw]. conv2d turns
it into one matmul (batched over groups); the backward ``_Geometry.col2im`` scatters the window
gradients back with a loop over the kh*kw taps only (each tap is one strided slice add).
"""
import numpy as np

from .registry import array_module, register_grad, register_op


def _pads(attrs, in_hw, k_hw, strides, dilations):
    """fluid's padding_algorithm: ([top, bottom, left, right], dilations)."""
    algo = attrs.get("padding_algorithm", "EXPLICIT")
    if algo == "VALID":
        return [0, 0, 0, 0], list(dilations)
    if algo == "SAME":
        pads = []
        for size, k, s in zip(in_hw, k_hw, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0) if size >= 0 else 0
            pads += [total // 2, total - total // 2]
        return pads, [1, 1]
    p = [int(v) for v in attrs["paddings"]]
    return ([p[0], p[0], p[1], p[1]] if len(p) == 2 else p), list(dilations)


def _cpp_div(a, b):
    """``a / b`` for ints as C++ computes it (truncating toward zero): fluid's output-size formulas
    use it, so a window larger than the (padded) input still gives one output, (6 - 7) / 7 + 1 == 1."""
    q = abs(a) // b
    return q if a >= 0 else -q


_CONV_SIZE_ERROR = (
    "The output's size is expected to be greater than 0. But recieved: output's size is {out}. The output's size "
    "is computed by ((input_size + padding_1 + padding_2 - (dilation * (filter_size - 1) + 1)) / stride + 1), "
    "where input_size is {size}, padding is ({p0}, {p1}), filter_size is {k}, dilation is {d}, stride is {s}.")
_POOL_SIZE_ERROR = (
    "ShapeError: the output size must be greater than 0. But received: output_size = {out} due to the settings "
    "of input_size({size}), padding({p0},{p1}), k_size({k}) and stride({s}). Please check again!")


def _out_size(size, k, stride, pads, dil, ceil=False, message=_CONV_SIZE_ERROR):
    """One spatial output size: (size + pad_0 + pad_1 - dilated_k [+ stride - 1 if ceil]) / stride + 1."""
    if size < 0:
        return -1
    span = size + pads[0] + pads[1] - (dil * (k - 1) + 1)
    out = _cpp_div(span + (stride - 1 if ceil else 0), stride) + 1
    if out <= 0:
        raise ValueError(message.format(out=out, size=size, p0=pads[0], p1=pads[1], k=k, d=dil, s=stride))
    return out


def _nchw(x, fmt):
    return x.transpose(0, 3, 1, 2) if fmt == "NHWC" else x


def _from_nchw(x, fmt):
    return x.transpose(0, 2, 3, 1) if fmt == "NHWC" else x


def _nchw_shape(shape, fmt):
    return (shape[0], shape[3], shape[1], shape[2]) if fmt == "NHWC" else tuple(shape)


class _Geometry:
    """Kernel, stride, dilation, pads and output size of one conv/pool call (all 2-tuples but pads)."""

    def __init__(self, attrs, in_hw, k_hw, strides, dilations, ceil=False, message=_CONV_SIZE_ERROR):
        self.k, self.s = tuple(k_hw), tuple(strides)
        self.pads, dil = _pads(attrs, in_hw, k_hw, strides, dilations)
        self.d = tuple(dil)
        self.out = tuple(_out_size(size, k, s, self.pads[2 * i:2 * i + 2], d, ceil, message)
                         for i, (size, k, s, d) in enumerate(zip(in_hw, self.k, self.s, self.d)))

    def _widths(self, hw):
        """(before, after) padding of H and W; after grows when ceil_mode windows run past the edge."""
        widths = []
        for i in range(2):
            need = (self.out[i] - 1) * self.s[i] + (self.k[i] - 1) * self.d[i] + 1
            lo, hi = self.pads[2 * i], self.pads[2 * i + 1]
            widths.append((lo, max(hi, need - hw[i] - lo)))
        return widths

    def pad(self, x, value=0.0):
        return array_module(x).pad(x, [(0, 0), (0, 0)] + self._widths(x.shape[2:]), constant_values=value)

    def padded_shape(self, shape):
        return tuple(shape[:2]) + tuple(s + lo + hi for s, (lo, hi) in zip(shape[2:], self._widths(shape[2:])))

    def windows(self, xp_):
        """Strided view [N, C, OH, OW, kh, kw] of the padded input (see NOTE [ im2col with strides ])."""
        st = xp_.strides
        shape = xp_.shape[:2] + self.out + self.k
        strides = st[:2] + (st[2] * self.s[0], st[3] * self.s[1], st[2] * self.d[0], st[3] * self.d[1])
        return array_module(xp_).lib.stride_tricks.as_strided(xp_, shape, strides)

    def taps(self, win):
        """(i, j, win[..., i, j]) for every kernel tap: the per-tap loops below run kh*kw times, never per pixel."""
        return ((i, j, win[..., i, j]) for i in range(self.k[0]) for j in range(self.k[1]))

    def col2im(self, tap_grad, in_shape, dtype, xp):
        """Sum per-tap gradients ``tap_grad(i, j)`` ([N, C, OH, OW]) back into an input of ``in_shape``."""
        dxp = xp.zeros(self.padded_shape(in_shape), dtype=dtype)
        (oh, ow), (sh, sw), (dh, dw) = self.out, self.s, self.d
        for i in range(self.k[0]):
            for j in range(self.k[1]):
                dxp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += tap_grad(i, j)
        return dxp[:, :, self.pads[0]:self.pads[0] + in_shape[2], self.pads[2]:self.pads[2] + in_shape[3]]


# --- conv2d -------------------------------------------------------------------------------------
_CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "padding_algorithm": "EXPLICIT", "dilations": [1, 1],
               "groups": 1, "data_format": "NCHW", "use_cudnn": True, "use_mkldnn": False,
               "fuse_relu_before_depthwise_conv": False, "workspace_size_MB": 512, "exhaustive_search": False}


def _conv_geometry(attrs, x_nchw_shape, w_shape):
    return _Geometry(attrs, x_nchw_shape[2:], w_shape[2:], attrs["strides"], attrs["dilations"])


def _conv_infer(attrs, x, w, bias, residual):
    fmt = attrs["data_format"]
    n, _, h, wd = _nchw_shape(x.shape, fmt)
    geo = _conv_geometry(attrs, (n, -1, h, wd), w.shape)
    out = (n, w.shape[0]) + geo.out
    return (out if fmt != "NHWC" else (n,) + geo.out + (w.shape[0],), x.dtype)


def _conv_cols(geo, x, groups):
    """im2col: [G, N*OH*OW, Cg*kh*kw] (the one copy of the forward pass)."""
    n, c = x.shape[:2]
    win = geo.windows(geo.pad(x)).reshape((n, groups, c // groups) + geo.out + geo.k)
    return win.transpose(1, 0, 3, 4, 2, 5, 6).reshape(groups, n * geo.out[0] * geo.out[1], -1)


def _conv2d_forward(attrs, x, w, bias, residual):
    x = _nchw(x, attrs["data_format"])
    geo, g = _conv_geometry(attrs, x.shape, w.shape), attrs["groups"]
    n, cout = x.shape[0], w.shape[0]
    if x.shape[1] != w.shape[1] * g or cout % g:
        raise ValueError(f"conv2d: input channels ({x.shape[1]}) must equal filter channels ({w.shape[1]}) * groups "
                         f"({g}), and output channels ({cout}) must be divisible by groups")
    out = _conv_cols(geo, x, g) @ w.reshape(g, cout // g, -1).transpose(0, 2, 1)  # [G, N*OH*OW, Cout/G]
    out = out.reshape((g, n) + geo.out + (cout // g,)).transpose(1, 0, 4, 2, 3).reshape((n, cout) + geo.out)
    return _from_nchw(array_module(out).ascontiguousarray(out), attrs["data_format"])


def _conv2d_backward(attrs, ins, outs, douts, need):
    x, w = ins[0], ins[1]
    fmt, g = attrs["data_format"], attrs["groups"]
    x, dout = _nchw(x, fmt), _nchw(douts[0], fmt)
    geo = _conv_geometry(attrs, x.shape, w.shape)
    (n, c), cout = x.shape[:2], w.shape[0]
    d = dout.reshape((n, g, cout // g) + geo.out).transpose(1, 0, 3, 4, 2).reshape(g, -1, cout // g)
    dw = (d.transpose(0, 2, 1) @ _conv_cols(geo, x, g)).reshape(w.shape) if need[1] else None
    dx = None
    if need[0]:
        dcols = (d @ w.reshape(g, cout // g, -1)).reshape((g, n) + geo.out + (c // g,) + geo.k)
        dcols = dcols.transpose(1, 0, 4, 2, 3, 5, 6).reshape((n, c) + geo.out + geo.k)
        dx = _from_nchw(geo.col2im(lambda i, j: dcols[..., i, j], x.shape, x.dtype, array_module(x)), fmt)
    return dx, dw, None, None


for _conv in ("conv2d", "depthwise_conv2d"):
    register_op(_conv, inputs=("Input", "Filter", "Bias", "ResidualData"), outputs=("Output",), attrs=_CONV_ATTRS,
                optional=("Bias", "ResidualData"), no_grad_inputs=("Bias", "ResidualData"),
                infer_shape=_conv_infer)(_conv2d_forward)
    register_grad(_conv)(_conv2d_backward)


# --- pool2d ---------------------------------------------------------------------------------------
def _pool_geometry(attrs, x_nchw_shape):
    h, w = x_nchw_shape[2:]
    if attrs["global_pooling"]:
        return _Geometry({"paddings": [0, 0]}, (h, w), (h, w), (1, 1), (1, 1))
    if attrs["adaptive"]:
        oh, ow = attrs["ksize"]
        if h % oh or w % ow:
            raise NotImplementedError(f"pool2d adaptive=True needs input size divisible by ksize, got {h}x{w} "
                                      f"for {oh}x{ow}")
        return _Geometry({"paddings": [0, 0]}, (h, w), (h // oh, w // ow), (h // oh, w // ow), (1, 1))
    return _Geometry(attrs, (h, w), attrs["ksize"], attrs["strides"], (1, 1), attrs["ceil_mode"], _POOL_SIZE_ERROR)


def _pool_infer(attrs, x):
    fmt = attrs["data_format"]
    n, c, h, w = _nchw_shape(x.shape, fmt)
    if attrs["global_pooling"]:
        out = (1, 1)
    elif attrs["adaptive"]:
        out = tuple(attrs["ksize"])
    else:
        out = _Geometry(attrs, (h, w), attrs["ksize"], attrs["strides"], (1, 1), attrs["ceil_mode"],
                        _POOL_SIZE_ERROR).out
    return ((n, c) + out if fmt != "NHWC" else (n,) + out + (c,), x.dtype)


_MAX_POOL_INIT = float(np.finfo(np.float32).min)  # a max window starts at -FLT_MAX: one reading only padding gives it


def _avg_count(geo, x, attrs):
    """Divisor per output pixel. exclusive: the window clipped to the input, [start, min(start + k, size))
    with start = max(o * stride - pad, 0), counted as (h_end - h_start) * (w_end - w_start) without any
    further clamping, exactly as the CPU kernel of fluid does; otherwise kh * kw."""
    if not attrs["exclusive"] or attrs["global_pooling"]:
        return geo.k[0] * geo.k[1]
    xp, counts = array_module(x), []
    for axis in range(2):
        start = xp.arange(geo.out[axis]) * geo.s[axis] - geo.pads[2 * axis]
        end = xp.minimum(start + geo.k[axis], x.shape[2 + axis])
        counts.append(end - xp.maximum(start, 0))
    return (counts[0][:, None] * counts[1][None, :]).astype(x.dtype)


def _global_pool_grad(attrs, x, dout):
    xp, (n, c, h, w) = array_module(x), x.shape
    if attrs["pooling_type"] != "max":
        return xp.broadcast_to(dout / (h * w), x.shape).astype(x.dtype)
    first = x.reshape(n, c, h * w).argmax(axis=-1)[..., None] == xp.arange(h * w)  # first max, as the taps do
    return (first * dout.reshape(n, c, 1)).reshape(x.shape).astype(x.dtype, copy=False)


@register_op("pool2d", inputs=("X",), outputs=("Out",), infer_shape=_pool_infer,
             attrs={"pooling_type": "max", "ksize": [1, 1], "global_pooling": False, "strides": [1, 1],
                    "paddings": [0, 0], "exclusive": True, "adaptive": False, "ceil_mode": False,
                    "use_cudnn": True, "use_mkldnn": False, "use_quantizer": False, "data_format": "NCHW",
                    "padding_algorithm": "EXPLICIT", "is_test": False})
def _pool2d_forward(attrs, x):
    x = _nchw(x, attrs["data_format"])
    geo, xp = _pool_geometry(attrs, x.shape), array_module(x)
    is_max = attrs["pooling_type"] == "max"
    if attrs["global_pooling"]:
        out = x.max(axis=(2, 3), keepdims=True) if is_max else x.mean(axis=(2, 3), keepdims=True)
        return _from_nchw(out.astype(x.dtype, copy=False), attrs["data_format"])
    taps = geo.taps(geo.windows(geo.pad(x, _MAX_POOL_INIT if is_max else 0.0)))
    out = next(taps)[2].copy()
    for _, _, tap in taps:  # a loop over kernel taps; each step is one vectorised op
        if is_max:
            xp.maximum(out, tap, out=out)
        else:
            out += tap
    if not is_max:
        with np.errstate(divide="ignore", invalid="ignore"):  # a window of padding only: 0 / 0, as in fluid
            out = out / _avg_count(geo, x, attrs)
    return _from_nchw(out.astype(x.dtype, copy=False), attrs["data_format"])


@register_grad("pool2d")
def _pool2d_backward(attrs, ins, outs, douts, need):
    fmt = attrs["data_format"]
    x, dout = _nchw(ins[0], fmt), _nchw(douts[0], fmt)
    geo, xp = _pool_geometry(attrs, x.shape), array_module(x)
    if attrs["global_pooling"]:
        return (_from_nchw(_global_pool_grad(attrs, x, dout), fmt),)
    if attrs["pooling_type"] != "max":
        with np.errstate(divide="ignore", invalid="ignore"):
            g = dout / _avg_count(geo, x, attrs)
        return (_from_nchw(geo.col2im(lambda i, j: g, x.shape, x.dtype, xp), fmt),)
    win = geo.windows(geo.pad(x, _MAX_POOL_INIT))
    out = _nchw(outs[0], fmt) if outs[0] is not None else _pool2d_forward({**attrs, "data_format": "NCHW"}, x)
    taken = xp.zeros(out.shape, dtype=bool)

    def tap_grad(i, j):  # route dout to the first tap (row-major) that holds the max
        hit = (win[..., i, j] == out) & ~taken
        taken[...] |= hit
        return dout * hit
    return (_from_nchw(geo.col2im(tap_grad, x.shape, x.dtype, xp), fmt),)
