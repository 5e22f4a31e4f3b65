"""Redelivery on every subscription type with the official client: negative acks and
REDELIVER_UNACKNOWLEDGED_MESSAGES work on Exclusive and Failover as well as on the shared types.
MESSAGE.redelivery_count follows Pulsar's redelivery tracker: it grows with each redelivery request
on Shared and Key_Shared, stays 0 on Exclusive and Failover (Pulsar's single-active dispatcher has
the tracker disabled) and when a consumer disconnects, and is always 0 with
subscriptionRedeliveryTrackerEnabled=false."""
from __future__ import annotations

import pulsar
import pytest

TYPES = [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover, pulsar.ConsumerType.Shared,
         pulsar.ConsumerType.KeyShared]
COUNTED = (pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared)


def expected_count(consumer_type) -> int:
    """The redelivery_count of a first redelivery, as Pulsar's broker sends it."""
    return 1 if consumer_type in COUNTED else 0


@pytest.mark.parametrize("consumer_type", TYPES)
def test_negative_ack_redelivers(client, topic, consumer_type):
    consumer = client.subscribe(topic, "sub", consumer_type=consumer_type, negative_ack_redelivery_delay_ms=200)
    producer = client.create_producer(topic)
    producer.send(b"m0", partition_key="k")
    first = consumer.receive(5000)
    assert first.redelivery_count() == 0
    consumer.negative_acknowledge(first)
    again = consumer.receive(5000)
    assert again.data() == b"m0" and again.redelivery_count() == expected_count(consumer_type)
    consumer.acknowledge(again)
    producer.send(b"m1", partition_key="k")
    assert consumer.receive(5000).data() == b"m1"


@pytest.mark.parametrize("consumer_type", TYPES)
def test_redeliver_unacknowledged_messages(client, topic, consumer_type):
    consumer = client.subscribe(topic, "sub", consumer_type=consumer_type)
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"m{i}".encode(), partition_key="k")
    assert [consumer.receive(5000).data() for _ in range(3)] == [b"m0", b"m1", b"m2"]
    consumer.redeliver_unacknowledged_messages()
    redelivered = [consumer.receive(5000) for _ in range(3)]
    assert [m.data() for m in redelivered] == [b"m0", b"m1", b"m2"]
    assert all(m.redelivery_count() == expected_count(consumer_type) for m in redelivered)


def test_a_consumer_that_disconnects_does_not_count_a_redelivery(client, topic):
    first = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
    producer = client.create_producer(topic)
    producer.send(b"m0")
    assert first.receive(5000).redelivery_count() == 0
    first.close()  # unacknowledged: the entry goes to the next consumer
    second = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    again = second.receive(5000)
    assert again.data() == b"m0" and again.redelivery_count() == 0


def test_tracker_disabled_counts_nothing(broker_factory):
    broker = broker_factory(subscriptionRedeliveryTrackerEnabled="false")
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe("persistent://public/default/untracked", "sub",
                                    consumer_type=pulsar.ConsumerType.Shared)
        client.create_producer("persistent://public/default/untracked").send(b"m0")
        assert consumer.receive(5000).redelivery_count() == 0
        consumer.redeliver_unacknowledged_messages()
        again = consumer.receive(5000)
        assert again.data() == b"m0" and again.redelivery_count() == 0
    finally:
        client.close()
