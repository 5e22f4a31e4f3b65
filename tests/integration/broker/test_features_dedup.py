"""Message deduplication with the official client (issue 7, item 4).

With brokerDeduplicationEnabled, a SEND whose sequence id is not above the producer's highest is
answered with a receipt but not stored; PRODUCER_SUCCESS.last_sequence_id tells a reconnecting
producer where it stopped; both survive a broker process being killed and restarted
(tests/e2e/broker/test_features_dedup.py).
"""
from __future__ import annotations

import pulsar
import pytest

from tests.helpers import drain

def test_deduplication_is_off_by_default(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, producer_name="plain")
    producer.send(b"a", sequence_id=7)
    producer.send(b"a-again", sequence_id=7)
    assert [m.data() for m in drain(consumer, 1000, ack=True)] == [b"a", b"a-again"]


def test_reserved_dedup_subscription_name_is_refused(client, topic):
    producer = client.create_producer(topic)
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(topic, "pulsar.dedup")  # subscribing as pulsar.dedup must fail
    consumer = client.subscribe(topic, "ok")
    producer.send(b"still-works")
    assert consumer.receive(5000).data() == b"still-works"


def test_replicated_messages_dedup_by_original_producer(broker_factory, topic):
    """A replicator's producer (pulsar.repl.*) is deduplicated by the producer name and sequence id
    inside each entry's metadata, as Pulsar's MessageDeduplication does."""
    from minipulsar.proto import PulsarApi_pb2 as api
    from minipulsar.proto.frames import build_headers_and_payload
    from tests.helpers import RawConnection

    Type = api.BaseCommand.Type
    broker = broker_factory(brokerDeduplicationEnabled="true")
    client = pulsar.Client(broker.url, operation_timeout_seconds=10)
    raw = RawConnection(broker.url)
    try:
        consumer = client.subscribe(topic, "sub")
        raw.connect()
        raw.send(api.BaseCommand(type=Type.PRODUCER, producer=api.CommandProducer(
            topic=topic, producer_id=1, request_id=1, producer_name="pulsar.repl.standalone")))
        assert raw.receive().type == Type.PRODUCER_SUCCESS
        for send_seq, (original_seq, body) in enumerate([(0, b"r0"), (0, b"r0-again"), (1, b"r1")]):
            metadata = api.MessageMetadata(producer_name="origin-producer", sequence_id=original_seq,
                                           publish_time=1, replicated_from="remote")
            raw.send(api.BaseCommand(type=Type.SEND, send=api.CommandSend(producer_id=1, sequence_id=send_seq)),
                     build_headers_and_payload(metadata, body))
            assert raw.receive().type == Type.SEND_RECEIPT
        assert [m.data() for m in drain(consumer, 1000, ack=True)] == [b"r0", b"r1"]
        producer = client.create_producer(topic, producer_name="origin-producer")
        assert producer.last_sequence_id() == 1
    finally:
        raw.close()
        client.close()


def test_snapshot_every_entries_interval(broker_factory, topic):
    """Every brokerDeduplicationEntriesInterval entries the map goes into the pulsar.dedup cursor's
    long properties, with its mark-delete at the last durable entry."""
    broker = broker_factory(brokerDeduplicationEnabled="true", brokerDeduplicationEntriesInterval=2)
    client = pulsar.Client(broker.url, operation_timeout_seconds=10)
    try:
        producer = client.create_producer(topic, producer_name="snap")
        ids = [producer.send(f"m{i}".encode()) for i in range(5)]

        def cursor_state():
            cursor = broker.broker.topics[topic].deduplication.cursor
            return cursor.properties, cursor.mark_delete_position

        properties, mark_delete = broker.run(cursor_state)
        assert properties == {"snap": 3}  # snapshots after the 2nd and the 4th entry
        assert (mark_delete.ledger_id, mark_delete.entry_id) == (ids[3].ledger_id(), ids[3].entry_id())
        assert "pulsar.dedup" not in broker.run(lambda: broker.broker.stats()[topic]["subscriptions"])
    finally:
        client.close()
