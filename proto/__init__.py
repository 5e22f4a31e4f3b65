"""Wire format of the Pulsar binary protocol: generated messages and the frame codec.

`PulsarApi_pb2` and `PulsarMarkers_pb2` are generated from the .proto files here
(python tools/regenerate_proto.py); `frames` encodes and decodes frames. Knows nothing of asyncio.
"""
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto import PulsarMarkers_pb2 as markers

__all__ = ["api", "markers"]
