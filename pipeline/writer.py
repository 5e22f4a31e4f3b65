"""The sink: ``df.write.format("pulsar")`` and ``df.writeStream.format("pulsar")``.

Input columns: ``value`` (binary or string, required, never null), and optionally ``key``
(string: the partition key, which also picks the partition of a partitioned topic),
``properties`` (map<string,string>), ``eventTime`` (timestamp) and ``topic`` (string; the
``topic`` option overrides it). Other columns are ignored.

Each Spark task opens one bundled client and one producer per topic it writes to, publishes its
rows with ``send_async`` (blocking when ``maxPendingMessages`` are in flight), then flushes and
waits for every receipt before it reports success: a task only commits once all of its messages
are persisted. A task that cannot publish every row raises ``PublishError`` saying how many rows
it had published (Pulsar cannot take them back); Spark then fails the job or micro-batch and calls
``abort``, which logs, at ERROR, what the successful tasks had published. Delivery is therefore
at-least-once: re-running a failed micro-batch publishes its rows again.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from typing import Iterator, List, Optional

from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from minipulsar.client import Client

from minipulsar.pipeline.errors import PublishError, PulsarOptionError
from minipulsar.pipeline.options import SinkOptions

log = logging.getLogger(__name__)

CHUNK_ROWS = 1000  # rows handed to the event loop at a time


@dataclass
class PublishSummary(WriterCommitMessage):
    """What one task published: rows per topic, and the first and last MessageId.serialize()."""

    partition_id: int = -1
    rows: int = 0
    topics: dict = field(default_factory=dict)  # topic -> [count, first id bytes, last id bytes]

    def describe(self) -> str:
        return f"task {self.partition_id}: {self.rows} rows " + ", ".join(
            f"{t}={c}" for t, (c, _, _) in sorted(self.topics.items()))


class _Counted(PublishError):
    """A PublishError whose message already says how many rows the task published."""


def check_schema(schema: StructType, opts: SinkOptions) -> None:
    """Raises PulsarOptionError when rows cannot be published: no value column, or no topic."""
    names = set(schema.fieldNames())
    if "value" not in names:
        raise PulsarOptionError(f"the sink needs a `value` column; the DataFrame has {sorted(names)}")
    if opts.topic is None and "topic" not in names:
        raise PulsarOptionError("the sink needs the `topic` option or a `topic` column")


def _event_ms(value) -> int | None:
    if value is None:
        return None
    return int(value.timestamp() * 1000)  # Spark gives naive local datetimes; timestamp() agrees


class _Publisher:
    def __init__(self, opts: SinkOptions, columns: set[str]):
        self.opts = opts
        self.columns = columns
        self.client = Client(opts.service_url, operation_timeout_seconds=opts.operation_timeout_seconds)
        self.producers: dict = {}
        self.pending: list[tuple[str, asyncio.Future]] = []
        self.rows = 0

    async def _producer(self, topic: str):
        producer = self.producers.get(topic)
        if producer is None:
            o = self.opts
            producer = await self.client.create_producer(
                topic, batching_enabled=o.batching_enabled, batching_max_publish_delay_ms=o.batching_max_publish_delay_ms,
                max_pending_messages=o.max_pending_messages, block_if_queue_full=True)
            self.producers[topic] = producer
        return producer

    async def send(self, rows: list[Row]) -> None:
        cols, fixed_topic = self.columns, self.opts.topic
        for row in rows:
            value = row["value"]
            if value is None:
                raise PublishError(f"row {self.rows} has a null value")
            if isinstance(value, str):
                value = value.encode("utf-8")
            topic = fixed_topic or row["topic"]
            if not topic:
                raise PublishError(f"row {self.rows} has no topic")
            kwargs = {}
            if "key" in cols and row["key"] is not None:
                kwargs["partition_key"] = str(row["key"])
            if "properties" in cols and row["properties"]:
                kwargs["properties"] = {str(k): str(v) for k, v in row["properties"].items()}
            if "eventTime" in cols and row["eventTime"] is not None:
                kwargs["event_timestamp"] = _event_ms(row["eventTime"])
            producer = await self._producer(topic)
            self.pending.append((topic, await producer.send_async(bytes(value), **kwargs)))
            self.rows += 1

    async def finish(self, partition_id: int) -> PublishSummary:
        """Flush every producer and wait for every receipt; raises PublishError if any failed."""
        await asyncio.gather(*(p.flush() for p in self.producers.values()), return_exceptions=True)
        return await self.summary(partition_id)

    async def summary(self, partition_id: int) -> PublishSummary:
        results = await asyncio.gather(*(f for _, f in self.pending), return_exceptions=True)
        summary = PublishSummary(partition_id)
        failure = None
        for (topic, _), result in zip(self.pending, results):
            if isinstance(result, BaseException):
                failure = failure or result
                continue
            entry = summary.topics.setdefault(topic, [0, None, None])
            entry[0] += 1
            entry[1] = entry[1] or result.serialize()
            entry[2] = result.serialize()
            summary.rows += 1
        if failure is not None:
            raise _Counted(f"task {partition_id} published {summary.rows} of {len(self.pending)} rows "
                               f"before failing: {failure!r}") from failure
        return summary

    async def close(self) -> None:
        await self.client.close()


def publish(rows: Iterator[Row], schema: StructType, opts: SinkOptions) -> PublishSummary:
    """Publish every row (see the module docstring); the task's PublishSummary."""
    from pyspark import TaskContext

    context = TaskContext.get()
    partition_id = context.partitionId() if context is not None else -1
    publisher = _Publisher(opts, set(schema.fieldNames()))
    with asyncio.Runner() as runner:
        try:
            for chunk in iter(lambda: list(itertools.islice(rows, CHUNK_ROWS)), []):
                runner.run(publisher.send(chunk))
            summary = runner.run(publisher.finish(partition_id))
        except _Counted:
            raise
        except Exception as exc:  # report what did get published before this failure
            done = runner.run(publisher.finish(partition_id))
            raise _Counted(f"task {partition_id} published {done.rows} rows, then failed at row "
                           f"{publisher.rows}: {exc!r}") from exc
        finally:
            runner.run(publisher.close())
    log.debug("%s", summary.describe())
    return summary


def _report(messages: List[Optional[WriterCommitMessage]]) -> tuple[int, str]:
    done = [m for m in messages if isinstance(m, PublishSummary)]
    return sum(m.rows for m in done), "; ".join(m.describe() for m in done) or "nothing"


class PulsarBatchWriter(DataSourceWriter):
    """Batch sink; mode('append') only (messages cannot be overwritten)."""

    def __init__(self, opts: SinkOptions, schema: StructType):
        self.opts = opts
        self.schema = schema

    def write(self, iterator: Iterator[Row]) -> PublishSummary:
        return publish(iterator, self.schema, self.opts)

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        rows, detail = _report(messages)
        log.info("published %d rows (%s)", rows, detail)

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        rows, detail = _report(messages)
        log.error("write aborted; successful tasks had already published %d rows, which stay in the "
                  "topics: %s", rows, detail)


class PulsarStreamWriter(DataSourceStreamWriter):
    """Streaming sink (append, update and complete output modes all publish the rows they get)."""

    def __init__(self, opts: SinkOptions, schema: StructType):
        self.opts = opts
        self.schema = schema

    def write(self, iterator: Iterator[Row]) -> PublishSummary:
        return publish(iterator, self.schema, self.opts)

    def commit(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        rows, detail = _report(messages)
        log.info("micro-batch %d: published %d rows (%s)", batchId, rows, detail)

    def abort(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        rows, detail = _report(messages)
        log.error("micro-batch %d aborted; successful tasks had already published %d rows, which stay in "
                  "the topics and will be published again when the batch is retried: %s", batchId, rows, detail)
