"""Structured Streaming over the "pulsar" source (and sink) against a real broker."""
from __future__ import annotations

import threading
import time

import pulsar
from pyspark.errors import AnalysisException

from tests.helpers import wait_for


def _stream(spark, url, topic, **options):
    reader = spark.readStream.format("pulsar").option("service.url", url).option("topic", topic)
    for name, value in options.items():
        reader = reader.option(name, str(value))
    return reader.load()


def _wait_rows(path, spark, at_least, timeout=60):
    def rows() -> int:
        try:
            return spark.read.parquet(str(path)).count()
        except AnalysisException:  # the sink has written no file yet
            return 0

    wait_for(lambda: rows() >= at_least, f"at least {at_least} rows in {path}", timeout=timeout, interval=0.5)


def test_parquet_sink_restart_from_checkpoint_exactly_once(spark, broker, official, topic, tmp_path):
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    official.create_producer(topic).close()
    stop, produced = threading.Event(), []

    def produce():  # batched and unbatched messages until told to stop
        batched = official.create_producer(topic, batching_enabled=True, batching_max_messages=5,
                                           batching_max_publish_delay_ms=5)
        plain = official.create_producer(topic)
        i = 0
        while not stop.is_set():
            for _ in range(10):
                (batched if i % 3 else plain).send_async(f"{i}".encode(), None)
                produced.append(i)
                i += 1
            batched.flush()
            plain.flush()
            time.sleep(0.05)  # pacing, not synchronisation: the stream goes on while the query restarts
        batched.close()
        plain.close()

    def start():
        df = _stream(spark, broker.url, topic, startingOffsets="earliest").selectExpr("CAST(value AS STRING) AS v")
        return df.writeStream.format("parquet").option("path", str(out)) \
            .option("checkpointLocation", str(checkpoint)).trigger(processingTime="300 milliseconds").start()

    producer = threading.Thread(target=produce)
    producer.start()
    try:
        query = start()
        _wait_rows(out, spark, 20)
        query.stop()                      # the producer goes on meanwhile
        before = len(produced)
        query = start()
        _wait_rows(out, spark, before + 20)
    finally:
        stop.set()
        producer.join(30)
    query.processAllAvailable()
    query.stop()
    values = [int(r.v) for r in spark.read.parquet(str(out)).collect()]
    assert len(produced) > before + 20
    assert sorted(values) == produced  # each message exactly once


def test_max_entries_per_trigger_and_available_now(spark, broker, official, topic, tmp_path):
    producer = official.create_producer(topic)
    for i in range(25):
        producer.send(f"{i}".encode())
    query = _stream(spark, broker.url, topic, startingOffsets="earliest", maxEntriesPerTrigger=10) \
        .selectExpr("CAST(value AS STRING) AS v").writeStream.format("memory").queryName("capped") \
        .trigger(availableNow=True).start()
    query.awaitTermination(60)
    rows_per_batch = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert rows_per_batch == [10, 10, 5]
    assert sorted(int(r.v) for r in spark.table("capped").collect()) == list(range(25))


def test_streaming_sink_to_topic(spark, broker, official, topic, tmp_path):
    out_topic = topic + "-out"
    consumer = official.subscribe(out_topic, "check", initial_position=pulsar.InitialPosition.Earliest)
    producer = official.create_producer(topic)
    for i in range(12):
        producer.send(f"{i}".encode(), partition_key=f"k{i % 2}")
    query = _stream(spark, broker.url, topic, startingOffsets="earliest") \
        .selectExpr("key", "concat(value, CAST('!' AS BINARY)) AS value") \
        .writeStream.format("pulsar").option("service.url", broker.url).option("topic", out_topic) \
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
    query.awaitTermination(60)
    got = sorted((m.data(), m.partition_key()) for m in (consumer.receive(10000) for _ in range(12)))
    assert got == sorted((f"{i}!".encode(), f"k{i % 2}") for i in range(12))
