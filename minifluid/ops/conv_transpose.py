"""conv2d_transpose (and depthwise_conv2d_transpose): the adjoint of conv2d, built from conv2d's own kernels.

NOTE [ conv2d_transpose as conv2d's adjoint ]
With the filter W [C_in, F / groups, kh, kw] read as a conv2d filter from F to C_in channels, the transposed
convolution of X is exactly conv2d's input gradient for the output gradient X (ops/conv.py's
``_input_grad``: for stride 1 one im2col of the padded input and one GEMM, the same work as a conv2d of
the same shapes; for larger strides one GEMM and a col2im of kh*kw strided adds). Its gradients are
conv2d's forward (dX = conv2d(dOut, W)) and conv2d's filter gradient with the roles of input and output
gradient swapped. The output size is fluid's: (in - 1) * stride - pad_0 - pad_1 + dilation * (k - 1) + 1,
or ``output_size`` when given, which must lie in [that, that + stride).
"""
from .conv import _conv2d_forward, _filter_grad, _input_grad
from .im2col import Geometry, _pads, from_nhwc, nhwc_shape, to_nhwc
from .registry import array_module, register_grad, register_op

_ATTRS = {"is_test": False, "output_size": [], "strides": [1, 1], "paddings": [0, 0],
          "padding_algorithm": "EXPLICIT", "dilations": [1, 1], "groups": 1, "data_format": "NCHW",
          "use_cudnn": False, "use_mkldnn": False, "fuse_relu": False, "fuse_activation": "", "fuse_alpha": 0.0,
          "fuse_beta": 0.0, "workspace_size_MB": 512}


def _out_hw(attrs, in_hw, k_hw):
    """(output size, [t, b, l, r] pads, dilations) with fluid's checks of ``output_size``."""
    pads, dil = _pads(attrs, in_hw, k_hw, attrs["strides"], attrs["dilations"])
    sizes, wanted = [], attrs["output_size"]
    if wanted and len(wanted) != len(attrs["strides"]):
        raise ValueError("The Attr(output_size) and Attr(stride) of Op(conv_transpose) should be the same.")
    for i, (size, k, s) in enumerate(zip(in_hw, k_hw, attrs["strides"])):
        infer = (size - 1) * s - pads[2 * i] - pads[2 * i + 1] + dil[i] * (k - 1) + 1 if size >= 0 else -1
        if wanted and infer >= 0:
            if wanted[i] < infer:
                raise ValueError(f"output_size of Op(ConvTransposeOp) should not be less than the infered output "
                                 f"size. But received output_size = {list(wanted)}, whose dim {i} is less than the "
                                 f"infered output size [{infer}]")
            if wanted[i] >= infer + s:
                raise ValueError(f"output_size of Op(ConvTransposeOp) should be less than infered size + stride. "
                                 f"But received output_size = {list(wanted)}, whose dim {i} is not less than the "
                                 f"infered output size ({infer}) + stride ({s}) = {infer + s}")
        if infer == 0 or infer < -1:
            raise ValueError(f"conv2d_transpose: the output size of dim {i} is {infer} (input size {size}, pads "
                             f"({pads[2 * i]}, {pads[2 * i + 1]}), filter size {k}, stride {s})")
        sizes.append(wanted[i] if wanted and infer >= 0 else infer)
    return tuple(sizes), pads, dil


def _check_channels(attrs, c, w_shape):
    if c >= 0 and w_shape[0] >= 0 and c != w_shape[0]:
        raise ValueError(f"The number of input channels should be equal to filter channels for Op(conv_transpose). "
                         f"But received: the input's channels is [{c}], the filter's channels is [{w_shape[0]}], the "
                         f"shape of filter is {list(w_shape)}. The data_format is {attrs['data_format']}.")


def _infer(attrs, x, w):
    fmt = attrs["data_format"]
    if len(x.shape) != 4:
        raise ValueError(f"Input of Op(conv_transpose) should be 4-D or 5-D Tensor. But received: "
                         f"{len(x.shape)}-D Tensor, the shape of input is {list(x.shape)}")
    n, h, wd, c = nhwc_shape(x.shape, fmt)
    _check_channels(attrs, c, w.shape)
    out, _, _ = _out_hw(attrs, (h, wd), w.shape[2:])
    f = w.shape[1] * attrs["groups"]
    return ((n, f) + out if fmt != "NHWC" else (n,) + out + (f,), x.dtype)


def _geometry(attrs, x4_shape, w_shape):
    """The conv2d geometry from the transposed conv's output back to its input, the output size and the
    conv2d attributes with explicit pads (SAME/VALID resolved from the transposed conv's input)."""
    out, pads, dil = _out_hw(attrs, x4_shape[1:3], w_shape[2:])
    explicit = dict(attrs, paddings=pads, padding_algorithm="EXPLICIT", dilations=dil)
    return Geometry({"paddings": pads}, out, w_shape[2:], attrs["strides"], dil), out, explicit


def _forward(attrs, x, w):
    fmt = attrs["data_format"]
    x4 = to_nhwc(x, fmt)
    _check_channels(attrs, x4.shape[3], w.shape)
    geo, out, _ = _geometry(attrs, x4.shape, w.shape)
    f = w.shape[1] * attrs["groups"]
    d4 = array_module(x4).ascontiguousarray(x4)
    return from_nhwc(_input_grad(geo, d4, w, (x4.shape[0],) + out + (f,), attrs["groups"]), fmt)


def _backward(attrs, ins, outs, douts, need):
    (x, w), fmt, dout = ins, attrs["data_format"], douts[0]
    x4 = to_nhwc(x, fmt)
    geo, _, explicit = _geometry(attrs, x4.shape, w.shape)
    dx = _conv2d_forward(explicit, dout, w, None, None) if need[0] else None
    dw = None
    if need[1]:
        d4 = to_nhwc(dout, fmt)
        dw = array_module(x4).ascontiguousarray(_filter_grad(geo, d4, array_module(x4).ascontiguousarray(x4), w,
                                                             attrs["groups"]))
    return dx, dw


for _op in ("conv2d_transpose", "depthwise_conv2d_transpose"):
    register_op(_op, inputs=("Input", "Filter"), outputs=("Output",), attrs=_ATTRS, infer_shape=_infer)(_forward)
    register_grad(_op)(_backward)
