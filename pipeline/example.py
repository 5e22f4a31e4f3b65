"""The example pipeline: per-key message counts in event-time windows, from one topic.

    python -m minipulsar.pipeline.example --service-url pulsar://127.0.0.1:6650 --topic events

Two Structured Streaming queries over the same source (each with its own checkpoint under
``--checkpoint-dir``):

* **counts** — messages per ``(window, key)``, output mode ``update``; every micro-batch appends
  the windows it changed to Parquet under ``--parquet-dir`` with its ``batchId`` (the running
  result: the row with the highest ``batchId`` of a ``(window, key)`` is its current count).
* **totals** — messages per window over all keys, output mode ``update``, published to
  ``--output-topic`` (default ``<topic>-window-totals``) by the "pulsar" batch sink from
  ``foreachBatch`` (Spark's Python streaming sinks refuse ``update`` mode): key = window
  start (ISO-8601, UTC), value = JSON ``{"windowStart", "windowEnd", "count"}``, eventTime = the
  window end.

A message's time is its ``eventTime``, else its ``publishTime``. Windows are tumbling,
``--window`` long; state is kept for ``--watermark`` after the newest time seen. The CLI prints a
line per micro-batch and runs until Ctrl-C (or ``--run-seconds``). ``--demo-rate N`` also
publishes N messages a second with keys ``key-0..key-4`` to the input topic, so the command shows
something on an empty broker.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)


def build_queries(spark, args):
    """Start the counts and totals queries; returns them."""
    from pyspark.sql import functions as F

    events = (spark.readStream.format("pulsar").option("service.url", args.service_url)
              .option("topic", args.topic).option("startingOffsets", args.starting_offsets).load()
              .select(F.coalesce("key", F.lit("")).alias("key"),
                      F.coalesce("eventTime", "publishTime").alias("time"))
              .withWatermark("time", args.watermark))
    window = F.window("time", args.window)
    counts = events.groupBy(window.alias("window"), "key").count()
    parquet_dir = str(Path(args.parquet_dir).resolve())

    def append_counts(batch_df, batch_id):
        (batch_df.select(F.col("window.start").alias("windowStart"), F.col("window.end").alias("windowEnd"),
                         "key", "count", F.lit(batch_id).alias("batchId"))
         .write.mode("append").parquet(parquet_dir))

    checkpoints = Path(args.checkpoint_dir).resolve()
    counts_query = (counts.writeStream.queryName("counts").outputMode("update").foreachBatch(append_counts)
                    .option("checkpointLocation", str(checkpoints / "counts"))
                    .trigger(processingTime=args.trigger).start())
    totals = events.groupBy(window.alias("window")).count()
    start_iso = F.date_format("window.start", "yyyy-MM-dd'T'HH:mm:ss'Z'")

    def publish_totals(batch_df, batch_id):
        # Spark's Python sinks take only append and complete output modes, so the updated windows
        # of each micro-batch go through the batch sink.
        (batch_df.select(
            start_iso.alias("key"),
            F.to_json(F.struct(start_iso.alias("windowStart"),
                               F.date_format("window.end", "yyyy-MM-dd'T'HH:mm:ss'Z'").alias("windowEnd"),
                               F.col("count"))).alias("value"),
            F.col("window.end").alias("eventTime"))
         .write.format("pulsar").mode("append").option("service.url", args.service_url)
         .option("topic", args.output_topic).save())

    totals_query = (totals.writeStream.queryName("totals").outputMode("update").foreachBatch(publish_totals)
                    .option("checkpointLocation", str(checkpoints / "totals"))
                    .trigger(processingTime=args.trigger).start())
    return [counts_query, totals_query]


def _demo_producer(service_url: str, topic: str, rate: float, stop: threading.Event) -> None:
    """Publish `rate` messages a second (keys key-0..key-4, event time = now) until stop is set."""
    from minipulsar.client import Client

    async def run():
        async with Client(service_url) as c:
            producer = await c.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=5)
            i = 0
            while not stop.is_set():
                now = int(time.time() * 1000)
                await producer.send_async(f"event {i}".encode(), partition_key=f"key-{i % 5}", event_timestamp=now)
                i += 1
                await asyncio.sleep(1.0 / rate)
            await producer.flush()
    asyncio.run(run())


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m minipulsar.pipeline.example", description=__doc__.split("\n\n")[0])
    parser.add_argument("--service-url", default="pulsar://127.0.0.1:6650")
    parser.add_argument("--topic", required=True, help="input topic")
    parser.add_argument("--output-topic", help="per-window totals go here (default <topic>-window-totals)")
    parser.add_argument("--parquet-dir", default="spark-output/counts")
    parser.add_argument("--checkpoint-dir", default="spark-output/checkpoints")
    parser.add_argument("--window", default="10 seconds")
    parser.add_argument("--watermark", default="30 seconds")
    parser.add_argument("--trigger", default="1 second", help="micro-batch interval")
    parser.add_argument("--starting-offsets", default="earliest", help="for a new checkpoint: earliest | latest")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--run-seconds", type=float, default=0, help="stop after this long (0 = until Ctrl-C)")
    parser.add_argument("--demo-rate", type=float, default=0, help="also publish N demo messages a second")
    args = parser.parse_args(argv)
    if not args.output_topic:
        args.output_topic = f"{args.topic}-window-totals"
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from minipulsar.pipeline.session import local_session

    spark = local_session("minipulsar-example", args.master)
    spark.sparkContext.setLogLevel("WARN")
    stop = threading.Event()
    demo = None
    if args.demo_rate > 0:
        demo = threading.Thread(target=_demo_producer, args=(args.service_url, args.topic, args.demo_rate, stop),
                                daemon=True)
        demo.start()
    queries = build_queries(spark, args)
    print(f"reading {args.topic} from {args.service_url}; counts -> {Path(args.parquet_dir).resolve()}, "
          f"window totals -> {args.output_topic}", flush=True)
    seen: dict[str, int] = {}
    deadline = time.monotonic() + args.run_seconds if args.run_seconds else None
    try:
        while deadline is None or time.monotonic() < deadline:
            for q in queries:
                if q.exception() is not None:
                    raise RuntimeError(f"query {q.name} failed: {q.exception()}")
                for p in q.recentProgress:
                    if p["batchId"] > seen.get(q.name, -1):
                        seen[q.name] = p["batchId"]
                        if p["numInputRows"]:
                            print(f"{q.name}: batch {p['batchId']}: {p['numInputRows']} messages in "
                                  f"{p['durationMs'].get('triggerExecution', 0)} ms", flush=True)
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        for q in queries:
            q.stop()
        if demo is not None:
            demo.join(10)
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
