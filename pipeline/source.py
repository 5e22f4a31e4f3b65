"""``PulsarDataSource``: the ``"pulsar"`` format of Spark's Python Data Source API.

    from minipulsar.pipeline import PulsarDataSource
    spark.dataSource.register(PulsarDataSource)
    df = spark.read.format("pulsar").option("service.url", "pulsar://127.0.0.1:6650") \\
        .option("topic", "my-topic").load()

Options: pipeline.options. Rows: pipeline.schema. Batch reads: pipeline.batch_reader; streaming
reads: pipeline.stream_reader; batch and streaming writes: pipeline.writer. Options are checked
when Spark asks for a reader or writer, and errors raise PulsarOptionError.
"""
from __future__ import annotations

import logging

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader, DataSourceStreamWriter,
                                    DataSourceWriter)
from pyspark.sql.types import StructType

from minipulsar.pipeline.errors import PulsarOptionError
from minipulsar.pipeline.options import SinkOptions, SourceOptions
from minipulsar.pipeline.schema import SCHEMA_DDL

log = logging.getLogger(__name__)


class PulsarDataSource(DataSource):
    """Topics of a Pulsar-protocol broker as a Spark source and sink."""

    @classmethod
    def name(cls) -> str:
        return "pulsar"

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        from minipulsar.pipeline.batch_reader import PulsarBatchReader

        return PulsarBatchReader(SourceOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from minipulsar.pipeline.stream_reader import PulsarStreamReader

        opts = SourceOptions.parse(self.options)
        if opts.ending_offsets != "latest":
            raise PulsarOptionError("endingOffsets is for batch queries only")
        return PulsarStreamReader(opts)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from minipulsar.pipeline.writer import PulsarBatchWriter, check_schema

        if overwrite:
            raise PulsarOptionError("mode('overwrite') is not supported: messages cannot be replaced; use append")
        opts = SinkOptions.parse(self.options)
        check_schema(schema, opts)
        return PulsarBatchWriter(opts, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from minipulsar.pipeline.writer import PulsarStreamWriter, check_schema

        opts = SinkOptions.parse(self.options)
        check_schema(schema, opts)
        return PulsarStreamWriter(opts, schema)
