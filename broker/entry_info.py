"""What the broker needs to know about a stored entry, read from its MessageMetadata.

A stored entry is [0x0e01][crc][metadataSize][MessageMetadata][payload] exactly as the producer sent
it; the broker never re-encodes it. Dispatchers need its message count (permits are per message),
whether it is a server-only marker, and its publish time (seek by time).
"""
from __future__ import annotations

from dataclasses import dataclass

from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import parse_metadata, split_headers_and_payload
from minipulsar.proto import PulsarApi_pb2 as api


@dataclass(frozen=True, slots=True)
class EntryInfo:
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


def entry_info(data: bytes) -> EntryInfo:
    """Parse a stored entry's metadata; an unparsable entry is reported as a marker-like entry
    (metadata None) so dispatchers skip it, as Pulsar's filterEntriesForConsumer does."""
    try:
        metadata = parse_metadata(data, split_headers_and_payload(data))
    except FrameError:
        return EntryInfo(1, 0, None, None)
    num = metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1
    marker = metadata.marker_type if metadata.HasField("marker_type") else None
    return EntryInfo(max(num, 1), metadata.publish_time, marker, metadata)


def publish_time_of(data: bytes) -> int:
    """publish_time in ms of a stored entry, 0 when its metadata does not parse."""
    return entry_info(data).publish_time
