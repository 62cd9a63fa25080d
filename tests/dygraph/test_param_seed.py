"""Eager parameters are seeded by the main program's random_seed, as fluid's dygraph (dygraph/tracer.py)."""
import numpy as np

import minifluid as fluid


def test_with_a_main_program_seed_two_layers_start_equal():
    with fluid.dygraph.guard():
        fluid.default_main_program().random_seed = 1
        a, b = fluid.dygraph.Linear(5, 2), fluid.dygraph.Linear(5, 2)
        np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
        fluid.default_main_program().random_seed = 0  # unseeded: fresh draws
        c, d = fluid.dygraph.Linear(5, 2), fluid.dygraph.Linear(5, 2)
        assert not np.array_equal(c.weight.numpy(), d.weight.numpy())
