"""The example's streaming query: counts per (window, key) and per window, and where each
micro-batch writes them (see pipeline.example for the command that runs it).

One aggregation with two grouping sets, ``(window, key)`` and ``(window)``, keeps both counts in
one state store, so each message is read, planned and aggregated once (two queries would each do
all of that). Output mode ``update``: each micro-batch holds the counts that changed, and its
``foreachBatch`` function writes them — the ``(window, key)`` counts to Parquet, the window totals
to a topic through the "pulsar" batch sink — at the same time.
"""
from __future__ import annotations

import threading
from pathlib import Path

from minipulsar.pipeline.graceful_stop import guard_foreach_batch

ISO_SECONDS = "yyyy-MM-dd'T'HH:mm:ss'Z'"


def window_counts(spark, args):
    """The streaming DataFrame of counts per (window, key) and per window, with ``allKeys`` = 1 on
    the per-window rows. One aggregation with two grouping sets keeps both in one state store, so
    one query reads each message once (two queries would each read, plan and keep state)."""
    from pyspark.sql import functions as F

    events = (spark.readStream.format("pulsar").option("service.url", args.service_url)
              .option("topic", args.topic).option("startingOffsets", args.starting_offsets).load()
              .select(F.coalesce("key", F.lit("")).alias("key"),
                      F.coalesce("eventTime", "publishTime").alias("time"))
              .withWatermark("time", args.watermark))
    window = F.window("time", args.window).alias("window")
    return (events.groupingSets([[window, "key"], [window]], window, "key")
            .agg(F.count("*").alias("count"), F.grouping("key").alias("allKeys")))


def run_together(*functions) -> None:
    """Call every function at once, each but the first in a thread that carries the caller's Spark
    job properties (so stopping the query cancels their jobs too); raise the first failure."""
    from pyspark import InheritableThread

    errors: list[BaseException] = []

    def call(function):
        try:
            function()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors.append(exc)

    threads = [InheritableThread(target=call, args=(f,)) for f in functions[1:]]
    for thread in threads:
        thread.start()
    call(functions[0])
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def write_outputs(args, counts_dir: str):
    """The foreachBatch function: the changed (window, key) counts to Parquet and the changed
    window totals to the output topic, both at once (two small jobs: mostly waiting, little work)."""
    from pyspark.sql import functions as F

    start_iso = F.date_format("window.start", ISO_SECONDS)

    def write_counts(batch_df, batch_id):
        # One file per micro-batch: the changed windows are a handful of rows.
        (batch_df.where("allKeys = 0").coalesce(1)
         .select(F.col("window.start").alias("windowStart"), F.col("window.end").alias("windowEnd"),
                 "key", "count", F.lit(batch_id).alias("batchId"))
         .write.mode("append").parquet(counts_dir))

    def publish_totals(batch_df):
        # Spark's Python sinks take only append and complete output modes, so the updated
        # windows go through the batch sink; one task, hence one producer.
        (batch_df.where("allKeys = 1").coalesce(1).select(
            start_iso.alias("key"),
            F.to_json(F.struct(start_iso.alias("windowStart"),
                               F.date_format("window.end", ISO_SECONDS).alias("windowEnd"),
                               F.col("count"))).alias("value"),
            F.col("window.end").alias("eventTime"))
         .write.format("pulsar").mode("append").option("service.url", args.service_url)
         .option("topic", args.output_topic).save())

    def write(batch_df, batch_id):
        batch_df.persist()
        try:
            # The aggregation (and its state update) runs once, here; both writes read the cache.
            batch_df.count()
            # The "pulsar" sink stays on this thread: Spark finds Python data sources registered in
            # a session only from the thread that runs the micro-batch.
            run_together(lambda: publish_totals(batch_df), lambda: write_counts(batch_df, batch_id))
        finally:
            batch_df.unpersist()
    return write


def build_query(spark, args, output: Path, stopping: threading.Event):
    """Start the example's streaming query. Its foreachBatch function treats a failure while
    ``stopping`` is set as the stop's doing (pipeline.graceful_stop)."""
    return (window_counts(spark, args).writeStream.queryName("window-counts").outputMode("update")
            .foreachBatch(guard_foreach_batch(write_outputs(args, str(output / "counts")), stopping))
            .option("checkpointLocation", str(output / "checkpoint"))
            .trigger(processingTime=args.trigger).start())
