"""The wire facts we depend on hold in the generated modules. That the committed *_pb2.py modules
match the .proto files is checked by a child process: tests/integration/proto/test_proto_generated.py."""
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto import PulsarMarkers_pb2 as markers


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
