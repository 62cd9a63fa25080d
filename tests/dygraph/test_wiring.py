"""Static builders and eager layers run one description (layers/wiring.py): the same ops, the same attrs."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.dygraph import BatchNorm, Conv2D, Dropout, LayerNorm, Linear, Pool2D
from minifluid.dygraph.tracer import Tracer
from minifluid.ops.registry import COMMON_ATTRS, get_op_spec

CASES = {
    "fc": ([2, 4], lambda x: fluid.layers.fc(x, 3, act="relu"), lambda: Linear(4, 3, act="relu")),
    "conv2d": ([2, 1, 5, 5], lambda x: fluid.layers.conv2d(x, 2, 3, stride=2, padding=1, act="tanh"),
               lambda: Conv2D(1, 2, 3, stride=2, padding=1, act="tanh")),
    "pool2d": ([2, 1, 4, 4], lambda x: fluid.layers.pool2d(x, 2, "avg", 2, exclusive=False),
               lambda: Pool2D(2, "avg", 2, exclusive=False)),
    "batch_norm": ([2, 3, 2, 2], lambda x: fluid.layers.batch_norm(x, act="relu", momentum=0.8),
                   lambda: BatchNorm(3, act="relu", momentum=0.8)),
    "dropout": ([2, 3], lambda x: fluid.layers.dropout(x, 0.3, seed=5), lambda: Dropout(0.3, seed=5)),
    "layer_norm": ([2, 3, 4], lambda x: fluid.layers.layer_norm(x, begin_norm_axis=2, epsilon=1e-3, act="relu"),
                   lambda: LayerNorm(4, epsilon=1e-3, act="relu")),
    "layer_norm_unscaled": ([2, 6], lambda x: fluid.layers.layer_norm(x, scale=False),
                            lambda: LayerNorm(6, scale=False)),
}


def _op_list(ops):
    return [(t, {k: v for k, v in attrs.items() if k not in COMMON_ATTRS}) for t, attrs in ops]


@pytest.mark.parametrize("layer", sorted(CASES))
def test_static_and_eager_layers_append_the_same_ops(layer, monkeypatch):
    shape, static, eager = CASES[layer]
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        static(fluid.data("x", shape, "float32"))
    static_ops = _op_list((op.type, op.attrs) for op in main.global_block().ops)
    traced = []
    real = Tracer.trace_op

    def trace_op(self, type, inputs=None, outputs=None, attrs=None, **kw):
        traced.append((type, {**get_op_spec(type).attrs, **(attrs or {})}))
        return real(self, type, inputs, outputs, attrs, **kw)
    with fluid.dygraph.guard():
        layer_obj = eager()
        monkeypatch.setattr(Tracer, "trace_op", trace_op)
        layer_obj(fluid.dygraph.to_variable(np.ones(shape, "float32")))
    assert _op_list(traced) == static_ops
