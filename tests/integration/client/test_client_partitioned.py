"""Partitioned topics: one handle per partition, keyed routing identical to the official client."""
import asyncio

import pulsar
import pytest

from minipulsar import client as mp
from minipulsar.client.exceptions import Timeout
from tests.helpers import wait_for_async

PARTITIONS = 4


@pytest.fixture
def broker(broker_factory):
    """Every test here runs on a broker that auto-creates partitioned topics (`bundled` follows)."""
    return broker_factory(allowAutoTopicCreationType="partitioned", defaultNumPartitions=PARTITIONS)


async def test_get_topic_partitions(bundled, topic):
    assert await bundled.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(PARTITIONS)]


async def test_keyed_routing_matches_official(bundled, broker, topic):
    keys = [f"key-{i}" for i in range(20)] + ["a", "hello", "ü-unicode"]
    producer = await bundled.create_producer(topic)
    ours = [(await producer.send(b"x", partition_key=k)).partition() for k in keys]

    def official_partitions():
        c = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            p = c.create_producer(topic)
            return [p.send(b"x", partition_key=k).partition() for k in keys]
        finally:
            c.close()

    theirs = await asyncio.to_thread(official_partitions)
    assert ours == theirs
    assert len(set(ours)) > 1


async def test_round_robin_and_single_partition(bundled, topic):
    rr = await bundled.create_producer(topic)
    assert {(await rr.send(b"x")).partition() for _ in range(8)} == set(range(PARTITIONS))
    single = await bundled.create_producer(topic, message_routing_mode=mp.PartitionsRoutingMode.UseSinglePartition)
    assert len({(await single.send(b"x")).partition() for _ in range(8)}) == 1


async def test_consumer_reads_every_partition_in_key_order(bundled, broker, topic):
    consumer = await bundled.subscribe(topic, "sub", initial_position=mp.InitialPosition.Earliest)
    producer = await bundled.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=5)
    futures = [await producer.send_async(f"{i}".encode(), partition_key=f"k{i % 5}") for i in range(200)]
    await asyncio.gather(*futures)
    per_key = {}
    for _ in range(200):
        msg = await consumer.receive(3000)
        assert msg.topic_name().startswith(topic + "-partition-")
        assert msg.message_id().partition() == int(msg.topic_name().rsplit("-", 1)[1])
        per_key.setdefault(msg.partition_key(), []).append(int(msg.data()))
        await consumer.acknowledge(msg)
    assert all(v == sorted(v) for v in per_key.values()) and sum(map(len, per_key.values())) == 200
    with pytest.raises(Timeout):
        await consumer.receive(300)

    def backlog():
        stats = broker.run(lambda: broker.broker.stats())
        return sum(s["subscriptions"]["sub"]["msgBacklog"] for s in stats.values() if "sub" in s["subscriptions"])

    await wait_for_async(lambda: backlog() == 0, "the acks of every partition to empty the backlog")
    assert backlog() == 0
