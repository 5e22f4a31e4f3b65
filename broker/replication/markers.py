"""Marker entries: server-only messages stored inline in a topic (PIP-33).

A marker is an ordinary entry ``[0x0e01][crc32c][metadataSize][MessageMetadata][payload]`` whose
MessageMetadata has producer_name ``pulsar.marker``, sequence_id 0, publish_time = now (ms) and
``marker_type`` (PulsarMarkers.MarkerType, 10..13 here); the payload is the serialized marker
message. ``replicate_to`` restricts where replicators send it. Dispatchers acknowledge and drop
every entry with a marker_type, so clients never see one.
Source: Pulsar common/protocol/Markers.java (newMessage, isServerOnlyMarker), PulsarMarkers.proto.
"""
from __future__ import annotations

import time
from typing import Iterable

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto import PulsarMarkers_pb2 as markers
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import build_headers_and_payload, parse_metadata, split_headers_and_payload
from minipulsar.storage import ManagedLedger, Position

MARKER_PRODUCER_NAME = "pulsar.marker"

SNAPSHOT_REQUEST = markers.REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST  # 10
SNAPSHOT_RESPONSE = markers.REPLICATED_SUBSCRIPTION_SNAPSHOT_RESPONSE  # 11
SNAPSHOT = markers.REPLICATED_SUBSCRIPTION_SNAPSHOT  # 12
UPDATE = markers.REPLICATED_SUBSCRIPTION_UPDATE  # 13

MESSAGE_TYPES = {
    SNAPSHOT_REQUEST: markers.ReplicatedSubscriptionsSnapshotRequest,
    SNAPSHOT_RESPONSE: markers.ReplicatedSubscriptionsSnapshotResponse,
    SNAPSHOT: markers.ReplicatedSubscriptionsSnapshot,
    UPDATE: markers.ReplicatedSubscriptionsUpdate,
}
REPLICATED_SUBSCRIPTION_MARKERS = frozenset(MESSAGE_TYPES)

# How far get_last_message_id walks back over trailing markers before giving up (entries).
MAX_TRAILING_MARKERS = 10_000


def new_marker(marker_type: int, message, replicate_to: Iterable[str] = ()) -> bytes:
    """The stored bytes of a marker entry carrying message (a PulsarMarkers message)."""
    metadata = api.MessageMetadata(producer_name=MARKER_PRODUCER_NAME, sequence_id=0,
                                   publish_time=int(time.time() * 1000), marker_type=marker_type)
    metadata.replicate_to.extend(replicate_to)
    return build_headers_and_payload(metadata, message.SerializeToString())


def parse_marker(data: bytes, metadata: api.MessageMetadata | None = None):
    """(marker_type, message) of a stored marker entry; message is None for marker types this
    broker does not interpret (transactions). Raises FrameError when it does not parse."""
    parsed = split_headers_and_payload(data)
    metadata = metadata or parse_metadata(data, parsed)
    if not metadata.HasField("marker_type"):
        raise FrameError("not a marker entry")
    kind = MESSAGE_TYPES.get(metadata.marker_type)
    if kind is None:
        return metadata.marker_type, None
    message = kind()
    try:
        message.ParseFromString(bytes(data[parsed.payload_offset:]))
    except Exception as exc:  # protobuf DecodeError
        raise FrameError(f"unparsable marker payload: {exc}") from exc
    return metadata.marker_type, message


def set_position(target, position: Position) -> None:
    """Fill a MarkersMessageIdData."""
    target.ledger_id, target.entry_id = position.ledger_id, position.entry_id


def position_of(message_id) -> Position:
    """Position of a MarkersMessageIdData."""
    return Position(message_id.ledger_id, message_id.entry_id)


def is_marker_entry(data: bytes) -> bool:
    """True when the stored entry's metadata has a marker_type (or does not parse: never dispatched)."""
    try:
        return parse_metadata(data).HasField("marker_type")
    except FrameError:
        return True


async def last_data_position(ledger: ManagedLedger) -> Position:
    """The last confirmed position that is not a marker (what GET_LAST_MESSAGE_ID reports).

    Walks back from the last confirmed entry over at most MAX_TRAILING_MARKERS markers; when only
    markers are found, returns the position before the first of them (``(L, -1)`` for none).
    """
    position = ledger.last_confirmed_position
    for _ in range(MAX_TRAILING_MARKERS):
        if position.entry_id < 0:
            return position
        entry = await ledger.read_entry(position)
        if entry is None or not is_marker_entry(entry.data):
            return position
        previous = ledger.previous_position(position)
        if previous == position:
            return position
        position = previous
    return position
