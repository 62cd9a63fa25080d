"""fluid 1.8's attribute names, data formats and argument errors of the conv-transpose, pooling and
interpolation ops (ops/conv_transpose.py, ops/conv3d.py, ops/pool.py, ops/pool3d.py, layers/image.py)."""
import numpy as np
import pytest

import minifluid as fluid


def _run_op(op_type, inputs, outputs, attrs):
    """Append one op to a fresh program with its inputs as fed data, run it, return its outputs by slot."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        block = main.global_block()
        ins = {slot: block.create_var(name=slot.lower(), shape=value.shape, dtype=value.dtype)
               for slot, value in inputs.items()}
        outs = {slot: block.create_var(name=slot.lower() + "_out", dtype="float64") for slot in outputs}
        block.append_op(type=op_type, inputs={k: [v] for k, v in ins.items()},
                        outputs={k: [v] for k, v in outs.items()}, attrs=attrs)
    got = fluid.Executor(fluid.CPUPlace()).run(main, feed={v.name: inputs[k] for k, v in ins.items()},
                                               fetch_list=list(outs.values()), scope=fluid.Scope())
    return dict(zip(outputs, got))


def test_conv2d_transpose_takes_fluids_full_attribute_set():
    rng = np.random.RandomState(0)
    x, w = rng.rand(2, 3, 4, 4), rng.rand(3, 2, 3, 3)
    base = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "data_format": "NCHW"}
    plain = _run_op("conv2d_transpose", {"Input": x, "Filter": w}, ["Output"], base)["Output"]
    extra = dict(base, is_test=False, fuse_relu=False, fuse_activation="", fuse_alpha=0.0, fuse_beta=0.0)
    for op_type in ("conv2d_transpose", "depthwise_conv2d_transpose"):
        got = _run_op(op_type, {"Input": x, "Filter": w}, ["Output"], extra)["Output"]
        np.testing.assert_allclose(got, plain)
    assert got.shape == (2, 2, 6, 6)
    spec = fluid.framework.OpProtoHolder.instance().get_op_proto("conv2d_transpose")
    defaults = {a.name for a in spec.attrs}
    assert {"is_test", "fuse_relu", "fuse_activation", "fuse_alpha", "fuse_beta"} <= defaults


def test_conv3d_transpose_reads_nhwc_as_channels_last():
    """fluid's 3-D ops take data_format "NHWC" for channels-last 5-D data, as "NDHWC"."""
    rng = np.random.RandomState(1)
    x, w = rng.rand(2, 3, 3, 4, 5), rng.rand(3, 4, 2, 2, 2)
    attrs = {"strides": [1, 2, 1], "paddings": [0, 1, 0], "dilations": [1, 1, 1], "groups": 1}
    first = _run_op("conv3d_transpose", {"Input": x, "Filter": w}, ["Output"],
                    dict(attrs, data_format="NCDHW"))["Output"]
    for fmt in ("NHWC", "NDHWC"):
        last = _run_op("conv3d_transpose", {"Input": x.transpose(0, 2, 3, 4, 1), "Filter": w}, ["Output"],
                       dict(attrs, data_format=fmt))["Output"]
        np.testing.assert_allclose(last, first.transpose(0, 2, 3, 4, 1))


def test_conv2d_transpose_layer_refuses_a_nested_padding_of_the_wrong_length_with_a_value_error():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [None, 3, 5, 5])
        with pytest.raises(ValueError, match="padding's length must be 2"):
            fluid.layers.conv2d_transpose(x, num_filters=6, filter_size=3,
                                          padding=[[1, 1], [1, 1], [0, 0], [0, 0], [1, 1]])
        with pytest.raises(ValueError, match="padding's type must be a list or tuple of 2 int"):
            fluid.layers.conv2d_transpose(x, num_filters=6, filter_size=3, padding=[[1, 1], [1, 1]])
