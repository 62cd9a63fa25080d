"""``fluid.contrib``: the book's high-level Trainer / Inferencer (fluid 1.0-1.5's API), fluid 1.8's
``contrib.layers`` (its names are ``contrib``'s too, as in fluid) and ``memory_usage``."""
from . import inferencer, layers, trainer
from .inferencer import Inferencer
from .memory_usage import memory_usage
from .layers import (BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm, batch_fc, fused_elemwise_activation,
                     fused_embedding_seq_pool, match_matrix_tensor, multiclass_nms2, partial_concat, partial_sum,
                     rank_attention, sequence_topk_avg_pooling, shuffle_batch, tree_conv, var_conv_2d)
from .trainer import (BeginEpochEvent, BeginStepEvent, CheckpointConfig, EndEpochEvent, EndStepEvent, Trainer)

__all__ = ["BasicGRUUnit", "BasicLSTMUnit", "BeginEpochEvent", "BeginStepEvent", "CheckpointConfig", "EndEpochEvent",
           "EndStepEvent", "Inferencer", "Trainer", "basic_gru", "basic_lstm", "batch_fc", "fused_elemwise_activation",
           "fused_embedding_seq_pool", "inferencer", "layers", "match_matrix_tensor", "memory_usage", "multiclass_nms2",
           "partial_concat", "partial_sum", "rank_attention", "sequence_topk_avg_pooling", "shuffle_batch", "trainer",
           "tree_conv", "var_conv_2d"]
