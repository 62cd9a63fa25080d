"""roi_pool, roi_align, psroi_pool and prroi_pool through the Executor: fluid 1.8 signatures, the three ways
of saying which image a ROI belongs to, gradients reaching the feature map in a program, a model that trains
through roi_align, and the errors naming the input at fault (values and gradients of the ops themselves:
tests/ops/roi_cases.py)."""
import inspect

import numpy as np
import pytest

import minifluid as fluid

from .roi_cases import ROIS, LENGTHS, images_of, prroi_ref, psroi_ref, roi_align_ref, roi_pool_ref

PLACE = fluid.CPUPlace()
L = fluid.layers
rng = np.random.RandomState(11)


def _signature(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


def test_layers_take_fluids_signatures():
    e = inspect.Parameter.empty
    assert _signature(L.roi_pool) == [("input", e), ("rois", e), ("pooled_height", 1), ("pooled_width", 1),
                                      ("spatial_scale", 1.0), ("rois_lod", None)]
    assert _signature(L.roi_align) == [("input", e), ("rois", e), ("pooled_height", 1), ("pooled_width", 1),
                                       ("spatial_scale", 1.0), ("sampling_ratio", -1), ("name", None),
                                       ("rois_lod", None)]
    assert _signature(L.psroi_pool) == [("input", e), ("rois", e), ("output_channels", e), ("spatial_scale", e),
                                        ("pooled_height", e), ("pooled_width", e), ("name", None)]
    assert _signature(L.prroi_pool) == [("input", e), ("rois", e), ("spatial_scale", 1.0), ("pooled_height", 1),
                                        ("pooled_width", 1), ("batch_roi_nums", None), ("name", None)]


def _run(build, feed, x_shape):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None] + list(x_shape[1:]), "float32")
        x.stop_gradient = False
        rois = fluid.data("rois", [None, 4], "float32", lod_level=1)
        out = build(x, rois)
        dx = fluid.gradients([L.reduce_sum(out * out)], [x])[0]
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    return out, exe.run(main, feed=feed, fetch_list=[out, dx])


def test_roi_align_layer_with_lod_and_its_gradient_reaches_the_map():
    x = rng.randn(3, 2, 6, 7).astype("float32")
    feed = {"x": x, "rois": fluid.create_lod_tensor(ROIS.astype("float32"), [LENGTHS], PLACE)}
    out, (got, dx) = _run(lambda x, r: L.roi_align(x, r, 2, 3, 1.0, sampling_ratio=2), feed, x.shape)
    assert out.shape == (-1, 2, 2, 3)
    want = roi_align_ref(x.astype(np.float64), ROIS, images_of(LENGTHS), 2, 3, 1.0, 2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert dx.shape == x.shape and not dx[1].any() and dx[0].any()  # image 1 has no ROI


def test_roi_pool_layer_with_rois_lod_offsets():
    x = (rng.permutation(3 * 2 * 6 * 7).reshape(3, 2, 6, 7) * 0.5).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xv = fluid.data("x", [None, 2, 6, 7], "float32")
        rois = fluid.data("rois", [None, 4], "float32")
        rois_lod = fluid.data("rois_lod", [None], "int64")
        out = L.roi_pool(xv, rois, pooled_height=2, pooled_width=3, rois_lod=rois_lod)
    exe = fluid.Executor(PLACE)
    got, = exe.run(main, feed={"x": x, "rois": ROIS.astype("float32"), "rois_lod": np.array([0, 3, 3, 5])},
                   fetch_list=[out])
    np.testing.assert_array_equal(got, roi_pool_ref(x, ROIS, images_of(LENGTHS), 2, 3, 1.0)[0])


def test_roi_pool_gradient_goes_to_the_maximum():
    x = np.zeros((1, 1, 4, 4), "float32")
    x[0, 0, 1, 2] = 5.0
    feed = {"x": x, "rois": fluid.create_lod_tensor(np.array([[0, 0, 3, 3], [2, 1, 3, 2]], "float32"), [[2]], PLACE)}
    _, (got, dx) = _run(lambda x, r: L.roi_pool(x, r), feed, x.shape)
    np.testing.assert_array_equal(got.ravel(), [5.0, 5.0])
    expected = np.zeros_like(x)
    expected[0, 0, 1, 2] = 2 * 5.0 * 2  # d(sum out^2) = 2 * out, from both ROIs
    np.testing.assert_array_equal(dx, expected)


def test_psroi_and_prroi_layers():
    x = rng.randn(3, 12, 6, 7).astype("float32")
    feed = {"x": x, "rois": fluid.create_lod_tensor(ROIS.astype("float32"), [LENGTHS], PLACE)}
    out, (got, _) = _run(lambda x, r: L.psroi_pool(x, r, 2, 0.5, 2, 3), feed, x.shape)
    assert out.shape == (-1, 2, 2, 3)
    np.testing.assert_allclose(got, psroi_ref(x.astype(np.float64), ROIS, images_of(LENGTHS), 2, 2, 3, 0.5),
                               rtol=1e-5, atol=1e-5)
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        xv = fluid.data("x", [3, 12, 6, 7], "float32")
        rois = fluid.data("rois", [None, 4], "float32")
        nums = fluid.data("nums", [3], "int64")
        out = L.prroi_pool(xv, rois, 1.0, 2, 2, batch_roi_nums=nums)
    got, = fluid.Executor(PLACE).run(main, feed={"x": x, "rois": ROIS.astype("float32"),
                                                 "nums": np.array(LENGTHS, "int64")}, fetch_list=[out])
    np.testing.assert_allclose(got, prroi_ref(x.astype(np.float64), ROIS, images_of(LENGTHS), 2, 2, 1.0),
                               rtol=1e-4, atol=1e-5)


def test_a_model_trains_through_roi_align():
    """conv -> roi_align -> fc regresses each ROI's mean brightness; SGD drives the loss down."""
    n, boxes = 4, [[0, 0, 3, 3], [4, 4, 7, 7], [2, 1, 6, 5]]
    images = rng.rand(n, 1, 8, 8).astype("float32")
    rois = np.array(boxes * n, "float32")
    target = np.array([[images[i, 0, b[1]:b[3] + 1, b[0]:b[2] + 1].mean()] for i in range(n) for b in boxes],
                      "float32")
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1, 8, 8], "float32")
        r = fluid.data("rois", [None, 4], "float32", lod_level=1)
        t = fluid.data("t", [None, 1], "float32")
        feat = L.conv2d(x, 4, 3, padding=1, act="relu")
        pooled = L.roi_align(feat, r, pooled_height=2, pooled_width=2, sampling_ratio=2)
        loss = L.mean(L.square_error_cost(L.fc(pooled, 1), t))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(PLACE)
    exe.run(startup)
    feed = {"x": images, "rois": fluid.create_lod_tensor(rois, [[3] * n], PLACE), "t": target}
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss])[0]) for _ in range(40)]
    assert losses[-1] < 0.3 * losses[0] and all(np.isfinite(losses))


def _build_error(build):
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        build()


@pytest.mark.parametrize("layer", ["roi_pool", "roi_align", "psroi_pool", "prroi_pool"])
def test_bad_shapes_are_named(layer):
    call = {"roi_pool": lambda x, r: L.roi_pool(x, r), "roi_align": lambda x, r: L.roi_align(x, r),
            "psroi_pool": lambda x, r: L.psroi_pool(x, r, 2, 1.0, 1, 1),
            "prroi_pool": lambda x, r: L.prroi_pool(x, r)}[layer]
    with pytest.raises(ValueError, match=r"Input\(X\) in \w+ is NCHW.*rank of input must be 4. But received rank = 3"):
        _build_error(lambda: call(fluid.data("x", [None, 2, 6], "float32"), fluid.data("r", [None, 4], "float32")))
    with pytest.raises(ValueError, match=r"Input\(ROIs\).*\(num_rois, 4\).*\[-1, 5\]"):
        _build_error(lambda: call(fluid.data("x", [None, 2, 6, 6], "float32"), fluid.data("r", [None, 5], "float32")))


def test_lod_errors_at_run_time():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 1, 4, 4], "float32")
        rois = fluid.data("rois", [None, 4], "float32")
        out = L.roi_align(x, rois)
    exe, x_val = fluid.Executor(PLACE), np.zeros((2, 1, 4, 4), "float32")
    box = np.array([[0, 0, 1, 1]] * 3, "float32")
    with pytest.raises(ValueError, match=r"Input\(ROIs\) Tensor of RoIAlign does not contain LoD"):
        exe.run(main, feed={"x": x_val, "rois": box}, fetch_list=[out])
    with pytest.raises(ValueError, match=r"rois_batch_size = 3 .*batch_size = 2"):
        exe.run(main, feed={"x": x_val, "rois": fluid.create_lod_tensor(box, [[1, 1, 1]], PLACE)}, fetch_list=[out])


def test_psroi_channel_mismatch_and_attribute_types():
    with pytest.raises(ValueError, match=r"the channel of X\(10\) should be equal to the product of "
                                         r"output_channels\(2\), pooled_height\(2\) and pooled_width\(3\)"):
        _build_error(lambda: L.psroi_pool(fluid.data("x", [None, 10, 6, 6], "float32"),
                                          fluid.data("r", [None, 4], "float32"), 2, 1.0, 2, 3))
    with pytest.raises(TypeError, match="output_channels must be int type"):
        _build_error(lambda: L.psroi_pool(fluid.data("x", [None, 12, 6, 6], "float32"),
                                          fluid.data("r", [None, 4], "float32"), 2.0, 1.0, 2, 3))
    with pytest.raises(TypeError, match="spatial_scale must be float type"):
        _build_error(lambda: L.prroi_pool(fluid.data("x", [None, 12, 6, 6], "float32"),
                                          fluid.data("r", [None, 4], "float32"), 1, 2, 3))
    with pytest.raises(TypeError, match=r"The data type of 'input' in roi_align must be"):
        _build_error(lambda: L.roi_align(fluid.data("x", [None, 2, 6, 6], "int32"),
                                         fluid.data("r", [None, 4], "float32")))


def test_results_do_not_depend_on_the_block_size(monkeypatch):
    """Gathers are cut into blocks of whole bins (ops/roi.py's _BLOCK); tiny blocks give the same numbers."""
    from minifluid.ops import roi
    from minifluid.ops.registry import get_op_spec
    from minifluid.testing import call_grad, call_kernel
    x = rng.randn(3, 12, 6, 7)
    lods = {("ROIs", 0): [LENGTHS]}
    cases = [("roi_align", {"pooled_height": 2, "pooled_width": 3, "sampling_ratio": -1}, [x, ROIS, None]),
             ("roi_pool", {"pooled_height": 3, "pooled_width": 2}, [x, ROIS, None]),
             ("psroi_pool", {"output_channels": 2, "pooled_height": 2, "pooled_width": 3}, [x, ROIS])]
    for op, attrs, args in cases:
        spec = get_op_spec(op)
        attrs = {**spec.attrs, **attrs}

        def run():
            outs = call_kernel(spec, attrs, args, lods)
            outs = outs if isinstance(outs, tuple) else (outs,)
            douts = (np.ones_like(outs[0]),) + (None,) * (len(outs) - 1)
            need = (True,) + (False,) * (len(args) - 1)
            return outs[0], call_grad(spec, attrs, tuple(args), outs, douts, need, lods)[0]
        big = run()
        monkeypatch.setattr(roi, "_BLOCK", 7)
        small = run()
        monkeypatch.undo()
        np.testing.assert_array_equal(big[0], small[0])
        np.testing.assert_allclose(big[1], small[1], rtol=1e-12, atol=1e-12)


def test_roi_perspective_transform_layer():
    from .roi_cases import QUADS, perspective_ref
    e = inspect.Parameter.empty
    assert _signature(L.roi_perspective_transform) == [("input", e), ("rois", e), ("transformed_height", e),
                                                       ("transformed_width", e), ("spatial_scale", 1.0),
                                                       ("name", None)]
    assert fluid.layers.detection.roi_perspective_transform is L.roi_perspective_transform
    for args, message in (((7.5, 7), "transformed_height"), ((7, 7.5), "transformed_width"),
                          ((7, 7, 2), "spatial_scale")):
        with pytest.raises(TypeError, match=f"The type of '{message}' in roi_perspective_transform"):
            _build_error(lambda: L.roi_perspective_transform(fluid.data("x", [None, 3, 8, 9], "float32"),
                                                             fluid.data("r", [None, 8], "float32"), *args))
    x = rng.randn(2, 3, 8, 9).astype("float32")
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        xv = fluid.data("x", [None, 3, 8, 9], "float32")
        rois = fluid.data("rois", [None, 8], "float32", lod_level=1)
        out, mask, matrix = L.roi_perspective_transform(xv, rois, 4, 5)
    assert (out.shape, mask.shape, matrix.shape) == ((-1, 3, 4, 5), (-1, 1, 4, 5), (-1, 9))
    assert out.lod_level == 1
    got = fluid.Executor(PLACE).run(main, feed={"x": x, "rois": fluid.create_lod_tensor(
        QUADS.astype("float32"), [[3, 1]], PLACE)}, fetch_list=[out, mask, matrix], return_numpy=False)
    assert got[0].recursive_sequence_lengths() == [[3, 1]]
    want = perspective_ref(x.astype(np.float64), QUADS, [0, 0, 0, 1], 4, 5, 1.0)
    np.testing.assert_allclose(np.array(got[0]), want["Out"], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.array(got[1]), want["Mask"])
    np.testing.assert_allclose(np.array(got[2]), want["TransformMatrix"], rtol=1e-5, atol=1e-5)
