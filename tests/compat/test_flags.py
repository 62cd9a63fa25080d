"""fluid.set_flags / get_flags / core.globals(): fluid 1.8's public flags, their messages and effects."""
import os

import numpy as np
import pytest

import minifluid as fluid
from minifluid import flags as flag_module
from minifluid.data.queue import BlockingQueue


@pytest.fixture(autouse=True)
def clean_env():
    """No flag set before a test, and none left set after it (monkeypatch.delenv of an unset variable
    would not remove what set_flags sets)."""
    saved = {name: os.environ.pop(name) for name in flag_module.FLAGS if name in os.environ}
    yield
    for name in flag_module.FLAGS:
        os.environ.pop(name, None)
    os.environ.update(saved)


def test_speed_test_mode_set_through_set_flags_reaches_the_loader_queue():
    assert fluid.get_flags("FLAGS_reader_queue_speed_test_mode") == {"FLAGS_reader_queue_speed_test_mode": False}
    fluid.set_flags({"FLAGS_reader_queue_speed_test_mode": True})
    assert fluid.get_flags(["FLAGS_reader_queue_speed_test_mode"]) == {"FLAGS_reader_queue_speed_test_mode": True}
    queue = BlockingQueue(2)
    queue.push([np.ones(1)])
    first, again = queue.pop(), queue.pop()  # speed-test mode hands the batch out again instead of waiting
    assert first is not None and again is not None and np.array_equal(again[0], np.ones(1))


def test_core_globals_reads_and_writes_the_flag_environment(monkeypatch):
    flags = fluid.core.globals()
    assert flags.is_public("FLAGS_selected_gpus") and not flags.is_public("FLAGS_use_mkldnn")
    flags["FLAGS_selected_gpus"] = [1, 3]
    assert fluid.get_flags(("FLAGS_selected_gpus",)) == {"FLAGS_selected_gpus": "1,3"}
    assert os.environ["FLAGS_selected_gpus"] == "1,3"
    monkeypatch.setenv("FLAGS_paddle_num_threads", "4")
    assert flags["FLAGS_paddle_num_threads"] == 4


def test_fluids_other_public_flags_are_kept_with_their_types():
    assert fluid.get_flags(["FLAGS_eager_delete_tensor_gb", "FLAGS_allocator_strategy"]) == {
        "FLAGS_eager_delete_tensor_gb": 0.0, "FLAGS_allocator_strategy": "auto_growth"}
    fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 1, "FLAGS_fraction_of_gpu_memory_to_use": 0.5,
                     "FLAGS_cudnn_deterministic": True})
    got = fluid.get_flags(["FLAGS_eager_delete_tensor_gb", "FLAGS_fraction_of_gpu_memory_to_use",
                           "FLAGS_cudnn_deterministic"])
    assert got == {"FLAGS_eager_delete_tensor_gb": 1.0, "FLAGS_fraction_of_gpu_memory_to_use": 0.5,
                   "FLAGS_cudnn_deterministic": True}
    assert isinstance(got["FLAGS_eager_delete_tensor_gb"], float)


@pytest.mark.parametrize("call, error, message", [
    (lambda: fluid.set_flags({"FLAGS_use_mkldnn": True}), ValueError,
     "Flag FLAGS_use_mkldnn cannot set its value through this function."),
    (lambda: fluid.get_flags("FLAGS_no_such_flag"), ValueError,
     "Flag FLAGS_no_such_flag cannot get its value through this function."),
    (lambda: fluid.set_flags(["FLAGS_selected_gpus"]), TypeError, "flags in set_flags should be a dict"),
    (lambda: fluid.get_flags(3), TypeError, "Flags in get_flags should be a list, tuple or string."),
    (lambda: fluid.set_flags({"FLAGS_paddle_num_threads": "four"}), TypeError,
     "FLAGS_paddle_num_threads takes a int, got 'four'"),
    (lambda: fluid.set_flags({"FLAGS_benchmark": "yes"}), TypeError, "FLAGS_benchmark takes a bool, got 'yes'"),
])
def test_fluids_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


def test_a_malformed_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("FLAGS_initial_cpu_memory_in_mb", "lots")
    with pytest.raises(ValueError, match="FLAGS_initial_cpu_memory_in_mb='lots' is not a valid int"):
        fluid.get_flags("FLAGS_initial_cpu_memory_in_mb")
