"""Wire format of the Pulsar binary protocol: generated messages and the frame codec.

`PulsarApi_pb2` and `PulsarMarkers_pb2` are generated from the .proto files here
(python -m proto.regenerate); `frames` encodes and decodes frames. Knows nothing of asyncio.
"""
from proto import PulsarApi_pb2 as api
from proto import PulsarMarkers_pb2 as markers

__all__ = ["api", "markers"]
