"""Delayed delivery with the official client (issue 7, item 3).

deliver_at_time is honoured on Shared and Key_Shared subscriptions, ignored (delivered at once) on
Exclusive and Failover, and the delay survives a broker restart (the tracker is rebuilt from the
backlog). Source of the rules: Pulsar InMemoryDelayedDeliveryTracker.
"""
from __future__ import annotations

import time
from datetime import timedelta

import pulsar
import pytest

from tests.helpers import BrokerThread, wait_for

DELAY = 2.0
SLACK = 3.0  # one tick (1 s) plus scheduling on a loaded machine


@pytest.mark.parametrize("consumer_type", [pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared])
def test_delayed_message_waits_on_shared_types(client, topic, consumer_type):
    consumer = client.subscribe(topic, "sub", consumer_type=consumer_type)
    producer = client.create_producer(topic)
    sent_at = time.monotonic()
    producer.send(b"later", partition_key="k", deliver_after=timedelta(seconds=DELAY))
    producer.send(b"now", partition_key="k")
    first = consumer.receive(5000)
    assert first.data() == b"now"  # the undelayed message is not held back by the delayed one
    assert time.monotonic() - sent_at < DELAY - 0.5
    consumer.acknowledge(first)
    second = consumer.receive(int((DELAY + SLACK) * 1000) + 2000)
    waited = time.monotonic() - sent_at
    assert second.data() == b"later"
    assert DELAY - 0.05 <= waited <= DELAY + SLACK, waited


@pytest.mark.parametrize("consumer_type", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover])
def test_delayed_message_is_immediate_on_single_consumer_types(client, topic, consumer_type):
    consumer = client.subscribe(topic, "sub", consumer_type=consumer_type)
    producer = client.create_producer(topic)
    sent_at = time.monotonic()
    producer.send(b"later", deliver_after=timedelta(seconds=DELAY))
    assert consumer.receive(5000).data() == b"later"
    assert time.monotonic() - sent_at < 1.0


def test_delayed_delivery_disabled(broker_factory, topic):
    broker = broker_factory(delayedDeliveryEnabled="false")
    client = pulsar.Client(broker.url, operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        sent_at = time.monotonic()
        client.create_producer(topic).send(b"later", deliver_after=timedelta(seconds=DELAY))
        assert consumer.receive(5000).data() == b"later"
        assert time.monotonic() - sent_at < 1.0
    finally:
        client.close()


def test_delay_survives_restart(tmp_path, topic):
    data = tmp_path / "data"
    broker = BrokerThread(data).start()
    try:
        client = pulsar.Client(broker.url, operation_timeout_seconds=10)
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        deliver_at = time.time() + 3.0
        client.create_producer(topic).send(b"later", deliver_at=int(deliver_at * 1000))
        wait_for(lambda: broker.subscription_stats(topic, "sub")["msgDelayed"] == 1,
                 "the dispatcher to hold the message in the delayed-delivery tracker")
        assert broker.run(lambda: broker.broker.stats()[topic]["subscriptions"]["sub"]["msgDelayed"]) == 1
        consumer.close()
        client.close()
    finally:
        broker.stop()
    broker = BrokerThread(data).start()
    try:
        client = pulsar.Client(broker.url, operation_timeout_seconds=10)
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        message = consumer.receive(6000)
        assert message.data() == b"later"
        assert time.time() >= deliver_at - 0.05
        client.close()
    finally:
        broker.stop()
