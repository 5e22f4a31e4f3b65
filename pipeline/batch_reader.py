"""Batch reads: ``spark.read.format("pulsar")``.

``partitions()`` runs on the driver: it expands the topics into partitions, resolves
``startingOffsets`` (default ``earliest``) or ``startingTime`` and ``endingOffsets`` (default
``latest``: each partition's last message id when the query is planned), and cuts the ranges
(pipeline.planning). ``read()`` runs in a Spark task and yields the range's rows as Arrow batches
(pipeline.range_reader). Readers only: no subscription is created.
"""
from __future__ import annotations

import logging
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from minipulsar.pipeline import broker_queries as q
from minipulsar.pipeline.options import SourceOptions
from minipulsar.pipeline.planning import plan_ranges, resolve_positions
from minipulsar.pipeline.range_reader import ReadSettings, TopicRange, read_range

log = logging.getLogger(__name__)


def read_settings(opts: SourceOptions) -> ReadSettings:
    return ReadSettings(opts.service_url, opts.poll_timeout_ms, opts.fail_on_data_loss, opts.operation_timeout_seconds)


class PulsarBatchReader(DataSourceReader):
    """The reader of one batch query; options as in pipeline.options.SourceOptions."""

    def __init__(self, opts: SourceOptions):
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.opts

        async def plan(c):
            partitions = await q.topic_partitions(c, opts.topics, opts.topics_pattern)
            starts = await resolve_positions(c, partitions, opts.starting_offsets, "earliest",
                                             opts.starting_time, opts.poll_timeout_ms)
            ends = await resolve_positions(c, partitions, opts.ending_offsets, "latest")
            return await plan_ranges(c, starts, ends, opts.min_partitions, opts.poll_timeout_ms, opts.admin_url)

        ranges = q.run_with_client(opts.service_url, opts.operation_timeout_seconds, plan)
        log.info("batch read of %s: %d ranges", ",".join(opts.topics) or opts.topics_pattern, len(ranges))
        # Spark needs at least one partition to produce an empty DataFrame with the schema.
        return ranges or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, TopicRange):
            return iter(())
        return read_range(partition, read_settings(self.opts))
