"""Turning one stored entry (the headers and payload a MESSAGE frame carries) into rows.

proto.entries opens the entry (checks the CRC32C, parses MessageMetadata, decompresses) and splits
a batch — an entry whose metadata has ``num_messages_in_batch`` — into its messages, each with the
SingleMessageMetadata that overrides the entry's key, properties and event time.

This is what the bundled client's consumer does for every entry, less everything a reader of
ranges does not need (Message and MessageId objects, the receive queue, acknowledgements): the
rows go straight into a pipeline.columns.ColumnBuffer, and only the messages of a batch that lie
in the range being read become rows. A compression whose package is missing raises
CodecUnavailableError (naming the package) rather than CorruptEntry: the data is fine, the
installation is not.
"""
from __future__ import annotations

from minipulsar.proto import PulsarApi_pb2 as api
from minipulsar.proto import entries
from minipulsar.proto.entries import is_batch, split_batch
from minipulsar.proto.errors import EntryError, FrameError

from minipulsar.pipeline.columns import ColumnBuffer, entry_id_prefix


class CorruptEntry(Exception):
    """The entry's checksum, metadata, compression or batch layout is broken."""


def open_entry(data: bytes) -> tuple[api.MessageMetadata, bytes]:
    """The metadata and the (decompressed) payload of an entry; raises CorruptEntry."""
    try:
        return entries.open_entry(data)
    except (FrameError, EntryError) as exc:
        raise CorruptEntry(str(exc)) from exc


def message_count(metadata: api.MessageMetadata) -> int:
    """Messages in the entry: its batch size, or 1 when it is not a batch."""
    return metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1


def add_rows(buffer: ColumnBuffer, metadata: api.MessageMetadata, payload: bytes, ledger_id: int,
             entry_id: int, partition: int, first: int, stop: int) -> None:
    """Append the messages first..stop-1 of an opened entry (open_entry) to buffer; raises
    CorruptEntry (and appends nothing) when the batch does not split."""
    if first >= stop:
        return
    if is_batch(metadata):
        try:
            singles, payloads = split_batch(payload, stop, first)
        except EntryError as exc:
            raise CorruptEntry(f"bad batch: {exc}") from exc
        _add_batch_rows(buffer, singles, payloads)
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


def _add_batch_rows(buffer: ColumnBuffer, singles: list[api.SingleMessageMetadata], payloads: list[bytes]) -> None:
    """One row per message of a split batch (split_batch's two lists)."""
    keys, events = buffer.keys, buffer.events
    for single in singles:
        keys.append(single.partition_key or None)
        event = single.event_time
        events.append(event * 1000 if event else None)
        if properties := single.properties:  # one read: each builds a new container
            buffer.add_properties(properties)
    buffer.values += payloads
