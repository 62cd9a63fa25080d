"""register_grad(..., reads=...): the grad kernel gets None for the forward slots it does not read, and
append_backward wires only the slots it reads, so a run frees the others early (NOTE [ Freeing
intermediates ] in executor/executor.py)."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.ops.registry import get_op_spec, registered_ops
from minifluid.testing import call_grad, call_kernel

from minifluid.lod_tensor import LoDTensor

from . import deformable_cases, dense_cases, roi_cases, sampled_loss_cases, vision_cases, yolo_cases
from . import vision_misc_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import misc_nn_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import conv3d_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import pool2d_cases  # noqa: F401  (adds its cases to vision_cases.CASES)
from . import tree_conv_cases  # noqa: F401  (adds its cases to vision_cases.CASES)

rng = np.random.RandomState(0)
_CASES = vision_cases.CASES + [p for p in dense_cases.CASES if p.values[0] in sampled_loss_cases.OPS] + roi_cases.CASES + yolo_cases.CASES + deformable_cases.CASES
_CASE_INPUTS = {p.values[0]: p.values[1] for p in _CASES}  # op -> its last check_op case


def _inputs(op):
    if op in ("conv2d", "depthwise_conv2d"):
        groups = 3 if op == "depthwise_conv2d" else 1
        return (rng.randn(2, 3, 5, 4), rng.randn(3, 3 // groups, 3, 3), None, None), {"groups": groups,
                                                                                       "paddings": [1, 1]}
    if op == "batch_norm":
        return (rng.randn(4, 3, 2, 2), rng.randn(3), rng.randn(3), rng.randn(3), rng.rand(3) + 0.5, None), {}
    if op in _CASE_INPUTS:
        case = _CASE_INPUTS[op]
        return tuple(case["inputs"].get(s) for s in get_op_spec(op).inputs), case.get("attrs", {})
    return (rng.rand(3, 4) + 0.5,), {}


def _split_lod(ins, slots):
    """(plain arrays, the LoD of the LoDTensor inputs by (slot, 0)) for a context kernel."""
    lods = {(s, 0): a.recursive_sequence_lengths() for s, a in zip(slots, ins) if isinstance(a, LoDTensor)}
    return tuple(np.asarray(a) if isinstance(a, LoDTensor) else a for a in ins), lods


# a grad op's own gradient (ops/double_grad.py) is checked end to end, wired as append_backward wires it, against
# central differences in tests/numerics/test_double_grad.py
PRUNED = sorted(op for op in registered_ops() if getattr(get_op_spec(op), "grad_reads", None) is not None
                and get_op_spec(op).forward is None)


def test_the_conv_net_ops_declare_what_their_gradients_read():
    assert {"relu", "batch_norm", "conv2d", "depthwise_conv2d", "sigmoid", "tanh"} <= set(PRUNED)


@pytest.mark.parametrize("op", PRUNED)
def test_a_grad_kernel_gives_the_same_gradients_without_the_slots_it_does_not_read(op):
    spec = get_op_spec(op)
    ins, attrs = _inputs(op)
    ins, lods = _split_lod(ins, spec.inputs)
    attrs = dict(spec.attrs, **attrs)
    outs = call_kernel(spec, attrs, ins, lods)
    outs = outs if isinstance(outs, tuple) else (outs,)
    douts = tuple(rng.randn(*np.shape(o)) if o is not None and np.asarray(o).dtype.kind == "f" else None
                  for o in outs)
    need = tuple(a is not None and slot not in spec.no_grad_inputs for slot, a in zip(spec.inputs, ins))
    full = call_grad(spec, attrs, ins, outs, douts, need, lods)
    keep = spec.grad_reads
    pruned = call_grad(spec, attrs, tuple(a if s in keep else None for s, a in zip(spec.inputs, ins)),
                       tuple(a if s in keep else None for s, a in zip(spec.outputs, outs)), douts, need, lods)
    for a, b in zip(full, pruned):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)


def test_append_backward_wires_only_the_slots_a_gradient_reads():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3, 8, 8])
        h = fluid.layers.batch_norm(fluid.layers.conv2d(x, 4, 3, padding=1, bias_attr=False), act="relu")
        fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(h))
    grads = {op.type: op for op in main.global_block().ops if op.type.endswith("_grad")}
    assert set(grads["relu_grad"].inputs) == {"Out", "Out@GRAD"}
    assert "Output" not in grads["conv2d_grad"].inputs and "Input" in grads["conv2d_grad"].inputs
    assert "Y" not in grads["batch_norm_grad"].inputs and "SavedVariance" in grads["batch_norm_grad"].inputs
