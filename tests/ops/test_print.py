"""fluid.layers.Print: prints the value (and the gradient) when the program runs, returns it unchanged."""
import numpy as np
import pytest

import minifluid as fluid


def _program(**print_args):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3])
        h = fluid.layers.fc(x, 3, bias_attr=False)
        shown = fluid.layers.Print(h, **print_args)
        loss = fluid.layers.mean(shown)
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, h, shown, loss


def test_print_shows_value_and_gradient_and_passes_the_value_on(capsys):
    main, startup, h, shown, loss = _program(message="after fc", summarize=4)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    value, printed_value = exe.run(main, feed={"x": x}, fetch_list=[h, shown], scope=scope)
    np.testing.assert_array_equal(value, printed_value)
    out = capsys.readouterr().out
    assert f"after fc Variable: {h.name}\n  - shape: [2, 3]\n  - dtype: float32\n  - data: " in out
    first_values = " ".join(str(v) for v in value.reshape(-1)[:4].tolist())
    assert f"  - data: {first_values} ..." in out
    assert f"after fc Variable: {h.name}@GRAD" in out and "0.16666" in out  # d mean / d h = 1/6


def test_first_n_and_print_phase(capsys):
    main, startup, h, shown, loss = _program(first_n=2, print_phase="forward")
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(4):
        exe.run(main, feed={"x": np.ones((1, 3), "float32")}, scope=scope)
    out = capsys.readouterr().out
    assert out.count("Variable:") == 2 and "@GRAD" not in out
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        with pytest.raises(ValueError, match="print_phase must be"):
            fluid.layers.Print(fluid.data("y", [None, 1]), print_phase="sometimes")
