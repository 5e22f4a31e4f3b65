"""Regenerate proto/*_pb2.py from the .proto files in proto/ (a developer tool, not installed).

Usage: python tools/regenerate_proto.py [--check]
  --check  generate into a temporary folder and exit 1 if the committed modules differ.
Needs grpcio-tools (the `dev` extra), whose bundled protoc is pinned so the output is stable.
"""
from __future__ import annotations

import argparse
import filecmp
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent.parent / "proto"
PROTO_FILES = ("PulsarApi.proto", "PulsarMarkers.proto")


def generated_name(proto_file: str) -> str:
    """'PulsarApi.proto' -> 'PulsarApi_pb2.py'."""
    return proto_file.removesuffix(".proto") + "_pb2.py"


def generate(out_dir: Path) -> None:
    """Run protoc over PROTO_FILES into out_dir; raises RuntimeError when protoc fails."""
    from grpc_tools import protoc  # imported here: only developers need grpcio-tools

    args = ["protoc", f"-I{PROTO_DIR}", f"--python_out={out_dir}", *PROTO_FILES]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed: {' '.join(args)}")


def stale_modules() -> list[str]:
    """Names of committed *_pb2.py modules that differ from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        return [
            generated_name(p)
            for p in PROTO_FILES
            if not filecmp.cmp(Path(tmp) / generated_name(p), PROTO_DIR / generated_name(p), shallow=False)
        ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale modules")
    if parser.parse_args().check:
        stale = stale_modules()
        for name in stale:
            print(f"stale: proto/{name}; run python tools/regenerate_proto.py", file=sys.stderr)
        return 1 if stale else 0
    generate(PROTO_DIR)
    return 0


if __name__ == "__main__":
    sys.exit(main())
