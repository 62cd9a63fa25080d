"""``fluid.nets``: small compositions of layers that fluid 1.x scripts (the book's recognize_digits,
VGG-style models) build their networks from."""
from . import layers
from .layers.activation import check_variable_and_dtype

__all__ = ["simple_img_conv_pool", "img_conv_group", "sequence_conv_pool"]


def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride, pool_padding=0, pool_type="max",
                         global_pooling=False, conv_stride=1, conv_padding=0, conv_dilation=1, conv_groups=1,
                         param_attr=None, bias_attr=None, act=None, use_cudnn=True):
    """``pool2d(conv2d(input, act=act))``."""
    conv = layers.conv2d(input, num_filters=num_filters, filter_size=filter_size, stride=conv_stride,
                         padding=conv_padding, dilation=conv_dilation, groups=conv_groups, param_attr=param_attr,
                         bias_attr=bias_attr, act=act, use_cudnn=use_cudnn)
    return layers.pool2d(conv, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         pool_padding=pool_padding, global_pooling=global_pooling, use_cudnn=use_cudnn)


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3, conv_act=None,
                   param_attr=None, conv_with_batchnorm=False, conv_batchnorm_drop_rate=0.0, pool_stride=1,
                   pool_type="max", use_cudnn=True):
    """``len(conv_num_filter)`` 3x3 convolutions (each optionally followed by batch_norm and dropout),
    then one pool2d: a VGG block. Per-convolution settings may be given as lists."""
    count = len(conv_num_filter)

    def per_conv(value):
        if isinstance(value, (list, tuple)):
            if len(value) != count:
                raise ValueError(f"img_conv_group: got {len(value)} settings for {count} convolutions")
            return list(value)
        return [value] * count

    paddings, sizes, attrs = per_conv(conv_padding), per_conv(conv_filter_size), per_conv(param_attr)
    with_bn, drop_rates = per_conv(conv_with_batchnorm), per_conv(conv_batchnorm_drop_rate)
    tmp = input
    for i in range(count):
        tmp = layers.conv2d(tmp, num_filters=conv_num_filter[i], filter_size=sizes[i], padding=paddings[i],
                            param_attr=attrs[i], act=None if with_bn[i] else conv_act, use_cudnn=use_cudnn)
        if with_bn[i]:
            tmp = layers.batch_norm(tmp, act=conv_act)
            if abs(drop_rates[i]) > 1e-5:
                tmp = layers.dropout(tmp, dropout_prob=drop_rates[i])
    return layers.pool2d(tmp, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                         use_cudnn=use_cudnn)


def sequence_conv_pool(input, num_filters, filter_size, param_attr=None, act="sigmoid", pool_type="max",
                       bias_attr=None):
    """``sequence_pool(sequence_conv(input, act=act), pool_type)``: one row per sequence (text CNNs)."""
    check_variable_and_dtype(input, "input", ("float32", "float64"), "input")
    conv = layers.sequence_conv(input=input, num_filters=num_filters, filter_size=filter_size, param_attr=param_attr,
                                bias_attr=bias_attr, act=act)
    return layers.sequence_pool(input=conv, pool_type=pool_type)
