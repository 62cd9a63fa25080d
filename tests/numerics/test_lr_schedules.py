"""fluid.layers.exponential_decay / natural_exp_decay / inverse_time_decay / piecewise_decay / noam_decay /
polynomial_decay / cosine_decay / linear_lr_warmup: the rate fetched at each step is fluid 1.8's formula, and
SGD moves the weight by exactly it."""
import math

import numpy as np
import pytest

import minifluid as fluid

SCHEDULES = {
    "exponential": (lambda: fluid.layers.exponential_decay(0.1, 2, 0.5), lambda s: 0.1 * 0.5 ** (s / 2)),
    "exponential-staircase": (lambda: fluid.layers.exponential_decay(0.1, 2, 0.5, staircase=True),
                              lambda s: 0.1 * 0.5 ** (s // 2)),
    "natural_exp": (lambda: fluid.layers.natural_exp_decay(0.1, 3, 0.5), lambda s: 0.1 * math.exp(-0.5 * s / 3)),
    "inverse_time": (lambda: fluid.layers.inverse_time_decay(0.1, 2, 0.5), lambda s: 0.1 / (1 + 0.5 * s / 2)),
    "piecewise": (lambda: fluid.layers.piecewise_decay([2, 5], [1.0, 0.5, 0.1]),
                  lambda s: 1.0 if s < 2 else 0.5 if s < 5 else 0.1),
    # noam counts from 1: min(s ** -0.5, s * 4 ** -1.5) rises until s = 4, then falls
    "noam": (lambda: fluid.layers.noam_decay(16, 4, learning_rate=2.0),
             lambda s: 2.0 * 16 ** -0.5 * min((s + 1) ** -0.5, (s + 1) * 4 ** -1.5)),
    "polynomial": (lambda: fluid.layers.polynomial_decay(0.1, 5, end_learning_rate=0.01, power=2.0),
                   lambda s: (0.1 - 0.01) * (1 - min(s, 5) / 5) ** 2 + 0.01),
    # cycle: decay_steps becomes 3 * ceil(s / 3) (3 at step 0), so the rate jumps back up after 3 and 6
    "polynomial-cycle": (lambda: fluid.layers.polynomial_decay(0.1, 3, end_learning_rate=0.01, power=1.5, cycle=True),
                         lambda s: (0.1 - 0.01) * (1 - s / (3 * max(math.ceil(s / 3), 1))) ** 1.5 + 0.01),
    "cosine": (lambda: fluid.layers.cosine_decay(0.1, 3, 4),
               lambda s: 0.1 * 0.5 * (math.cos((s // 3) * math.pi / 4) + 1)),
    "warmup": (lambda: fluid.layers.linear_lr_warmup(0.1, 3, 0.01, 0.07),
               lambda s: 0.01 + (0.07 - 0.01) * s / 3 if s < 3 else 0.1),
    # warm-up in front of another schedule: both read the one counter
    "warmup-of-piecewise": (lambda: fluid.layers.linear_lr_warmup(fluid.layers.piecewise_decay([5], [1.0, 0.5]),
                                                                  2, 0.0, 0.2),
                            lambda s: 0.1 * s if s < 2 else 1.0 if s < 5 else 0.5),
}


def _model(schedule):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 2])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1, bias_attr=False))
        lr = schedule()
        fluid.optimizer.SGD(lr).minimize(loss)
    return main, startup, lr


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_gives_fluids_rate_at_each_step_and_sgd_uses_it(name):
    build, expected = SCHEDULES[name]
    main, startup, lr = _model(build)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((4, 2), "float32")}  # d loss / d w = mean(x) = 1 per weight
    for step in range(8):
        before = np.array(scope.find_var("fc_0.w_0").get_tensor()).copy()
        (rate,) = exe.run(main, feed=feed, fetch_list=[lr], scope=scope)
        after = np.array(scope.find_var("fc_0.w_0").get_tensor())
        assert float(rate) == pytest.approx(expected(step), rel=1e-5), step
        np.testing.assert_allclose(before - after, expected(step), rtol=1e-4)


def test_running_the_test_clone_does_not_advance_the_schedule():
    main, startup, lr = _model(SCHEDULES["piecewise"][0])
    test = main.clone(for_test=True)
    assert "increment" not in [op.type for op in test.global_block().ops]
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((4, 2), "float32")}
    rates = []
    for _ in range(6):
        rates.append(float(exe.run(main, feed=feed, fetch_list=[lr], scope=scope)[0]))
        for _ in range(3):
            exe.run(test, feed=feed, scope=scope)
    np.testing.assert_allclose(rates, [1.0, 1.0, 0.5, 0.5, 0.5, 0.1], rtol=1e-6)


def test_data_parallel_counts_one_step_per_run():
    main, startup, lr = _model(SCHEDULES["piecewise"][0])
    compiled = fluid.CompiledProgram(main).with_data_parallel(places=fluid.cpu_places(2))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": np.ones((4, 2), "float32")}
    for _ in range(6):
        exe.run(compiled, feed=feed, scope=scope)
    assert int(np.array(scope.find_var("@LR_DECAY_COUNTER@").get_tensor())[0]) == 5


def test_piecewise_decay_checks_its_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match="len\\(values\\) == len\\(boundaries\\) \\+ 1"):
            fluid.layers.piecewise_decay([2, 5], [1.0, 0.5])
        with pytest.raises(ValueError, match="increasing boundaries"):
            fluid.layers.piecewise_decay([5, 2], [1.0, 0.5, 0.1])


def test_noam_decay_counts_from_one_on_its_own_counter():
    main, startup, lr = _model(lambda: fluid.layers.noam_decay(16, 4))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, feed={"x": np.ones((4, 2), "float32")}, fetch_list=[lr], scope=scope)
    assert int(np.array(scope.find_var("@LR_DECAY_COUNTER@").get_tensor())[0]) == 1


def test_polynomial_decay_holds_the_end_rate_and_reaches_it_exactly():
    main, startup, lr = _model(lambda: fluid.layers.polynomial_decay(0.5, 2, end_learning_rate=0.125, power=0.5))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    rates = [float(exe.run(main, feed={"x": np.ones((1, 2), "float32")}, fetch_list=[lr], scope=scope)[0])
             for _ in range(5)]
    assert rates[2:] == [0.125, 0.125, 0.125]  # no NaN from a negative base under the power once past decay_steps


@pytest.mark.parametrize("build, api", [
    (lambda: fluid.layers.cosine_decay("0.1", 3, 4), "cosine_decay"),
    (lambda: fluid.layers.linear_lr_warmup([0.1], 3, 0.0, 0.1), "linear_lr_warmup"),
    (lambda: fluid.layers.polynomial_decay(None, 3), "polynomial_decay"),
    (lambda: fluid.layers.noam_decay(16, 4, learning_rate=True), "noam_decay"),
])
def test_schedules_check_the_learning_rate_type(build, api):
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(TypeError, match=f"The type of 'learning_rate' in {api} must be \\(float, Variable\\)"):
            build()
