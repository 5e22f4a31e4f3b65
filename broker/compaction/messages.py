"""The keyed messages of a stored entry, and a batch rebuilt with only some of them.

Compaction keeps the latest message of each key: the key is the message's partition key (a batch's
messages each carry their own in SingleMessageMetadata); a message without one never enters the
compacted view; an empty payload or null_value marks the key deleted. A batch whose messages did not
all survive is rebuilt with the losers marked compacted_out (payload dropped), so the survivors keep
their batch indexes and so their message ids. Source: Pulsar TwoPhaseCompactor.extractKeyAndSize,
RawBatchConverter.extractIdsAndKeysAndSize / rebatchMessage.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from minipulsar.client import codec
from minipulsar.client.options import CompressionType
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.frames import build_headers_and_payload, parse_metadata, split_headers_and_payload

_U32 = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class KeyedMessage:
    """One message of an entry: batch_index -1 when the entry is not a batch; key None when the
    message has no partition key; deletes when its payload is empty or null_value is set."""

    batch_index: int
    key: str | None
    deletes: bool


class UnreadableEntry(Exception):
    """An entry whose metadata or batch does not parse: compaction leaves it out of the view."""


def _batch_parts(data: bytes) -> tuple[api.MessageMetadata, bytes, int]:
    """(metadata, uncompressed payload, messages in batch or -1) of a stored entry."""
    try:
        parsed = split_headers_and_payload(data)
        metadata = parse_metadata(data, parsed)
        payload = data[parsed.payload_offset:]
        if metadata.compression != api.NONE:
            payload = codec.decompress(metadata.compression, payload, metadata.uncompressed_size)
    except Exception as exc:  # FrameError, or a codec's own error type
        raise UnreadableEntry(str(exc)) from exc
    count = metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else -1
    return metadata, payload, count


def _singles(payload: bytes, count: int) -> list[tuple[api.SingleMessageMetadata, bytes]]:
    """A batch payload split into (SingleMessageMetadata, payload) pairs."""
    out, offset = [], 0
    try:
        for _ in range(count):
            (size,) = _U32.unpack_from(payload, offset)
            single = api.SingleMessageMetadata.FromString(payload[offset + 4: offset + 4 + size])
            offset += 4 + size
            body = payload[offset: offset + single.payload_size]
            offset += single.payload_size
            out.append((single, body))
    except Exception as exc:  # struct.error, DecodeError
        raise UnreadableEntry(f"bad batch: {exc}") from exc
    return out


def keyed_messages(data: bytes) -> list[KeyedMessage]:
    """The messages of a stored entry with their keys; compacted_out messages of a batch already
    compacted are left out. Raises UnreadableEntry."""
    metadata, payload, count = _batch_parts(data)
    if metadata.HasField("marker_type"):
        return []  # server-only markers (PIP-33 snapshots) never enter the view
    if count < 0:
        key = metadata.partition_key if metadata.HasField("partition_key") else None
        return [KeyedMessage(-1, key, not payload or metadata.null_value)]
    messages = []
    for index, (single, body) in enumerate(_singles(payload, count)):
        if single.compacted_out:
            continue
        key = single.partition_key if single.HasField("partition_key") else None
        messages.append(KeyedMessage(index, key, not body or single.null_value))
    return messages


def keep_batch_indexes(data: bytes, kept: set[int]) -> bytes:
    """The batch entry `data` with every message whose index is not in kept marked compacted_out
    and its payload dropped, recompressed as it was. Raises UnreadableEntry."""
    metadata, payload, count = _batch_parts(data)
    parts = []
    for index, (single, body) in enumerate(_singles(payload, count)):
        if index not in kept:
            single.compacted_out = True
            single.payload_size = 0
            body = b""
        raw = single.SerializeToString()
        parts += [_U32.pack(len(raw)), raw, body]
    uncompressed = b"".join(parts)
    metadata.uncompressed_size = len(uncompressed)
    return build_headers_and_payload(metadata, codec.compress(CompressionType(metadata.compression), uncompressed))


def surviving_ack_set(data: bytes) -> list[int] | None:
    """For a batch with compacted_out messages: the ack_set words (Java BitSet, bit set = message
    still there) that make a client skip them, as it skips acknowledged batch indexes; None for
    any other entry. Clients that ignore compacted_out (the C++ client) need this."""
    try:
        metadata, payload, count = _batch_parts(data)
        if count < 0:
            return None
        singles = _singles(payload, count)
    except UnreadableEntry:
        return None
    if not any(single.compacted_out for single, _ in singles):
        return None
    words = [0] * ((count + 63) // 64)
    for index, (single, _) in enumerate(singles):
        if not single.compacted_out:
            words[index // 64] |= 1 << (index % 64)
    return words
