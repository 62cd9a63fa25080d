"""``paddle.nn.functional`` (2.x): eager functions built on the fluid layers' ops.

Each function runs eagerly whatever the global mode (paddle 2.x defaults to dynamic mode; see
``eager_api``). Losses follow paddle 2.x: ``cross_entropy`` applies softmax itself and reduces
with ``reduction`` ('mean', 'sum' or 'none').
"""
import numpy as np

from .. import layers
from ..layers import wiring
from .base import eager_api
from .nn import EagerEmit
from .tensor import apply

__all__ = ["adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d", "batch_norm", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "conv2d", "conv2d_transpose", "cross_entropy", "dropout", "dropout2d",
           "elu", "embedding", "gelu", "hardshrink", "hardsigmoid", "hardswish", "interpolate", "l1_loss",
           "label_smooth", "layer_norm", "leaky_relu", "linear", "log_sigmoid", "log_softmax", "max_pool2d",
           "mse_loss", "nll_loss", "normalize", "one_hot", "pad", "prelu", "relu", "relu6", "selu", "sigmoid",
           "smooth_l1_loss", "softmax", "softmax_with_cross_entropy", "softplus", "softshrink", "softsign",
           "square_error_cost", "swish", "tanh", "tanhshrink", "thresholded_relu", "upsample"]

square_error_cost = eager_api(layers.square_error_cost)
softmax_with_cross_entropy = eager_api(layers.softmax_with_cross_entropy)
relu = eager_api(layers.relu)
sigmoid = eager_api(layers.sigmoid)
tanh = eager_api(layers.tanh)


@eager_api
def softmax(x, axis=-1, dtype=None, name=None):
    return layers.softmax(x, axis=axis)


def _reduce(loss, reduction):
    if reduction == "mean":
        return layers.reduce_mean(loss)
    if reduction == "sum":
        return layers.reduce_sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"The value of 'reduction' should be 'sum', 'mean' or 'none', but received {reduction}")


@eager_api
def mse_loss(input, label, reduction="mean", name=None):
    return _reduce(layers.square_error_cost(input, label), reduction)


@eager_api
def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False, axis=-1,
                  name=None):
    """Softmax cross entropy of logits ``input`` against int64 ``label`` ([N] or [N, 1])."""
    if weight is not None:
        raise NotImplementedError("cross_entropy(weight=...) is not implemented by minifluid")
    loss = layers.softmax_with_cross_entropy(input, label, soft_label=soft_label, ignore_index=ignore_index,
                                             axis=axis)
    return _reduce(loss, reduction)


@eager_api
def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    impl = "downgrade_in_infer" if mode == "downscale_in_infer" else mode
    return layers.dropout(x, p, is_test=not training, dropout_implementation=impl)


@eager_api
def linear(x, weight, bias=None, name=None):
    return wiring.fc_ops(EagerEmit, [x], [weight], bias, len(x.shape) - 1, None)


# --- activations (paddle 2.0 names and defaults) ------------------------------------------------------------
def _act(op_type, **attrs):
    @eager_api
    def fn(x, name=None):
        return apply(op_type, {"X": x}, attrs)
    fn.__name__ = fn.__qualname__ = op_type
    return fn


relu6, softsign, tanhshrink, log_sigmoid = (_act(t) for t in ("relu6", "softsign", "tanh_shrink", "logsigmoid"))
hardswish = _act("hard_swish")
hardsigmoid = _act("hard_sigmoid", slope=1 / 6, offset=0.5)
swish = _act("swish", beta=1.0)


@eager_api
def leaky_relu(x, negative_slope=0.01, name=None):
    return apply("leaky_relu", {"X": x}, {"alpha": float(negative_slope)})


@eager_api
def elu(x, alpha=1.0, name=None):
    return apply("elu", {"X": x}, {"alpha": float(alpha)})


@eager_api
def gelu(x, approximate=False, name=None):
    return apply("gelu", {"X": x}, {"approximate": approximate})


@eager_api
def selu(x, scale=1.0507009873554804934193349852946, alpha=1.6732632423543772848170429916717, name=None):
    return apply("selu", {"X": x}, {"scale": float(scale), "alpha": float(alpha)})


@eager_api
def softplus(x, beta=1, threshold=20, name=None):
    """``log(1 + exp(beta * x)) / beta`` (exact everywhere, so no switch to ``x`` above ``threshold``)."""
    if beta == 1:
        return apply("softplus", {"X": x})
    return layers.scale(apply("softplus", {"X": layers.scale(x, float(beta))}), 1.0 / beta)


@eager_api
def hardshrink(x, threshold=0.5, name=None):
    return apply("hard_shrink", {"X": x}, {"threshold": float(threshold)})


@eager_api
def softshrink(x, threshold=0.5, name=None):
    return apply("softshrink", {"X": x}, {"lambda": float(threshold)})


@eager_api
def thresholded_relu(x, threshold=1.0, name=None):
    return apply("thresholded_relu", {"X": x}, {"threshold": float(threshold)})


@eager_api
def log_softmax(x, axis=-1, dtype=None, name=None):
    return layers.log_softmax(x, axis=axis, dtype=dtype)


@eager_api
def prelu(x, weight, name=None):
    """``max(0, x) + weight * min(0, x)``; ``weight`` of one element (shared) or one per channel (axis 1)."""
    mode = "all" if int(np.prod(weight.shape)) == 1 else "channel"
    return apply("prelu", {"X": x, "Alpha": weight}, {"mode": mode})


# --- losses -------------------------------------------------------------------------------------------------
@eager_api
def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None, name=None):
    """Elementwise ``-label * log(sigmoid(logit)) - (1 - label) * log(1 - sigmoid(logit))``, positives weighted by
    ``pos_weight``, everything by ``weight``, then reduced."""
    if pos_weight is None:
        loss = layers.sigmoid_cross_entropy_with_logits(logit, label)
    else:  # (1 - label) * logit + (1 + (pos_weight - 1) * label) * log(1 + exp(-logit))
        log_weight = layers.scale(layers.elementwise_mul(label, layers.scale(pos_weight, bias=-1.0)), bias=1.0)
        loss = layers.elementwise_add(layers.elementwise_mul(layers.scale(label, -1.0, 1.0), logit),
                                      layers.elementwise_mul(log_weight, apply("softplus", {"X": layers.scale(logit,
                                                                                                               -1.0)})))
    loss = loss if weight is None else layers.elementwise_mul(loss, weight)
    return _reduce(loss, reduction)


@eager_api
def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None):
    """``-(label * log(input) + (1 - label) * log(1 - input))`` of probabilities, each log at least -100."""
    log_p = layers.clip(layers.log(input), -100.0, float("inf"))
    log_q = layers.clip(layers.log(layers.scale(input, -1.0, 1.0)), -100.0, float("inf"))
    loss = layers.scale(layers.elementwise_add(layers.elementwise_mul(label, log_p),
                                               layers.elementwise_mul(layers.scale(label, -1.0, 1.0), log_q)), -1.0)
    loss = loss if weight is None else layers.elementwise_mul(loss, weight)
    return _reduce(loss, reduction)


@eager_api
def l1_loss(input, label, reduction="mean", name=None):
    return _reduce(layers.abs(layers.elementwise_sub(input, label)), reduction)


@eager_api
def smooth_l1_loss(input, label, reduction="mean", delta=1.0, name=None):
    """paddle 2.0's smooth L1: the Huber loss with ``delta``."""
    return _reduce(layers.huber_loss(input, label, delta), reduction)


@eager_api
def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None):
    """``-input[i, label[i]]`` for log-probabilities ``input`` [N, C] and int64 ``label`` [N]; the mean is over
    the labels that are not ``ignore_index``."""
    if weight is not None:
        raise NotImplementedError("nll_loss(weight=...) is not implemented by minifluid")
    ids = layers.reshape(label, [-1, 1])
    picked = layers.reduce_sum(layers.elementwise_mul(layers.one_hot(ids, input.shape[1], allow_out_of_range=True),
                                                      input), dim=1)
    loss = layers.scale(picked, -1.0)
    if reduction != "mean":
        return _reduce(loss, reduction)
    kept = layers.cast(layers.not_equal(layers.reshape(label, [-1]),
                                        layers.fill_constant([1], label.dtype, ignore_index)), input.dtype)
    return layers.elementwise_div(layers.reduce_sum(loss), layers.reduce_sum(kept))


@eager_api
def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    return layers.label_smooth(label, prior_dist, epsilon)


# --- tensors and images ---------------------------------------------------------------------------------------
@eager_api
def one_hot(x, num_classes, name=None):
    """One-hot rows of ``num_classes`` for int ids of any shape (a dimension is appended)."""
    return layers.one_hot(layers.unsqueeze(x, [len(x.shape)]), num_classes)


@eager_api
def embedding(x, weight, padding_idx=None, sparse=False, name=None):
    """Rows of ``weight`` [V, D] for int ids ``x`` of any shape (output ``x.shape + [D]``)."""
    vocabulary = weight.shape[0]
    padding = -1 if padding_idx is None else padding_idx if padding_idx >= 0 else vocabulary + padding_idx
    return apply("lookup_table", {"Ids": layers.unsqueeze(x, [len(x.shape)]), "W": weight}, {"padding_idx": padding})


@eager_api
def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                data_format="NCHW", name=None):
    """Resize a 4-D ``x`` to ``size`` or by ``scale_factor`` ('nearest' or 'bilinear')."""
    if mode.upper() not in ("NEAREST", "BILINEAR"):
        raise NotImplementedError(f"interpolate(mode={mode!r}): minifluid supports 'nearest' and 'bilinear'")
    if size is None and scale_factor is None:
        raise ValueError("One of size and scale_factor must not be None.")
    return layers.image_resize(x, list(size) if size is not None else None, scale_factor, None, mode.upper(),
                               align_corners=align_corners, align_mode=align_mode, data_format=data_format)


upsample = interpolate


@eager_api
def pad(x, pad, mode="constant", value=0.0, data_format="NCHW", name=None):
    """Pad every dimension (``len(pad) == 2 * x.ndim``, constant) or H and W of a 4-D ``x`` by [left, right,
    top, bottom] in 'constant', 'reflect' or 'replicate' mode."""
    if len(pad) == 2 * len(x.shape) and mode == "constant":
        return layers.pad(x, list(pad), value)
    if len(x.shape) != 4 or len(pad) != 4:
        raise NotImplementedError("pad: minifluid pads every dimension (constant) or H and W of a 4-D tensor")
    left, right, top, bottom = pad
    return layers.pad2d(x, [top, bottom, left, right], {"replicate": "edge"}.get(mode, mode), value, data_format)


@eager_api
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    attrs = dict(wiring.conv2d_attrs(stride, padding, dilation, groups, True), data_format=data_format)
    out = apply("conv2d", {"Input": x, "Filter": weight}, attrs, "Output")
    return out if bias is None else layers.elementwise_add(out, bias, axis=1 if data_format == "NCHW" else 3)


@eager_api
def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     data_format="NCHW", output_size=None, name=None):
    """Transposed convolution; ``output_padding`` (or ``output_size``) picks the larger of the output sizes that
    a strided convolution maps back to the input size."""
    stride, dilation, pads = wiring.pair(stride, "stride"), wiring.pair(dilation, "dilation"), padding
    pads = [pads] * 4 if isinstance(pads, int) else [pads[0], pads[0], pads[1], pads[1]] if len(pads) == 2 else pads
    if output_size is None and output_padding:
        extra = wiring.pair(output_padding, "output_padding")
        hw = x.shape[2:4] if data_format == "NCHW" else x.shape[1:3]
        output_size = [(hw[i] - 1) * stride[i] - pads[2 * i] - pads[2 * i + 1] +
                       dilation[i] * (weight.shape[2 + i] - 1) + 1 + extra[i] for i in range(2)]
    attrs = {"strides": stride, "paddings": list(pads), "dilations": dilation, "groups": groups,
             "data_format": data_format, "output_size": wiring.pair(output_size, "output_size") if output_size else []}
    out = apply("conv2d_transpose", {"Input": x, "Filter": weight}, attrs, "Output")
    return out if bias is None else layers.elementwise_add(out, bias, axis=1 if data_format == "NCHW" else 3)


def _pool(pooling_type, adaptive):
    @eager_api
    def fn(x, kernel_size=None, stride=None, padding=0, ceil_mode=False, output_size=None, name=None):
        size = wiring.pair(output_size if adaptive else kernel_size, "output_size" if adaptive else "kernel_size")
        attrs = {"pooling_type": pooling_type, "ksize": size, "adaptive": adaptive, "ceil_mode": ceil_mode,
                 "strides": wiring.pair(stride if stride is not None else size, "stride"),
                 "paddings": wiring.pair(padding, "padding")}
        return apply("pool2d", {"X": x}, attrs)
    return fn


_avg_pool, _max_pool, _adaptive_avg, _adaptive_max = (_pool(t, a) for a in (False, True) for t in ("avg", "max"))


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode)


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
               name=None):
    return _max_pool(x, kernel_size, stride, padding, ceil_mode)


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    """Average over ``output_size`` adaptive windows (window i spans [floor(i*H/out), ceil((i+1)*H/out)))."""
    return _adaptive_avg(x, output_size=output_size)


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    return _adaptive_max(x, output_size=output_size)


@eager_api
def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    """Normalise over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift by ``bias``."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    inputs = {"X": x, **({"Scale": weight} if weight is not None else {}),
              **({"Bias": bias} if bias is not None else {})}
    return apply("layer_norm", inputs, {"epsilon": epsilon, "begin_norm_axis": len(x.shape) - len(shape)}, "Y")


@eager_api
def batch_norm(x, running_mean, running_var, weight, bias, training=False, momentum=0.9, epsilon=1e-05,
               data_format="NCHW", use_global_stats=None, name=None):
    attrs = wiring.batch_norm_attrs(momentum, epsilon, not training, data_format, bool(use_global_stats))
    return wiring.batch_norm_ops(EagerEmit, x, [weight, bias, running_mean, running_var], attrs, None)


@eager_api
def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    """``x / max(||x||_p, epsilon)`` along ``axis``."""
    if p == 2:
        norm = layers.sqrt(layers.reduce_sum(layers.square(x), dim=axis, keep_dim=True))
    else:
        norm = layers.pow(layers.reduce_sum(layers.pow(layers.abs(x), float(p)), dim=axis, keep_dim=True), 1.0 / p)
    return layers.elementwise_div(x, layers.elementwise_max(norm, layers.fill_constant([1], x.dtype, epsilon)))


@eager_api
def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None):
    """Zero whole channels with probability ``p`` in training (the rest scaled by 1 / (1 - p))."""
    if not training or p == 0:
        return x
    n, c = x.shape[0], x.shape[1] if data_format == "NCHW" else x.shape[3]
    keep_shape = [n, c, 1, 1] if data_format == "NCHW" else [n, 1, 1, c]
    mask = layers.dropout(layers.fill_constant(keep_shape, x.dtype, 1.0), p, dropout_implementation="upscale_in_train")
    return layers.elementwise_mul(x, mask)
