"""Micro-batch streaming reads: ``spark.readStream.format("pulsar")``.

Offsets are ``{topic partition: {"ledgerId", "entryId", "batchIndex"}}`` (pipeline.offsets): the
last message id read in each partition. A micro-batch reads exactly ``(start, end]`` of every
partition, with readers only, so a query restarted from its checkpoint re-reads the same rows for
an unfinished batch and continues after the last committed one: with an idempotent sink (Spark's
file sinks) each message lands exactly once.

* ``initialOffset``: ``startingOffsets`` (default ``latest``) or ``startingTime``.
* ``latestOffset(start, limit)``: the partitions of the topics now (new partitions start at
  ``earliest``) and their last message ids from the broker; with ``maxEntriesPerTrigger`` (Spark
  passes it back as ``ReadMaxRows``) the budget is shared evenly between partitions with new
  entries (pipeline.planning.advance). Spark before 4.2 calls ``latestOffset()`` without
  arguments and has no admission control: the limit is then ignored with a warning.
* ``prepareForTriggerAvailableNow``: ``Trigger.AvailableNow`` stops at the last message ids taken
  when the query starts.
* ``commit``: nothing to release (readers hold no broker state).
"""
from __future__ import annotations

import logging
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

try:  # Spark >= 4.2
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                                   SupportsTriggerAvailableNow)
except ImportError:  # pragma: no cover - Spark 4.0 / 4.1
    ReadLimit = ReadAllAvailable = ReadMaxRows = None

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass

from minipulsar.pipeline import broker_queries as q
from minipulsar.pipeline.batch_reader import read_settings
from minipulsar.pipeline.offsets import EARLIEST, Position, may_hold_messages, offsets_from_json, offsets_to_json
from minipulsar.pipeline.options import SourceOptions
from minipulsar.pipeline.planning import advance, plan_ranges, resolve_positions
from minipulsar.pipeline.range_reader import read_range

log = logging.getLogger(__name__)


class PulsarStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The reader of one streaming query; lives on the driver for the query's lifetime."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._target: dict[str, Position] | None = None  # Trigger.AvailableNow's end
        self._warned_no_admission = False

    def _run(self, work):
        return q.run_with_client(self.opts.service_url, self.opts.operation_timeout_seconds, work)

    def initialOffset(self) -> dict:
        opts = self.opts

        async def initial(c):
            partitions = await q.topic_partitions(c, opts.topics, opts.topics_pattern)
            return await resolve_positions(c, partitions, opts.starting_offsets, "latest",
                                           opts.starting_time, opts.poll_timeout_ms)

        offsets = offsets_to_json(self._run(initial))
        log.info("initial offsets: %s", offsets)
        return offsets

    def getDefaultReadLimit(self):
        if ReadMaxRows is not None and self.opts.max_entries_per_trigger:
            return ReadMaxRows(self.opts.max_entries_per_trigger)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        async def lasts(c):
            return await q.last_positions(c, await q.topic_partitions(c, self.opts.topics, self.opts.topics_pattern))
        self._target = self._run(lasts)
        log.info("Trigger.AvailableNow: reading up to %s", offsets_to_json(self._target))

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        opts, target = self.opts, self._target
        budget = None
        if start is None:
            if opts.max_entries_per_trigger and not self._warned_no_admission:
                log.warning("maxEntriesPerTrigger ignored: this Spark calls latestOffset() without a start "
                            "offset (admission control for Python sources needs Spark >= 4.2)")
                self._warned_no_admission = True
        elif ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            budget = limit.max_rows
        starts = offsets_from_json(start or {})

        async def latest(c):
            partitions = await q.topic_partitions(c, opts.topics, opts.topics_pattern)
            lasts = await q.last_positions(c, partitions)
            if target is not None:
                lasts = {p: target[p] for p in partitions if p in target}
            result = dict(starts)
            pending = {}
            for p, last in lasts.items():
                begin = starts.get(p, EARLIEST)  # a new partition is read from its beginning
                result.setdefault(p, begin)
                if may_hold_messages(begin, last):
                    pending[p] = (begin, last)
            share = max(1, budget // len(pending)) if budget is not None and pending else None
            for p, (begin, last) in pending.items():
                result[p] = last if share is None else await advance(c, p, begin, last, share, opts.poll_timeout_ms)
            return result

        return offsets_to_json(self._run(latest))

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        starts, ends = offsets_from_json(start), offsets_from_json(end)
        gone = set(starts) - set(ends)
        if gone:
            log.warning("partitions no longer listed, not read: %s", sorted(gone))

        async def plan(c):
            return await plan_ranges(c, starts, ends, self.opts.min_partitions, self.opts.poll_timeout_ms,
                                     self.opts.admin_url)

        ranges = self._run(plan)
        log.debug("micro-batch %s -> %s: %d ranges", start, end, len(ranges))
        return ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(partition, read_settings(self.opts))

    def commit(self, end: dict) -> None:
        log.debug("committed %s", end)

    def stop(self) -> None:
        log.info("stream over %s stopped", ",".join(self.opts.topics) or self.opts.topics_pattern)
