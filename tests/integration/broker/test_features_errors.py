"""Errors answer the request that failed, and the connection carries on (issue 7, item 1).

A conflicting producer gets ProducerBusy, a second consumer on an Exclusive subscription gets
ConsumerBusy, a topic of an unknown tenant or namespace gets TopicNotFound: each as an ERROR for
that request, while the client's other producers and consumers on the same connection keep working.
"""
from __future__ import annotations

import uuid

import pulsar
import pytest


def _roundtrip(producer, consumer, payload: bytes) -> None:
    producer.send(payload)
    assert consumer.receive(5000).data() == payload


def test_producer_busy_keeps_connection(client, topic):
    consumer = client.subscribe(topic, "sub")
    first = client.create_producer(topic, producer_name="same-name")
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, producer_name="same-name")
    _roundtrip(first, consumer, b"after-busy")


def test_consumer_busy_keeps_connection(client, topic):
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "excl", consumer_type=pulsar.ConsumerType.Exclusive)
    _roundtrip(producer, consumer, b"after-consumer-busy")


@pytest.mark.parametrize("name", [
    "persistent://no-such-tenant/default/t",  # unknown tenant
    "persistent://public/no-such-ns/t",  # known tenant, unknown namespace
])
def test_unknown_namespace_is_topic_not_found(client, topic, name):
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub")
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(name)
    with pytest.raises(pulsar.TopicNotFound):
        client.subscribe(name, "sub")
    _roundtrip(producer, consumer, b"after-topic-not-found")


def test_extra_namespaces_setting(broker_factory):
    broker = broker_factory(extraNamespaces="tenant-a/ns1, tenant-b/ns2")
    client = pulsar.Client(broker.url, operation_timeout_seconds=10)
    try:
        name = f"persistent://tenant-a/ns1/t-{uuid.uuid4().hex[:8]}"
        consumer = client.subscribe(name, "sub")
        _roundtrip(client.create_producer(name), consumer, b"in-extra-namespace")
        with pytest.raises(pulsar.TopicNotFound):
            client.create_producer("persistent://tenant-a/ns2/t")
    finally:
        client.close()
