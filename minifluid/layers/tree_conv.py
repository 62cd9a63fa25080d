"""``fluid.contrib.layers.tree_conv`` (1.8): TBCNN's tree convolution over node features and parent-child edges
(the op and its coefficients are described in ops/tree_conv.py)."""
from ..framework.variable import Variable
from .helper import LayerHelper

__all__ = ["tree_conv"]


def tree_conv(nodes_vector, edge_set, output_size, num_filters=1, max_depth=2, act="tanh", param_attr=None,
              bias_attr=None, name=None):
    """``act(tree_conv(nodes_vector, edge_set) + bias)``: ``nodes_vector`` [B, max_nodes, feature_size],
    ``edge_set`` [B, max_edges, 2] int32 (parent, child) node ids from 1, zero-padded; the output is
    [B, max_nodes, output_size, num_filters]. Filter ``tree_conv_<n>.w_0`` [feature_size, 3, output_size,
    num_filters]; bias [max_nodes, output_size, num_filters] (none when ``bias_attr`` is False)."""
    for label, value in (("nodes_vector", nodes_vector), ("edge_set", edge_set)):
        if not isinstance(value, Variable):
            raise TypeError(f"The type of '{label}' in tree_conv must be Variable, but received "
                            f"{type(value).__name__}")
    helper = LayerHelper("tree_conv", param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    dtype = nodes_vector.dtype
    weight = helper.create_parameter(attr=helper.param_attr, shape=[nodes_vector.shape[2], 3, output_size, num_filters],
                                     dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="tree_conv", inputs={"NodesVector": [nodes_vector], "EdgeSet": [edge_set], "Filter": [weight]},
                     outputs={"Out": [out]}, attrs={"max_depth": int(max_depth)})
    return helper.append_activation(helper.append_bias_op(out) if helper.bias_attr else out)
