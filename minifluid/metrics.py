"""``fluid.metrics``: Python-side accumulators of per-batch results (fluid 1.8's classes and messages).

Each ``update`` is a few numpy calls over the whole batch; ``eval`` reads the accumulated state and
``reset`` clears it (every public attribute back to zero).
"""
import copy

import numpy as np

__all__ = ["MetricBase", "CompositeMetric", "Precision", "Recall", "Accuracy", "ChunkEvaluator", "EditDistance",
           "Auc", "DetectionMAP"]


def _is_numpy(value):
    return isinstance(value, (np.ndarray, np.generic))


def _is_number(value):
    return (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)) or \
        (isinstance(value, np.ndarray) and value.shape == (1,))


def _is_number_or_matrix(value):
    return _is_number(value) or isinstance(value, np.ndarray)


def _require_numpy(value, what):
    if not _is_numpy(value):
        raise ValueError(f"The '{what}' must be a numpy ndarray.")


class MetricBase:
    """Base of the metrics: its public attributes are the state ``reset`` zeroes and ``get_config`` reports."""

    def __init__(self, name):
        self._name = str(name) if name is not None else self.__class__.__name__

    def __str__(self):
        return self._name

    def _states(self):
        return {attr: value for attr, value in self.__dict__.items() if not attr.startswith("_")}

    def reset(self):
        """Every state back to zero (ints to 0, floats to 0.0, arrays to zeros of their shape)."""
        for attr, value in self._states().items():
            if isinstance(value, int):
                setattr(self, attr, 0)
            elif isinstance(value, float):
                setattr(self, attr, 0.0)
            elif _is_numpy(value):
                setattr(self, attr, np.zeros_like(value))
            else:
                setattr(self, attr, None)

    def get_config(self):
        """``{"name": ..., "states": a deep copy of the public attributes}``."""
        return {"name": self._name, "states": copy.deepcopy(self._states())}

    def update(self, preds, labels):
        raise NotImplementedError("Should not use it directly, please extend it.")

    def eval(self):
        raise NotImplementedError("Should not use it directly, please extend it.")


class CompositeMetric(MetricBase):
    """Several metrics updated with the same ``(preds, labels)``; ``eval`` lists their results in order."""

    def __init__(self, name=None):
        super().__init__(name)
        self._metrics = []

    def add_metric(self, metric):
        if not isinstance(metric, MetricBase):
            raise ValueError("SubMetric should be inherit from MetricBase.")
        self._metrics.append(metric)

    def update(self, preds, labels):
        for metric in self._metrics:
            metric.update(preds, labels)

    def eval(self):
        return [metric.eval() for metric in self._metrics]

    def reset(self):
        for metric in self._metrics:
            metric.reset()


def _binary_pairs(preds, labels):
    """Rounded predictions and labels of a binary classifier, one per sample."""
    _require_numpy(preds, "preds")
    _require_numpy(labels, "labels")
    count = labels.shape[0]
    preds, labels = np.rint(preds).astype("int32"), np.asarray(labels)
    if preds.size != count or labels.size != count:
        raise ValueError(f"preds and labels should hold one value per sample: {count} samples, got preds of shape "
                         f"{preds.shape} and labels of shape {labels.shape}")
    return preds.reshape(count), labels.reshape(count)


class Precision(MetricBase):
    """tp / (tp + fp) of a binary classifier; predictions are rounded to 0/1."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds, labels):
        preds, labels = _binary_pairs(preds, labels)
        positive = preds == 1
        hits = int(np.count_nonzero(positive & (labels == 1)))
        self.tp += hits
        self.fp += int(np.count_nonzero(positive)) - hits

    def eval(self):
        predicted = self.tp + self.fp
        return float(self.tp) / predicted if predicted != 0 else 0.0


class Recall(MetricBase):
    """tp / (tp + fn) of a binary classifier; predictions are rounded to 0/1."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds, labels):
        preds, labels = _binary_pairs(preds, labels)
        actual = labels == 1
        hits = int(np.count_nonzero(actual & (preds == 1)))
        self.tp += hits
        self.fn += int(np.count_nonzero(actual)) - hits

    def eval(self):
        actual = self.tp + self.fn
        return float(self.tp) / actual if actual != 0 else 0.0


class Accuracy(MetricBase):
    """The weighted mean of per-batch accuracies: ``update(value, weight)`` with weight = batch size."""

    def __init__(self, name=None):
        super().__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value, weight):
        if not _is_number_or_matrix(value):
            raise ValueError("The 'value' must be a number(int, float) or a numpy ndarray.")
        if not _is_number(weight):
            raise ValueError("The 'weight' must be a number(int, float).")
        if weight < 0:
            raise ValueError("The 'weight' can not be negative")
        self.value += value * weight
        self.weight += weight

    def eval(self):
        if self.weight == 0:
            raise ValueError("There is no data in Accuracy Metrics. Please check layers.accuracy output has added "
                             "to Accuracy.")
        return self.value / self.weight


class ChunkEvaluator(MetricBase):
    """Precision, recall and F1 over chunks, from the counts ``fluid.layers.chunk_eval`` outputs per batch."""

    def __init__(self, name=None):
        super().__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks, num_label_chunks, num_correct_chunks):
        for what, value in (("num_infer_chunks", num_infer_chunks), ("num_label_chunks", num_label_chunks),
                            ("num_correct_chunks", num_correct_chunks)):
            if not _is_number_or_matrix(value):
                raise ValueError(f"The '{what}' must be a number(int) or a numpy ndarray.")
        self.num_infer_chunks += num_infer_chunks
        self.num_label_chunks += num_label_chunks
        self.num_correct_chunks += num_correct_chunks

    def eval(self):
        """``(precision, recall, f1_score)``; 0 where a denominator is 0."""
        correct = float(np.sum(self.num_correct_chunks))
        infer, label = float(np.sum(self.num_infer_chunks)), float(np.sum(self.num_label_chunks))
        precision = correct / infer if infer else 0
        recall = correct / label if label else 0
        f1_score = 2 * precision * recall / (precision + recall) if correct else 0
        return precision, recall, f1_score


class EditDistance(MetricBase):
    """Mean edit distance and the share of sequences with any error, from ``layers.edit_distance`` outputs."""

    def __init__(self, name):
        super().__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances, seq_num):
        _require_numpy(distances, "distances")
        if not _is_number(seq_num):
            raise ValueError("The 'seq_num' must be a number(int, float).")
        seq_num = int(np.sum(seq_num))
        self.seq_num += seq_num
        self.instance_error += seq_num - int(np.count_nonzero(distances == 0))
        self.total_distance += float(np.sum(distances))

    def eval(self):
        """``(avg_distance, avg_instance_error)``."""
        if self.seq_num == 0:
            raise ValueError("There is no data in EditDistance Metric. Please check layers.edit_distance output "
                             "has been added to EditDistance.")
        return self.total_distance / self.seq_num, self.instance_error / float(self.seq_num)


class Auc(MetricBase):
    """Area under the ROC curve of a binary classifier from ``preds[:, 1]`` (the positive class's
    probability), bucketed into ``num_thresholds + 1`` bins as fluid's ``auc`` op does."""

    def __init__(self, name, curve="ROC", num_thresholds=4095):
        super().__init__(name=name)
        self._curve = curve
        self._num_thresholds = num_thresholds
        self._stat_pos = np.zeros(num_thresholds + 1)
        self._stat_neg = np.zeros(num_thresholds + 1)

    def update(self, preds, labels):
        _require_numpy(labels, "labels")
        _require_numpy(preds, "predictions")
        labels = np.asarray(labels).reshape(-1)
        scores = np.asarray(preds)[:, 1]
        if scores.shape[0] != labels.shape[0]:
            raise ValueError(f"Auc: {scores.shape[0]} predictions for {labels.shape[0]} labels")
        if scores.size and (scores.min() < 0 or scores.max() > 1):
            raise ValueError(f"Auc: preds[:, 1] should be probabilities in [0, 1], got values in "
                             f"[{scores.min()}, {scores.max()}]")
        bins = (scores * self._num_thresholds).astype(np.int64)
        positive = labels.astype(bool)
        size = self._num_thresholds + 1
        self._stat_pos += np.bincount(bins[positive], minlength=size)
        self._stat_neg += np.bincount(bins[~positive], minlength=size)

    def reset(self):
        """Clears the bucket counts too (fluid 1.8's reset left them)."""
        super().reset()
        self._stat_pos[:] = 0
        self._stat_neg[:] = 0

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def eval(self):
        """The area, walking the thresholds from the highest bucket down; 0.0 without both classes."""
        pos, neg = self._stat_pos[::-1], self._stat_neg[::-1]
        tot_pos, tot_neg = np.cumsum(pos), np.cumsum(neg)
        if tot_pos[-1] <= 0 or tot_neg[-1] <= 0:
            return 0.0
        area = float(np.sum(neg * (2 * tot_pos - pos)) / 2.0)
        return area / tot_pos[-1] / tot_neg[-1]


class DetectionMAP:
    """fluid 1.8's DetectionMAP: builds, in the current program, the mAP of this batch and the mAP accumulated
    since the last ``reset`` (detection_map ops sharing persistable PosCount / TruePos / FalsePos states and a
    ``has_state`` flag). ``get_map_var()`` returns the two Variables to fetch; ``reset(executor)`` starts the
    accumulation again."""

    def __init__(self, input, gt_label, gt_box, gt_difficult=None, class_num=None, background_label=0,
                 overlap_threshold=0.5, evaluate_difficult=True, ap_version="integral"):
        from . import layers, unique_name
        from .initializer import Constant
        from .layers.helper import LayerHelper
        self.helper = LayerHelper("map_eval")
        gt_label = layers.cast(x=gt_label, dtype=gt_box.dtype)
        parts = [gt_label] if gt_difficult is None else [gt_label, layers.cast(x=gt_difficult, dtype=gt_box.dtype)]
        label = layers.concat(parts + [gt_box], axis=1)
        common = dict(overlap_threshold=overlap_threshold, evaluate_difficult=evaluate_difficult,
                      ap_version=ap_version)
        self.cur_map = layers.detection_map(input, label, class_num, background_label, **common)

        def state(suffix, dtype, shape=None):
            return self.helper.create_variable(name="_".join([unique_name.generate(self.helper.name), suffix]),
                                               persistable=True, dtype=dtype, shape=shape)
        states = [state("accum_pos_count", "int32", [class_num, 1]), state("accum_true_pos", "float32", [1, 2]),
                  state("accum_false_pos", "float32", [1, 2])]
        self.has_state = state("has_state", "int32", [1])
        for var in states + [self.has_state]:  # the states are read only once has_state is 1; they need a value
            self.helper.set_variable_initializer(var, initializer=Constant(value=0))
        self.accum_map = layers.detection_map(input, label, class_num, background_label, has_state=self.has_state,
                                              input_states=states, out_states=states, **common)
        layers.fill_constant(shape=self.has_state.shape, value=1, dtype=self.has_state.dtype, out=self.has_state)

    def get_map_var(self):
        """(the current batch's mAP, the accumulated mAP)."""
        return self.cur_map, self.accum_map

    def reset(self, executor, reset_program=None):
        """Clear the accumulation: runs a program setting ``has_state`` to 0 (in ``reset_program`` if given)."""
        from . import layers
        from .framework import Program, program_guard
        if reset_program is None:
            reset_program = Program()
        with program_guard(main_program=reset_program):
            v = self.has_state
            var = reset_program.current_block().create_var(name=v.name, shape=v.shape, dtype=v.dtype,
                                                           persistable=v.persistable)
            layers.fill_constant(shape=var.shape, value=0, dtype=var.dtype, out=var)
        executor.run(reset_program)
