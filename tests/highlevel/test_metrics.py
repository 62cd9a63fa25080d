"""fluid.metrics: update / eval / reset against hand-computed values (issue 17.2)."""
import numpy as np
import pytest

import minifluid as fluid
from minifluid import metrics

PREDS = np.array([[0.9], [0.8], [0.7], [0.6], [0.1]], dtype="float32")  # rounded: 1 1 1 1 0
LABELS = np.array([[1], [0], [0], [1], [1]], dtype="int64")


def test_precision_and_recall():
    precision, recall = metrics.Precision(), metrics.Recall()
    precision.update(PREDS, LABELS)
    recall.update(PREDS, LABELS)
    assert (precision.tp, precision.fp) == (2, 2) and precision.eval() == 0.5
    assert (recall.tp, recall.fn) == (2, 1) and recall.eval() == pytest.approx(2 / 3)
    precision.update(np.array([1.0, 0.0]), np.array([1, 1]))  # 1-D batches too: one more tp
    assert precision.eval() == pytest.approx(3 / 5)
    precision.reset()
    assert (precision.tp, precision.fp, precision.eval()) == (0, 0, 0.0)
    with pytest.raises(ValueError, match="The 'preds' must be a numpy ndarray."):
        precision.update([1], np.array([1]))
    with pytest.raises(ValueError, match="one value per sample"):
        recall.update(np.ones((2, 2)), np.ones((2, 1)))


def test_accuracy_is_the_weighted_mean():
    acc = fluid.metrics.Accuracy()
    acc.update(value=0.5, weight=4)
    acc.update(value=np.array([1.0]), weight=2)
    np.testing.assert_allclose(acc.eval(), [4 / 6])  # an array, as the fed value was
    acc.reset()
    assert (acc.value, acc.weight) == (0.0, 0.0)
    with pytest.raises(ValueError, match="There is no data in Accuracy Metrics"):
        acc.eval()
    with pytest.raises(ValueError, match="The 'weight' can not be negative"):
        acc.update(0.5, -1)
    with pytest.raises(ValueError, match="The 'weight' must be a number"):
        acc.update(0.5, "3")


def test_chunk_evaluator():
    chunks = metrics.ChunkEvaluator()
    chunks.update(5, 4, 3)
    chunks.update(np.array([2]), np.array([4]), np.array([1]))
    precision, recall, f1 = chunks.eval()
    assert precision == pytest.approx(4 / 7) and recall == pytest.approx(4 / 8)
    assert f1 == pytest.approx(2 * (4 / 7) * 0.5 / (4 / 7 + 0.5))
    chunks.reset()
    assert chunks.eval() == (0, 0, 0)


def test_edit_distance():
    distance = metrics.EditDistance("ed")
    distance.update(np.array([[0.0], [2.0], [1.0]]), 3)
    distance.update(np.array([[0.0]]), 1)
    assert distance.eval() == (pytest.approx(3 / 4), pytest.approx(2 / 4))
    assert str(distance) == "ed" and distance.get_config()["states"]["seq_num"] == 4
    distance.reset()
    with pytest.raises(ValueError, match="There is no data in EditDistance Metric"):
        distance.eval()


def test_auc_counts_pairs_with_ties_as_half():
    auc = metrics.Auc("auc", num_thresholds=4)
    scores = np.array([0.9, 0.6, 0.3, 0.1])
    auc.update(np.stack([1 - scores, scores], 1), np.array([[1], [0], [1], [0]]))
    assert auc.eval() == pytest.approx(3 / 4)  # of the 4 (pos, neg) pairs only (0.3, 0.6) is misordered
    scores = np.array([0.55, 0.65])  # both in bucket 2, with the earlier 0.6: ties
    auc.update(np.stack([1 - scores, scores], 1), np.array([1, 0]))
    # 9 pairs: bucket 3 beats 3 negatives, bucket 1 beats 1, bucket 2 beats 1 and ties 2 (half each)
    assert auc.eval() == pytest.approx((3 + 1 + 1 + 1) / 9)
    auc.reset()
    assert auc.eval() == 0.0
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        auc.update(np.array([[0.0, 1.5]]), np.array([1]))


def test_composite_metric():
    composite = metrics.CompositeMetric()
    composite.add_metric(metrics.Precision())
    composite.add_metric(metrics.Recall())
    composite.update(PREDS, LABELS)
    assert composite.eval() == [0.5, pytest.approx(2 / 3)]
    composite.reset()
    assert composite.eval() == [0.0, 0.0]
    with pytest.raises(ValueError, match="SubMetric should be inherit from MetricBase."):
        composite.add_metric(object())


def test_metric_base_is_abstract():
    base = metrics.MetricBase(None)
    assert str(base) == "MetricBase"
    with pytest.raises(NotImplementedError, match="Should not use it directly"):
        base.update(None, None)
