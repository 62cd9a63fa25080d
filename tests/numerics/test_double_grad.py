"""A gradient of a gradient: fluid.gradients over a program that already holds a backward pass walks back
through its grad ops (ops/double_grad.py), checked against central differences in float64."""
import numpy as np
import pytest

import minifluid as fluid

L = fluid.layers


def _penalty_program():
    """g = d sum((x * w)^2) / dx (w broadcast over x's rows); p = sum(g * g) + sum(x - g) + sum(x + w * 0.5)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [2, 3], "float64")
        x.stop_gradient = False
        w = fluid.data("w", [3], "float64")
        w.stop_gradient = False
        y = L.elementwise_mul(x, w)
        g, = fluid.gradients(L.reduce_sum(L.elementwise_mul(y, y)), x)
        p = L.reduce_sum(L.elementwise_mul(g, g)) + L.reduce_sum(L.elementwise_sub(x, g)) \
            + L.reduce_sum(L.elementwise_add(x, L.scale(w, 0.5)))
        dx, dw = fluid.gradients(p, [x, w])
    return main, g, p, dx, dw


def _penalty(x, w):
    g = 2 * x * w * w
    return (g * g).sum() + (x - g).sum() + (x + 0.5 * w).sum()


def test_gradient_of_a_gradient_through_mul_add_sub_matches_central_differences():
    main, g, p, dx, dw = _penalty_program()
    rng = np.random.RandomState(1)
    x, w = rng.uniform(-1, 1, (2, 3)), rng.uniform(-1, 1, 3)
    got_g, got_p, got_dx, got_dw = fluid.Executor(fluid.CPUPlace()).run(
        main, feed={"x": x, "w": w}, fetch_list=[g, p, dx, dw])
    np.testing.assert_allclose(got_g, 2 * x * w * w, rtol=1e-12)
    np.testing.assert_allclose(got_p, [_penalty(x, w)], rtol=1e-12)
    eps = 1e-6
    for value, got in ((x, got_dx), (w, got_dw)):
        want = np.zeros_like(value)
        for k in np.ndindex(value.shape):
            old = value[k]
            value[k] = old + eps
            up = _penalty(x, w)
            value[k] = old - eps
            down = _penalty(x, w)
            value[k] = old
            want[k] = (up - down) / (2 * eps)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_a_grad_op_without_a_gradient_on_the_path_is_refused_naming_it():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [3], "float32")
        x.stop_gradient = False
        g, = fluid.gradients(L.reduce_sum(L.elementwise_mul(L.relu(x), x)), x)
        with pytest.raises(NotImplementedError, match="'relu_grad'.*elementwise_mul_grad"):
            fluid.gradients(L.reduce_sum(g), x)
