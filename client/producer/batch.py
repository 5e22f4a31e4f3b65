"""Message accumulation and entry building for producers.

PendingMessage is one user message waiting for its receipt. build_single / build_batch turn
messages into the bytes of one SEND frame: a batch is one SingleMessageMetadata per message, laid
out and compressed as a whole by proto.entries (join_batch, build_entry); the entry's
MessageMetadata copies producer_name, sequence_id, partition_key and ordering_key from the first
message and sets num_messages_in_batch. Source: Pulsar's C++ MessageAndCallbackBatch and
BatchMessageContainer.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from minipulsar.client.exceptions import InvalidConfiguration
from minipulsar.client.options import CompressionType
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.entries import build_entry, join_batch
from minipulsar.proto.errors import CodecUnavailableError
from minipulsar.proto.frames import encode_payload_command

Type = api.BaseCommand.Type


class PendingMessage:
    """One message from send()/send_async(): payload bytes and per-message metadata; future gets
    the MessageId (or the failure)."""

    __slots__ = ("payload", "properties", "partition_key", "ordering_key", "event_time", "sequence_id",
                 "deliver_at", "replication_clusters", "future", "callback")

    def __init__(self, payload: bytes, future: asyncio.Future, *, properties=None, partition_key=None,
                 ordering_key=None, event_time=None, sequence_id=None, deliver_at=None,
                 replication_clusters=None, callback=None):
        self.payload = payload
        self.future = future
        self.properties = properties
        self.partition_key = partition_key
        self.ordering_key = ordering_key
        self.event_time = event_time
        self.sequence_id = sequence_id
        self.deliver_at = deliver_at
        self.replication_clusters = replication_clusters
        self.callback = callback

    def batch_key(self) -> str | bytes:
        """The key KeyBased batching groups by: ordering key, else partition key, else ''."""
        return self.ordering_key or self.partition_key or ""


@dataclass(slots=True)
class OpSend:
    """One SEND in flight: the messages of one entry, sequence ids first..last, the encoded frame."""

    first_seq: int
    last_seq: int
    messages: list[PendingMessage]
    frame: bytes
    batched: bool
    created: float = field(default_factory=time.monotonic)


def _ordering_key_bytes(key) -> bytes:
    return key if isinstance(key, bytes) else key.encode("utf-8")


def _fill_common(target, msg: PendingMessage) -> None:
    """Fields MessageMetadata and SingleMessageMetadata share."""
    if msg.properties:
        for key, value in msg.properties.items():
            target.properties.add(key=str(key), value=str(value))
    if msg.partition_key:
        target.partition_key = msg.partition_key
    if msg.ordering_key:
        target.ordering_key = _ordering_key_bytes(msg.ordering_key)
    if msg.event_time:
        target.event_time = msg.event_time


def _frame(producer_id: int, first_seq: int, metadata: api.MessageMetadata, payload: bytes,
           compression: CompressionType, num_messages: int | None) -> bytes:
    if compression != CompressionType.NONE:
        metadata.compression = int(compression)
    try:
        entry = build_entry(metadata, payload)
    except CodecUnavailableError as exc:
        raise InvalidConfiguration(str(exc)) from exc
    send = api.CommandSend(producer_id=producer_id, sequence_id=first_seq)
    if num_messages is not None:
        send.num_messages = num_messages
    return encode_payload_command(api.BaseCommand(type=Type.SEND, send=send), entry)


def _entry_metadata(producer_name: str, msg: PendingMessage, schema_version: bytes | None) -> api.MessageMetadata:
    metadata = api.MessageMetadata(producer_name=producer_name, sequence_id=msg.sequence_id,
                                   publish_time=int(time.time() * 1000))
    if schema_version:
        metadata.schema_version = schema_version
    if msg.replication_clusters:
        metadata.replicate_to.extend(msg.replication_clusters)
    return metadata


def build_single(producer_id: int, producer_name: str, msg: PendingMessage, compression: CompressionType,
                 schema_version: bytes | None = None) -> OpSend:
    """OpSend for one non-batched message."""
    metadata = _entry_metadata(producer_name, msg, schema_version)
    _fill_common(metadata, msg)
    if msg.deliver_at is not None:
        metadata.deliver_at_time = msg.deliver_at
    frame = _frame(producer_id, msg.sequence_id, metadata, msg.payload, compression, None)
    return OpSend(msg.sequence_id, msg.sequence_id, [msg], frame, batched=False)


def build_batch(producer_id: int, producer_name: str, messages: list[PendingMessage],
                compression: CompressionType, schema_version: bytes | None = None) -> OpSend:
    """OpSend for a batch entry holding messages (in order)."""
    singles = []
    for msg in messages:
        single = api.SingleMessageMetadata(sequence_id=msg.sequence_id)
        _fill_common(single, msg)
        singles.append(single)
    first = messages[0]
    metadata = _entry_metadata(producer_name, first, schema_version)
    metadata.num_messages_in_batch = len(messages)
    if first.partition_key:
        metadata.partition_key = first.partition_key
    if first.ordering_key:
        metadata.ordering_key = _ordering_key_bytes(first.ordering_key)
    frame = _frame(producer_id, first.sequence_id, metadata, join_batch(singles, [msg.payload for msg in messages]), compression,
                   len(messages))
    return OpSend(first.sequence_id, messages[-1].sequence_id, messages, frame, batched=True)


class BatchContainer:
    """Messages waiting to become batch entries. Default batching keeps one list; KeyBased keeps one
    list per key. size_bytes / count cover all lists."""

    def __init__(self, key_based: bool):
        self.key_based = key_based
        self.groups: dict = {}
        self.count = 0
        self.size_bytes = 0

    def add(self, msg: PendingMessage) -> None:
        key = msg.batch_key() if self.key_based else None
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = []
        group.append(msg)
        self.count += 1
        self.size_bytes += len(msg.payload)

    def drain(self) -> list[list[PendingMessage]]:
        """Every non-empty group, in first-arrival order; the container is empty afterwards."""
        groups = list(self.groups.values())
        self.groups.clear()
        self.count = self.size_bytes = 0
        return groups
