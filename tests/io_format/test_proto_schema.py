"""The committed schema is wire-compatible with Paddle's and the generated module matches it."""
import importlib.util
import os
import subprocess
import sys

import pytest

from minifluid.framework.proto import framework_pb2 as pb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("name", ["conv.pdmodel", "mlp_v1/__model__", "mlp_combined/__model__"])
def test_paddle_program_files_parse_and_reserialize_byte_for_byte(paddle_files, name):
    with open(os.path.join(paddle_files, name), "rb") as f:
        data = f.read()
    desc = pb.ProgramDesc()
    desc.ParseFromString(data)
    assert desc.blocks[0].ops[0].type == "feed" and desc.version.version == 2006002
    assert desc.SerializeToString() == data  # every field Paddle wrote is understood or kept


@pytest.mark.skipif(importlib.util.find_spec("grpc_tools") is None,
                    reason="grpcio-tools is not installed (pip install grpcio-tools==1.62.3)")
def test_generated_module_is_up_to_date():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_proto.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
