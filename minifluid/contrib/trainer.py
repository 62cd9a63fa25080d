"""``fluid.contrib.Trainer``: builds a program from ``train_func`` / ``optimizer_func`` and trains it,
calling an event handler around each epoch and step (the fluid book's high-level API).

Event order per epoch: ``BeginEpochEvent``, then for each batch ``BeginStepEvent`` (set its
``fetch_metrics`` False to skip fetching) and ``EndStepEvent`` (``metrics``: the fetched values of
``train_func``'s outputs, loss first), then ``EndEpochEvent``. ``stop()`` ends training before the next step.
Checkpoints (``CheckpointConfig``) are ``checkpoint_<serial>`` folders of persistables written with
``fluid.io.save_persistables``; a new Trainer resumes from the newest after its last saved step.
"""
import contextlib
import json
import os
import shutil

from .. import io
from ..data.feeder import DataFeeder
from ..executor import Executor, Scope, scope_guard
from ..framework import Program, program_guard, unique_name
from ..optimizer import Optimizer
from ..parallel_executor import ParallelExecutor
from ..places import CPUPlace, CUDAPlace, is_compiled_with_cuda

__all__ = ["Trainer", "BeginEpochEvent", "EndEpochEvent", "BeginStepEvent", "EndStepEvent", "CheckpointConfig"]

_CHECKPOINT_PREFIX, _SUCCESS, _TRAINER_ARGS = "checkpoint_", "_SUCCESS", "trainer_args.json"


class BeginEpochEvent:
    def __init__(self, epoch_id):
        self.epoch = epoch_id


class EndEpochEvent:
    def __init__(self, epoch_id):
        self.epoch = epoch_id


class BeginStepEvent:
    def __init__(self, epoch_id, step_id):
        self.epoch = epoch_id
        self.step = step_id
        self.fetch_metrics = True


class EndStepEvent:
    def __init__(self, epoch_id, step_id, metrics):
        self.epoch = epoch_id
        self.step = step_id
        self.metrics = metrics


class CheckpointConfig:
    """Where and how often the Trainer saves checkpoints (every ``step_interval`` steps of every
    ``epoch_interval``-th epoch), keeping the newest ``max_num_checkpoints``."""

    def __init__(self, checkpoint_dir=None, max_num_checkpoints=3, epoch_interval=1, step_interval=10):
        if epoch_interval < 1 or step_interval < 1:
            raise ValueError(f"CheckpointConfig: epoch_interval and step_interval should be >= 1, got "
                             f"{epoch_interval} and {step_interval}")
        self.checkpoint_dir = checkpoint_dir if checkpoint_dir is not None else os.getcwd()
        self.max_num_checkpoints = max_num_checkpoints
        self.epoch_interval = epoch_interval
        self.step_interval = step_interval
        self.epoch_id = 0
        self.step_id = 0
        self.load_serial = None


def check_and_get_place(place):
    if place is None:
        return CUDAPlace(0) if is_compiled_with_cuda() else CPUPlace()
    if not isinstance(place, (CPUPlace, CUDAPlace)):
        raise TypeError("Place should be either CUDAPlace or CPUPlace")
    return place


def build_feed_var_list(program, feed_order):
    """The feed variables in ``feed_order``: a list of names, or a dict name -> position."""
    if isinstance(feed_order, (list, tuple)):
        names = list(feed_order)
    elif isinstance(feed_order, dict):
        if sorted(feed_order.values()) != list(range(len(feed_order))):
            raise ValueError("The values of 'feed_order' should be a permutation of [0, len(feed_order))")
        names = sorted(feed_order, key=feed_order.get)
    else:
        raise TypeError(f"The 'feed_order' should be either None, list or dict, got {type(feed_order).__name__}")
    return [program.global_block().var(name) for name in names]


def _serials(checkpoint_dir):
    if not os.path.isdir(checkpoint_dir):
        return []
    found = []
    for entry in os.listdir(checkpoint_dir):
        tail = entry[len(_CHECKPOINT_PREFIX):]
        if entry.startswith(_CHECKPOINT_PREFIX) and tail.isdigit() and \
                os.path.isfile(os.path.join(checkpoint_dir, entry, _SUCCESS)):
            found.append(int(tail))
    return sorted(found)


class Trainer:
    """Trains ``train_func``'s first output (the loss) with ``optimizer_func()``'s optimizer."""

    def __init__(self, train_func, optimizer_func, param_path=None, place=None, parallel=False,
                 checkpoint_config=None):
        self._stop = False
        self.parallel = parallel
        self.trainer_id = 0
        if checkpoint_config is not None and not isinstance(checkpoint_config, CheckpointConfig):
            raise TypeError(f"checkpoint_config should be a CheckpointConfig, got {type(checkpoint_config).__name__}")
        self.checkpoint_cfg = checkpoint_config
        self.scope = Scope()
        self.startup_program, self.train_program = Program(), Program()
        # names fresh per Trainer, so a later Trainer (or an Inferencer) of the same functions matches its files
        with program_guard(self.train_program, self.startup_program), unique_name.guard():
            outputs = train_func()
            self.train_func_outputs = outputs if isinstance(outputs, list) else [outputs]
            self.test_program = self.train_program.clone(for_test=True)
            optimizer = optimizer_func()
            if not isinstance(optimizer, Optimizer):
                raise TypeError(f"The optimizer should be an instance of Optimizer, got {type(optimizer).__name__}")
            optimizer.minimize(self.train_func_outputs[0])
        self.place = check_and_get_place(place)
        with self._prog_and_scope_guard():
            exe = Executor(self.place)
            exe.run(self.startup_program)
            if self.checkpoint_cfg is not None:
                self._load_checkpoint(exe)
            if param_path and os.path.isdir(param_path):
                io.load_persistables(exe, dirname=param_path, main_program=self.startup_program)

    def stop(self):
        """End training before the next step (call it from the event handler)."""
        self._stop = True

    def train(self, num_epochs, event_handler, reader=None, feed_order=None):
        """``num_epochs`` passes over ``reader`` (a batched reader), feeding its fields to ``feed_order``."""
        with self._prog_and_scope_guard():
            feeder = DataFeeder(build_feed_var_list(self.train_program, feed_order), self.place)
            if self.parallel:
                exe = ParallelExecutor(use_cuda=isinstance(self.place, CUDAPlace),
                                       loss_name=self.train_func_outputs[0].name, main_program=self.train_program,
                                       scope=self.scope)
            else:
                exe = Executor(self.place)
            self._train_loop(event_handler, exe, num_epochs, feeder.decorate_reader(reader, self.parallel))

    def _train_loop(self, event_handler, exe, num_epochs, reader):
        cfg = self.checkpoint_cfg
        fetch_names = [var.name for var in self.train_func_outputs]
        for epoch_id in range(cfg.epoch_id if cfg else 0, num_epochs):
            event_handler(BeginEpochEvent(epoch_id))
            for step_id, data in enumerate(reader()):
                if self._stop:
                    if cfg:
                        self._clean_checkpoints()
                    return
                if cfg and cfg.load_serial is not None and epoch_id == cfg.epoch_id and step_id <= cfg.step_id:
                    continue  # done before the checkpoint this run resumed from
                begin = BeginStepEvent(epoch_id, step_id)
                event_handler(begin)
                metrics = self._run(exe, data, fetch_names if begin.fetch_metrics else [])
                if cfg and epoch_id % cfg.epoch_interval == 0 and step_id % cfg.step_interval == 0:
                    self._save_checkpoint(epoch_id, step_id)
                event_handler(EndStepEvent(epoch_id, step_id, metrics))
            event_handler(EndEpochEvent(epoch_id))
        if cfg:
            self._clean_checkpoints()

    def _run(self, exe, data, fetch_names):
        if isinstance(exe, ParallelExecutor):
            return exe.run(fetch_list=fetch_names, feed=data)
        return exe.run(self.train_program, feed=data, fetch_list=fetch_names)

    def test(self, reader, feed_order):
        """The mean of each of ``train_func``'s outputs over ``reader``'s batches, on the test program."""
        with scope_guard(self.scope):
            feeder = DataFeeder(build_feed_var_list(self.test_program, feed_order), self.place)
            exe = Executor(self.place)
            totals, count = [0.0] * len(self.train_func_outputs), 0
            for data in reader():
                outs = exe.run(self.test_program, feed=feeder.feed(data), fetch_list=self.train_func_outputs)
                totals = [total + out.reshape(-1)[0] for total, out in zip(totals, outs)]
                count += 1
            if count == 0:
                raise ValueError("Trainer.test: the reader gave no batch")
            return [total / count for total in totals]

    def save_params(self, param_path):
        """Every persistable variable of the train program into ``param_path`` (fluid.io.save_persistables)."""
        with self._prog_and_scope_guard():
            io.save_persistables(Executor(self.place), dirname=param_path)

    def save_inference_model(self, param_path, feeded_var_names, target_var_indexes):
        """An inference model of ``train_func``'s outputs at ``target_var_indexes``, fed ``feeded_var_names``."""
        with self._prog_and_scope_guard():
            targets = [self.train_func_outputs[index] for index in target_var_indexes]
            io.save_inference_model(param_path, feeded_var_names, targets, Executor(self.place))

    @contextlib.contextmanager
    def _prog_and_scope_guard(self):
        with program_guard(self.train_program, self.startup_program), scope_guard(self.scope):
            yield

    def _save_checkpoint(self, epoch_id, step_id):
        cfg = self.checkpoint_cfg
        serials = _serials(cfg.checkpoint_dir)
        folder = os.path.join(cfg.checkpoint_dir, f"{_CHECKPOINT_PREFIX}{(serials[-1] + 1) if serials else 0}")
        io.save_persistables(Executor(self.place), folder, self.train_program)
        with open(os.path.join(folder, _TRAINER_ARGS), "w") as f:
            json.dump({"epoch_id": epoch_id, "step_id": step_id}, f)
        open(os.path.join(folder, _SUCCESS), "w").close()
        self._clean_checkpoints(keep=cfg.max_num_checkpoints)

    def _load_checkpoint(self, exe):
        cfg = self.checkpoint_cfg
        serials = _serials(cfg.checkpoint_dir)
        if not serials:
            return
        cfg.load_serial = serials[-1]
        folder = os.path.join(cfg.checkpoint_dir, f"{_CHECKPOINT_PREFIX}{cfg.load_serial}")
        io.load_persistables(exe, folder, self.train_program)
        with open(os.path.join(folder, _TRAINER_ARGS)) as f:
            args = json.load(f)
        cfg.epoch_id, cfg.step_id = int(args["epoch_id"]), int(args["step_id"])

    def _clean_checkpoints(self, keep=0):
        serials = _serials(self.checkpoint_cfg.checkpoint_dir)
        for serial in serials[:max(len(serials) - keep, 0)]:
            shutil.rmtree(os.path.join(self.checkpoint_cfg.checkpoint_dir, f"{_CHECKPOINT_PREFIX}{serial}"))
