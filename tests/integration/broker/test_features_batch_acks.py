"""Batch-index acknowledgement and last-message-id answers with the official client (issue 7, item 5).

With acknowledgmentAtBatchIndexLevelEnabled, a consumer that acknowledged some messages of a batch
and went away leaves only the others: the next consumer gets the entry with MESSAGE.ack_set and
the client skips the acknowledged indexes. Without it (Pulsar's default) the whole batch comes back.
GET_LAST_MESSAGE_ID answers so that readers on empty topics, has_message_available() after seeks
and the official TableView work.
"""
from __future__ import annotations

import pulsar
import pytest

from minipulsar.storage import Position
from tests.helpers import drain, wait_for


def _batch_of_ten(client, topic):
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=1000)
    for i in range(10):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    return producer


@pytest.mark.parametrize("enabled", [True, False])
def test_reconnecting_consumer_gets_only_unacked_indexes(broker_factory, topic, enabled):
    broker = broker_factory(acknowledgmentAtBatchIndexLevelEnabled=str(enabled).lower())
    client = pulsar.Client(broker.url, operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                    batch_index_ack_enabled=True)
        _batch_of_ten(client, topic)
        messages = drain(consumer, 1000)
        assert [m.data() for m in messages] == [f"m{i}".encode() for i in range(10)]
        assert len({(m.message_id().ledger_id(), m.message_id().entry_id()) for m in messages}) == 1  # one entry
        for message in messages[::2]:
            consumer.acknowledge(message)
        if enabled:  # the client groups acks for 100 ms: wait until the broker merged the five index acks
            entry = Position(messages[0].message_id().ledger_id(), messages[0].message_id().entry_id())
            wait_for(lambda: broker.run(lambda: broker.broker.topics[topic].subscriptions["sub"]
                                        .batch_acks.unacked_count(entry, 10)) == 5,
                     "the broker to record the index acks of m0, m2, ... m8")
        # (disabled: the broker keeps nothing of index acks to wait on; close() below sends the
        # grouped acks before CLOSE_CONSUMER and awaits the broker's answer)
        consumer.close()
        again = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                 batch_index_ack_enabled=True)
        data = [m.data() for m in drain(again, 1000)]
        if enabled:
            assert data == [f"m{i}".encode() for i in range(1, 10, 2)]
        else:
            assert data == [f"m{i}".encode() for i in range(10)]  # the broker kept no index acks
    finally:
        client.close()


def test_batch_fully_acked_by_indexes_is_acknowledged(broker_factory, topic):
    broker = broker_factory(acknowledgmentAtBatchIndexLevelEnabled="true")
    client = pulsar.Client(broker.url, operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
        _batch_of_ten(client, topic)
        for message in drain(consumer, 1000):
            consumer.acknowledge(message)
        wait_for(lambda: broker.subscription_stats(topic, "sub")["msgBacklog"] == 0,
                 "the ten index acks to acknowledge the entry")
        stats = broker.run(lambda: broker.broker.stats()[topic]["subscriptions"]["sub"])
        assert stats["msgBacklog"] == 0
    finally:
        client.close()


def test_reader_and_has_message_available_on_empty_topic(client, topic):
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.has_message_available() is False
    latest = client.create_reader(topic, pulsar.MessageId.latest)
    assert latest.has_message_available() is False
    producer = client.create_producer(topic)
    producer.send(b"first")
    assert reader.has_message_available() is True
    assert reader.read_next(5000).data() == b"first"
    assert reader.has_message_available() is False
    assert latest.has_message_available() is True  # published after the reader was created
    reader.seek(pulsar.MessageId.earliest)
    wait_for(reader.is_connected, "the reader to reconnect after the seek")
    assert reader.has_message_available() is True
    assert reader.read_next(5000).data() == b"first"
    reader.seek(pulsar.MessageId.latest)
    wait_for(reader.is_connected, "the reader to reconnect after the seek")
    assert reader.has_message_available() is False


def test_table_view_on_empty_then_filled_topic(client, topic):
    view = client.create_table_view(topic)  # reads to the end of an empty topic: must not hang
    assert len(view) == 0
    producer = client.create_producer(topic)
    producer.send(b"v1", partition_key="k1")
    producer.send(b"v2", partition_key="k1")
    producer.send(b"w1", partition_key="k2")
    wait_for(lambda: view.get("k1") == b"v2" and view.get("k2") == b"w1", "the table view to hold k1=v2, k2=w1",
             timeout=5)
    assert view.get("k1") == b"v2" and view.get("k2") == b"w1"
    again = client.create_table_view(topic)  # a new view reads the existing keys at creation
    assert again.get("k1") == b"v2" and len(again) == 2
