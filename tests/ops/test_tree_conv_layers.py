"""fluid.contrib.tree_conv (static) and fluid.dygraph.TreeConv against the node-by-node reference."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import TreeConv, to_variable

from .tree_conv_cases import tree_conv_ref

EDGES = np.array([[[1, 2], [1, 3], [3, 4], [0, 0]], [[1, 2], [1, 3], [1, 4], [2, 5]]], dtype=np.int32)
X = np.random.RandomState(0).rand(2, 5, 3).astype("float32")


def test_static_tree_conv_with_bias_and_activation():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        nodes = fluid.data("nodes", [None, 5, 3], "float32")
        edges = fluid.data("edges", [None, 4, 2], "int32")
        out = fluid.contrib.tree_conv(nodes, edges, output_size=6, num_filters=2, max_depth=3,
                                      bias_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
    assert out.shape == (-1, 5, 6, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        exe.run(startup)
        got, = exe.run(main, feed={"nodes": X, "edges": EDGES}, fetch_list=[out])
        w = fluid.global_scope().find_var("tree_conv_0.w_0").get_tensor().__array__()
    assert w.shape == (3, 3, 6, 2)
    np.testing.assert_allclose(got, np.tanh(tree_conv_ref(X, EDGES, w, 3) + 0.1), rtol=1e-5, atol=1e-6)


def test_dygraph_tree_conv_trains():
    with fluid.dygraph.guard():
        layer = TreeConv(3, 4, num_filters=2, max_depth=2, act=None, bias_attr=True)
        assert layer.weight.shape == [3, 3, 4, 2] and layer.bias.shape == [2]
        nodes = to_variable(X)
        nodes.stop_gradient = False
        out = layer(nodes, to_variable(EDGES))
        np.testing.assert_allclose(out.numpy(), tree_conv_ref(X, EDGES, layer.weight.numpy(), 2), rtol=1e-5,
                                   atol=1e-6)  # the bias starts at zero
        fluid.layers.reduce_sum(out).backward()
        assert np.abs(layer.weight.gradient()).sum() > 0 and layer.bias.gradient().tolist() == [40.0, 40.0]  # 2 * 5 * 4 outputs each
        assert TreeConv(3, 4).bias is None
        with pytest.raises(ValueError, match=r"node ids in Input\(EdgeSet\) must be in \[0, 5\]"):
            layer(nodes, to_variable(EDGES + 5))
