"""examples/train_digits.py and tools/profile_loader.py as a new user meets them (issue 14.9)."""
import importlib.util
import json
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from minifluid.data.prefetch import ReadAheadStage
from minifluid.data.queue import BlockingQueue

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load(relative):
    spec = importlib.util.spec_from_file_location(pathlib.Path(relative).stem, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def train_digits():
    return _load("examples/train_digits.py")


def _run(*args, cwd):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=110)


@pytest.mark.parametrize("args, message", [
    (["--epochs", "0"], "argument --epochs: must be at least 1, got 0"),
    (["--epochs", "two"], "argument --epochs: must be an integer, got 'two'"),
    (["--batch-size", "0"], "argument --batch-size: must be at least 1, got 0"),
    (["--seed", "-1"], "argument --seed: must be at least 0, got -1"),
])
def test_bad_arguments_stop_with_argparse_messages(train_digits, capsys, args, message):
    with pytest.raises(SystemExit) as info:
        train_digits.parse_args(args)
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_plot_without_matplotlib_fails_before_training(train_digits, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(train_digits, "_matplotlib", lambda: None)
    monkeypatch.setattr(train_digits, "train", lambda *a, **k: pytest.fail("trained before checking --plot"))
    with pytest.raises(SystemExit) as info:
        train_digits.main(["--plot", str(tmp_path / "curves.png")])
    assert info.value.code == 2
    assert "--plot needs matplotlib, which is not installed: pip install matplotlib" in capsys.readouterr().err


def test_plot_has_axis_labels_titles_and_the_target_line(train_digits):
    pytest.importorskip("matplotlib")
    fig = train_digits.plot_curves({"mlp": ([0.9, 0.96], [0.8, 0.2])})
    ax_loss, ax_acc = fig.axes
    assert ax_loss.get_title() and ax_acc.get_title() == "Test accuracy"
    assert [ax.get_xlabel() for ax in fig.axes] == ["epoch", "epoch"]
    assert ax_loss.get_ylabel() and ax_acc.get_ylabel() == "accuracy"
    target = [line for line in ax_acc.lines if np.all(np.asarray(line.get_ydata()) == 0.95)]
    assert len(target) == 1 and "target" in target[0].get_label()


def test_progress_uses_tqdm_when_installed_and_plain_lines_otherwise(train_digits, monkeypatch):
    tqdm = pytest.importorskip("tqdm")
    epochs, say = train_digits._epochs_with_progress(3, "mlp")
    assert isinstance(epochs, tqdm.tqdm) and list(epochs) == [0, 1, 2] and say == tqdm.tqdm.write
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as without the `progress` extra
    epochs, say = train_digits._epochs_with_progress(3, "mlp")
    assert list(epochs) == [0, 1, 2] and say is print


@pytest.mark.timeout(120)
def test_a_short_run_says_why_it_fails_and_writes_nothing(tmp_path):
    # (two runs printing the same numbers: tests/numerics/test_examples.py's determinism test)
    proc = _run(ROOT / "examples" / "train_digits.py", "--epochs", "1", "--seed", "3", cwd=tmp_path)
    assert proc.returncode == 1
    assert "below the target test accuracy 0.95 after 1 epoch: train longer (--epochs)" in proc.stderr
    assert re.search(r"final test accuracy 0\.\d{4} \(1 epoch in \d+\.\d s\)", proc.stdout), proc.stdout
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_profile_loader_has_a_real_help(tmp_path):
    proc = _run(ROOT / "tools" / "profile_loader.py", "--help", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: python tools/profile_loader.py [-h] [--compat]")
    assert "--compat" in proc.stdout and "script" in proc.stdout
    missing = _run(ROOT / "tools" / "profile_loader.py", cwd=tmp_path)
    assert missing.returncode == 2 and "the following arguments are required: script" in missing.stderr


@pytest.mark.timeout(120)
def test_profile_loader_labels_train_and_test_loaders_and_keeps_occupancy_within_capacity(tmp_path):
    proc = _run(ROOT / "tools" / "profile_loader.py", ROOT / "examples" / "train_digits.py", "--epochs", "2",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    labels = sorted(result["loaders"])
    assert [label.split(" #")[0] for label in labels] == ["test loader", "train loader"], labels
    assert all("feeds image, label; created at " in label and "train_digits.py:" in label for label in labels)
    assert result["loaders"][labels[1]]["batches"] == 46 and result["loaders"][labels[0]]["batches"] == 12
    pairs = [(float(a), float(b)) for a, b in re.findall(r"mean occupancy ([\d.]+) of (\d+) batches", proc.stdout)]
    assert len(pairs) >= 5 and all(a <= b for a, b in pairs), pairs


def test_read_ahead_counts_its_slots_in_the_capacity():
    queue = BlockingQueue(4)
    for i in range(4):
        queue.push(i)
    stage = ReadAheadStage(queue)
    assert stage.get() == 0  # takes the other three ahead
    for i in range(4, 8):
        queue.push(i)  # the producer fills the queue again
    assert stage.occupancy() == 7 and stage.capacity() == 8 and stage.occupancy() <= stage.capacity()


def _documented_args(fn):
    """The parameter names ``fn``'s docstring covers in its Args section (``a, b, c: as for ...`` too)."""
    doc = fn.__doc__ or ""
    section = doc.split("Args:", 1)[1].split("Returns:")[0].split("Raises:")[0] if "Args:" in doc else ""
    return set(re.findall(r"\b([a-z_]+)\b(?=[^\n]*?(?:\(|:|,))", section))


def test_public_loader_and_io_methods_document_their_arguments():
    import inspect

    import minifluid as fluid
    from minifluid.data.loader import GeneratorLoader
    methods = [GeneratorLoader.set_sample_generator, GeneratorLoader.set_sample_list_generator,
               GeneratorLoader.set_batch_generator, fluid.io.PyReader.decorate_sample_generator,
               fluid.io.PyReader.decorate_sample_list_generator, fluid.io.PyReader.decorate_batch_generator,
               fluid.io.save_vars, fluid.io.load_vars, fluid.io.save_params, fluid.io.load_params,
               fluid.io.save_persistables, fluid.io.load_persistables, fluid.io.save_inference_model,
               fluid.io.load_inference_model, fluid.io.save, fluid.io.load]
    for fn in methods:
        params = [p for p in inspect.signature(fn).parameters if p != "self"]
        missing = set(params) - _documented_args(fn)
        assert not missing, f"{fn.__qualname__}'s docstring does not describe {sorted(missing)}"
    for fn in (GeneratorLoader.start, GeneratorLoader.reset, fluid.io.PyReader.start, fluid.io.PyReader.reset):
        assert fn.__doc__ and len(fn.__doc__.split()) >= 8, fn.__qualname__
