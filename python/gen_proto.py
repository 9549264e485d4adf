#!/usr/bin/env python3
"""Regenerates (or checks) the package's rank.v1 messages from proto/.

    python/gen_proto.py            # writes python/src/rankwire/rank_pb2.py
    python/gen_proto.py --check    # exits 1 if the committed file is stale

The generated module is committed so that `pip install ./python` needs
neither protoc nor grpc_tools (Debian's python3-grpc-tools is grpc 1.14,
whose protoc writes code protobuf 4.21 refuses). It is protoc's output,
byte for byte; the ctest `python.proto_current` runs `--check` with the
build's protoc, so a change to rank.proto that forgets this step fails CI.
"""
import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, "..", "proto")
PROTO = os.path.join(PROTO_ROOT, "rank", "v1", "rank.proto")
TARGET = os.path.join(HERE, "src", "rankwire", "rank_pb2.py")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--protoc", default="protoc", help="the protoc binary")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([args.protoc, f"--python_out={out}", "-I", PROTO_ROOT, PROTO], check=True)
        generated = os.path.join(out, "rank", "v1", "rank_pb2.py")
        if args.check:
            if not filecmp.cmp(generated, TARGET, shallow=False):
                print(f"{TARGET} is not what protoc makes of {PROTO}; run python/gen_proto.py",
                      file=sys.stderr)
                return 1
            print("rank_pb2.py is current")
            return 0
        shutil.copyfile(generated, TARGET)
        print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
