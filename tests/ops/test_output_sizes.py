"""conv2d / pool2d output sizes and edge windows as fluid computes them.

fluid's formulas divide with C++ integer division (truncating toward zero, not flooring), and its
kernels clip a window running past the input: pooling reads rows [max(s, 0), min(s + k, H)) with
s = o * stride - pad_top, the exclusive average divides by that clipped area, a max window starts at
-FLT_MAX; convolution reads zeros outside the input. Each case below is worked out by hand.
"""
import numpy as np
import pytest

import minifluid as fluid
from minifluid.testing import check_op

FLT_MAX = float(np.finfo(np.float32).max)


def grid(h, w, c=1, n=1):
    """0, 1, 2, ... laid out row-major in each [h, w] map (distinct values: no ties for max)."""
    return np.arange(n * c * h * w, dtype=np.float64).reshape(n, c, h, w)


def pool(x, grad=True, **attrs):
    attrs.setdefault("strides", attrs["ksize"])
    return check_op("pool2d", inputs={"X": x}, attrs=attrs, grad_inputs=None if grad else ())["Out"]


# --- pool2d -----------------------------------------------------------------------------------------
def test_pool_window_larger_than_the_map_gives_one_output():
    """GoogLeNet's ending: pool 7 stride 7 on 6x6 is (6 - 7) / 7 + 1 == 1 in C++ (flooring gave 0)."""
    x = grid(6, 6, c=2)
    np.testing.assert_array_equal(pool(x, pooling_type="max", ksize=[7, 7]), [[[[35.0]], [[71.0]]]])
    np.testing.assert_allclose(pool(x, pooling_type="avg", ksize=[7, 7]), [[[[17.5]], [[53.5]]]])  # 630 / 36
    np.testing.assert_allclose(pool(x, pooling_type="avg", ksize=[7, 7], exclusive=False),
                               [[[[630 / 49]], [[1926 / 49]]]])


def test_pool_layer_builds_the_fc_after_a_7x7_pool_on_6x6():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 8, 6, 6])
        pooled = fluid.layers.pool2d(x, pool_size=7, pool_type="avg", pool_stride=7)
        out = fluid.layers.fc(pooled, 10)
    assert tuple(pooled.shape) == (-1, 8, 1, 1) and tuple(out.shape) == (-1, 10)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        got, = exe.run(main, feed={"x": np.ones((3, 8, 6, 6), "float32")}, fetch_list=[pooled])
    np.testing.assert_allclose(got, np.ones((3, 8, 1, 1)))


def test_pool_ceil_mode_clips_the_last_windows():
    """5x5 map 0..24, k=2, s=2: floor gives 2x2, ceil 3x3 whose last row/column read 2, 1 elements."""
    x = grid(5, 5)
    np.testing.assert_array_equal(pool(x, pooling_type="max", ksize=[2, 2]), [[[[6, 8], [16, 18]]]])
    np.testing.assert_array_equal(pool(x, pooling_type="max", ksize=[2, 2], ceil_mode=True),
                                  [[[[6, 8, 9], [16, 18, 19], [21, 23, 24]]]])
    exclusive = [[3, 5, 6.5], [13, 15, 16.5], [20.5, 22.5, 24]]  # (0+1+5+6)/4, ..., (4+9)/2, ..., 24/1
    np.testing.assert_allclose(pool(x, pooling_type="avg", ksize=[2, 2], ceil_mode=True), [[exclusive]])
    inclusive = [[3, 5, 3.25], [13, 15, 8.25], [10.25, 11.25, 6]]  # always / 4
    np.testing.assert_allclose(pool(x, pooling_type="avg", ksize=[2, 2], ceil_mode=True, exclusive=False),
                               [[inclusive]])


def test_pool_ceil_mode_truncates_a_negative_numerator():
    """in 2, k 5, s 3, ceil: (2 - 5 + 3 - 1) / 3 + 1 == 0 + 1 in C++ (floor: -1 + 1 == 0)."""
    x = grid(2, 2)
    np.testing.assert_array_equal(pool(x, pooling_type="max", ksize=[5, 5], strides=[3, 3], ceil_mode=True),
                                  [[[[3]]]])
    np.testing.assert_allclose(pool(x, pooling_type="avg", ksize=[5, 5], strides=[3, 3], ceil_mode=True,
                                    exclusive=False), [[[[6 / 25]]]])


def test_pool_padding_exclusive_and_inclusive_divisors():
    """3x3 map 0..8, k=2, s=2, pad 1: rows/cols [0, 1) and [1, 3)."""
    x = grid(3, 3)
    np.testing.assert_array_equal(pool(x, pooling_type="max", ksize=[2, 2], paddings=[1, 1]), [[[[0, 2], [6, 8]]]])
    np.testing.assert_allclose(pool(x, pooling_type="avg", ksize=[2, 2], paddings=[1, 1]),
                               [[[[0, 1.5], [4.5, 6]]]])
    np.testing.assert_allclose(pool(x, pooling_type="avg", ksize=[2, 2], paddings=[1, 1], exclusive=False),
                               [[[[0, 0.75], [2.25, 6]]]])


def test_pool_asymmetric_paddings_count_in_the_size_only_at_the_far_end():
    """4x4 map 0..15, k=3, s=3, paddings [top 1, bottom 0, left 0, right 2]:
    H: (4 - 3 + 1) / 3 + 1 == 1, rows [0, 2); W: (4 - 3 + 2) / 3 + 1 == 2, cols [0, 3) and [3, 4)."""
    x = grid(4, 4)
    np.testing.assert_array_equal(pool(x, pooling_type="max", ksize=[3, 3], paddings=[1, 0, 0, 2]), [[[[6, 7]]]])
    np.testing.assert_allclose(pool(x, pooling_type="avg", ksize=[3, 3], paddings=[1, 0, 0, 2]), [[[[3, 5]]]])


def test_pool_window_of_padding_only_matches_fluids_kernel():
    """3x3 map, k=2, s=2, pad 2: (3 + 4 - 2) / 2 + 1 == 3; the first row/column of windows read nothing:
    max gives -FLT_MAX, exclusive avg 0/0 (nan), inclusive avg 0; gradients reach no input there."""
    x = grid(3, 3)
    mx = pool(x, grad=False, pooling_type="max", ksize=[2, 2], paddings=[2, 2])
    assert mx.shape == (1, 1, 3, 3)
    np.testing.assert_array_equal(mx[0, 0, 0], [-FLT_MAX] * 3)
    np.testing.assert_array_equal(mx[0, 0, 1:, 1:], [[4, 5], [7, 8]])
    ex = pool(x, grad=False, pooling_type="avg", ksize=[2, 2], paddings=[2, 2])
    assert np.isnan(ex[0, 0, 0]).all() and np.isnan(ex[0, 0, :, 0]).all()
    np.testing.assert_allclose(ex[0, 0, 1:, 1:], [[2, 3.5], [6.5, 8]])
    inc = pool(x, pooling_type="avg", ksize=[2, 2], paddings=[2, 2], exclusive=False)
    np.testing.assert_allclose(inc[0, 0], [[0, 0, 0], [0, 2, 1.75], [0, 3.25, 2]])  # always / 4


def test_pool_same_padding_and_global_pooling():
    x = grid(5, 5)
    same = pool(x, pooling_type="max", ksize=[3, 3], strides=[2, 2], padding_algorithm="SAME")  # pads (1, 1)
    np.testing.assert_array_equal(same, [[[[6, 8, 9], [16, 18, 19], [21, 23, 24]]]])
    glob = grid(6, 5, c=2)
    np.testing.assert_array_equal(pool(glob, pooling_type="max", ksize=[2, 2], global_pooling=True, paddings=[3, 3]),
                                  [[[[29]], [[59]]]])
    np.testing.assert_allclose(pool(glob, pooling_type="avg", ksize=[2, 2], global_pooling=True),
                               [[[[14.5]], [[44.5]]]])


def test_pool_output_size_below_one_raises_fluids_error():
    x = grid(2, 2)
    with pytest.raises(ValueError, match=r"ShapeError: the output size must be greater than 0. But received: "
                                         r"output_size = -1 due to the settings of input_size\(2\), padding\(0,0\), "
                                         r"k_size\(4\) and stride\(1\)"):
        pool(x, pooling_type="max", ksize=[4, 4], strides=[1, 1])


# --- conv2d -----------------------------------------------------------------------------------------
def conv(x, w, **attrs):
    return check_op("conv2d", inputs={"Input": x, "Filter": w}, attrs=attrs)["Output"]


def test_conv_filter_larger_than_the_map_truncates_toward_zero():
    """4x4 input, 5x5 filter, stride 2: (4 - 5) / 2 + 1 == 1; the window reads zeros past the edge."""
    x, w = grid(4, 4), grid(5, 5)[0:1]
    out = conv(x, w, strides=[2, 2])
    expected = sum((4 * i + j) * (5 * i + j) for i in range(4) for j in range(4))
    np.testing.assert_allclose(out, [[[[expected]]]])


def test_conv_groups_and_dilation_with_a_truncated_size():
    """6x6 input, 3x3 filter dilated by 2 (spans 5), stride 3, groups 2: (6 - 5) / 3 + 1 == 1 per side...
    and with padding 1 on one side: (6 + 1 - 5) / 3 + 1 == 1."""
    x = grid(6, 6, c=2)
    w = np.stack([np.ones((1, 3, 3)), 2 * np.ones((1, 3, 3))])  # group 0 sums, group 1 doubles
    out = conv(x, w, strides=[3, 3], dilations=[2, 2], groups=2)
    taps = [0, 2, 4]
    first = sum(6 * i + j for i in taps for j in taps)
    second = 2 * sum(36 + 6 * i + j for i in taps for j in taps)
    np.testing.assert_allclose(out, [[[[first]], [[second]]]])
    padded = conv(x, w, strides=[3, 3], dilations=[2, 2], groups=2, paddings=[1, 0, 0, 0])
    top = sum(6 * i + j for i in (1, 3) for j in taps)  # the first dilated row reads the pad
    np.testing.assert_allclose(padded[0, 0], [[top]])


def test_conv_output_size_below_one_raises_fluids_error():
    with pytest.raises(ValueError, match=r"The output's size is expected to be greater than 0. But recieved: "
                                         r"output's size is -1\. .* where input_size is 3, padding is \(0, 0\), "
                                         r"filter_size is 5, dilation is 1, stride is 1\."):
        conv(grid(3, 3), grid(5, 5)[0:1])
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 1, 3, 3])
        with pytest.raises(ValueError, match="output's size is expected to be greater than 0"):
            fluid.layers.conv2d(x, 2, 5)


@pytest.mark.parametrize("attrs", [{"ksize": [2, 2], "strides": [2, 2]},  # windows tile the input
                                   {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}])  # they overlap
def test_a_tied_max_window_routes_its_gradient_to_its_first_max(attrs):
    """fluid's max-pool gradient goes to the first element (row-major) equal to the window's max, once."""
    from minifluid.ops.registry import get_op_spec
    spec = get_op_spec("pool2d")
    attrs = dict(spec.attrs, pooling_type="max", **attrs)
    x = np.zeros((1, 1, 4, 4), dtype="float32")  # every window ties: all zeros
    x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # channels-last, as a conv makes
    out = spec.kernel(attrs, x)
    dx = spec.grad(attrs, (x,), (out,), (np.ones_like(out),), (True,))[0]
    expected = np.zeros((4, 4), dtype="float32")
    if attrs["ksize"] == [2, 2]:
        expected[::2, ::2] = 1  # each 2x2 window's top-left
    else:  # (4 + 2 - 3) / 2 + 1 = 2 windows per axis, starting at -1 and 1: clipped, they start at 0 and 1
        expected[:2, :2] = 1
    np.testing.assert_array_equal(dx[0, 0], expected)
