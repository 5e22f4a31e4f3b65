"""Turning one stored entry (the headers and payload a MESSAGE frame carries) into rows.

An entry is ``[0x0e01][crc32c][metadata size][MessageMetadata][payload]`` (optionally preceded by
broker entry metadata), exactly as its producer sent it. A batch entry — one whose metadata has
``num_messages_in_batch`` — holds messages laid out as ``[u32 size][SingleMessageMetadata][payload]``,
where the single-message metadata overrides the entry's key, properties and event time.

This is what the bundled client's consumer does for every entry, less everything a reader of
ranges does not need (Message and MessageId objects, the receive queue, acknowledgements): the
rows go straight into a pipeline.columns.ColumnBuffer, and only the messages of a batch that lie
in the range being read become rows. The checksum is verified, and compressed payloads are
decompressed by the client's codecs.
"""
from __future__ import annotations

import struct

from minipulsar.client import InvalidMessage, codec
from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto.errors import FrameError
from minipulsar.proto.frames import parse_metadata, split_headers_and_payload, verify_checksum

from minipulsar.pipeline.columns import ColumnBuffer, entry_id_prefix

_U32 = struct.Struct(">I")
_parse_single = api.SingleMessageMetadata.FromString


class CorruptEntry(Exception):
    """The entry's checksum, metadata, compression or batch layout is broken."""


def open_entry(data: bytes) -> tuple[api.MessageMetadata, bytes]:
    """The metadata and the (decompressed) payload of an entry; raises CorruptEntry."""
    try:
        parsed = split_headers_and_payload(data)
        if not verify_checksum(data, parsed):
            raise CorruptEntry("checksum mismatch")
        metadata = parse_metadata(data, parsed)
        payload = data[parsed.payload_offset:]
        if metadata.compression != api.NONE:
            payload = codec.decompress(metadata.compression, payload, metadata.uncompressed_size)
    except (FrameError, InvalidMessage) as exc:
        raise CorruptEntry(str(exc)) from exc
    return metadata, payload


def message_count(metadata: api.MessageMetadata) -> int:
    """Messages in the entry: its batch size, or 1 when it is not a batch."""
    return metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1


def is_batch(metadata: api.MessageMetadata) -> bool:
    return metadata.HasField("num_messages_in_batch")


def add_rows(buffer: ColumnBuffer, metadata: api.MessageMetadata, payload: bytes, ledger_id: int,
             entry_id: int, partition: int, first: int, stop: int) -> None:
    """Append the messages first..stop-1 of an opened entry (open_entry) to buffer."""
    if first >= stop:
        return
    if is_batch(metadata):
        mark = buffer.mark()
        try:
            _add_batch_rows(buffer, payload, first, stop)
        except (struct.error, ValueError) as exc:  # protobuf's DecodeError is a ValueError
            buffer.truncate(mark)
            raise CorruptEntry(f"bad batch: {exc}") from exc
        batch_size = metadata.num_messages_in_batch
    else:
        _add_row(buffer, metadata, payload)
        batch_size = 0
    buffer.add_entry_rows(entry_id_prefix(ledger_id, entry_id, partition), batch_size, first, metadata.publish_time)


def _add_row(buffer: ColumnBuffer, metadata: api.MessageMetadata, payload: bytes) -> None:
    buffer.keys.append(metadata.partition_key or None)
    buffer.values.append(payload)
    buffer.events.append(metadata.event_time * 1000 if metadata.event_time else None)
    if metadata.properties:
        buffer.add_properties(metadata.properties)


def _add_batch_rows(buffer: ColumnBuffer, payload: bytes, first: int, stop: int) -> None:
    """The batch's messages first..stop-1: [u32 size][SingleMessageMetadata][payload_size bytes]."""
    unpack, total = _U32.unpack_from, len(payload)
    keys, values, events = buffer.keys, buffer.values, buffer.events
    offset = 0
    for index in range(stop):
        (size,) = unpack(payload, offset)
        offset += 4
        single = _parse_single(payload[offset:offset + size])
        offset += size
        end = offset + single.payload_size
        if end > total:
            raise ValueError(f"message {index} runs past the batch payload")
        if index >= first:
            keys.append(single.partition_key or None)
            values.append(payload[offset:end])
            event = single.event_time
            events.append(event * 1000 if event else None)
            if single.properties:
                buffer.add_properties(single.properties)
        offset = end
