"""Turning the bytes after a MESSAGE command into Message objects.

Checks the CRC32C (a mismatch is reported back as ChecksumMismatch and the entry dropped), parses
MessageMetadata, decompresses, and splits batch entries — an entry is a batch whenever
num_messages_in_batch is *present* in its metadata — into their messages, each with
SingleMessageMetadata overriding key, properties and event time. Broker entry metadata (0x0e02)
in front is skipped. Source: Pulsar's C++ ConsumerImpl (messageReceived,
receiveIndividualMessagesFromBatch) and Commands::deSerializeSingleMessageInBatch; the binary
protocol's payload command layout (magic 0x0e01, CRC32C, metadata size, MessageMetadata).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from minipulsar.client import codec
from minipulsar.client.exceptions import InvalidMessage
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import parse_metadata, split_headers_and_payload, verify_checksum

_U32 = struct.Struct(">I")
ValidationError = api.CommandAck.ValidationError


class CorruptEntry(Exception):
    """The entry cannot be delivered; validation_error is the CommandAck.ValidationError to report."""

    def __init__(self, validation_error: int, reason: str):
        super().__init__(reason)
        self.validation_error = validation_error


class DecodedMessage(NamedTuple):
    """One message of an entry. batch_index is -1 for a non-batched entry; sequence_id -1 when the
    SingleMessageMetadata has none."""

    payload: bytes
    batch_index: int
    properties: dict[str, str]
    partition_key: str
    ordering_key: bytes
    event_time: int
    sequence_id: int


def decode_entry(headers_and_payload: bytes) -> tuple[api.MessageMetadata, list[DecodedMessage], int]:
    """(metadata, messages, batch_size) of one entry; raises CorruptEntry. batch_size is 0 when
    the entry is not a batch."""
    try:
        parsed = split_headers_and_payload(headers_and_payload)
        if not verify_checksum(headers_and_payload, parsed):
            raise CorruptEntry(ValidationError.ChecksumMismatch, "checksum mismatch")
        metadata = parse_metadata(headers_and_payload, parsed)
    except FrameError as exc:
        raise CorruptEntry(ValidationError.BatchDeSerializeError, str(exc)) from exc
    payload = headers_and_payload[parsed.payload_offset:]
    if metadata.compression != api.NONE:
        try:
            payload = codec.decompress(metadata.compression, payload, metadata.uncompressed_size)
        except InvalidMessage as exc:
            raise CorruptEntry(ValidationError.DecompressionError, str(exc)) from exc
    if not metadata.HasField("num_messages_in_batch"):
        message = DecodedMessage(
            payload, -1, {kv.key: kv.value for kv in metadata.properties}, metadata.partition_key,
            metadata.ordering_key, metadata.event_time, metadata.sequence_id)
        return metadata, [message], 0
    try:
        messages = split_batch(payload, metadata.num_messages_in_batch)
    except (struct.error, ValueError) as exc:
        raise CorruptEntry(ValidationError.BatchDeSerializeError, f"bad batch: {exc}") from exc
    return metadata, messages, metadata.num_messages_in_batch


def split_batch(payload: bytes, count: int) -> list[DecodedMessage]:
    """The messages of a batch payload: count x [u32 size][SingleMessageMetadata][payload_size bytes]."""
    messages = []
    offset = 0
    total = len(payload)
    unpack, parse = _U32.unpack_from, api.SingleMessageMetadata.FromString
    for index in range(count):
        (size,) = unpack(payload, offset)
        offset += 4
        single = parse(payload[offset:offset + size])
        offset += size
        end = offset + single.payload_size
        if end > total:
            raise ValueError(f"message {index} runs past the batch payload")
        properties = single.properties
        messages.append(DecodedMessage(
            payload[offset:end], index, {kv.key: kv.value for kv in properties} if properties else {},
            single.partition_key, single.ordering_key, single.event_time,
            single.sequence_id if single.HasField("sequence_id") else -1))
        offset = end
    return messages
