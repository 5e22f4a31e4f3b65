"""PIP-299: with dispatcherPauseOnAckStatePersistentEnabled, multi-consumer dispatch pauses while
the ack holes at the last cursor persist exceed managedLedgerMaxUnackedRangesToPersist (50 here,
as in Pulsar's own tests)."""

import pulsar
import pytest

from tests.helpers import drain, wait_for

CAP = 50


def start(broker_factory, enabled: bool):
    return broker_factory(managedLedgerMaxUnackedRangesToPersist=CAP,
                          dispatcherPauseOnAckStatePersistentEnabled=str(enabled).lower(),
                          managedLedgerDefaultMarkDeleteRateLimit=20)


def subscription_stats(broker, topic, name="sub"):
    return broker.run(lambda: broker.broker.topics[topic].subscriptions[name].stats())


def first_wave_with_holes(client, broker, topic, consumer_type):
    consumer = client.subscribe(topic, "sub", consumer_type=consumer_type, negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(200):
        producer.send(f"first-{i}".encode())
    msgs = [consumer.receive(5000) for _ in range(200)]
    for m in msgs[::2]:
        consumer.acknowledge(m)  # every other one: 100 holes
    assert wait_for(lambda: subscription_stats(broker, topic)["nonContiguousDeletedMessagesRangesAtLastPersist"] > CAP,
                    f"a cursor persist that records more than {CAP} ack holes")
    return consumer, producer, msgs[1::2]


def test_shared_pauses_redelivers_and_resumes(broker_factory, topic):
    broker = start(broker_factory, enabled=True)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer, producer, held = first_wave_with_holes(client, broker, topic, pulsar.ConsumerType.Shared)
    assert subscription_stats(broker, topic)["blockedOnAckStatePersistent"] is True
    for i in range(50):
        producer.send(f"second-{i}".encode())
    with pytest.raises(pulsar.Timeout):
        consumer.receive(1000)  # paused: the second wave is not read
    consumer.negative_acknowledge(held[0])
    again = consumer.receive(5000)  # redeliveries still go out while paused
    assert again.data() == held[0].data() and again.redelivery_count() == 1
    for m in [again] + held[1:]:
        consumer.acknowledge(m)  # fill the holes: the next persist finds 0 ranges
    second = sorted(m.data() for m in drain(consumer, 3000))
    assert second == sorted(f"second-{i}".encode() for i in range(50))
    assert subscription_stats(broker, topic)["blockedOnAckStatePersistent"] is False
    client.close()


def test_with_the_feature_off_the_second_wave_flows(broker_factory, topic):
    broker = start(broker_factory, enabled=False)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer, producer, _ = first_wave_with_holes(client, broker, topic, pulsar.ConsumerType.Shared)
    assert subscription_stats(broker, topic)["blockedOnAckStatePersistent"] is False
    for i in range(50):
        producer.send(f"second-{i}".encode())
    assert len(drain(consumer, 1000)) == 50
    client.close()


def test_exclusive_never_pauses(broker_factory, topic):
    broker = start(broker_factory, enabled=True)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer, producer, _ = first_wave_with_holes(client, broker, topic, pulsar.ConsumerType.Exclusive)
    for i in range(50):
        producer.send(f"second-{i}".encode())
    assert len(drain(consumer, 1000)) == 50
    client.close()


def test_switching_the_feature_while_running(broker_factory, topic):
    broker = start(broker_factory, enabled=False)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer, producer, _ = first_wave_with_holes(client, broker, topic, pulsar.ConsumerType.Shared)
    broker.run(lambda: broker.broker.update_config("dispatcherPauseOnAckStatePersistentEnabled", "true"))
    assert subscription_stats(broker, topic)["blockedOnAckStatePersistent"] is True
    producer.send(b"while-paused")
    with pytest.raises(pulsar.Timeout):
        consumer.receive(1000)
    broker.run(lambda: broker.broker.update_config("managedLedgerMaxUnackedRangesToPersist", 1000))
    assert consumer.receive(5000).data() == b"while-paused"
    client.close()


def test_clear_backlog_lifts_the_pause(broker_factory, topic):
    broker = start(broker_factory, enabled=True)
    client = pulsar.Client(broker.url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer, producer, _ = first_wave_with_holes(client, broker, topic, pulsar.ConsumerType.Shared)
    broker.run(lambda: broker.broker.topics[topic].subscriptions["sub"].clear_backlog())
    assert subscription_stats(broker, topic)["blockedOnAckStatePersistent"] is False
    producer.send(b"after-clear")
    assert [m.data() for m in drain(consumer, 1000)] == [b"after-clear"]
    client.close()
