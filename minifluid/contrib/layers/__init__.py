"""``fluid.contrib.layers`` (1.8): the basic-op GRU / LSTM (rnn_impl.py) and contrib's other layers (nn.py)."""
from . import nn, rnn_impl
from .nn import (batch_fc, fused_elemwise_activation, fused_embedding_seq_pool, match_matrix_tensor, multiclass_nms2,
                 partial_concat, partial_sum, rank_attention, sequence_topk_avg_pooling, shuffle_batch, tree_conv,
                 var_conv_2d)
from .rnn_impl import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm

__all__ = ["BasicGRUUnit", "BasicLSTMUnit", "basic_gru", "basic_lstm", "batch_fc", "fused_elemwise_activation",
           "fused_embedding_seq_pool", "match_matrix_tensor", "multiclass_nms2", "nn", "partial_concat", "partial_sum",
           "rank_attention", "rnn_impl", "sequence_topk_avg_pooling", "shuffle_batch", "tree_conv", "var_conv_2d"]
