"""User-facing graph builders: thin functions that append ops; no kernels, no threads."""
from . import device
from .device import get_places
from .helper import LayerHelper
from .io import create_py_reader_by_data, double_buffer, py_reader, read_file
from .io import layers_data as data
from .loss import cross_entropy, softmax_with_cross_entropy, square_error_cost
from .learning_rate_scheduler import (autoincreased_step_counter, exponential_decay, inverse_time_decay,
                                      natural_exp_decay, piecewise_decay)
from .math_op_patch import monkey_patch_variable
from .math import (elementwise_add, elementwise_div, elementwise_max, elementwise_min, elementwise_mul,
                   elementwise_pow, elementwise_sub, matmul, mean, reduce_max, reduce_mean, reduce_min, reduce_sum,
                   scale)
from .nn import (accuracy, batch_norm, conv2d, dropout, embedding, fc, pool2d, relu, sigmoid, softmax, square,
                 tanh)
from .tensor import (Print, assign, cast, concat, create_global_var, create_tensor, fill_constant, flatten, ones,
                     reshape, split, squeeze, sums, transpose, unsqueeze, zeros)

__all__ = [
    "LayerHelper", "Print", "accuracy", "assign", "autoincreased_step_counter", "batch_norm", "cast", "concat",
    "conv2d", "create_global_var", "create_py_reader_by_data", "create_tensor", "cross_entropy", "data",
    "double_buffer", "dropout", "elementwise_add", "elementwise_div", "elementwise_max", "elementwise_min",
    "elementwise_mul", "elementwise_pow", "elementwise_sub", "embedding", "exponential_decay", "fc",
    "fill_constant", "flatten", "get_places", "inverse_time_decay", "matmul", "mean", "natural_exp_decay", "ones",
    "piecewise_decay", "pool2d", "py_reader", "read_file", "reduce_max", "reduce_mean", "reduce_min",
    "reduce_sum", "relu", "reshape", "scale", "sigmoid", "softmax", "softmax_with_cross_entropy", "split",
    "square", "square_error_cost", "squeeze", "sums", "tanh", "transpose", "unsqueeze", "zeros",
]

monkey_patch_variable()  # a + b, x * 0.5, 1 - p ... on static Variables, as fluid 1.x had
