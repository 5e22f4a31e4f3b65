"""The committed *_pb2.py modules match the .proto files, and the wire facts we depend on hold."""
import subprocess
import sys

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto import PulsarMarkers_pb2 as markers
from tests import ROOT



def test_generated_modules_are_not_stale():
    """tools/regenerate_proto.py --check (grpcio-tools comes with the dev extra)."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "regenerate_proto.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_field_numbers_and_extensions():
    fields = api.MessageMetadata.DESCRIPTOR.fields_by_name
    assert fields["marker_type"].number == 20
    assert fields["replicated_from"].number == 5
    assert fields["ordering_key"].number == 18
    assert api.CommandSubscribe.Key_Shared == 3
    assert api.CommandSubscribe.Key_Failover == 4
    for field in api.BaseCommand.DESCRIPTOR.fields:
        if field.name != "type":
            # every command's field number equals its Type value
            assert api.BaseCommand.Type.Name(field.number)
    assert markers.REPLICATED_SUBSCRIPTION_SNAPSHOT == 12
    assert markers.ClusterMessageId.DESCRIPTOR.fields_by_name["message_id"].number == 2
