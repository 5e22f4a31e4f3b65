"""What the broker needs to know about a stored entry, read from its MessageMetadata.

A stored entry is [0x0e01][crc][metadataSize][MessageMetadata][payload] exactly as the producer sent
it; the broker never re-encodes it. Dispatchers need its message count (permits are per message),
whether it is a server-only marker, and its publish time (seek by time).

This runs once per entry per subscription read, so it is kept to one protobuf parse: the common
header is sliced directly, and optional fields whose default is a legitimate value (marker_type 0)
are checked with HasField only when their tag bytes occur in the metadata at all.
"""
from __future__ import annotations

import struct
from functools import partial
from typing import NamedTuple

from google.protobuf.message import DecodeError

from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import split_headers_and_payload
from minipulsar.proto import PulsarApi_pb2 as api

_CHECKSUMMED = b"\x0e\x01"  # magic of [crc][metadataSize][MessageMetadata], no broker entry metadata
_U32 = struct.Struct(">I")
_MARKER_TAG = b"\xa0\x01"  # MessageMetadata.marker_type: field 20, varint


class EntryInfo(NamedTuple):
    """num_messages: messages in the entry (1 unless batched); marker_type: None for user data;
    publish_time: ms since the epoch; metadata: the parsed MessageMetadata, None when unparsable."""

    num_messages: int
    publish_time: int
    marker_type: int | None
    metadata: api.MessageMetadata | None

    @property
    def is_marker(self) -> bool:
        """Server-only entries never reach clients (Pulsar Markers.isServerOnlyMarker)."""
        return self.marker_type is not None or self.metadata is None


_UNPARSABLE = EntryInfo(1, 0, None, None)
_make_info = partial(tuple.__new__, EntryInfo)  # EntryInfo((...)) without the NamedTuple's Python __new__


def entry_info(data: bytes) -> EntryInfo:
    """Parse a stored entry's metadata; an unparsable entry is reported as a marker-like entry
    (metadata None) so dispatchers skip it, as Pulsar's filterEntriesForConsumer does."""
    raw = _metadata_bytes(data)
    if raw is None:
        return _UNPARSABLE
    metadata = api.MessageMetadata()
    try:
        metadata.ParseFromString(raw)
    except DecodeError:
        return _UNPARSABLE
    marker = metadata.marker_type if _MARKER_TAG in raw and metadata.HasField("marker_type") else None
    # num_messages_in_batch reads 0 when absent: an unbatched entry holds one message.
    return _make_info((max(metadata.num_messages_in_batch, 1), metadata.publish_time, marker, metadata))


def _metadata_bytes(data: bytes) -> bytes | None:
    """The serialized MessageMetadata of a stored entry, None when its sizes are impossible."""
    if data[:2] == _CHECKSUMMED and len(data) >= 10:
        end = 10 + _U32.unpack_from(data, 6)[0]
        return data[10:end] if end <= len(data) else None
    try:
        parsed = split_headers_and_payload(data)
    except FrameError:
        return None
    return bytes(data[parsed.metadata_offset:parsed.payload_offset])


def publish_time_of(data: bytes) -> int:
    """publish_time in ms of a stored entry, 0 when its metadata does not parse."""
    return entry_info(data).publish_time
