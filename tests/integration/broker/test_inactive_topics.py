"""Inactive topics are deleted as Pulsar's brokerDeleteInactiveTopicsEnabled does
(broker/inactive_topics.py), with the official client and the admin REST API. The checks are run
by hand here (the broker's own period is set to an hour) so each test waits on their result."""
import asyncio
import uuid

import pulsar
import requests

from minipulsar.broker.topic_name import TopicName
from tests.helpers import wait_for

SETTINGS = {"brokerDeleteInactiveTopicsFrequencySeconds": 3600, "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": 1}


def _topic(namespace: str = "public/default") -> str:
    return f"persistent://{namespace}/gc-{uuid.uuid4().hex[:8]}"


def _listed(broker, topic: str) -> bool:
    namespace = topic.split("://", 1)[1].rsplit("/", 1)[0]
    return topic in requests.get(f"{broker.broker.web_service_url}/admin/v2/persistent/{namespace}", timeout=10).json()


def _check(broker) -> list:
    return broker.call(broker.broker.inactive_topics.check())


def test_loading_topics_leaves_no_per_topic_lock_behind(broker_factory):
    broker = broker_factory(**SETTINGS)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    topics = [_topic() for _ in range(5)]
    for name in topics:
        client.create_producer(name).close()
    assert broker.run(lambda: [name for name in topics if name in broker.broker.topics]) == topics
    assert broker.run(lambda: dict(broker.broker.topic_locks.held)) == {}
    client.close()


def test_concurrent_loads_of_one_topic_open_it_once(broker):
    async def load_ten_at_once():
        name = TopicName.parse(_topic())
        return await asyncio.gather(*(broker.broker.get_topic(name, create=True) for _ in range(10)))

    loaded = broker.call(load_ten_at_once())
    assert all(topic is loaded[0] for topic in loaded)
    assert broker.run(lambda: dict(broker.broker.topic_locks.held)) == {}


def test_a_topic_without_producers_or_subscriptions_is_deleted_and_the_others_stay(broker_factory):
    broker = broker_factory(**SETTINGS)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    abandoned, subscribed, producing = _topic(), _topic(), _topic()
    client.create_producer(abandoned).close()
    client.subscribe(subscribed, "kept").close()  # a durable subscription without consumers
    producer = client.create_producer(producing)
    wait_for(lambda: abandoned in _check(broker), "the inactive topic to be deleted")
    assert not _listed(broker, abandoned)
    assert _listed(broker, subscribed) and _listed(broker, producing)
    producer.send(b"still served")
    client.close()


def test_producers_that_come_and_go_between_checks_keep_their_topic(broker_factory):
    """Pulsar refreshes a topic's last-active time when a producer leaves: a sink that opens a
    producer per batch must not lose its topic to a check that happens to fall between batches."""
    broker = broker_factory(**SETTINGS)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    intermittent, witness = _topic(), _topic()
    for topic in (intermittent, witness):
        client.create_producer(topic).close()

    def a_batch_then_a_check() -> bool:
        producer = client.create_producer(intermittent)
        producer.send(b"batch")
        producer.close()
        return witness in _check(broker)

    wait_for(a_batch_then_a_check, "the witness, idle since it was created, to be deleted")
    assert _listed(broker, intermittent)
    client.close()


def test_caught_up_mode_deletes_a_topic_whose_subscriptions_have_no_backlog(broker_factory):
    broker = broker_factory(brokerDeleteInactiveTopicsMode="delete_when_subscriptions_caught_up", **SETTINGS)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    caught_up, behind = _topic(), _topic()
    for topic in (caught_up, behind):
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        producer.send(b"m")
        producer.close()
        if topic == caught_up:
            consumer.acknowledge(consumer.receive(5000))
            wait_for(lambda: broker.subscription_stats(caught_up, "s")["msgBacklog"] == 0, "the ack")
        consumer.close()
    wait_for(lambda: caught_up in _check(broker), "the caught-up topic to be deleted")
    assert _listed(broker, behind)
    client.close()


def test_retention_keeps_an_inactive_topic_and_the_switch_turns_deletion_off(broker_factory):
    broker = broker_factory(**SETTINGS)
    web = broker.broker.web_service_url
    kept_namespace = f"public/keep-{uuid.uuid4().hex[:6]}"
    assert requests.put(f"{web}/admin/v2/namespaces/{kept_namespace}", timeout=10).status_code == 204
    assert requests.post(f"{web}/admin/v2/namespaces/{kept_namespace}/retention",
                         json={"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}, timeout=10).status_code == 204
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    retained, witness = _topic(kept_namespace), _topic()
    for topic in (retained, witness):
        client.create_producer(topic).close()
    wait_for(lambda: witness in _check(broker), "a topic without retention to be deleted")
    assert _listed(broker, retained)  # checked in the same passes as the witness

    broker.run(lambda: broker.broker.update_config("brokerDeleteInactiveTopicsEnabled", False))
    switched_off = _topic()
    client.create_producer(switched_off).close()
    assert _check(broker) == [] and _listed(broker, switched_off)
    client.close()


def test_the_broker_runs_the_check_every_frequency_seconds(broker_factory):
    broker = broker_factory(brokerDeleteInactiveTopicsFrequencySeconds=1)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    topic = _topic()
    client.create_producer(topic).close()
    assert _listed(broker, topic)
    wait_for(lambda: not _listed(broker, topic), "the broker's own check to delete the inactive topic")
    client.close()
