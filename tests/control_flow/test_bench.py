"""tools/bench_control_flow.py runs and shows what it claims: a fixed number of op calls per iteration
and no plan built per iteration."""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_bench_reports_linear_op_calls_and_one_plan_per_block():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_control_flow.py"), "--repeat", "1"],
                         capture_output=True, text=True, timeout=100, check=True, cwd=ROOT)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["ops_per_iter"] == 6.0  # read, scale, add, increment, write, less_than
    assert result["op_calls_N1000"] - result["op_calls_N100"] == 900 * 6
    assert result["plans_built"] == 4  # block 0 and the loop body, for each of the two programs
    assert result["us_per_iter_N100"] > 0 and result["numpy_us_per_iter"] > 0
