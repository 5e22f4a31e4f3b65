"""The keyed messages of a stored entry, and a batch rebuilt with only some of them.

Compaction keeps the latest message of each key: the key is the message's partition key (a batch's
messages each carry their own in SingleMessageMetadata); a message without one never enters the
compacted view; an empty payload or null_value marks the key deleted. A batch whose messages did not
all survive is rebuilt with the losers marked compacted_out (payload dropped), so the survivors keep
their batch indexes and so their message ids. The entry and batch format itself (open, split,
join, recompress, ack-set words) is proto.entries'. Source: Pulsar TwoPhaseCompactor.extractKeyAndSize,
RawBatchConverter.extractIdsAndKeysAndSize / rebatchMessage.
"""
from __future__ import annotations

from dataclasses import dataclass

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.entries import ack_set_words, build_entry, join_batch, open_entry, split_batch
from minipulsar.proto.errors import CodecUnavailableError, EntryError, FrameError


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
    """(metadata, uncompressed payload, messages in batch or -1) of a stored entry (its checksum
    is not checked, as Pulsar's compactor does not)."""
    try:
        metadata, payload = open_entry(data, verify=False)
    except (FrameError, EntryError, CodecUnavailableError) as exc:
        raise UnreadableEntry(str(exc)) from exc
    count = metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else -1
    return metadata, payload, count


def _split(payload: bytes, count: int) -> tuple[list[api.SingleMessageMetadata], list[bytes]]:
    """A batch payload split into its SingleMessageMetadata and payloads; raises UnreadableEntry."""
    try:
        return split_batch(payload, count)
    except EntryError as exc:
        raise UnreadableEntry(f"bad batch: {exc}") from exc


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
    for index, (single, body) in enumerate(zip(*_split(payload, count))):
        if single.compacted_out:
            continue
        key = single.partition_key if single.HasField("partition_key") else None
        messages.append(KeyedMessage(index, key, not body or single.null_value))
    return messages


def keep_batch_indexes(data: bytes, kept: set[int]) -> bytes:
    """The batch entry `data` with every message whose index is not in kept marked compacted_out
    and its payload dropped, recompressed as it was. Raises UnreadableEntry."""
    metadata, payload, count = _batch_parts(data)
    singles, payloads = _split(payload, count)
    for index, single in enumerate(singles):
        if index not in kept:
            single.compacted_out = True
            payloads[index] = b""
    return build_entry(metadata, join_batch(singles, payloads))  # its codec just decompressed it, so it is there


def surviving_ack_set(data: bytes) -> list[int] | None:
    """For a batch with compacted_out messages: the ack_set words (signed int64, bit set = message
    still there) that make a client skip them, as it skips acknowledged batch indexes; None for
    any other entry. Clients that ignore compacted_out (the C++ client) need this."""
    try:
        metadata, payload, count = _batch_parts(data)
        if count < 0:
            return None
        singles, _ = _split(payload, count)
    except UnreadableEntry:
        return None
    if not any(single.compacted_out for single in singles):
        return None
    return ack_set_words((index for index, single in enumerate(singles) if not single.compacted_out), count)
