"""tools/bench_loader.py --quick runs end to end and prints one JSON line with every section's keys
(no speed is asserted: the numbers of a quick run mean nothing)."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KEYS = [
    # light (the original fields)
    "bare_sample_bps", "bare_batch_bps", "bare_sample_plus_run_bps", "iterable_sample_bps", "non_iterable_sample_bps",
    "iterable_batch_bps", "non_iterable_batch_bps", "non_iterable_sample_verdict", "iterable_sample_vs_bare",
    "non_iterable_sample_vs_bare", "iterable_batch_us_per_batch", "non_iterable_batch_us_per_batch",
    # the dataset DataLoader next to from_generator
    "dataset_sample_bps", "dataset_2workers_sample_bps", "dataset_vs_from_generator",
    # heavy reader
    "heavy_loops_per_sample", "heavy_sample_ms", "cpu_parallel_ceiling", "heavy_thread_sps", "heavy_multiprocess_sps",
    "heavy_multiprocess_vs_thread", "heavy_dataset_0workers_sps", "heavy_dataset_2workers_sps",
    "heavy_dataset_2workers_vs_0workers", "heavy_thread_vs_one_process", "heavy_multiprocess_vs_thread_best_of",
    "heavy_dataset_2workers_vs_0workers_best_of", "heavy_rounds", "light_rounds",
    "heavy_dataset_0workers_no_thread_sps", "heavy_dataset_2workers_vs_0workers_no_thread",
    "heavy_multiprocess_vs_two_processes", "heavy_dataset_2workers_vs_two_processes",
    "heavy_multiprocess_vs_thread_ceiling", "heavy_dataset_2workers_vs_0workers_ceiling",
    "forked_child_vs_parent_speed",
    # large samples
    "large_multiprocess_batch_gen_MBps", "large_multiprocess_sample_gen_MBps", "large_memcpy_MBps",
    "large_memcpy_one_buffer_MBps", "large_memcpy_destination", "large_multiprocess_vs_memcpy",
    "large_dataset_2workers_MBps", "large_dataset_2workers_vs_memcpy", "large_multiprocess_vs_memcpy_best_of",
    "large_rounds",
    # start-up
    "first_batch_ms_multiprocess", "first_batch_ms_dataset_2workers", "multiprocess_transport_cpu_us_per_batch",
    "batch_copy_us_per_batch",
    "torch", "targets_met", "target_round_ratios", "seconds",
]


@pytest.mark.timeout(120)
def test_quick_benchmark_prints_one_json_line_with_every_key():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "bench_loader.py"), "--quick"],
                          capture_output=True, text=True, timeout=110, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    result = json.loads(lines[0])
    assert [k for k in KEYS if k not in result] == []
    assert result["quick"] is True
    if not str(result["torch"]).startswith("unavailable"):
        assert "torch_heavy_2workers_sps" in result and "torch_large_2workers_MBps" in result
    assert all(isinstance(v, bool) for v in result["targets_met"].values())
    assert sorted(result["target_round_ratios"]) == sorted(
        ["iterable_sample_vs_bare", "non_iterable_sample_vs_bare", "heavy_multiprocess_vs_thread",
         "heavy_dataset_2workers_vs_0workers", "large_multiprocess_vs_memcpy"])
    for name, ratios in result["target_round_ratios"].items():
        assert len(ratios) == result[name.split("_")[0] + "_rounds" if name.startswith(("heavy", "large"))
                                     else "light_rounds"], name


def test_paired_ratio_is_the_median_of_same_round_ratios():
    sys.path.insert(0, os.path.join(REPO, "tools"))
    try:
        import bench_loader
    finally:
        sys.path.remove(os.path.join(REPO, "tools"))
    calls = []
    rates = {"a": iter([9.0, 10.0, 12.0, 30.0]), "b": iter([99.0, 5.0, 6.0, 10.0])}
    rounds = bench_loader.alternate({k: (lambda k=k: calls.append(k) or next(rates[k])) for k in "ab"}, 3)
    assert calls == ["a", "b"] * 4  # a warm-up round, then the runs take turns
    assert rounds == {"a": [10.0, 12.0, 30.0], "b": [5.0, 6.0, 10.0]}
    assert bench_loader.paired(rounds, "a", "b") == 2.0  # median of 2, 2, 3 (best/best would say 3.0)
    assert bench_loader.round_ratios(rounds, "a", "b") == [2.0, 2.0, 3.0]
    assert bench_loader.best_of(rounds) == {"a": 30.0, "b": 10.0}
