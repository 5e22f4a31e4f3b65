"""Turning the bytes after a MESSAGE command into the messages of one entry.

proto.entries opens the entry (checks the CRC32C, parses MessageMetadata, decompresses) and splits
a batch — an entry is a batch whenever num_messages_in_batch is *present* in its metadata — into
its messages, each with the SingleMessageMetadata that overrides key, properties and event time.
What is left here is the client's side: a broken entry becomes CorruptEntry with the
CommandAck.ValidationError to report (the entry is then dropped), and each message a
DecodedMessage. Source: Pulsar's C++ ConsumerImpl (messageReceived,
receiveIndividualMessagesFromBatch, discardCorruptedMessage).
"""
from __future__ import annotations

from functools import partial
from itertools import count as count_from
from typing import NamedTuple

from minipulsar.client.exceptions import InvalidConfiguration
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.entries import open_entry, split_batch
from minipulsar.proto.errors import (BatchFormatError, ChecksumMismatchError, CodecUnavailableError,
                                     CorruptPayloadError, FrameError)

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


_decoded = partial(tuple.__new__, DecodedMessage)  # from one tuple, without the NamedTuple's Python __new__


def decode_entry(headers_and_payload: bytes) -> tuple[api.MessageMetadata, list[DecodedMessage], int]:
    """(metadata, messages, batch_size) of one entry; batch_size is 0 when the entry is not a batch.
    Raises CorruptEntry, or InvalidConfiguration when the entry's compression package is missing."""
    try:
        metadata, payload = open_entry(headers_and_payload)
    except ChecksumMismatchError as exc:
        raise CorruptEntry(ValidationError.ChecksumMismatch, str(exc)) from exc
    except CorruptPayloadError as exc:
        raise CorruptEntry(ValidationError.DecompressionError, str(exc)) from exc
    except FrameError as exc:
        raise CorruptEntry(ValidationError.BatchDeSerializeError, str(exc)) from exc
    except CodecUnavailableError as exc:
        raise InvalidConfiguration(str(exc)) from exc
    if not metadata.HasField("num_messages_in_batch"):
        message = _decoded((
            payload, -1, {kv.key: kv.value for kv in metadata.properties}, metadata.partition_key,
            metadata.ordering_key, metadata.event_time, metadata.sequence_id))
        return metadata, [message], 0
    count = metadata.num_messages_in_batch
    try:
        singles, payloads = split_batch(payload, count)
    except BatchFormatError as exc:
        raise CorruptEntry(ValidationError.BatchDeSerializeError, f"bad batch: {exc}") from exc
    # One pass that builds each message straight from its SingleMessageMetadata: this runs per message.
    return metadata, [
        _decoded((body, index, {kv.key: kv.value for kv in properties} if (properties := single.properties) else {},
                  single.partition_key, single.ordering_key, single.event_time,
                  single.sequence_id if single.HasField("sequence_id") else -1))
        for index, single, body in zip(count_from(), singles, payloads)], count
