"""fluid.contrib.memory_usage: the bytes a program's ops write at a batch size, as a 5-10% range."""
import pytest

import minifluid as fluid


def _program():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 13], "float32")
        y = fluid.layers.fc(x, 1)  # fc: mul [N, 1] + elementwise_add [N, 1] (float32)
        fluid.layers.mean(fluid.layers.cast(y, "float64"))  # cast [N, 1] float64, mean [1] float64
    return main


@pytest.mark.parametrize("batch, unit", [(10, "B"), (1000, "KB"), (100000, "MB")])
def test_memory_usage_counts_each_output_once_with_the_batch(batch, unit):
    total = batch * 4 * 2 + batch * 8 + 8
    low, high, got_unit = fluid.contrib.memory_usage(_program(), batch_size=batch)
    scale = {"B": 1, "KB": 1024, "MB": 1024 ** 2}[unit]
    assert got_unit == unit
    assert low == pytest.approx(total / scale * 1.05) and high == pytest.approx(total / scale * 1.1)


def test_memory_usage_checks_its_arguments():
    with pytest.raises(TypeError, match="requires Program"):
        fluid.contrib.memory_usage("main", 10)
    with pytest.raises(ValueError, match="positive"):
        fluid.contrib.memory_usage(_program(), 0)
