"""The sink: DataFrame -> topic, checked with the official client's consumer."""
from __future__ import annotations

import datetime as dt

import pulsar
import pytest

from tests.spark.helpers import source


def _consume_all(official, topic, n):
    consumer = official.subscribe(topic, "check", initial_position=pulsar.InitialPosition.Earliest)
    got = [consumer.receive(10000) for _ in range(n)]
    with pytest.raises(pulsar.Timeout):
        consumer.receive(300)
    consumer.close()
    return got


def test_dataframe_to_topic_round_trip(spark, broker, official, topic):
    official.subscribe(topic, "check", initial_position=pulsar.InitialPosition.Earliest).close()
    when = dt.datetime(2024, 5, 1, 12, 0, 0)
    rows = [(f"v{i}".encode(), f"k{i % 3}", {"n": str(i)}, when + dt.timedelta(seconds=i)) for i in range(50)]
    df = spark.createDataFrame(rows, "value BINARY, key STRING, properties MAP<STRING,STRING>, eventTime TIMESTAMP")
    df.repartition(2).write.format("pulsar").option("service.url", broker.url).option("topic", topic).mode("append").save()
    got = _consume_all(official, topic, 50)
    by_value = {m.data(): m for m in got}
    assert sorted(by_value) == sorted(r[0] for r in rows)
    m = by_value[b"v7"]
    assert m.partition_key() == "k1" and m.properties() == {"n": "7"}
    expected_ms = int((when + dt.timedelta(seconds=7)).replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert m.event_timestamp() == expected_ms  # the session time zone is UTC
    # ... and the source reads back what the sink wrote.
    back = source(spark, broker.url, topic=topic).select("value", "key").collect()
    assert sorted((r.value, r.key) for r in back) == sorted((r[0], r[1]) for r in rows)


def test_topic_column_and_string_values(spark, broker, official, topic):
    other = topic + "-b"
    for t in (topic, other):
        official.subscribe(t, "check", initial_position=pulsar.InitialPosition.Earliest).close()
    df = spark.createDataFrame([(topic if i % 2 else other, f"s{i}") for i in range(10)], "topic STRING, value STRING")
    df.write.format("pulsar").option("service.url", broker.url).mode("append").save()
    assert sorted(m.data() for m in _consume_all(official, topic, 5)) == [f"s{i}".encode() for i in (1, 3, 5, 7, 9)]
    assert sorted(m.data() for m in _consume_all(official, other, 5)) == [f"s{i}".encode() for i in (0, 2, 4, 6, 8)]


def test_failed_task_reports_what_it_published(spark, broker, official, topic):
    official.subscribe(topic, "check", initial_position=pulsar.InitialPosition.Earliest).close()
    df = spark.createDataFrame([(f"v{i}".encode() if i != 5 else None,) for i in range(8)], "value BINARY")
    with pytest.raises(Exception, match=r"published 5 rows, then failed at row 5"):
        df.coalesce(1).write.format("pulsar").option("service.url", broker.url).option("topic", topic).mode("append").save()
    assert [m.data() for m in _consume_all(official, topic, 5)] == [f"v{i}".encode() for i in range(5)]


def test_sink_rejects_overwrite_and_missing_value(spark, broker, topic):
    df = spark.createDataFrame([("x",)], "value STRING")
    with pytest.raises(Exception, match="overwrite"):
        df.write.format("pulsar").option("service.url", broker.url).option("topic", topic).mode("overwrite").save()
    with pytest.raises(Exception, match="needs a `value` column"):
        df.withColumnRenamed("value", "v").write.format("pulsar").option("service.url", broker.url) \
            .option("topic", topic).mode("append").save()
