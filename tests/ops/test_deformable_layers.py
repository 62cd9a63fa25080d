"""deformable_conv through the Executor: fluid 1.8's signature, its parameters, v1 and v2, a DCN block (offsets
and mask from a conv of the input) that trains, and the errors naming the input at fault (values and gradients
of the ops: tests/ops/deformable_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

from .deformable_cases import PS_ROIS, deformable_psroi_ref, deformable_ref

PLACE = fluid.CPUPlace()
L = fluid.layers
rng = np.random.RandomState(31)


def test_layer_takes_fluids_signature():
    e = inspect.Parameter.empty
    assert [(p.name, p.default) for p in inspect.signature(L.deformable_conv).parameters.values()] == [
        ("input", e), ("offset", e), ("mask", e), ("num_filters", e), ("filter_size", e), ("stride", 1),
        ("padding", 0), ("dilation", 1), ("groups", None), ("deformable_groups", None), ("im2col_step", None),
        ("param_attr", None), ("bias_attr", None), ("modulated", True), ("name", None)]
    assert [(p.name, p.default) for p in inspect.signature(L.deformable_roi_pooling).parameters.values()] == [
        ("input", e), ("rois", e), ("trans", e), ("no_trans", False), ("spatial_scale", 1.0), ("group_size", [1, 1]),
        ("pooled_height", 1), ("pooled_width", 1), ("part_size", None), ("sample_per_part", 1), ("trans_std", 0.1),
        ("position_sensitive", False), ("name", None)]


@pytest.mark.parametrize("modulated", [True, False])
def test_deformable_conv_layer_matches_the_reference(modulated):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4, 6, 6], "float32")
        off = fluid.data("off", [None, 2 * 2 * 9, 3, 3], "float32")
        mask = fluid.data("mask", [None, 2 * 9, 3, 3], "float32") if modulated else None
        out = L.deformable_conv(x, off, mask, 6, 3, stride=2, padding=1, groups=2, deformable_groups=2,
                                modulated=modulated, param_attr=fluid.ParamAttr(name="dcn_w"), bias_attr=False)
    assert out.shape == (-1, 6, 3, 3)
    assert main.global_block().var("dcn_w").shape == (6, 2, 3, 3)
    assert main.global_block().ops[-1].type == ("deformable_conv" if modulated else "deformable_conv_v1")
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    feed = {"x": rng.randn(2, 4, 6, 6).astype("float32"), "off": rng.uniform(-2, 2, (2, 36, 3, 3)).astype("float32")}
    if modulated:
        feed["mask"] = rng.rand(2, 18, 3, 3).astype("float32")
    got, = exe.run(main, feed=feed, fetch_list=[out])
    w = np.array(fluid.global_scope().find_var("dcn_w").get_tensor()).astype(np.float64)
    want = deformable_ref(feed["x"].astype(np.float64), feed["off"].astype(np.float64),
                          feed["mask"].astype(np.float64) if modulated else None, w, (2, 2), (1, 1), (1, 1), 2, 2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_dcn_block_trains():
    """Offsets and mask come from a conv of the input, as in DCNv2; SGD fits a target through all of it."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 9
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2, 6, 6], "float32")
        t = fluid.data("t", [None, 3, 6, 6], "float32")
        off = L.conv2d(x, 2 * 9, 3, padding=1)
        mask = L.sigmoid(L.conv2d(x, 9, 3, padding=1))
        out = L.deformable_conv(x, off, mask, 3, 3, padding=1)
        loss = L.mean(L.square(out - t))
        fluid.optimizer.SGD(0.3).minimize(loss)
    grads = {op.type for op in main.global_block().ops}
    assert "deformable_conv_grad" in grads
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    xs = rng.randn(4, 2, 6, 6).astype("float32")
    feed = {"x": xs, "t": np.tanh(xs[:, :1] + xs[:, 1:]).repeat(3, axis=1)}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0]) for _ in range(40)]
    assert losses[-1] < 0.5 * losses[0]


def _build(fn):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        fn()


def test_errors_name_the_input():
    x = lambda: fluid.data("x", [None, 4, 6, 6], "float32")  # noqa: E731
    with pytest.raises(ValueError, match=r"Input\(Offset\) should be \[-1, 18, 4, 4\].*received \[-1, 16, 4, 4\]"):
        _build(lambda: L.deformable_conv(x(), fluid.data("o", [None, 16, 4, 4], "float32"),
                                         fluid.data("m", [None, 9, 4, 4], "float32"), 4, 3))
    with pytest.raises(ValueError, match=r"Input\(Mask\) should be \[-1, 9, 4, 4\].*received \[-1, 9, 3, 4\]"):
        _build(lambda: L.deformable_conv(x(), fluid.data("o", [None, 18, 4, 4], "float32"),
                                         fluid.data("m", [None, 9, 3, 4], "float32"), 4, 3))
    with pytest.raises(ValueError, match="num_channels must be divisible by groups"):
        _build(lambda: L.deformable_conv(x(), fluid.data("o", [None, 18, 4, 4], "float32"), None, 4, 3, groups=3,
                                         modulated=False))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        out = L.deformable_conv(fluid.data("x", [None, 1, 3, 3], "float32"), fluid.data("o", [None, 2, 3, 3], "float32"),
                                None, 1, 1, im2col_step=2, modulated=False, bias_attr=False)
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    with pytest.raises(ValueError, match=r"Input batchsize must be smaller than or divide im2col_step.*\[3\]"):
        exe.run(main, feed={"x": np.zeros((3, 1, 3, 3), "float32"), "o": np.zeros((3, 2, 3, 3), "float32")},
                fetch_list=[out])


@pytest.mark.parametrize("position_sensitive", [False, True])
def test_deformable_roi_pooling_layer(position_sensitive):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 8, 6, 7], "float32")
        x.stop_gradient = False
        rois = fluid.data("rois", [None, 4], "float32", lod_level=1)
        trans = fluid.data("trans", [None, 2, 2, 2], "float32")
        trans.stop_gradient = False
        out = L.deformable_roi_pooling(x, rois, trans, group_size=[2, 2] if position_sensitive else [1, 1],
                                       pooled_height=2, pooled_width=2, sample_per_part=2, trans_std=0.2,
                                       position_sensitive=position_sensitive)
        dx, dtrans = fluid.gradients([L.reduce_sum(out)], [x, trans])
    dim = 2 if position_sensitive else 8
    assert out.shape == (-1, dim, 2, 2)
    feed = {"x": rng.randn(2, 8, 6, 7).astype("float32"), "trans": rng.uniform(-1, 1, (3, 2, 2, 2)).astype("float32"),
            "rois": fluid.create_lod_tensor(PS_ROIS.astype("float32"), [[2, 1]], PLACE)}
    got, gx, gt = fluid.Executor(PLACE).run(main, feed=feed, fetch_list=[out, dx, dtrans])
    attrs = {"no_trans": False, "spatial_scale": 1.0, "output_dim": dim, "group_size": [2, 2] if position_sensitive
             else [1, 1], "pooled_height": 2, "pooled_width": 2, "part_size": [2, 2], "sample_per_part": 2,
             "trans_std": 0.2}
    want, _ = deformable_psroi_ref(feed["x"].astype(np.float64), PS_ROIS, [0, 0, 1], feed["trans"].astype(np.float64),
                                   attrs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert gx.shape == (2, 8, 6, 7) and gt.shape == (3, 2, 2, 2) and np.abs(gt).sum() > 0
