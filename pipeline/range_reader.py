"""Reading one range ``(start, end]`` of one topic partition on an executor, as Arrow batches.

A Spark task runs ``read_range``: it opens a bundled client and a reader (a non-durable
subscription: nothing stays on the broker) at ``start`` on its own event loop
(``asyncio.Runner``), and yields ``pyarrow.RecordBatch``es of at most ``batch_rows`` rows in
message order, stopping at the message that completes ``end``. The same range always yields the
same rows, which is what makes micro-batches replayable from a checkpoint.

If the reader waits ``poll_timeout_ms`` for a message and the broker says the partition has no
more messages, the end of the range can no longer be reached (entries trimmed, topic deleted and
re-created): with ``fail_on_data_loss`` that raises ``DataLossError``, otherwise the range ends
there with a warning.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from minipulsar.client import Client, MessageId, Timeout, TopicNotFound
from minipulsar.client.topic_name import partition_index

from minipulsar.pipeline.errors import DataLossError
from minipulsar.pipeline.offsets import Position, completes, is_after, is_within
from minipulsar.pipeline.schema import RowBuffer

log = logging.getLogger(__name__)

RECEIVER_QUEUE_SIZE = 5000  # messages prefetched by the reader


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
        self.client: Client | None = None
        self.reader = None
        self.buffer = RowBuffer(r.topic)
        self.done = False
        self.rows = 0

    async def open(self) -> None:
        r, s = self.range, self.settings
        self.client = Client(s.service_url, operation_timeout_seconds=s.operation_timeout_seconds)
        start = MessageId.earliest if r.start.is_earliest else r.start.message_id(partition_index(r.topic))
        try:
            self.reader = await self.client.create_reader(r.topic, start, receiver_queue_size=RECEIVER_QUEUE_SIZE)
        except TopicNotFound as exc:
            self._lost(f"topic partition {r.topic} no longer exists ({exc})")

    def _lost(self, what: str) -> None:
        r = self.range
        if self.settings.fail_on_data_loss:
            raise DataLossError(f"{r}: {what}; set failOnDataLoss=false to skip lost messages")
        log.warning("%s: %s; skipping the rest of the range (failOnDataLoss=false)", r, what)
        self.done = True

    async def chunk(self) -> pa.RecordBatch | None:
        """Read until batch_rows rows are buffered or the range is done; the rows as a batch."""
        r, s, buffer = self.range, self.settings, self.buffer
        start, end, reader = r.start, r.end, self.reader
        while not self.done and len(buffer) < s.batch_rows:
            try:
                message = await reader.read_next(s.poll_timeout_ms)
            except Timeout:
                if await reader.has_message_available():
                    continue
                self._lost(f"the partition ends before {tuple(end)}, the end of the range")
                break
            message_id = message.message_id()
            key = (message_id.ledger_id(), message_id.entry_id(), message_id.batch_index())
            if not is_after(key, start):
                continue
            if is_within(key, end):
                buffer.add(message)
            if completes(key, message_id.batch_size(), end):
                self.done = True
        self.rows += len(buffer)
        return buffer.take() if len(buffer) else None

    async def close(self) -> None:
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
