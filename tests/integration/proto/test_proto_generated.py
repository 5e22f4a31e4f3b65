"""The committed *_pb2.py modules match the .proto files: tools/regenerate_proto.py --check, run as a
child process. The wire facts the generated modules must hold: tests/unit/proto/test_proto_generated.py."""
import subprocess
import sys

from tests import ROOT


def test_generated_modules_are_not_stale():
    """tools/regenerate_proto.py --check (grpcio-tools comes with the dev extra)."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "regenerate_proto.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
