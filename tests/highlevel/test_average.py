"""fluid.average.WeightedAverage: fluid's running weighted mean, with fetched [1]-shaped values."""
import numpy as np
import pytest

import minifluid as fluid


def test_weighted_mean_of_numbers_and_fetched_values():
    with pytest.warns(Warning, match="The WeightedAverage is deprecated, please use fluid.metrics.Accuracy"):
        avg = fluid.average.WeightedAverage()
    avg.add(value=2.0, weight=1)
    avg.add(value=4.0, weight=2)
    assert avg.eval() == pytest.approx(10 / 3)
    avg.reset()
    acc, size = np.array([0.5], "float32"), np.array([64], "int64")  # exe.run's fetches of acc and batch size
    avg.add(acc, size)
    avg.add(np.array([1.0], "float32"), np.array([32], "int64"))
    assert avg.eval() == pytest.approx([(0.5 * 64 + 32) / 96])
    assert acc[0] == 0.5 and size[0] == 64  # the caller's arrays stay as they were


@pytest.mark.filterwarnings("ignore:The WeightedAverage is deprecated")
def test_matrices_average_elementwise_and_errors():
    avg = fluid.average.WeightedAverage()
    avg.add(np.array([[1.0, 2.0]]), 3)
    avg.add(np.array([[3.0, 6.0]]), 1)
    np.testing.assert_allclose(avg.eval(), [[1.5, 3.0]])
    with pytest.raises(ValueError, match="The 'value' must be a number"):
        avg.add("0.5", 1)
    with pytest.raises(ValueError, match="The 'weight' must be a number"):
        avg.add(1.0, np.array([1, 2]))
    avg.reset()
    with pytest.raises(ValueError, match="There is no data to be averaged in WeightedAverage."):
        avg.eval()
