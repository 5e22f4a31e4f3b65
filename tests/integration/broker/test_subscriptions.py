"""Subscription types and acknowledgement behaviour with the official client."""
import time

import pulsar
import pytest

from tests.helpers import drain, wait_for


def backlog_is(broker, topic, subscription, expected):
    """A wait_for predicate: the subscription's msgBacklog is `expected` (the acks, which the
    official client groups for 100 ms, reached the broker)."""
    return lambda: broker.subscription_stats(topic, subscription)["msgBacklog"] == expected


def test_shared_spreads_messages_over_two_consumers(client, topic):
    c1 = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
    c2 = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
    producer = client.create_producer(topic)
    for i in range(100):
        producer.send(str(i).encode())
    got1, got2 = [], []
    deadline = time.time() + 10
    while len(got1) + len(got2) < 100 and time.time() < deadline:
        for consumer, got in ((c1, got1), (c2, got2)):
            try:
                msg = consumer.receive(50)
            except pulsar.Timeout:
                continue
            got.append(int(msg.data()))
            consumer.acknowledge(msg)
    assert sorted(got1 + got2) == list(range(100))
    assert got1 and got2


def test_exclusive_rejects_a_second_consumer_and_keeps_the_connection(client, topic):
    c1 = client.subscribe(topic, "sub")
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"after-busy")
    assert c1.receive(5000).data() == b"after-busy"


def test_failover_takeover_redelivers_unacked(broker, client, topic):
    producer = client.create_producer(topic)
    c1 = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a")
    c2 = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b")
    for i in range(10):
        producer.send(str(i).encode())
    got = [c1.receive(5000) for _ in range(10)]
    assert [int(m.data()) for m in got] == list(range(10))
    for m in got[:5]:
        c1.acknowledge(m)
    with pytest.raises(pulsar.Timeout):
        c2.receive(300)  # the standby gets nothing while the active consumer lives
    wait_for(backlog_is(broker, topic, "sub", 5), "the acks of 0..4 to reach the broker")
    c1.close()
    taken_over = [int(c2.receive(5000).data()) for _ in range(5)]
    assert taken_over == [5, 6, 7, 8, 9]


def test_negative_ack_redelivers_with_a_redelivery_count(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic)
    producer.send(b"retry-me")
    first = consumer.receive(5000)
    assert first.redelivery_count() == 0
    consumer.negative_acknowledge(first)
    again = consumer.receive(5000)
    assert again.data() == b"retry-me"
    assert again.redelivery_count() == 1
    assert again.message_id() == first.message_id()
    consumer.acknowledge(again)


def test_cumulative_ack_then_reconnect_gets_only_the_rest(broker, client, topic):
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub")
    for i in range(10):
        producer.send(str(i).encode())
    msgs = [consumer.receive(5000) for _ in range(10)]
    consumer.acknowledge_cumulative(msgs[6])
    wait_for(backlog_is(broker, topic, "sub", 3), "the cumulative ack to reach the broker")
    consumer.close()
    consumer = client.subscribe(topic, "sub")
    assert [int(m.data()) for m in drain(consumer)] == [7, 8, 9]


def test_closing_a_shared_consumer_redelivers_its_unacked_to_the_other(client, topic):
    producer = client.create_producer(topic)
    c1 = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    for i in range(20):
        producer.send(str(i).encode())
    held = [c1.receive(5000) for _ in range(20)]
    assert len(held) == 20
    c2 = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    c1.close()
    got = sorted(int(m.data()) for m in drain(c2, 1000))
    assert got == list(range(20))


def test_unsubscribe_deletes_the_subscription(client, topic, broker):
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "gone")
    producer.send(b"x")
    consumer.unsubscribe()
    assert broker.run(lambda: "gone" not in broker.broker.topics[topic].subscriptions)
    consumer = client.subscribe(topic, "gone")  # a new subscription starts at the end (Latest)
    producer.send(b"y")
    assert [m.data() for m in drain(consumer)] == [b"y"]


def test_earliest_and_latest_initial_positions(client, topic):
    producer = client.create_producer(topic)
    producer.send(b"old")
    latest = client.subscribe(topic, "latest")
    earliest = client.subscribe(topic, "earliest", initial_position=pulsar.InitialPosition.Earliest)
    producer.send(b"new")
    assert [m.data() for m in drain(latest)] == [b"new"]
    assert [m.data() for m in drain(earliest)] == [b"old", b"new"]


def test_redeliver_unacknowledged_on_exclusive(broker, client, topic):
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub")
    for i in range(5):
        producer.send(str(i).encode())
    first = [consumer.receive(5000) for _ in range(5)]
    consumer.acknowledge(first[0])
    wait_for(backlog_is(broker, topic, "sub", 4), "the ack of 0 to reach the broker")
    consumer.redeliver_unacknowledged_messages()
    again = [int(m.data()) for m in drain(consumer, 1000)]
    assert again == [1, 2, 3, 4]
