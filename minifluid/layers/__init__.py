"""User-facing graph builders: thin functions that append ops; no kernels, no threads."""
from . import device
from .device import get_places
from .activation import *  # noqa: F401,F403  (names in activation.__all__)
from .compare import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .control_flow import *  # noqa: F401,F403
from .branching import *  # noqa: F401,F403
from .dynamic_rnn import *  # noqa: F401,F403
from .image import *  # noqa: F401,F403
from .manip import *  # noqa: F401,F403
from .metric_op import *  # noqa: F401,F403
from .norm import *  # noqa: F401,F403
from .recurrent import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403  (binds fluid.layers.rnn to the function, as fluid 1.8 does)
from .rnn import _CELL_API as _rnn_all
from .sequence_label import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .ctc import __all__ as _ctc_all
from . import detection
from .detection import *  # noqa: F401,F403
from .detection import __all__ as _detection_all
from .sequence_window import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .vision_misc import *  # noqa: F401,F403
from .vision_misc import __all__ as _vision_misc_all
from . import distributions
from .distributions import Categorical, MultivariateNormalDiag, Normal, Uniform
from .misc_nn import *  # noqa: F401,F403
from .misc_nn import __all__ as _misc_nn_all
from .vision3d import adaptive_pool3d, conv3d, conv3d_transpose, pool3d
from .roi import *  # noqa: F401,F403
from .roi import __all__ as _roi_all
from .deformable import *  # noqa: F401,F403
from .deformable import __all__ as _deformable_all
from .yolo import *  # noqa: F401,F403
from .yolo import __all__ as _yolo_all
from .helper import LayerHelper
from .io import double_buffer, load, read_file
from .io import layers_data as data
from .loss import *  # noqa: F401,F403
from .sampled_loss import *  # noqa: F401,F403
from .sequence import *  # noqa: F401,F403
from .sequence import __all__ as _sequence_all
from .learning_rate_scheduler import (autoincreased_step_counter, cosine_decay, exponential_decay,
                                      inverse_time_decay, linear_lr_warmup, natural_exp_decay, noam_decay,
                                      piecewise_decay, polynomial_decay)
from .math_op_patch import monkey_patch_variable
from .math import *  # noqa: F401,F403
from .nn import (accuracy, adaptive_pool2d, batch_norm, conv2d, dropout, embedding, fc, pool2d, py_func, relu,
                 sigmoid, softmax, square, tanh)
from .tensor import (Print, assign, cast, concat, create_global_var, create_tensor, fill_constant, flatten,
                     get_tensor_from_selected_rows, merge_selected_rows, ones, reshape, split, squeeze, sums, transpose,
                     unsqueeze, zeros)

__all__ = [
    "abs", "accuracy", "acos", "adaptive_pool2d", "add_position_encoding", "addcmul", "addmm", "affine_channel",
    "allclose", "arange", "argmax", "argmin", "argsort", "array_length", "array_read", "array_to_lod_tensor",
    "array_write", "asin", "assign", "atan", "auc", "autoincreased_step_counter", "batch_norm", "beam_search",
    "beam_search_decode", "bmm", "bpr_loss", "brelu", "case", "cast", "ceil", "chunk_eval", "clamp", "clip",
    "clip_by_norm", "concat", "cond", "conv2d", "conv2d_transpose", "cos", "cos_sim", "cosine_decay", "create_array",
    "create_global_var", "create_parameter", "create_py_reader_by_data", "create_tensor", "crf_decoding", "crop",
    "crop_tensor", "cross", "cross_entropy", "cumsum", "data", "diag", "diag_embed", "dice_loss", "dist", "dot",
    "double_buffer", "dropout", "dynamic_gru", "dynamic_lstm", "dynamic_lstmp", "DynamicRNN", "elementwise_add",
    "elementwise_div", "elementwise_equal", "elementwise_floordiv", "elementwise_max", "elementwise_min",
    "elementwise_mod", "elementwise_mul", "elementwise_pow", "elementwise_sub", "elu", "embedding", "equal", "erf",
    "exp", "expand", "expand_as", "exponential_decay", "eye", "fc", "fill_constant", "fill_constant_batch_size_like",
    "flatten", "flip", "floor", "full", "full_like", "gather", "gather_nd", "gaussian_random",
    "gaussian_random_batch_size_like", "gelu", "get_places", "get_tensor_from_selected_rows", "greater_equal",
    "greater_than", "group_norm", "gru_unit", "hard_shrink", "hard_sigmoid", "hard_swish", "has_inf", "has_nan",
    "hsigmoid", "huber_loss", "IfElse", "im2sequence", "image_resize", "increment", "index_sample", "index_select",
    "instance_norm", "inverse_time_decay", "is_empty", "isfinite", "kldiv_loss", "kron", "l2_normalize",
    "label_smooth", "layer_norm", "LayerHelper", "leaky_relu", "less_equal", "less_than", "linear_chain_crf",
    "linear_lr_warmup", "linspace", "load", "lod_rank_table", "lod_tensor_to_array", "log", "log1p", "log_loss",
    "log_softmax", "logical_and", "logical_not", "logical_or", "logical_xor", "logsigmoid", "logsumexp", "lrn",
    "lstm_unit", "margin_rank_loss", "matmul", "max_sequence_len", "maxout", "mean", "mean_iou",
    "merge_selected_rows", "meshgrid", "mse_loss", "mul", "multiplex", "natural_exp_decay", "nce", "noam_decay",
    "nonzero", "not_equal", "one_hot", "ones", "ones_like", "pad", "pad2d", "pad_constant_like", "piecewise_decay",
    "pixel_shuffle", "polynomial_decay", "pool2d", "pow", "prelu", "Print", "py_func", "py_reader", "randint",
    "randn", "randperm", "range", "rank", "rank_loss", "read_file", "reciprocal", "reduce_all", "reduce_any",
    "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum", "relu", "relu6",
    "reorder_lod_tensor_by_rank", "reshape", "resize_bilinear", "resize_nearest", "reverse", "roll", "round",
    "row_conv", "rsqrt", "sampled_softmax_with_cross_entropy", "sampling_id", "scale", "scatter", "scatter_nd",
    "scatter_nd_add", "selu", "sequence_scatter", "shape", "shard_index", "shrink_memory", "shuffle_channel",
    "sigmoid", "sigmoid_cross_entropy_with_logits", "sign", "sin", "size", "slice", "smooth_l1", "soft_relu",
    "softmax", "softmax_with_cross_entropy", "softplus", "softshrink", "softsign", "space_to_depth", "split", "sqrt",
    "square", "square_error_cost", "squeeze", "stack", "stanh", "StaticRNN", "strided_slice", "sum", "sums", "swish",
    "Switch", "switch_case", "t", "tanh", "tanh_shrink", "tensor_array_to_tensor", "thresholded_relu", "topk",
    "trace", "transpose", "tril", "triu", "uniform_random", "uniform_random_batch_size_like", "unique",
    "unique_with_counts", "unsqueeze", "unstack", "where", "While", "while_loop", "zeros", "zeros_like",
]

__all__ += _sequence_all  # the sequence (LoD) layers: layers/sequence.py
__all__ += _vision_misc_all + ["interpolate", "resize_trilinear"]  # layers/vision_misc.py, layers/image.py
__all__ += _ctc_all  # warpctc, ctc_greedy_decoder, edit_distance: layers/ctc.py
__all__ += ["Categorical", "MultivariateNormalDiag", "Normal", "Uniform"]  # layers/distributions.py
__all__ += _misc_nn_all  # center_loss, npair_loss, spectral_norm, random_crop ...: layers/misc_nn.py
__all__ += ["adaptive_pool3d", "conv3d", "conv3d_transpose", "pool3d"]  # layers/vision3d.py
__all__ += _rnn_all  # RNN cells, rnn, lstm and the decoding API: layers/rnn.py, layers/decode.py
__all__ += _detection_all  # SSD-style detection: layers/detection.py
__all__ += _roi_all  # roi_pool, roi_align, psroi_pool, prroi_pool: layers/roi.py
__all__ += _deformable_all + _yolo_all  # deformable_conv, deformable_roi_pooling; yolo_box, yolov3_loss

monkey_patch_variable()  # a + b, x * 0.5, 1 - p ... on static Variables, as fluid 1.x had
