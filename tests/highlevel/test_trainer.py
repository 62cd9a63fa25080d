"""fluid.contrib.Trainer / Inferencer: event order and contents, test(), saving, checkpoints (issue 17.4)."""
import os

import numpy as np
import pytest

import minifluid as fluid
from minifluid.contrib import (BeginEpochEvent, BeginStepEvent, CheckpointConfig, EndEpochEvent, EndStepEvent,
                               Inferencer, Trainer)

RNG = np.random.RandomState(0)
XS = RNG.rand(12, 3).astype("float32")
YS = (XS @ np.array([[1.0], [-2.0], [0.5]], "float32") + 0.3).astype("float32")


def reader():
    for i in range(0, 12, 4):  # 3 batches of 4 samples
        yield [(XS[j], YS[j]) for j in range(i, i + 4)]


def infer_func():
    x = fluid.layers.data("x", [3])
    zero = fluid.initializer.Constant(0.0)  # deterministic training
    return fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr("w", initializer=zero),
                           bias_attr=fluid.ParamAttr("b", initializer=zero))


def train_func():
    y = fluid.layers.data("y", [1])
    pred = infer_func()
    loss = fluid.layers.reduce_mean(fluid.layers.square_error_cost(pred, y))
    return [loss, fluid.layers.reduce_mean(pred)]


def optimizer_func():
    return fluid.optimizer.SGD(learning_rate=0.1)


def _trainer(**kwargs):
    return Trainer(train_func, optimizer_func, place=fluid.CPUPlace(), **kwargs)


def test_events_come_in_order_with_the_fetched_metrics():
    trainer, events = _trainer(), []

    def handler(event):
        events.append(event)
        if isinstance(event, BeginStepEvent) and event.step == 1:
            event.fetch_metrics = False

    trainer.train(2, handler, reader, ["x", "y"])
    kinds = [(type(e).__name__, e.epoch, getattr(e, "step", None)) for e in events]
    expected = []
    for epoch in range(2):
        expected += [("BeginEpochEvent", epoch, None)]
        for step in range(3):
            expected += [("BeginStepEvent", epoch, step), ("EndStepEvent", epoch, step)]
        expected += [("EndEpochEvent", epoch, None)]
    assert kinds == expected
    ends = [e for e in events if isinstance(e, EndStepEvent)]
    assert [len(e.metrics) for e in ends] == [2, 0, 2] * 2  # step 1 asked for no fetch
    assert all(m.shape == (1,) for e in ends for m in e.metrics)
    assert ends[3].metrics[0][0] < ends[0].metrics[0][0]  # the loss on the same batch (step 0) went down


def test_stop_ends_training_before_the_next_step():
    trainer, events = _trainer(), []

    def handler(event):
        events.append(event)
        if isinstance(event, EndStepEvent) and event.step == 1:
            trainer.stop()

    trainer.train(5, handler, reader, {"y": 1, "x": 0})
    assert [type(e) for e in events] == [BeginEpochEvent] + [BeginStepEvent, EndStepEvent] * 2


def test_test_averages_each_output_on_the_test_program(tmp_path):
    trainer = _trainer()
    trainer.train(1, lambda e: None, reader, ["x", "y"])
    loss, mean_pred = trainer.test(reader, ["x", "y"])
    w = np.array(trainer.scope.find_var("w").get_tensor())
    b = np.array(trainer.scope.find_var("b").get_tensor())
    preds = XS @ w + b
    np.testing.assert_allclose(loss, np.mean([np.mean((preds[i:i + 4] - YS[i:i + 4]) ** 2) for i in (0, 4, 8)]),
                               rtol=1e-5)
    np.testing.assert_allclose(mean_pred, preds.mean(), rtol=1e-5)
    np.testing.assert_array_equal(np.array(trainer.scope.find_var("w").get_tensor()), w)  # test() trained nothing
    with pytest.raises(ValueError, match="permutation"):
        trainer.test(reader, {"x": 0, "y": 2})

    trainer.save_params(str(tmp_path / "params"))
    inferencer = Inferencer(infer_func, str(tmp_path / "params"), place=fluid.CPUPlace())
    out = inferencer.infer({"x": XS})
    np.testing.assert_allclose(out[0], preds, rtol=1e-5)
    with pytest.raises(ValueError, match="inputs should be a map"):
        inferencer.infer([XS])

    trainer.save_inference_model(str(tmp_path / "model"), ["x"], [1])
    assert os.path.isfile(tmp_path / "model" / "__model__")


def test_checkpoints_resume_after_the_last_saved_step(tmp_path):
    cfg = CheckpointConfig(str(tmp_path), max_num_checkpoints=2, step_interval=1)
    trainer, seen = _trainer(checkpoint_config=cfg), []

    def stop_after_epoch_0_step_1(event):
        if isinstance(event, EndStepEvent):
            seen.append((event.epoch, event.step))
            if (event.epoch, event.step) == (1, 1):
                raise KeyboardInterrupt  # a crash: the checkpoints stay
    with pytest.raises(KeyboardInterrupt):
        trainer.train(2, stop_after_epoch_0_step_1, reader, ["x", "y"])
    assert sorted(os.listdir(tmp_path)) == ["checkpoint_3", "checkpoint_4"]  # 5 saved, the newest 2 kept
    w_saved = np.array(trainer.scope.find_var("w").get_tensor())

    resumed, steps = _trainer(checkpoint_config=CheckpointConfig(str(tmp_path), step_interval=1)), []
    np.testing.assert_array_equal(np.array(resumed.scope.find_var("w").get_tensor()), w_saved)
    resumed.train(2, lambda e: steps.append((e.epoch, e.step)) if isinstance(e, EndStepEvent) else None,
                  reader, ["x", "y"])
    assert steps == [(1, 2)]
    assert os.listdir(tmp_path) == []  # a finished run removes its checkpoints
    with pytest.raises(ValueError, match="step_interval should be >= 1"):
        CheckpointConfig(step_interval=0)


def test_compat_module_paths(monkeypatch):
    from minifluid import compat
    compat.install()
    try:
        from paddle.fluid.contrib.trainer import Trainer as T1, EndStepEvent as E1
        from paddle.fluid.trainer import Trainer as T2
        from paddle.fluid.inferencer import Inferencer as I1
        from paddle.fluid.contrib.inferencer import Inferencer as I2
    finally:
        compat.uninstall()
    assert T1 is T2 is Trainer and I1 is I2 is Inferencer and E1 is EndStepEvent


def test_parallel_trainer_runs_on_cpu_num_places(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    trainer, metrics = _trainer(parallel=True), []
    trainer.train(1, lambda e: metrics.append(e.metrics) if isinstance(e, EndStepEvent) else None,
                  reader, ["x", "y"])
    # each place takes a whole batch: 3 batches on 2 places make one step (the odd one is dropped)
    assert len(metrics) == 1 and metrics[0][0].shape == (2,)  # a loss per place
