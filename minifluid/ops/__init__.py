"""Op definitions. Importing this package registers every op family."""
from . import registry  # noqa: F401  (first: the families register into it)
from . import activation, compare, conv, conv_transpose, debug, elementwise_loss, index, io, loss, math  # noqa: F401
from . import image, metric_ops, nn, norm, pool, reduce, sequence, sequence_pad, shape, tensor  # noqa: F401
from . import optimizer, optimizer_more, selected_rows  # noqa: F401
from . import beam_search, control_flow, lod_rank, lod_routing, tensor_array  # noqa: F401
from . import crf, rnn, rnn_unit  # noqa: F401
from . import crop, group_norm, rearrange, sequence_window  # noqa: F401
from . import creation, linalg, nd_index, ranking, select  # noqa: F401
from . import vision_misc  # noqa: F401
from . import basic_math, matmul  # noqa: F401  (minus, l1_norm, bmm; matmul with transposes, alpha, heads)
from . import fused_math  # noqa: F401  (fusion_squared_mat_sub, fusion_repeated_fc_relu)
from . import fused_seq  # noqa: F401  (fusion_seqpool_concat, fusion_seqexpand_concat_fc, fusion_seqconv_eltadd_relu...)
from . import fused_rnn  # noqa: F401  (fusion_lstm, fusion_gru, fused_embedding_fc_lstm, attention_lstm)
from . import hsigmoid, py_func, sampled_loss  # noqa: F401
from . import ctc  # noqa: F401
from . import grid_sample  # noqa: F401  (affine_grid, grid_sampler)
from . import center_loss, conv3d, conv_shift, ctr, inplace_abn, pool3d, spectral_norm, vision_select  # noqa: F401
from . import cudnn_lstm, gather_tree  # noqa: F401  (fluid.layers.lstm; BeamSearchDecoder)
from . import detection_box, detection_match, detection_nms  # noqa: F401  (SSD: boxes, matching, NMS)
from . import detection_rpn, detection_target  # noqa: F401  (Faster R-CNN / FPN proposals; training targets)
from . import detection_map, detection_mask, detection_retina  # noqa: F401  (mAP; Mask R-CNN targets; RetinaNet)
from . import roi  # noqa: F401  (roi_pool, roi_align, psroi_pool, prroi_pool)
from . import deformable, roi_perspective, yolo  # noqa: F401  (deformable conv and ROI pooling; YOLOv3)
from . import tree_conv  # noqa: F401  (TBCNN's tree convolution)
from . import fused_elemwise, fused_embedding, partial, rank_attention, shuffle_batch, text_match  # noqa: F401
from . import double_grad  # noqa: F401  (gradients of grad ops)

__all__ = ["registry"]
