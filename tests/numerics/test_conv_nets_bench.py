"""tools/conv_nets.py (the LeNet / ResNet-20 lines of tools/bench_train.py) builds, trains and reports
(no speed is asserted: a 2-sample step's time means nothing)."""
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
import conv_nets  # noqa: E402


def test_both_nets_train_a_step_and_the_loss_falls_on_a_repeated_batch():
    for name in ("lenet", "resnet20"):
        step = conv_nets.minifluid_step(name, 4)
        losses = [step() for _ in range(4)]
        assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0], (name, losses)


def test_compare_reports_step_times_and_the_torch_line():
    result = conv_nets.compare("lenet", 4, 0, 2)
    assert result["minifluid_step_ms"] > 0 and result["batch"] == 4
    if str(result["torch"]).startswith("unavailable"):
        assert "speed_vs_torch" not in result
    else:
        assert result["speed_vs_torch"] > 0


def test_transpose_vs_conv_times_both_kernels_on_the_adjoint_shapes():
    result = conv_nets.transpose_vs_conv(1, shapes=(("tiny", (2, 3, 4, 4), (3, 2, 3, 3), 2, 1),))
    line = result["tiny"]
    assert line["conv2d_transpose_ms"] > 0 and line["conv2d_ms"] > 0 and line["ratio"] > 0


def test_profile_names_the_ops_of_a_step_and_their_times_fit_in_it():
    result = conv_nets.profile("lenet", 4, 2, top=20)
    mine = result["minifluid"]
    ops = mine["ops_ms"]
    assert {"conv2d", "conv2d_grad", "pool2d", "pool2d_grad", "sgd"} <= set(ops), ops
    assert all(ms >= 0 for ms in ops.values())
    assert 0 < sum(ops.values()) <= mine["step_ms"] * 1.01 + 0.2, mine  # ops run inside the step (rounding aside)
    assert list(ops.values()) == sorted(ops.values(), reverse=True)
