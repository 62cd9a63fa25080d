"""conv3d and conv3d_transpose: vol2col plus one GEMM per group over the whole batch, on channels-last memory.

The kernels read NCDHW input through its NDHWC view (NOTE [ Channels-last inside the kernels ] in im2col.py, in
three spatial dims) and ``Volume`` does the window arithmetic: fluid's paddings ([d, h, w] or [front, back, top,
bottom, left, right], or the SAME / VALID algorithms), the output size formula (ceil_mode for pooling) and a
zero-copy strided view [N, OD, OH, OW, kd, kh, kw, C] of the padded input. A conv copies that view into the
vol2col matrix [N*OD*OH*OW, kd*kh*kw*C] and multiplies it by the filter; its input gradient is the matrix
product the other way and a col2im of kd*kh*kw strided slice-adds (never a loop over images or voxels); the
filter gradient is the matrix's transpose times the output gradient. conv3d_transpose is conv3d's adjoint
(NOTE [ conv2d_transpose as conv2d's adjoint ] in conv_transpose.py): its forward is conv3d's input gradient,
its gradients conv3d's forward and filter gradient. ops/pool3d.py pools through the same ``Volume``.
"""
import numpy as np

from .im2col import CONV_SIZE_ERROR, _out_size, strided_view
from .registry import array_module, register_grad, register_op


def resolve_pads(attrs, in_dhw, k, strides, dilations):
    """fluid's padding_algorithm over three dims: ([front, back, top, bottom, left, right], dilations)."""
    algo = attrs.get("padding_algorithm", "EXPLICIT")
    if algo == "VALID":
        return [0] * 6, list(dilations)
    if algo == "SAME":
        pads = []
        for size, kk, s in zip(in_dhw, k, strides):
            total = max((-(-size // s) - 1) * s + kk - size, 0) if size >= 0 else 0
            pads += [total // 2, total - total // 2]
        return pads, [1, 1, 1]
    p = [int(v) for v in attrs["paddings"]]
    if len(p) == 3:
        return [p[0], p[0], p[1], p[1], p[2], p[2]], list(dilations)
    if len(p) != 6:
        raise ValueError(f"Attr(paddings) of a 3-D op should have 3 or 6 values, but received {p}")
    return p, list(dilations)


class Volume:
    """Kernel, strides, dilations, pads [6] and output size of one 3-D conv or pool call on NDHWC memory."""

    def __init__(self, pads, in_dhw, k, strides, dilations, ceil=False, message=CONV_SIZE_ERROR):
        self.k, self.s, self.d = (tuple(int(v) for v in a) for a in (k, strides, dilations))
        self.pads = list(pads)
        self.out = tuple(_out_size(size, kk, s, self.pads[2 * i:2 * i + 2], d, ceil, message)
                         for i, (size, kk, s, d) in enumerate(zip(in_dhw, self.k, self.s, self.d)))

    def widths(self, dhw):
        """((lo, hi) per axis): the pads, the high side grown when the last window runs past them (ceil_mode)."""
        return tuple((lo, max(hi, (o - 1) * s + (k - 1) * d + 1 - size - lo))
                     for size, o, s, k, d, lo, hi in zip(dhw, self.out, self.s, self.k, self.d, self.pads[::2],
                                                         self.pads[1::2]))

    def padded(self, x5, value=0.0):
        """NDHWC ``x5`` surrounded by ``value`` (``x5`` itself when there is no padding)."""
        widths = self.widths(x5.shape[1:4])
        if not any(lo or hi for lo, hi in widths):
            return x5
        xp = array_module(x5)
        shape = (x5.shape[0],) + tuple(n + lo + hi for n, (lo, hi) in zip(x5.shape[1:4], widths)) + x5.shape[4:]
        buf = xp.full(shape, value, dtype=x5.dtype)
        buf[(slice(None),) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(x5.shape[1:4], widths))] = x5
        return buf

    def windows(self, xp5):
        """The strided view [N, OD, OH, OW, kd, kh, kw, C] of the padded NDHWC input."""
        st = xp5.strides
        shape = xp5.shape[:1] + self.out + self.k + xp5.shape[4:]
        strides = (st[0],) + tuple(st[1 + i] * self.s[i] for i in range(3)) + \
            tuple(st[1 + i] * self.d[i] for i in range(3)) + (st[4],)
        return strided_view(xp5, shape, strides)

    def taps(self):
        """(tap index (i, j, l), the padded-input slices that tap reads for every output voxel)."""
        for tap in np.ndindex(*self.k):
            yield tap, tuple(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in zip(tap, self.d, self.s, self.out))

    def col2im(self, tap_grad, in_shape5, dtype, xp):
        """The NDHWC input gradient: each tap's [N, OD, OH, OW, C] gradient ``tap_grad(tap)`` added where it read."""
        widths = self.widths(in_shape5[1:4])
        shape = (in_shape5[0],) + tuple(n + lo + hi for n, (lo, hi) in zip(in_shape5[1:4], widths)) + in_shape5[4:]
        dxp = xp.zeros(shape, dtype=dtype)
        for tap, where in self.taps():
            dxp[(slice(None),) + where] += tap_grad(tap)
        return dxp[(slice(None),) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(in_shape5[1:4], widths))]


CHANNELS_LAST = ("NDHWC", "NHWC")  # the ops read either name as channels-last for 5-D data, as fluid's do


def to_ndhwc(x, fmt):
    return x if fmt in CHANNELS_LAST else x.transpose(0, 2, 3, 4, 1)


def from_ndhwc(y, fmt):
    return y if fmt in CHANNELS_LAST else y.transpose(0, 4, 1, 2, 3)


def ndhwc_shape(shape, fmt):
    return tuple(shape) if fmt in CHANNELS_LAST else (shape[0],) + tuple(shape[2:5]) + (shape[1],)


# --- the three products (filter [F, C / groups, kd, kh, kw]) ------------------------------------------------------
def _vol2col(vol, x5, cg, groups):
    """Per group, its vol2col matrix [N*OD*OH*OW, kd*kh*kw*Cg] (one copy of the strided windows)."""
    cols = vol.windows(vol.padded(x5))  # [N, OD, OH, OW, kd, kh, kw, C]
    rows = x5.shape[0] * int(np.prod(vol.out))
    for g in range(groups):
        yield cols[..., g * cg:(g + 1) * cg].reshape(rows, -1)


def _filter_matrix(w, g, groups):
    """Group g's filter as [kd*kh*kw*Cg, Fg], rows in the vol2col matrix's (tap, channel) order."""
    fg = w.shape[0] // groups
    return w[g * fg:(g + 1) * fg].transpose(2, 3, 4, 1, 0).reshape(-1, fg)


def conv_forward(vol, x5, w, groups):
    """[N, OD, OH, OW, F] of NDHWC ``x5``."""
    outs = [mat @ _filter_matrix(w, g, groups) for g, mat in enumerate(_vol2col(vol, x5, w.shape[1], groups))]
    out = outs[0] if groups == 1 else array_module(x5).concatenate(outs, axis=1)
    return out.reshape((x5.shape[0],) + vol.out + (w.shape[0],)).astype(x5.dtype, copy=False)


def conv_input_grad(vol, d5, w, groups, in_shape5):
    """The NDHWC input gradient for the output gradient ``d5`` [N, OD, OH, OW, F]."""
    xp, fg = array_module(d5), w.shape[0] // groups
    d = d5.reshape(-1, w.shape[0])
    shape = (in_shape5[0],) + vol.out + vol.k + (w.shape[1],)
    parts = [(d[:, g * fg:(g + 1) * fg] @ _filter_matrix(w, g, groups).T).reshape(shape) for g in range(groups)]
    cols = parts[0] if groups == 1 else xp.concatenate(parts, axis=-1)  # [N, OD, OH, OW, kd, kh, kw, C]
    return vol.col2im(lambda tap: cols[(slice(None),) * 4 + tap], in_shape5, d5.dtype, xp)


def conv_filter_grad(vol, x5, d5, w_shape, groups):
    """The filter gradient [F, C / groups, kd, kh, kw]."""
    fg = w_shape[0] // groups
    d = d5.reshape(-1, w_shape[0])
    grads = [(mat.T @ d[:, g * fg:(g + 1) * fg]).reshape(vol.k + (w_shape[1], fg)).transpose(4, 3, 0, 1, 2)
             for g, mat in enumerate(_vol2col(vol, x5, w_shape[1], groups))]
    return grads[0] if groups == 1 else array_module(x5).concatenate(grads, axis=0)


# --- conv3d ---------------------------------------------------------------------------------------------------------
_ATTRS = {"strides": [1, 1, 1], "paddings": [0, 0, 0], "padding_algorithm": "EXPLICIT", "dilations": [1, 1, 1],
          "groups": 1, "data_format": "NCDHW", "use_cudnn": True, "use_mkldnn": False, "workspace_size_MB": 512,
          "exhaustive_search": False}


def _check_rank(op, slot, shape):
    if len(shape) != 5:
        raise ValueError(f"Input({slot}) of Op({op}) should be a 5-D Tensor, but received: {len(shape)}-D Tensor, the "
                         f"shape is {list(shape)}")


def _conv_volume(attrs, x5_shape, w_shape):
    _check_rank("conv3d", "Input", x5_shape)
    _check_rank("conv3d", "Filter", w_shape)
    c, groups = x5_shape[4], attrs["groups"] or 1
    if c >= 0 and w_shape[1] >= 0 and c != w_shape[1] * groups:
        raise ValueError(f"The number of input channels should be equal to filter channels * groups for Op(conv3d). "
                         f"But received: the input's channels is [{c}], the shape of filter is {list(w_shape)}, the "
                         f"groups is [{groups}], the data_format is {attrs['data_format']}.")
    if w_shape[0] >= 0 and w_shape[0] % groups:
        raise ValueError(f"The number of output channels should be divided by groups for Op(conv3d). But received: "
                         f"the output channels is [{w_shape[0]}], the groups is [{groups}].")
    pads, dil = resolve_pads(attrs, x5_shape[1:4], w_shape[2:], attrs["strides"], attrs["dilations"])
    return Volume(pads, x5_shape[1:4], w_shape[2:], attrs["strides"], dil)


def _conv3d_infer(attrs, x, w):
    fmt = attrs["data_format"]
    shape5 = ndhwc_shape(x.shape, fmt)
    n, vol = shape5[0], _conv_volume(attrs, shape5, w.shape)
    return ((n, w.shape[0]) + vol.out if fmt not in CHANNELS_LAST else (n,) + vol.out + (w.shape[0],)), x.dtype


@register_op("conv3d", inputs=("Input", "Filter"), outputs=("Output",), attrs=_ATTRS, infer_shape=_conv3d_infer)
def _conv3d_forward(attrs, x, w):
    fmt = attrs["data_format"]
    x5 = to_ndhwc(x, fmt)
    vol = _conv_volume(attrs, x5.shape, w.shape)
    return from_ndhwc(conv_forward(vol, x5, w, attrs["groups"] or 1), fmt)


@register_grad("conv3d")
def _conv3d_backward(attrs, ins, outs, douts, need):
    fmt, groups = attrs["data_format"], attrs["groups"] or 1
    (x, w), d5 = ins, to_ndhwc(douts[0], attrs["data_format"])
    x5 = to_ndhwc(x, fmt)
    vol = _conv_volume(attrs, x5.shape, w.shape)
    dx = from_ndhwc(conv_input_grad(vol, d5, w, groups, x5.shape), fmt).astype(x.dtype, copy=False) if need[0] else None
    dw = conv_filter_grad(vol, x5, d5, w.shape, groups).astype(w.dtype, copy=False) if need[1] else None
    return dx, dw


# --- conv3d_transpose: filter [C_in, F / groups, kd, kh, kw] -------------------------------------------------------
def _transpose_volume(attrs, x5_shape, w_shape):
    """(the conv3d Volume from the transposed conv's output back to its input, the output size)."""
    _check_rank("conv3d_transpose", "Input", x5_shape)
    _check_rank("conv3d_transpose", "Filter", w_shape)
    if x5_shape[4] >= 0 and w_shape[0] >= 0 and x5_shape[4] != w_shape[0]:
        raise ValueError(f"The number of input channels should be equal to filter channels for Op(conv_transpose). "
                         f"But received: the input's channels is [{x5_shape[4]}], the filter's channels is "
                         f"[{w_shape[0]}], the shape of filter is {list(w_shape)}. The data_format is "
                         f"{attrs['data_format']}.")
    pads, dil = resolve_pads(attrs, x5_shape[1:4], w_shape[2:], attrs["strides"], attrs["dilations"])
    wanted, sizes = attrs["output_size"], []
    if wanted and len(wanted) != 3:
        raise ValueError("The Attr(output_size) and Attr(stride) of Op(conv_transpose) should be the same.")
    for i, (size, k, s) in enumerate(zip(x5_shape[1:4], w_shape[2:], attrs["strides"])):
        infer = (size - 1) * s - pads[2 * i] - pads[2 * i + 1] + dil[i] * (k - 1) + 1 if size >= 0 else -1
        if wanted and infer >= 0 and not infer <= wanted[i] < infer + s:
            raise ValueError(f"output_size of Op(ConvTransposeOp) should be in [infered size, infered size + stride): "
                             f"received output_size = {list(wanted)}, dim {i} infered as {infer} with stride {s}")
        if infer == 0 or infer < -1:
            raise ValueError(f"conv3d_transpose: the output size of dim {i} is {infer} (input size {size}, pads "
                             f"({pads[2 * i]}, {pads[2 * i + 1]}), filter size {k}, stride {s})")
        sizes.append(wanted[i] if wanted and infer >= 0 else infer)
    vol = Volume(pads, sizes, w_shape[2:], attrs["strides"], dil) if min(sizes) > 0 else None
    return vol, tuple(sizes)


def _conv3d_transpose_infer(attrs, x, w):
    fmt = attrs["data_format"]
    shape5 = ndhwc_shape(x.shape, fmt)
    _, out = _transpose_volume(attrs, shape5, w.shape)
    f = w.shape[1] * (attrs["groups"] or 1)
    return ((shape5[0], f) + out if fmt not in CHANNELS_LAST else (shape5[0],) + out + (f,)), x.dtype


@register_op("conv3d_transpose", inputs=("Input", "Filter"), outputs=("Output",),
             attrs={**{k: v for k, v in _ATTRS.items() if k != "exhaustive_search"}, "output_size": [],
                    "use_cudnn": False}, infer_shape=_conv3d_transpose_infer)
def _conv3d_transpose_forward(attrs, x, w):
    fmt, groups = attrs["data_format"], attrs["groups"] or 1
    x5 = to_ndhwc(x, fmt)
    vol, out = _transpose_volume(attrs, x5.shape, w.shape)
    y5 = conv_input_grad(vol, array_module(x5).ascontiguousarray(x5), w, groups,
                         (x5.shape[0],) + out + (w.shape[1] * groups,))
    return from_ndhwc(y5, fmt).astype(x.dtype, copy=False)


@register_grad("conv3d_transpose")
def _conv3d_transpose_backward(attrs, ins, outs, douts, need):
    fmt, groups = attrs["data_format"], attrs["groups"] or 1
    (x, w), d5 = ins, to_ndhwc(douts[0], attrs["data_format"])
    x5 = to_ndhwc(x, fmt)
    vol, _ = _transpose_volume(attrs, x5.shape, w.shape)
    dx = from_ndhwc(conv_forward(vol, d5, w, groups), fmt).astype(x.dtype, copy=False) if need[0] else None
    dw = conv_filter_grad(vol, d5, x5, w.shape, groups).astype(w.dtype, copy=False) if need[1] else None
    return dx, dw
