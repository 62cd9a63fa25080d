"""``fluid.contrib.layers`` (1.8): the basic-op GRU / LSTM (rnn_impl.py) and contrib's other layers (nn.py)."""
from . import nn, rnn_impl
from .nn import multiclass_nms2, tree_conv
from .rnn_impl import BasicGRUUnit, BasicLSTMUnit, basic_gru, basic_lstm

__all__ = ["BasicGRUUnit", "BasicLSTMUnit", "basic_gru", "basic_lstm", "multiclass_nms2", "nn", "rnn_impl",
           "tree_conv"]
