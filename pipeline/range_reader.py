"""Reading one range ``(start, end]`` of one topic partition on an executor, as Arrow batches.

A Spark task runs ``read_range``: it opens a bundled client and an entry reader
(pipeline.entry_reader: a non-durable subscription, so nothing stays on the broker) after
``start`` on its own event loop (``asyncio.Runner``), decodes each entry straight into columns
(pipeline.entry_decoder, pipeline.columns), and yields ``pyarrow.RecordBatch``es of about
``batch_rows`` rows in message order, stopping at the entry that holds ``end``. The same range
always yields the same rows, which is what makes micro-batches replayable from a checkpoint.

If the reader waits ``poll_timeout_ms`` for an entry and the broker says the partition holds
nothing after the last entry read, the end of the range can no longer be reached (entries trimmed,
topic deleted and re-created): with ``fail_on_data_loss`` that raises ``DataLossError``, otherwise
the range ends there with a warning. An entry that cannot be decoded (bad checksum, broken
batch) raises ``DataLossError`` too, or is skipped with a warning.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from minipulsar.client import Client, Timeout, TopicNotFound
from minipulsar.client.topic_name import partition_index

from minipulsar.pipeline.columns import ColumnBuffer
from minipulsar.pipeline.entry_decoder import CorruptEntry, add_rows, message_count, open_entry
from minipulsar.pipeline.entry_reader import EntryReader, RawEntry
from minipulsar.pipeline.errors import DataLossError
from minipulsar.pipeline.offsets import Position, entry_slice

log = logging.getLogger(__name__)

# Messages the broker may send ahead (flow control counts messages, not entries): a few batches
# of small messages, and a bound on what large unbatched ones hold in memory.
QUEUE_MESSAGES = 5000


class TopicRange(InputPartition):
    """One Spark input partition: the messages of topic (a partition name) in (start, end]."""

    def __init__(self, topic: str, start: Position, end: Position):
        super().__init__((topic, tuple(start), tuple(end)))
        self.topic = topic
        self.start = Position(*start)
        self.end = Position(*end)

    def __repr__(self) -> str:
        return f"TopicRange({self.topic}, ({tuple(self.start)}, {tuple(self.end)}])"


@dataclass(frozen=True)
class ReadSettings:
    service_url: str
    poll_timeout_ms: int = 5000
    fail_on_data_loss: bool = True
    operation_timeout_seconds: int = 30
    batch_rows: int = 10000


class _RangeState:
    def __init__(self, r: TopicRange, settings: ReadSettings):
        self.range = r
        self.settings = settings
        self.partition = partition_index(r.topic)
        self.client: Client | None = None
        self.reader: EntryReader | None = None
        self.buffer = ColumnBuffer(r.topic)
        self.last_entry: tuple[int, int] | None = None
        self.done = False
        self.rows = 0

    async def open(self) -> None:
        r, s = self.range, self.settings
        self.client = Client(s.service_url, operation_timeout_seconds=s.operation_timeout_seconds)
        try:
            self.reader = await EntryReader.open(self.client, r.topic, r.start, QUEUE_MESSAGES)
        except TopicNotFound as exc:
            self._lost(f"topic partition {r.topic} no longer exists ({exc})")

    def _lost(self, what: str) -> None:
        r = self.range
        if self.settings.fail_on_data_loss:
            raise DataLossError(f"{r}: {what}; set failOnDataLoss=false to skip lost messages")
        log.warning("%s: %s; skipping the rest of the range (failOnDataLoss=false)", r, what)
        self.done = True

    async def _next_entry(self) -> RawEntry | None:
        """The next entry, or None when the partition has nothing more to give (see _lost)."""
        s = self.settings
        while True:
            try:
                return await self.reader.next_entry(s.poll_timeout_ms)
            except Timeout:
                last = await self.reader.last_position()
                if last.entry_id >= 0 and last.entry > self._read_up_to():
                    continue  # more is there, just slow to come
                self._lost(f"the partition ends before {tuple(self.range.end)}, the end of the range")
                return None

    def _read_up_to(self) -> tuple[int, int]:
        """The last entry read, or the last one before the range's first entry."""
        if self.last_entry is not None:
            return self.last_entry
        start = self.range.start
        return start.entry if start.batch_index < 0 else (start.ledger_id, start.entry_id - 1)

    def _add(self, entry: RawEntry) -> None:
        """Decode entry into the buffer (the part of it inside the range) and release it."""
        r, key = self.range, (entry.ledger_id, entry.entry_id)
        count = 1
        try:
            metadata, payload = open_entry(entry.data)
            count = message_count(metadata)
            first, stop = entry_slice(key, count, r.start, r.end)
            add_rows(self.buffer, metadata, payload, entry.ledger_id, entry.entry_id, self.partition, first, stop)
        except CorruptEntry as exc:
            if self.settings.fail_on_data_loss:
                raise DataLossError(f"{r}: entry {key} cannot be read ({exc}); set failOnDataLoss=false to skip it")
            log.warning("%s: skipping entry %s, which cannot be read (%s)", r, key, exc)
        finally:
            self.reader.taken(entry, count)
        self.last_entry = key
        self.done = self.done or key >= r.end.entry

    async def chunk(self) -> pa.RecordBatch | None:
        """Read until batch_rows rows are buffered or the range is done; the rows as a batch."""
        buffer, limit = self.buffer, self.settings.batch_rows
        while not self.done and len(buffer) < limit:
            entry = await self._next_entry()
            if entry is not None:
                self._add(entry)
        self.rows += len(buffer)
        return buffer.take() if len(buffer) else None

    async def close(self) -> None:
        if self.reader is not None:
            await self.reader.close()
        if self.client is not None:
            await self.client.close()


def read_range(r: TopicRange, settings: ReadSettings) -> Iterator[pa.RecordBatch]:
    """The rows of r as Arrow batches (pipeline.schema.ARROW_SCHEMA); raises DataLossError."""
    with asyncio.Runner() as runner:
        state = _RangeState(r, settings)
        try:
            runner.run(state.open())
            while not state.done:
                batch = runner.run(state.chunk())
                if batch is not None:
                    yield batch
            log.debug("%s: %d rows", r, state.rows)
        finally:
            runner.run(state.close())
