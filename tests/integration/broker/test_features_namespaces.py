"""GET_TOPICS_OF_NAMESPACE with topics_pattern and topics_hash; regex and multi-topic subscriptions
of the official client find their topics (issue 7, item 6)."""
from __future__ import annotations

import re
import uuid

import pulsar
import pytest

from minipulsar.broker.namespaces import topics_hash
from minipulsar.proto import PulsarApi_pb2 as api
from tests.helpers import RawConnection

Type = api.BaseCommand.Type


def _topics_of_namespace(raw: RawConnection, request_id: int, **fields) -> api.CommandGetTopicsOfNamespaceResponse:
    raw.send(api.BaseCommand(type=Type.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=api.CommandGetTopicsOfNamespace(
        request_id=request_id, **fields)))
    reply = raw.receive()
    assert reply.type == Type.GET_TOPICS_OF_NAMESPACE_RESPONSE, reply
    return reply.getTopicsOfNamespaceResponse


def test_pattern_filter_and_hash(broker, client):
    prefix = f"ns-{uuid.uuid4().hex[:6]}"
    names = [f"persistent://public/default/{prefix}-a{i}" for i in range(2)] + [f"persistent://public/default/{prefix}-b"]
    for name in names:
        client.create_producer(name).close()
    raw = RawConnection(broker.url)
    try:
        raw.connect()
        everything = _topics_of_namespace(raw, 1, namespace="public/default")
        assert set(names) <= set(everything.topics) and not everything.filtered
        assert everything.topics_hash == topics_hash(everything.topics)
        only_a = _topics_of_namespace(raw, 2, namespace="public/default",
                                      topics_pattern=f"persistent://public/default/{prefix}-a.*")
        assert only_a.filtered and sorted(only_a.topics) == names[:2]
        same = _topics_of_namespace(raw, 3, namespace="public/default",
                                    topics_pattern=f"persistent://public/default/{prefix}-a.*",
                                    topics_hash=only_a.topics_hash)
        assert same.changed is False and list(same.topics) == [] and same.topics_hash == only_a.topics_hash
        raw.send(api.BaseCommand(type=Type.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=api.CommandGetTopicsOfNamespace(
            request_id=4, namespace="nobody/nothing")))
        error = raw.receive()
        assert error.type == Type.ERROR and error.error.error == api.TopicNotFound
        assert _topics_of_namespace(raw, 5, namespace="public/default").topics  # connection still usable
    finally:
        raw.close()


def test_regex_subscription_finds_matching_topics(client):
    """The pattern consumer lists the namespace (GET_TOPICS_OF_NAMESPACE) and subscribes to the
    matches only. (Python 3.13 does not pass pattern_auto_discovery_period to the C++ client, so
    the 60 s re-discovery of new topics is not exercised here; the raw test above covers the
    request it sends.)"""
    prefix = f"rx-{uuid.uuid4().hex[:6]}"
    matching = [client.create_producer(f"persistent://public/default/{prefix}-{i}") for i in range(2)]
    other = client.create_producer(f"persistent://public/default/other-{prefix}")
    consumer = client.subscribe(re.compile(f"persistent://public/default/{prefix}-.*"), "sub",
                                initial_position=pulsar.InitialPosition.Earliest)
    other.send(b"not-for-the-pattern")
    for i, producer in enumerate(matching):
        producer.send(f"m{i}".encode())
    got = sorted(consumer.receive(5000).data() for _ in matching)
    assert got == [b"m0", b"m1"]
    with pytest.raises(pulsar.Timeout):
        consumer.receive(500)  # nothing else: not the other topic's message


def test_multi_topic_subscription(client):
    prefix = f"mt-{uuid.uuid4().hex[:6]}"
    names = [f"persistent://public/default/{prefix}-{i}" for i in range(3)]
    consumer = client.subscribe(names, "sub")
    for name in names:
        client.create_producer(name).send(name.encode())
    got = sorted(consumer.receive(5000).data() for _ in names)
    assert got == sorted(n.encode() for n in names)
