"""``fluid.dygraph_utils``: the activation and bias steps dygraph layers append, through ``core.ops``."""
from .dygraph.op_functions import ops
from .framework import dygraph_mode

__all__ = ["_append_activation_in_dygraph", "_append_bias_in_dygraph"]


def _dygraph_only(name):
    if not dygraph_mode.in_dygraph_mode():
        raise AssertionError(f"We only support '{name}()' in dynamic graph mode, please call "
                             "'paddle.disable_static()' to enter dynamic graph mode.")


def _append_activation_in_dygraph(input, act=None, use_cudnn=None, use_mkldnn=None):
    """``act`` (an op name such as 'relu') applied to ``input`` now; ``input`` itself without one."""
    _dygraph_only("_append_activation_in_dygraph")
    if act is None:
        return input
    attrs = (("use_cudnn", use_cudnn) if use_cudnn else ()) + (("use_mkldnn", use_mkldnn) if use_mkldnn else ())
    return getattr(ops, act)(input, *attrs)


def _append_bias_in_dygraph(input, bias=None, axis=1):
    """``input + bias`` broadcast from ``axis`` (elementwise_add); ``input`` itself without a bias."""
    _dygraph_only("_append_bias_in_dygraph")
    if bias is None:
        return input
    return ops.elementwise_add(input, bias, "axis", axis)
