"""check_op cases of the group / instance normalisation and channel-rearranging (vision) ops: forward against
straightforward numpy references, gradients against float64 central differences; tests/ops/test_op_gradients.py
runs them."""
import numpy as np
import pytest

rng = np.random.default_rng(9753)
CASES = []


def case(op, name="", post=None, **kwargs):
    CASES.append(pytest.param(op, kwargs, post, id=f"{op}-{name}" if name else op))


def normal(*shape):
    return rng.standard_normal(shape)


# --- group_norm / instance_norm ------------------------------------------------------------------------
def gn_ref(x, scale, bias, groups, eps=1e-5, layout="NCHW"):
    """Group by group with explicit loops over samples and groups (the kernel reshapes instead)."""
    xc = x if layout == "NCHW" else np.moveaxis(x, -1, 1)
    n, c = xc.shape[:2]
    y, mean, var = np.empty_like(xc), np.empty((n, groups)), np.empty((n, groups))
    per = c // groups
    for i in range(n):
        for g in range(groups):
            block = xc[i, g * per:(g + 1) * per]
            mean[i, g], var[i, g] = block.mean(), block.var()
            y[i, g * per:(g + 1) * per] = (block - block.mean()) / np.sqrt(block.var() + eps)
    shape = (1, c) + (1,) * (xc.ndim - 2)
    y = y * (1 if scale is None else scale.reshape(shape)) + (0 if bias is None else bias.reshape(shape))
    return (y if layout == "NCHW" else np.moveaxis(y, 1, -1)), mean, var


case("group_norm", inputs={"X": normal(2, 6, 3, 2), "Scale": normal(6), "Bias": normal(6)},
     attrs={"groups": 3}, grad_outputs=["Y"], reference=lambda X, Scale, Bias: gn_ref(X, Scale, Bias, 3))
case("group_norm", "NHWC-eps", inputs={"X": normal(3, 2, 2, 4), "Scale": normal(4), "Bias": normal(4)},
     attrs={"groups": 2, "epsilon": 1e-2, "data_layout": "NHWC"}, grad_outputs=["Y"],
     reference=lambda X, Scale, Bias: gn_ref(X, Scale, Bias, 2, 1e-2, "NHWC"))
case("group_norm", "no-params-one-group", inputs={"X": normal(2, 4, 5)}, attrs={"groups": 1}, grad_outputs=["Y"],
     reference=lambda X: gn_ref(X, None, None, 1))
case("group_norm", "scale-only-groups-eq-channels", inputs={"X": normal(2, 3, 2, 2), "Scale": normal(3)},
     attrs={"groups": 3}, grad_outputs=["Y"], reference=lambda X, Scale: gn_ref(X, Scale, None, 3))


def in_ref(x, scale, bias, eps=1e-5):
    y, mean, var = gn_ref(x, scale, bias, x.shape[1], eps)
    return y, mean.reshape(-1), 1 / np.sqrt(var.reshape(-1) + eps)


case("instance_norm", inputs={"X": normal(2, 3, 4, 2), "Scale": normal(3), "Bias": normal(3)}, grad_outputs=["Y"],
     reference=lambda X, Scale, Bias: in_ref(X, Scale, Bias))
case("instance_norm", "3d-eps", inputs={"X": normal(3, 2, 5), "Scale": normal(2), "Bias": normal(2)},
     attrs={"epsilon": 1e-3}, grad_outputs=["Y"], reference=lambda X, Scale, Bias: in_ref(X, Scale, Bias, 1e-3))


# --- channel rearrangements: references index element by element, as the ops' definitions state ------------
def distinct(*shape):
    """Values with gaps >> eps (no ties for maxout)."""
    return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.1 - 1.0


def pixel_shuffle_ref(x, r):
    n, c, h, w = x.shape
    out = np.empty((n, c // (r * r), h * r, w * r))
    for ch in range(c // (r * r)):
        for i in range(h * r):
            for j in range(w * r):
                out[:, ch, i, j] = x[:, ch * r * r + (i % r) * r + j % r, i // r, j // r]
    return out


def space_to_depth_ref(x, b):
    """fluid's reorg index map, element by element: input [k, j, i] lands at [c2, j*b + oy, i*b + ox] of the
    output's memory read as [C / b^2, H * b, W * b], where k = (oy * b + ox) * (C / b^2) + c2."""
    n, c, h, w = x.shape
    oc = c // (b * b)
    flat = np.empty((n, oc, h * b, w * b))
    for k in range(c):
        offset, c2 = divmod(k, oc)
        for j in range(h):
            for i in range(w):
                flat[:, c2, j * b + offset // b, i * b + offset % b] = x[:, k, j, i]
    return flat.reshape(n, c * b * b, h // b, w // b)


def shuffle_channel_ref(x, g):
    out = np.empty_like(x)
    per = x.shape[1] // g
    for i in range(g):
        for j in range(per):
            out[:, j * g + i] = x[:, i * per + j]
    return out


def maxout_ref(x, g, axis):
    xc = x if axis == 1 else np.moveaxis(x, -1, 1)
    out = np.stack([xc[:, k * g:(k + 1) * g].max(axis=1) for k in range(xc.shape[1] // g)], axis=1)
    return out if axis == 1 else np.moveaxis(out, 1, -1)


case("pixel_shuffle", inputs={"X": normal(2, 8, 2, 3)}, attrs={"upscale_factor": 2},
     reference=lambda X: pixel_shuffle_ref(X, 2))
case("pixel_shuffle", "r3", inputs={"X": normal(1, 9, 1, 2)}, attrs={"upscale_factor": 3},
     reference=lambda X: pixel_shuffle_ref(X, 3))
case("space_to_depth", inputs={"X": normal(2, 4, 4, 6)}, attrs={"blocksize": 2},
     reference=lambda X: space_to_depth_ref(X, 2))
case("space_to_depth", "b3-more-channels", inputs={"X": normal(1, 18, 3, 6)}, attrs={"blocksize": 3},
     reference=lambda X: space_to_depth_ref(X, 3))
case("shuffle_channel", inputs={"X": normal(2, 6, 2, 3)}, attrs={"group": 2}, reference=lambda X: shuffle_channel_ref(X, 2))
case("shuffle_channel", "g3", inputs={"X": normal(1, 6, 1, 2)}, attrs={"group": 3},
     reference=lambda X: shuffle_channel_ref(X, 3))
case("maxout", inputs={"X": distinct(2, 6, 3, 2)}, attrs={"groups": 3}, reference=lambda X: maxout_ref(X, 3, 1))
case("maxout", "NHWC", inputs={"X": distinct(2, 3, 2, 4)}, attrs={"groups": 2, "axis": -1},
     reference=lambda X: maxout_ref(X, 2, -1))
case("affine_channel", inputs={"X": normal(2, 3, 2, 2), "Scale": normal(3), "Bias": normal(3)},
     attrs={"data_layout": "NCHW"},
     reference=lambda X, Scale, Bias: X * Scale[None, :, None, None] + Bias[None, :, None, None])
case("affine_channel", "NHWC", inputs={"X": normal(2, 2, 3, 4), "Scale": normal(4), "Bias": normal(4)},
     attrs={"data_layout": "NHWC"}, reference=lambda X, Scale, Bias: X * Scale + Bias)
case("affine_channel", "2d-scale-only", inputs={"X": normal(3, 5), "Scale": normal(5)},
     reference=lambda X, Scale: X * Scale)


# --- crop / crop_tensor / pad_constant_like ------------------------------------------------------------------
case("crop", "attrs", inputs={"X": normal(3, 5, 4)}, attrs={"shape": [2, 3, 4], "offsets": [1, 2, 0]},
     reference=lambda X: X[1:3, 2:5, 0:4])
case("crop", "like-Y-offsets-tensor", inputs={"X": normal(4, 5), "Y": np.zeros((2, 2)),
                                              "Offsets": np.array([2, 1], dtype=np.int32)},
     reference=lambda X, Y, Offsets: X[2:4, 1:3])
case("crop_tensor", "attrs-minus-one", inputs={"X": normal(3, 5, 4)}, attrs={"shape": [2, -1, 3], "offsets": [0, 1, 1]},
     reference=lambda X: X[0:2, 1:5, 1:4])
case("crop_tensor", "offsets-tensor", inputs={"X": normal(4, 6), "Offsets": np.array([1, 3], dtype=np.int32)},
     attrs={"shape": [2, 3], "offsets": [-1, -1]}, reference=lambda X, Offsets: X[1:3, 3:6])
case("crop_tensor", "per-dim-tensors", inputs={
    "X": normal(4, 6), "ShapeTensor": [np.array([3], dtype=np.int32), np.array([2], dtype=np.int32)],
    "OffsetsTensor": [np.array([1], dtype=np.int32), np.array([0], dtype=np.int32)]},
     attrs={"shape": [3, 2], "offsets": [1, 0]}, reference=lambda X, ShapeTensor, OffsetsTensor: X[1:4, 0:2])
case("pad_constant_like", inputs={"X": np.zeros((4, 3, 2)), "Y": normal(2, 3, 1)}, attrs={"pad_value": 1.5},
     reference=lambda X, Y: np.concatenate([np.concatenate([Y, np.full((2, 3, 1), 1.5)], axis=2),
                                            np.full((2, 3, 2), 1.5)], axis=0))
