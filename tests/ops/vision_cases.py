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
