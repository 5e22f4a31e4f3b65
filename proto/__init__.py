"""Wire format of the Pulsar binary protocol: generated messages, the frame codec and the message
format.

`PulsarApi_pb2` and `PulsarMarkers_pb2` are generated from the .proto files here
(python tools/regenerate_proto.py); `frames` encodes and decodes frames; `entries` opens and builds
entries and batches (and batch-index ack sets); `compression` holds the payload codecs; `errors`
what all of them raise. Knows nothing of asyncio.
"""
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto import PulsarMarkers_pb2 as markers

# The request id of a CLOSE_PRODUCER / CLOSE_CONSUMER the broker sends on its own initiative: -1 as
# Pulsar's signed long, 2^64-1 in the uint64 wire field (ServerCnx: newCloseConsumer(id, -1L)).
# No client request ever carries it, so no client can take such a CLOSE for an answer.
BROKER_INITIATED_REQUEST_ID = (1 << 64) - 1

__all__ = ["BROKER_INITIATED_REQUEST_ID", "api", "markers"]
