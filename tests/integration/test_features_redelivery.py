"""Redelivery on every subscription type with the official client (issue 7): negative acks and
REDELIVER_UNACKNOWLEDGED_MESSAGES work on Exclusive and Failover as well as on the shared types,
and the broker counts redeliveries (MESSAGE.redelivery_count)."""
from __future__ import annotations

import pulsar
import pytest

TYPES = [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover, pulsar.ConsumerType.Shared,
         pulsar.ConsumerType.KeyShared]


@pytest.mark.parametrize("consumer_type", TYPES)
def test_negative_ack_redelivers(client, topic, consumer_type):
    consumer = client.subscribe(topic, "sub", consumer_type=consumer_type, negative_ack_redelivery_delay_ms=200)
    producer = client.create_producer(topic)
    producer.send(b"m0", partition_key="k")
    first = consumer.receive(5000)
    assert first.redelivery_count() == 0
    consumer.negative_acknowledge(first)
    again = consumer.receive(5000)
    assert again.data() == b"m0" and again.redelivery_count() == 1
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
    assert all(m.redelivery_count() == 1 for m in redelivered)
