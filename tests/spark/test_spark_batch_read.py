"""Batch reads through the "pulsar" format against a real broker, checked against what the
official client produced."""
from __future__ import annotations

import json
import time

import pulsar
import pytest
from pyspark.sql.functions import spark_partition_id

from tests.spark.helpers import source
from tests.helpers import publish_time_cut


def _produce(official, topic, start, n, batching, **send_kwargs):
    """Send messages start..start+n-1 ('m<i>'); returns [(i, MessageId)] in send order."""
    producer = official.create_producer(topic, batching_enabled=batching, batching_max_messages=7,
                                        batching_max_publish_delay_ms=50)
    ids = {}
    for i in range(start, start + n):
        def done(res, msg_id, i=i):
            assert res == pulsar.Result.Ok
            ids[i] = msg_id
        producer.send_async(f"m{i}".encode(), done, partition_key=f"k{i % 4}",
                            properties={"i": str(i)}, event_timestamp=1_700_000_000_000 + i, **send_kwargs)
    producer.flush()
    producer.close()
    return [(i, ids[i]) for i in range(start, start + n)]


def test_batched_and_unbatched_messages_read_as_produced(spark, broker, official, topic):
    sent = _produce(official, topic, 0, 23, batching=False) + _produce(official, topic, 23, 40, batching=True)
    rows = source(spark, broker.url, topic=topic, minPartitions=3).collect()
    assert [r.value for r in rows] == [f"m{i}".encode() for i, _ in sent]  # one partition: in order
    assert [r.messageId for r in rows] == [msg_id.serialize() for _, msg_id in sent]
    by_value = {r.value: r for r in rows}
    row = by_value[b"m30"]
    assert row.key == "k2" and row.properties == {"i": "30"} and row.topic == topic
    assert int(row.eventTime.timestamp() * 1000) == 1_700_000_000_030
    assert abs(row.publishTime.timestamp() - time.time()) < 120
    assert any(pulsar.MessageId.deserialize(r.messageId).batch_index() >= 0 for r in rows)


def test_read_between_two_message_ids(spark, broker, official, topic):
    sent = _produce(official, topic, 0, 30, batching=True) + _produce(official, topic, 30, 10, batching=False)
    ids = dict(sent)
    # Pulsar connector form: serialized MessageId bytes as a JSON array; start exclusive, end inclusive.
    starting = json.dumps({topic: list(ids[4].serialize())})
    ending = json.dumps({topic: {"ledgerId": ids[33].ledger_id(), "entryId": ids[33].entry_id(),
                                 "batchIndex": ids[33].batch_index()}})
    rows = source(spark, broker.url, topic=topic, startingOffsets=starting, endingOffsets=ending).collect()
    assert [r.value for r in rows] == [f"m{i}".encode() for i in range(5, 34)]


def test_starting_time(spark, broker, official, topic):
    _produce(official, topic, 0, 5, batching=False)
    cut = publish_time_cut()
    _produce(official, topic, 5, 5, batching=False)
    rows = source(spark, broker.url, topic=topic, startingTime=cut).collect()
    assert [r.value for r in rows] == [f"m{i}".encode() for i in range(5, 10)]


def test_partitioned_topic(spark, broker_factory, topic):
    broker = broker_factory(allowAutoTopicCreationType="partitioned", defaultNumPartitions=3)
    official = pulsar.Client(broker.url, operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        _produce(official, topic, 0, 60, batching=True)
        # The oracle: what an official reader of each partition sees, in order.
        expected = {}
        for p in range(3):
            reader = official.create_reader(f"{topic}-partition-{p}", pulsar.MessageId.earliest)
            got = []
            while reader.has_message_available():
                got.append(reader.read_next(5000).data())
            reader.close()
            expected[f"{topic}-partition-{p}"] = got
    finally:
        official.close()
    assert sum(len(v) for v in expected.values()) == 60 and sum(map(bool, expected.values())) >= 2
    df = source(spark, broker.url, topic=topic)
    rows = df.collect()
    got = {}
    for r in rows:
        got.setdefault(r.topic, []).append(r.value)
    assert got == {t: v for t, v in expected.items() if v}  # per partition, in order
    assert df.rdd.getNumPartitions() == sum(map(bool, expected.values()))  # one input partition each


def test_topics_pattern_reads_every_matching_topic(spark, broker, official, topic):
    _produce(official, f"{topic}-a", 0, 3, batching=False)
    _produce(official, f"{topic}-b", 3, 2, batching=True)
    _produce(official, f"{topic}x-c", 5, 1, batching=False)  # does not match "<topic>-.*"
    rows = source(spark, broker.url, topicsPattern=f"{topic}-.*").collect()
    assert sorted(r.value for r in rows) == [f"m{i}".encode() for i in range(5)]
    assert {r.topic for r in rows} == {f"{topic}-a", f"{topic}-b"}


def test_empty_topic_and_bad_options(spark, broker, official, topic):
    official.create_producer(topic).close()
    assert source(spark, broker.url, topic=topic).count() == 0
    with pytest.raises(Exception, match="service.url is required"):
        spark.read.format("pulsar").option("topic", topic).load().collect()
    with pytest.raises(Exception, match="exactly one of topic, topics, topicsPattern"):
        source(spark, broker.url).collect()


def test_ledger_ranges_from_the_admin_api(spark, broker_factory, topic):
    # Small ledgers, kept although no subscription holds them (retention without limits).
    broker = broker_factory(managedLedgerMaxEntriesPerLedger=7, defaultRetentionTimeInMinutes=-1,
                            defaultRetentionSizeInMB=-1)
    official = pulsar.Client(broker.url, operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        sent = _produce(official, topic, 0, 60, batching=True) + _produce(official, topic, 60, 40, batching=False)
    finally:
        official.close()
    ids = dict(sent)
    admin = {"admin__url": broker.broker.web_service_url}
    assert len({ids[i].ledger_id() for i in ids}) >= 6  # the messages span many ledgers
    df = source(spark, broker.url, topic=topic, minPartitions=5, **admin)
    rows = df.withColumn("task", spark_partition_id()).collect()
    assert [r.value for r in rows] == [f"m{i}".encode() for i in range(100)]
    entries = {}
    for r in rows:
        message_id = pulsar.MessageId.deserialize(r.messageId)
        entries.setdefault(r.task, set()).add((message_id.ledger_id(), message_id.entry_id()))
    sizes = [len(e) for e in entries.values()]
    assert len(sizes) >= 6 and max(sizes) - min(sizes) <= 1  # equal entry counts per task
    # Bounds inside a batch and across ledgers: from just after message 10 up to message 75.
    starting = json.dumps({topic: list(ids[10].serialize())})
    ending = json.dumps({topic: list(ids[75].serialize())})
    rows = source(spark, broker.url, topic=topic, minPartitions=4, startingOffsets=starting,
                  endingOffsets=ending, **admin).collect()
    assert [r.value for r in rows] == [f"m{i}".encode() for i in range(11, 76)]


def test_compressed_batches(spark, broker, official, topic):
    producer = official.create_producer(topic, compression_type=pulsar.CompressionType.LZ4,
                                        batching_enabled=True, batching_max_messages=10)
    for i in range(25):
        producer.send_async(f"compressed {i}".encode() * 20, None, partition_key=f"k{i % 3}")
    producer.flush()
    producer.close()
    rows = source(spark, broker.url, topic=topic).collect()
    assert [(r.value, r.key) for r in rows] == [(f"compressed {i}".encode() * 20, f"k{i % 3}") for i in range(25)]


def test_a_range_the_partition_no_longer_holds(spark, broker, official, topic):
    last = _produce(official, topic, 0, 5, batching=False)[-1][1]
    beyond = json.dumps({topic: {"ledgerId": last.ledger_id(), "entryId": last.entry_id() + 5}})
    options = {"endingOffsets": beyond, "pollTimeoutMs": 300}
    with pytest.raises(Exception, match="the partition ends before"):
        source(spark, broker.url, topic=topic, **options).collect()
    rows = source(spark, broker.url, topic=topic, failOnDataLoss="false", **options).collect()
    assert [r.value for r in rows] == [f"m{i}".encode() for i in range(5)]
