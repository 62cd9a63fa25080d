"""Regenerate minifluid/framework/proto/framework_pb2.py from framework.proto beside it.

    pip install "grpcio-tools==1.62.3"      # protoc 25.1: the generated module runs on protobuf >= 4.25
    python tools/gen_proto.py               # rewrite framework_pb2.py
    python tools/gen_proto.py --check       # exit 1 if the committed module differs from a fresh one

The generated module is committed, so using minifluid needs only the ``protobuf`` runtime, never
protoc. Newer grpcio-tools work too, but their output demands a protobuf runtime at least as new as
their own protoc, so raise ``protobuf>=`` in setup.cfg when you switch.
"""
import argparse
import filecmp
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO = "minifluid/framework/proto/framework.proto"
GENERATED = "minifluid/framework/proto/framework_pb2.py"


def generate(out_dir):
    try:
        from grpc_tools import protoc
    except ImportError:
        sys.exit('grpc_tools is not installed: pip install "grpcio-tools==1.62.3"')
    rc = protoc.main(["protoc", f"-I{ROOT}", f"--python_out={out_dir}", os.path.join(ROOT, PROTO)])
    if rc != 0:
        sys.exit(f"protoc failed on {PROTO} (exit code {rc})")
    return os.path.join(out_dir, GENERATED)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    if not args.check:
        print("wrote", generate(ROOT))
        return
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(tmp)
        same = filecmp.cmp(fresh, os.path.join(ROOT, GENERATED), shallow=False)
    print(f"{GENERATED} is {'up to date' if same else 'STALE: run python tools/gen_proto.py'}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
