"""conv2d and depthwise_conv2d: im2col + one GEMM on channels-last memory (NOTE [ Channels-last inside
the kernels ] in im2col.py), NCHW or NHWC tensors in and out.

NOTE [ conv2d formulations ]
forward      groups == 1: [N*OH*OW, kh*kw*C] im2col matrix @ [kh*kw*C, F] filter matrix = NHWC output.
             depthwise (C/groups == 1): kh*kw multiply-adds over whole tensors (a GEMM with K = kh*kw
             and one column per group would be all overhead). Other groups: a batched GEMM per group.
filter grad  im2col(x).T @ dout (the im2col matrix is rebuilt: keeping it from the forward pass would
             hold kh*kw times every conv input until the backward pass). When the input gradient is the
             transposed convolution below, its im2col matrix G of the output gradient (one row per
             input pixel, taps flipped) gives the filter gradient too, as G.T @ x: one im2col of
             kh*kw*F columns per backward pass instead of two, taken when G is no larger than the
             forward's im2col matrix (H*W*F <= OH*OW*C: 'same' convs; LeNet's 'valid' 20->50 conv would
             make G 4.5x larger).
input grad   stride 1 with an output no smaller than the input ('same' convs: every ResNet 3x3 conv but the
             down-sampling ones): the transposed convolution, im2col of the padded output gradient @ the
             flipped filter, which writes the input gradient at once. GEMM-then-col2im instead writes a
             [N*OH*OW, kh*kw*C] product and reads it back with kh*kw strided adds, a chunk of images at a
             time on the intra-op threads: tools/bench_conv_kernels.py measured it 2.6x / 1.9x / 1.3x
             slower on ResNet-20's 16 / 32 / 64-channel 3x3 convs at batch 128 on 2 threads. A 'valid' conv
             (LeNet's 5x5 20->50, 12x12 -> 8x8) would make the transposed GEMM H*W / (OH*OW) = 2.25x
             larger; there col2im is faster (0.87x) and taken, as for strided convs (the transposed form
             would multiply zeros).
"""
import numpy as np

from .im2col import CONV_SIZE_ERROR, Geometry, from_nhwc, nhwc_shape, scratch, to_nhwc
from .registry import array_module, register_grad, register_op

_CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "padding_algorithm": "EXPLICIT", "dilations": [1, 1],
               "groups": 1, "data_format": "NCHW", "use_cudnn": True, "use_mkldnn": False,
               "fuse_relu_before_depthwise_conv": False, "workspace_size_MB": 512, "exhaustive_search": False}


def _conv_geometry(attrs, x4_shape, w_shape):
    return Geometry(attrs, x4_shape[1:3], w_shape[2:], attrs["strides"], attrs["dilations"], False, CONV_SIZE_ERROR)


def _conv_infer(attrs, x, w, bias, residual):
    fmt = attrs["data_format"]
    n, h, wd, _ = nhwc_shape(x.shape, fmt)
    out = _conv_geometry(attrs, (n, h, wd, -1), w.shape).out
    return ((n, w.shape[0]) + out if fmt != "NHWC" else (n,) + out + (w.shape[0],), x.dtype)


def _filter_matrix(w):
    """[F, C, kh, kw] -> [kh*kw*C, F], rows in im2col's (i, j, c) order."""
    return w.transpose(2, 3, 1, 0).reshape(-1, w.shape[0])


def _check(x4, w, g):
    c, f = x4.shape[3], w.shape[0]
    if c != w.shape[1] * g or f % g:
        raise ValueError(f"conv2d: input channels ({c}) must equal filter channels ({w.shape[1]}) * groups "
                         f"({g}), and output channels ({f}) must be divisible by groups")


def _group_cols(geo, cols, g):
    kk = geo.k[0] * geo.k[1]
    L = cols.shape[0]
    return cols.reshape(L, kk, g, -1).transpose(2, 0, 1, 3).reshape(g, L, -1)


def _group_filter(w, g):
    f, cg, kh, kw = w.shape
    return w.reshape(g, f // g, cg, kh, kw).transpose(0, 3, 4, 2, 1).reshape(g, kh * kw * cg, f // g)


def _depthwise_taps(geo, w, g):
    """Per tap (i, j): the [G, M] filter slice of a depthwise conv (M = output channels per group)."""
    wt = w.reshape(g, w.shape[0] // g, *geo.k)
    return lambda i, j: wt[:, :, i, j]


def _conv2d_forward(attrs, x, w, bias, residual):
    fmt, g = attrs["data_format"], attrs["groups"]
    x4 = to_nhwc(x, fmt)
    _check(x4, w, g)
    geo = _conv_geometry(attrs, x4.shape, w.shape)
    n, f = x4.shape[0], w.shape[0]
    if _channels_first(geo, x, fmt, g):
        out, wmat, per_image = _chunked_out(geo, x4, f), w.reshape(f, -1).T, geo.out[0] * geo.out[1]
        geo.map_planes(x, lambda lo, hi, planes: np.matmul(planes.T, wmat, out=out[lo * per_image:hi * per_image]))
    elif g == 1:
        out, wmat, per_image = _chunked_out(geo, x4, f), _filter_matrix(w), geo.out[0] * geo.out[1]
        geo.map_chunks(x4, lambda lo, hi, cols: array_module(x4).matmul(cols, wmat, out=out[lo * per_image:hi * per_image]))
    elif w.shape[1] == 1:
        out = _depthwise_forward(geo, x4, w, g)
    else:
        out = (_group_cols(geo, geo.im2col(x4), g) @ _group_filter(w, g)).transpose(1, 0, 2)
    return from_nhwc(out.reshape((n,) + geo.out + (f,)), fmt)


def _channels_first(geo, x, fmt, g):
    """True when the channels-first im2col is the one to take (NOTE [ Channels-first im2col for few
    channels ] in im2col.py): NCHW numpy memory whose output rows are longer than a filter row."""
    return (g == 1 and fmt == "NCHW" and type(x) is np.ndarray and x.flags.c_contiguous
            and geo.k[1] * x.shape[1] < geo.out[1])


def _chunked_out(geo, x4, f):
    """The [N*OH*OW, F] GEMM result the chunks of ``geo.map_chunks`` write into."""
    return array_module(x4).empty((x4.shape[0] * geo.out[0] * geo.out[1], f), dtype=x4.dtype)


def _depthwise_forward(geo, x4, w, g):
    xp, tap_w = array_module(x4), _depthwise_taps(geo, w, g)
    padded, m = geo.padded(x4), w.shape[0] // g
    acc = xp.zeros((x4.shape[0],) + geo.out + (g, m), dtype=x4.dtype)
    tmp = xp.empty_like(acc)
    for i in range(geo.k[0]):
        for j in range(geo.k[1]):
            rows, cols = geo.tap_slices(i, j)
            xp.multiply(padded[:, rows, cols, :, None], tap_w(i, j), out=tmp)
            acc += tmp
    return acc


def _ordered_sum(parts):
    """Per-chunk partial sums added in chunk order: the same result on any number of threads."""
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _transposed_geometry(geo, hw):
    """The stride-1 convolution of the output gradient that gives the input gradient, or None when it is
    not the faster formulation (NOTE [ conv2d formulations ])."""
    if geo.s != (1, 1) or hw[0] * hw[1] > geo.out[0] * geo.out[1]:
        return None
    pads = []
    for i in range(2):
        span = geo.d[i] * (geo.k[i] - 1)
        lo, hi = span - geo.pads[2 * i], hw[i] - geo.out[i] + geo.pads[2 * i]
        if lo < 0 or hi < 0:
            return None
        pads += [lo, hi]
    tgeo = Geometry({"paddings": pads}, geo.out, geo.k, (1, 1), geo.d)
    return tgeo if tgeo.out == tuple(hw) else None


def _transposed_grads(tgeo, d4, w, x_shape4, x4=None):
    """(NHWC input gradient, filter gradient or None without ``x4``) from the im2col matrix G of the output
    gradient over the input's pixels, built in chunks (NOTE [ conv2d formulations ])."""
    xp, (n, h, wd, c), (f, _, kh, kw) = array_module(d4), x_shape4, w.shape
    flipped, dx = w[:, :, ::-1, ::-1].transpose(2, 3, 0, 1).reshape(-1, c), _chunked_out(tgeo, d4, c)
    x2 = xp.ascontiguousarray(x4).reshape(-1, c) if x4 is not None else None

    def chunk(lo, hi, cols):  # columns of G: (kh-1-i, kw-1-j, f), the taps flipped
        rows = slice(lo * h * wd, hi * h * wd)
        xp.matmul(cols, flipped, out=dx[rows])
        return None if x2 is None else cols.T @ x2[rows]  # G.T @ x: x.T @ G ran 2-14x slower on 2 BLAS threads
    parts = tgeo.map_chunks(d4, chunk)
    dw = None if x2 is None else xp.ascontiguousarray(
        _ordered_sum(parts).reshape(kh, kw, f, c)[::-1, ::-1].transpose(2, 3, 0, 1))
    return dx.reshape(n, h, wd, c), dw


def _input_grad(geo, d4, w, x_shape4, g, transposed=True):
    """d(loss)/d(input) in NHWC (NOTE [ conv2d formulations ]; ``transposed=False`` forces col2im)."""
    xp, (n, h, wd, c), f = array_module(d4), x_shape4, w.shape[0]
    tgeo = _transposed_geometry(geo, (h, wd)) if g == 1 and transposed else None
    if tgeo is not None:
        return _transposed_grads(tgeo, d4, w, x_shape4)[0]
    if g == 1 and xp is np:
        return _col2im_grad(geo, d4, w, x_shape4)
    if g == 1 or w.shape[1] != 1:
        d2 = d4.reshape(-1, f)
        if g == 1:
            dcols = d2 @ _filter_matrix(w).T
        else:
            dg = d2.reshape(-1, g, f // g).transpose(1, 0, 2)
            dcols = (dg @ _group_filter(w, g).transpose(0, 2, 1)).reshape(g, -1, geo.k[0] * geo.k[1], c // g)
            dcols = dcols.transpose(1, 2, 0, 3)
        dcols = dcols.reshape((n,) + geo.out + geo.k + (c,))
        return geo.col2im(lambda i, j: dcols[:, :, :, i, j], x_shape4, d4.dtype, xp)
    tap_w, m = _depthwise_taps(geo, w, g), f // g
    d5 = d4.reshape(d4.shape[:3] + (g, m))
    if m == 1:
        return geo.col2im(lambda i, j: d4 * tap_w(i, j)[:, 0], x_shape4, d4.dtype, xp)
    return geo.col2im(lambda i, j: (d5 * tap_w(i, j)).sum(axis=-1), x_shape4, d4.dtype, xp)


def _col2im_grad(geo, d4, w, x_shape4):
    """The input gradient as GEMM-then-col2im, a chunk of images at a time on the intra-op threads. The GEMM
    gives one [rows, C] product per tap ([taps, F, C] filter, tap-major), so each of the kh*kw slice-adds
    reads contiguous memory (a single [rows, kh*kw*C] product made them gathers of C floats: LeNet's
    20->50 conv 10.2 -> 7.5 ms, ResNet-20's 32->64 stride-2 conv 6.4 -> 4.8 ms on 2 threads)."""
    (n, h, wd, c), per_image = x_shape4, geo.out[0] * geo.out[1]
    f, _, kh, kw = w.shape
    d2, taps_w = d4.reshape(-1, f), w.transpose(2, 3, 0, 1).reshape(kh * kw, f, c)
    dx = np.empty(x_shape4, dtype=d4.dtype)

    def chunk(lo, hi):
        taps = scratch("dcols", (kh * kw, (hi - lo) * per_image, c), d4.dtype)
        np.matmul(d2[lo * per_image:hi * per_image], taps_w, out=taps)
        taps = taps.reshape((kh, kw, hi - lo) + geo.out + (c,))
        geo.col2im(lambda i, j: taps[i, j], (hi - lo, h, wd, c), d4.dtype, np, out=dx[lo:hi])
    geo.map_images(n, c * d4.dtype.itemsize, chunk)
    return dx


def _filter_grad(geo, x4, d4, w, g):
    f, cg, kh, kw = w.shape
    if g == 1:
        d2, per_image = d4.reshape(-1, f), geo.out[0] * geo.out[1]
        # cols.T @ d: d.T @ cols ran 2-14x slower on 2 BLAS threads
        parts = geo.map_chunks(x4, lambda lo, hi, cols: cols.T @ d2[lo * per_image:hi * per_image])
        return _ordered_sum(parts).reshape(kh, kw, cg, f).transpose(3, 2, 0, 1)
    if cg == 1:
        padded, m = geo.padded(x4), f // g
        d5 = d4.reshape(d4.shape[:3] + (g, m))
        dw = array_module(x4).empty((g, m, kh, kw), dtype=x4.dtype)
        for i in range(kh):
            for j in range(kw):
                rows, cols = geo.tap_slices(i, j)
                dw[:, :, i, j] = np.einsum("nhwg,nhwgm->gm", padded[:, rows, cols], d5)
        return dw.reshape(w.shape)
    dg = d4.reshape(-1, g, f // g).transpose(1, 0, 2)
    dw = _group_cols(geo, geo.im2col(x4), g).transpose(0, 2, 1) @ dg  # [G, kh*kw*Cg, F/G]
    return dw.reshape(g, kh, kw, cg, f // g).transpose(0, 4, 3, 1, 2).reshape(w.shape)


def _conv2d_backward(attrs, ins, outs, douts, need):
    x, w = ins[0], ins[1]
    fmt, g = attrs["data_format"], attrs["groups"]
    x4 = to_nhwc(x, fmt)
    geo = _conv_geometry(attrs, x4.shape, w.shape)
    xp = array_module(x4)
    d4 = xp.ascontiguousarray(to_nhwc(douts[0], fmt))
    tgeo = _transposed_geometry(geo, x4.shape[1:3]) if g == 1 and need[0] else None
    small_g = x4.shape[1] * x4.shape[2] * w.shape[0] <= d4.shape[1] * d4.shape[2] * w.shape[1]  # H*W*F <= OH*OW*C
    first = need[1] and _channels_first(geo, x, fmt, g)
    if tgeo is not None and (small_g or not need[1]) and not first:  # one im2col (G) of the output gradient serves both
        dx, dw = _transposed_grads(tgeo, d4, w, x4.shape, x4 if need[1] else None)
        return from_nhwc(dx, fmt), dw, None, None
    if first:  # the channels-first matrix [C*kh*kw, rows] @ dout: the filter gradient as [C*kh*kw, F]
        d2, per_image = d4.reshape(-1, w.shape[0]), geo.out[0] * geo.out[1]
        parts = geo.map_planes(x, lambda lo, hi, planes: planes @ d2[lo * per_image:hi * per_image])
        dw = np.ascontiguousarray(_ordered_sum(parts).T).reshape(w.shape)
    elif need[1]:
        dw = xp.ascontiguousarray(_filter_grad(geo, x4, d4, w, g))
    else:
        dw = None
    dx = from_nhwc(_input_grad(geo, d4, w, x4.shape, g), fmt) if need[0] else None
    return dx, dw, None, None


for _conv in ("conv2d", "depthwise_conv2d"):
    register_op(_conv, inputs=("Input", "Filter", "Bias", "ResidualData"), outputs=("Output",), attrs=_CONV_ATTRS,
                optional=("Bias", "ResidualData"), no_grad_inputs=("Bias", "ResidualData"),
                infer_shape=_conv_infer)(_conv2d_forward)
    register_grad(_conv, reads=("Input", "Filter"))(_conv2d_backward)
