"""The Spark data source and sink of minipulsar (format "pulsar"), over the bundled client.

    from minipulsar.pipeline import register
    register(spark)                       # spark.dataSource.register(PulsarDataSource)
    spark.read.format("pulsar").option("service.url", url).option("topic", "t").load()

Modules: source (the DataSource), options, offsets, schema, broker_queries, ledger_stats (ledger
sizes from the admin API), planning, balanced_ranges, range_reader, entry_reader (whole entries
from the broker), entry_decoder and columns (entries into Arrow columns), batch_reader,
stream_reader, writer, errors, session (a local SparkSession for examples and tests), example (the
streaming example: python -m minipulsar.pipeline.example) with example_query, demo_producer and
graceful_stop (Ctrl-C without errors). See docs/spark.md.
"""
from __future__ import annotations

from minipulsar.pipeline.errors import DataLossError, PipelineError, PublishError, PulsarOptionError
from minipulsar.pipeline.source import PulsarDataSource

__all__ = ["PulsarDataSource", "register", "PipelineError", "PulsarOptionError", "DataLossError", "PublishError"]


def register(spark) -> None:
    """Register the "pulsar" format with a SparkSession."""
    spark.dataSource.register(PulsarDataSource)
