"""README.md stays true for a new user (issue 14.8): its set-up commands, the Python it names, the code of
"Training on your own data", the LICENSE it relies on."""
import configparser
import pathlib
import re

import numpy as np

import minifluid as fluid

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _section(title):
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_set_up_is_two_commands_on_the_python_setup_cfg_requires():
    setup = _section("Set up on a new machine")
    commands = re.findall(r"```bash\n(.*?)```", setup, re.S)
    assert [c.strip() for c in commands] == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/python examples/train_digits.py",
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -q']
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["options"]["python_requires"] == ">=3.11" and "Python ≥ 3.11" in setup


def test_legacy_runs_and_tools_are_shown_with_the_venv_python():
    for line in re.findall(r"^(?:\.venv/bin/)?python3? [^\n]*$", README, re.M):
        assert line.startswith((".venv/bin/python", "python3 -m venv")), line


def test_the_license_file_is_the_one_setup_cfg_names():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["metadata"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


class _RecordingExecutor:
    """Stands for the user's Executor: records what each run was fed."""

    def __init__(self):
        self.feeds = []

    def run(self, program=None, feed=None, fetch_list=None):
        for one in feed if isinstance(feed, list) else [feed]:  # an iterable loader: one dict per place
            self.feeds.append({k: np.asarray(v).shape for k, v in one.items()})


def test_training_on_your_own_data_code_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", _section("Training on your own data"), re.S)
    exe = _RecordingExecutor()
    namespace = {"fluid": fluid, "np": np, "exe": exe, "loss": None,
                 "images": np.random.rand(80, 784).astype("float32"),
                 "labels": np.random.randint(0, 10, (80, 1)).astype("int64")}
    main_program = namespace["main_program"] = fluid.Program()
    with fluid.program_guard(main_program, fluid.Program()):
        exec(compile(code, "README.md", "exec"), namespace)
    batches = [{"image": (n, 784), "label": (n, 1)} for n in (32, 32, 16)]
    assert exe.feeds == batches + batches  # the generator loop, then the Dataset loop
