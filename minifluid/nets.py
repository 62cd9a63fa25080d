"""``fluid.nets``: small compositions of layers that fluid 1.x scripts (the book's recognize_digits,
VGG-style models) build their networks from."""
from . import layers
from .layers.activation import check_variable_and_dtype

__all__ = ["simple_img_conv_pool", "img_conv_group", "sequence_conv_pool", "glu", "scaled_dot_product_attention"]


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


def glu(input, dim=-1):
    """Gated linear unit: split ``input`` in two halves a, b along ``dim``; a * sigmoid(b)."""
    check_variable_and_dtype(input, "input", ["float16", "float32", "float64"], "glu")
    a, b = layers.split(input, num_or_sections=2, dim=dim)
    return layers.elementwise_mul(x=a, y=layers.sigmoid(x=b))


def _check_attention_inputs(queries, keys, values, num_heads):
    for name, v in (("queries", queries), ("keys", keys), ("values", values)):
        check_variable_and_dtype(v, name, ["float32", "float64"], "scaled_dot_product_attention")
    if not queries.dtype == keys.dtype == values.dtype:
        raise TypeError("The dtype of keys, values and queries should be the same. But received queries.dtype = "
                        f"{queries.dtype}, keys.dtype = {keys.dtype}, values.dtype = {values.dtype}.")
    if not len(queries.shape) == len(keys.shape) == len(values.shape) == 3:
        raise ValueError("Inputs queries, keys and values should all be 3-D tensors. But received "
                         f"len(queries.shape) = {len(queries.shape)}, len(keys.shape) = {len(keys.shape)}, "
                         f"len(values.shape) = {len(values.shape)}.")
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError("The hidden size of queries and keys should be the same. But received queries' hidden size "
                         f"= {queries.shape[-1]} and keys' hidden size = {keys.shape[-1]}.")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError("The max sequence length in value batch and in key batch should be the same. But received "
                         f"max sequence length in value batch = {values.shape[-2]}, in key batch = {keys.shape[-2]}.")
    for name, v in (("keys", keys), ("values", values)):
        if v.shape[-1] % num_heads:
            raise ValueError(f"The hidden size of {name} ({v.shape[-1]}) must be divisible by the number of "
                             f"attention heads ({num_heads}).")


def scaled_dot_product_attention(queries, keys, values, num_heads=1, dropout_rate=0.0):
    """softmax(Q K^T / sqrt(d)) V over [N, L, D] inputs; with ``num_heads`` > 1 Q, K and V first go through
    their own fc (D -> D) and the attention runs per head on D / num_heads features, heads concatenated."""
    _check_attention_inputs(queries, keys, values, num_heads)
    if num_heads > 1:
        queries, keys, values = (layers.fc(input=x, size=x.shape[-1], num_flatten_dims=2)
                                 for x in (queries, keys, values))

    def split_heads(x):  # [N, L, D] -> [N, heads, L, D / heads]
        if num_heads == 1:
            return x
        x = layers.reshape(x=x, shape=list(x.shape[:-1]) + [num_heads, x.shape[-1] // num_heads])
        return layers.transpose(x=x, perm=[0, 2, 1, 3])
    q, k, v = (split_heads(x) for x in (queries, keys, values))
    scaled = layers.scale(x=q, scale=(keys.shape[-1] // num_heads) ** -0.5)
    product = layers.matmul(x=scaled, y=k, transpose_y=True)
    weights = layers.softmax(product)
    if dropout_rate:
        weights = layers.dropout(weights, dropout_prob=dropout_rate, is_test=False)
    context = layers.matmul(weights, v)
    if num_heads == 1:
        return context
    context = layers.transpose(context, perm=[0, 2, 1, 3])
    return layers.reshape(x=context, shape=[0, 0, context.shape[2] * context.shape[3]])
