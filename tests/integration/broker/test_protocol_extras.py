"""Commands the official client uses less often: short topic names, regex subscriptions
(GET_TOPICS_OF_NAMESPACE), CONSUMER_STATS, ACTIVE_CONSUMER_CHANGE and GET_SCHEMA."""
import re
import uuid

import pulsar

from minipulsar.proto import PulsarApi_pb2 as api
from tests.helpers import RawConnection, drain

Type = api.BaseCommand.Type


def test_short_topic_names_expand_like_pulsar(client, broker):
    name = f"short-{uuid.uuid4().hex[:8]}"
    consumer = client.subscribe(name, "sub")
    client.create_producer(f"public/default/{name}").send(b"via-two-part-name")
    msg = consumer.receive(5000)
    assert msg.data() == b"via-two-part-name"
    assert msg.topic_name() == f"persistent://public/default/{name}"
    assert f"persistent://public/default/{name}" in broker.run(lambda: list(broker.broker.topics))


def test_regex_subscription_finds_the_namespace_topics(client):
    prefix = f"rx-{uuid.uuid4().hex[:6]}"
    for suffix in ("a", "b"):
        client.create_producer(f"persistent://public/default/{prefix}-{suffix}").close()
    client.create_producer(f"persistent://public/default/other-{prefix}").close()
    consumer = client.subscribe(re.compile(f"persistent://public/default/{prefix}-.*"), "sub",
                                initial_position=pulsar.InitialPosition.Earliest)
    for suffix in ("a", "b"):
        client.create_producer(f"persistent://public/default/{prefix}-{suffix}").send(suffix.encode())
    client.create_producer(f"persistent://public/default/other-{prefix}").send(b"not-matched")
    assert sorted(m.data() for m in drain(consumer, 2000)) == [b"a", b"b"]


def _subscribe(conn, topic, sub, sub_type, consumer_id, name):
    conn.send(api.BaseCommand(type=Type.SUBSCRIBE, subscribe=api.CommandSubscribe(
        topic=topic, subscription=sub, subType=sub_type, consumer_id=consumer_id,
        request_id=consumer_id, consumer_name=name)))
    reply = conn.receive()
    assert reply.type == Type.SUCCESS, reply


def test_consumer_stats_answer(broker, topic):
    conn = RawConnection(broker.url)
    conn.connect()
    _subscribe(conn, topic, "stats", api.CommandSubscribe.Shared, 1, "stats-consumer")
    conn.send(api.BaseCommand(type=Type.FLOW, flow=api.CommandFlow(consumer_id=1, messagePermits=7)))
    conn.send(api.BaseCommand(type=Type.CONSUMER_STATS, consumerStats=api.CommandConsumerStats(request_id=9, consumer_id=1)))
    reply = conn.receive()
    assert reply.type == Type.CONSUMER_STATS_RESPONSE
    stats = reply.consumerStatsResponse
    assert stats.request_id == 9 and not stats.HasField("error_code")
    assert stats.consumerName == "stats-consumer"
    assert stats.availablePermits == 7
    assert stats.type == "Shared"
    conn.send(api.BaseCommand(type=Type.CONSUMER_STATS, consumerStats=api.CommandConsumerStats(request_id=10, consumer_id=99)))
    assert conn.receive().consumerStatsResponse.error_code == api.ConsumerNotFound
    conn.close()


def test_active_consumer_change_reaches_every_failover_consumer(broker, topic):
    first, second = RawConnection(broker.url), RawConnection(broker.url)
    first.connect()
    second.connect()
    _subscribe(first, topic, "fo", api.CommandSubscribe.Failover, 1, "a")
    change = first.receive()
    assert change.type == Type.ACTIVE_CONSUMER_CHANGE and change.active_consumer_change.is_active
    _subscribe(second, topic, "fo", api.CommandSubscribe.Failover, 2, "b")
    change = second.receive()
    assert change.type == Type.ACTIVE_CONSUMER_CHANGE and not change.active_consumer_change.is_active
    first.close()  # "a" leaves: "b" becomes active
    change = second.receive()
    assert change.type == Type.ACTIVE_CONSUMER_CHANGE and change.active_consumer_change.is_active
    second.close()


def test_get_schema_reports_no_schema(broker, topic):
    conn = RawConnection(broker.url)
    conn.connect()
    conn.send(api.BaseCommand(type=Type.GET_SCHEMA, getSchema=api.CommandGetSchema(request_id=4, topic=topic)))
    reply = conn.receive()
    assert reply.type == Type.GET_SCHEMA_RESPONSE
    assert reply.getSchemaResponse.error_code == api.TopicNotFound
    conn.close()
